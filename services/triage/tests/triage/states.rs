//! `GetStates` over gRPC: each answered run reads as `GetState` and `ListAttempts` answer it,
//! in the order asked, once; unknown, foreign and never-triaged runs are left out; the id list
//! is bounded.

use tonic::Code;
use uuid::Uuid;

use baton_proto::triage::v1 as proto;
use baton_proto::triage::v1::triage_client::TriageClient;
use tonic::transport::Channel;

use crate::{Harness, request, t};

async fn get_states(
    client: &TriageClient<Channel>,
    tenant: Uuid,
    ids: Vec<String>,
) -> Result<Vec<(String, String, u32)>, tonic::Status> {
    let answer = client
        .clone()
        .get_states(request(
            tenant,
            t(30),
            proto::GetStatesRequest {
                session_run_ids: ids,
            },
        ))
        .await?
        .into_inner();
    Ok(answer
        .states
        .into_iter()
        .map(|state| (state.session_run_id, state.triage_status, state.attempts))
        .collect())
}

/// What the one-run reads answer: `GetState`'s status and `ListAttempts`' count.
async fn one_by_one(client: &TriageClient<Channel>, tenant: Uuid, run: Uuid) -> (String, u32) {
    let status = client
        .clone()
        .get_state(request(
            tenant,
            t(30),
            proto::GetStateRequest {
                session_run_id: run.to_string(),
            },
        ))
        .await
        .expect("state")
        .into_inner()
        .triage_status;
    let count = client
        .clone()
        .list_attempts(request(
            tenant,
            t(30),
            proto::ListAttemptsRequest {
                session_run_id: run.to_string(),
            },
        ))
        .await
        .expect("attempts")
        .into_inner()
        .count;
    (status, count)
}

/// Opens `session` at minute 0 and arms it at minute 2 (three turns); returns its run id.
async fn armed_run(harness: &Harness, tenant: Uuid, session: &str) -> Uuid {
    let run = harness.open(tenant, session, None, None, t(0)).await;
    let began = harness.begin(tenant, session, t(2), Some(3), false).await;
    assert!(began.armed, "{session} arms");
    run
}

/// An armed run (see [`armed_run`]) whose debrief is written at minute 3 and completed at 4.
async fn debriefed_run(harness: &Harness, tenant: Uuid, session: &str) -> Uuid {
    let run = harness.open(tenant, session, None, None, t(0)).await;
    let armed = harness.begin(tenant, session, t(2), Some(3), false).await;
    harness
        .write(tenant, run, &format!("the debrief of {session}"), t(3))
        .await;
    harness
        .complete(tenant, session, armed.attempt_id.expect("attempt"), t(4))
        .await;
    run
}

#[tokio::test]
async fn states_read_as_get_state_in_the_order_asked_leaving_out_what_triage_has_not_seen() {
    let harness = Harness::new().await;
    let client = harness.triage_client().await;
    let tenant = Uuid::now_v7();

    // Pending: armed, not completed.
    let pending = armed_run(&harness, tenant, "pending").await;

    // Completed: its write is inside the watermark.
    let done = debriefed_run(&harness, tenant, "done").await;

    // Completed, then written to: reads idle (the listing is consulted, as GetState does).
    let rewritten = debriefed_run(&harness, tenant, "rewritten").await;
    harness
        .write(tenant, rewritten, "later work on rewritten", t(5))
        .await;

    // Armed twice: completed, written to, re-armed.
    let twice = debriefed_run(&harness, tenant, "twice").await;
    harness
        .write(tenant, twice, "later work on twice", t(5))
        .await;
    assert!(
        harness
            .begin(tenant, "twice", t(6), Some(9), false)
            .await
            .armed
    );

    // Expired: a zero-write continuation.
    let expired = harness.open(tenant, "expired", None, None, t(0)).await;
    let armed = harness.begin(tenant, "expired", t(11), None, false).await;
    harness
        .complete(tenant, "expired", armed.attempt_id.expect("attempt"), t(12))
        .await;

    // The tenant's, but a begin that declined writes no triage row.
    let unseen = harness.open(tenant, "unseen", None, None, t(0)).await;
    assert!(
        !harness
            .begin(tenant, "unseen", t(1), Some(0), false)
            .await
            .armed
    );

    // Another tenant's triaged run.
    let other = Uuid::now_v7();
    let foreign = armed_run(&harness, other, "foreign").await;

    let ids = [
        twice,
        Uuid::now_v7(),
        expired,
        pending,
        foreign,
        done,
        unseen,
        pending,
        rewritten,
        twice,
    ];
    let answer = get_states(&client, tenant, ids.iter().map(Uuid::to_string).collect())
        .await
        .expect("states");
    let expected = [
        (twice, "pending", 2),
        (expired, "expired", 1),
        (pending, "pending", 1),
        (done, "completed", 1),
        (rewritten, "idle", 1),
    ];
    assert_eq!(
        answer,
        expected
            .iter()
            .map(|(run, status, attempts)| (run.to_string(), status.to_string(), *attempts))
            .collect::<Vec<_>>()
    );
    for (run, status, attempts) in expected {
        assert_eq!(
            one_by_one(&client, tenant, run).await,
            (status.to_string(), attempts),
            "GetStates and GetState/ListAttempts agree on {status}"
        );
    }

    // The other tenant sees its own run and none of the first tenant's.
    let theirs = get_states(&client, other, vec![foreign.to_string(), done.to_string()])
        .await
        .expect("other tenant");
    assert_eq!(theirs, [(foreign.to_string(), "pending".to_string(), 1)]);
}

#[tokio::test]
async fn the_id_list_is_bounded_and_each_id_must_be_a_uuid() {
    let harness = Harness::new().await;
    let client = harness.triage_client().await;
    let tenant = Uuid::now_v7();
    let run = armed_run(&harness, tenant, "bounded").await;

    let full = get_states(&client, tenant, vec![run.to_string(); 200])
        .await
        .expect("200 ids, all one run");
    assert_eq!(full, [(run.to_string(), "pending".to_string(), 1)]);
    let none = get_states(&client, tenant, vec![Uuid::now_v7().to_string()])
        .await
        .expect("an unknown id alone");
    assert!(none.is_empty());

    for (name, ids) in [
        ("empty", Vec::new()),
        ("201 ids", vec![run.to_string(); 201]),
        ("not a uuid", vec![run.to_string(), "run-1".to_string()]),
        ("blank", vec![String::new()]),
    ] {
        let status = get_states(&client, tenant, ids).await.expect_err(name);
        assert_eq!(status.code(), Code::InvalidArgument, "{name}");
    }
}
