//! CONTRACT table H's claim and finish, as triage applies them.

use uuid::Uuid;

use baton_triage::close::Claim;
use baton_triage::status::Status;

use crate::{AGENT, Harness, call, t};

#[tokio::test]
async fn a_claim_retires_a_pending_handshake_and_a_late_complete_conflicts() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "claim", None, None, t(0)).await;
    let armed = harness.begin(tenant, "claim", t(11), None, false).await;
    let hook_attempt = armed.attempt_id.expect("attempt");

    let open = harness
        .claim(tenant, run, t(12), 1, Some(hook_attempt))
        .await;
    assert_eq!(open, Claim::Fenced, "an open run cannot be claimed");
    harness.close(tenant, "claim", t(12)).await;
    let wrong_epoch = harness
        .claim(tenant, run, t(13), 2, Some(hook_attempt))
        .await;
    assert_eq!(wrong_epoch, Claim::Fenced);
    let stale = harness
        .claim(tenant, run, t(13), 1, Some(Uuid::now_v7()))
        .await;
    assert_eq!(stale, Claim::Lost, "the observed attempt moved: claim-lost");

    let Claim::Won(closer_attempt) = harness
        .claim(tenant, run, t(13), 1, Some(hook_attempt))
        .await
    else {
        panic!("the claim wins");
    };
    let state = harness
        .triage
        .run_for_close(&call(tenant, t(13)), run)
        .await
        .expect("state");
    assert_eq!(
        state.state.status,
        Status::Expired,
        "pending retired in the same statement"
    );
    assert_eq!(state.holder.as_deref(), Some("closer"));
    let late = harness
        .triage
        .complete(&call(tenant, t(14)), AGENT, "claim", hook_attempt)
        .await
        .expect_err("409");
    assert_eq!(
        late.code,
        baton_kit::ErrorCode::Conflict,
        "the old token can never finalize"
    );
    let (log, count) = harness
        .triage
        .attempts(&call(tenant, t(14)), run)
        .await
        .expect("log");
    assert_eq!((log.len(), count), (1, 1), "closer claims are not logged");

    // Finish is fenced on the attempt and the epoch.
    let other = harness
        .finish(tenant, run, Uuid::now_v7(), t(15), false)
        .await;
    assert_eq!(other, None, "another attempt: fenced");
    let finished = harness
        .finish(tenant, run, closer_attempt, t(15), false)
        .await;
    assert_eq!(finished, Some(Status::Completed));
}

#[tokio::test]
async fn finish_is_fenced_when_the_run_came_back() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "back", None, None, t(0)).await;
    harness.close(tenant, "back", t(1)).await;
    let Claim::Won(attempt) = harness.claim(tenant, run, t(2), 1, None).await else {
        panic!("the claim wins");
    };
    harness
        .registry
        .heartbeat(tenant, AGENT, "back", None, t(3))
        .await
        .expect("resurrect");
    let finished = harness.finish(tenant, run, attempt, t(4), false).await;
    assert_eq!(finished, None, "the epoch moved: nothing written");
    let state = harness
        .triage
        .run_for_close(&call(tenant, t(4)), run)
        .await
        .expect("state");
    assert_eq!(state.state.status, Status::Idle);
}

#[tokio::test]
async fn an_overflowed_run_cannot_be_claimed() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "over", None, None, t(0)).await;
    harness.close(tenant, "over", t(1)).await;
    let Claim::Won(attempt) = harness.claim(tenant, run, t(2), 1, None).await else {
        panic!("the claim wins");
    };
    let finished = harness.finish(tenant, run, attempt, t(3), true).await;
    assert_eq!(finished, Some(Status::Overflowed));
    let again = harness.claim(tenant, run, t(4), 1, Some(attempt)).await;
    assert_eq!(again, Claim::Lost, "terminal");
}
