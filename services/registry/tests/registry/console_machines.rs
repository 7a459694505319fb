//! ListMachines over gRPC: grouping per host, states from all of a session's episodes, the
//! newest label, the since window and limits, tenant isolation.

use tonic::Code;
use uuid::Uuid;

use baton_kit::ErrorCode;
use baton_kit::clock::to_timestamp;
use baton_proto::registry::v1 as proto;

use crate::Harness;
use crate::console_client::{Beat, Console, ago};

fn machines(since: Option<i64>, limit: u32) -> proto::ListMachinesRequest {
    proto::ListMachinesRequest {
        since: since.map(|seconds| to_timestamp(ago(seconds))),
        limit,
    }
}

fn invalid(status: &tonic::Status) -> bool {
    status.code() == Code::InvalidArgument
        && ErrorCode::from_status(status) == ErrorCode::InvalidInput
}

/// `(client, version)` pairs of a machine.
fn clients(machine: &proto::Machine) -> Vec<(String, Option<String>)> {
    machine
        .clients
        .iter()
        .map(|client| (client.client.clone(), client.client_version.clone()))
        .collect()
}

/// `(run id, state)` of a machine's sessions, in order.
fn sessions(machine: &proto::Machine) -> Vec<(String, i32)> {
    machine
        .sessions
        .iter()
        .map(|session| (session.session_run_id.clone(), session.state))
        .collect()
}

#[tokio::test]
async fn machines_group_hosts_count_states_and_keep_the_newest_label() {
    let harness = Harness::new().await;
    let (mut console, mut stranger) = Console::start_two(&harness).await;
    let live = proto::SessionState::Live as i32;
    let idle = proto::SessionState::Idle as i32;
    let disconnected = proto::SessionState::Disconnected as i32;

    // host-a: a busy session that renamed the machine, and a killed client.
    let busy = console.open("busy", ago(3000)).await;
    let busy_episode = Uuid::now_v7();
    console
        .pulse(&Beat {
            host_label: Some("old name"),
            client_version: Some("2.1.0"),
            ..Beat::new("busy", busy_episode, "host-a", ago(600))
        })
        .await;
    console
        .pulse(&Beat {
            host_label: Some("new name"),
            ..Beat::new("busy", busy_episode, "host-a", ago(10))
        })
        .await;
    let killed = console.open("killed", ago(2000)).await;
    let killed_episode = Uuid::now_v7();
    console
        .pulse(&Beat {
            client_version: Some("2.0.9"),
            ..Beat::new("killed", killed_episode, "host-a", ago(900))
        })
        .await;
    console
        .pulse(&Beat {
            end_reason: Some("process_exited"),
            ..Beat::new("killed", killed_episode, "host-a", ago(800))
        })
        .await;

    // A session that ran on host-b, exited, and resumed on host-a: live on both.
    let moved = console.open("moved", ago(2500)).await;
    let on_b = Uuid::now_v7();
    console
        .pulse(&Beat {
            client: "codex",
            client_version: Some("0.50.0"),
            ..Beat::new("moved", on_b, "host-b", ago(1500))
        })
        .await;
    console
        .pulse(&Beat {
            client: "codex",
            end_reason: Some("process_exited"),
            ..Beat::new("moved", on_b, "host-b", ago(1400))
        })
        .await;
    console
        .pulse(&Beat {
            client_version: Some("2.1.1"),
            pid: 777,
            ..Beat::new("moved", Uuid::now_v7(), "host-a", ago(5))
        })
        .await;

    // host-b: a client that exited cleanly before a later hook (idle), and a closed session.
    let quiet = console.open("quiet", ago(3000)).await;
    let quiet_episode = Uuid::now_v7();
    console
        .pulse(&Beat::new("quiet", quiet_episode, "host-b", ago(1300)))
        .await;
    console
        .pulse(&Beat {
            end_reason: Some("process_exited"),
            ..Beat::new("quiet", quiet_episode, "host-b", ago(1290))
        })
        .await;
    console.heartbeat("quiet", ago(1000)).await;
    console.open("done", ago(3000)).await;
    console
        .pulse(&Beat::new("done", Uuid::now_v7(), "host-b", ago(1200)))
        .await;
    console.close("done", ago(1100)).await;

    // Another tenant's machine never shows.
    stranger.open("elsewhere", ago(100)).await;
    stranger
        .pulse(&Beat::new("elsewhere", Uuid::now_v7(), "host-c", ago(1)))
        .await;

    let listed = console
        .list_machines(machines(None, 0))
        .await
        .expect("list");
    assert!(!listed.truncated);
    let hosts: Vec<&str> = listed.machines.iter().map(|m| m.host_id.as_str()).collect();
    assert_eq!(
        hosts,
        vec!["host-a", "host-b"],
        "most recently pulsed first"
    );

    let host_a = &listed.machines[0];
    assert_eq!(host_a.host_label.as_deref(), Some("new name"));
    assert_eq!(host_a.last_pulse_at, Some(to_timestamp(ago(5))));
    assert_eq!(
        clients(host_a),
        vec![("claude-code".to_string(), Some("2.1.1".to_string()))],
        "one client, the newest episode's version"
    );
    assert_eq!(
        (host_a.live, host_a.idle, host_a.disconnected),
        (2, 0, 1),
        "the killed client reads disconnected"
    );
    assert_eq!(
        sessions(host_a),
        vec![
            (moved.clone(), live),
            (busy.clone(), live),
            (killed.clone(), disconnected)
        ]
    );
    assert_eq!(host_a.sessions[0].pid, 777);
    assert_eq!(host_a.sessions[0].session_id, "moved");

    let host_b = &listed.machines[1];
    assert_eq!(host_b.host_label, None);
    assert_eq!(host_b.last_pulse_at, Some(to_timestamp(ago(1200))));
    assert_eq!(
        clients(host_b),
        vec![
            ("claude-code".to_string(), None),
            ("codex".to_string(), Some("0.50.0".to_string()))
        ]
    );
    assert_eq!(
        (host_b.live, host_b.idle, host_b.disconnected),
        (1, 1, 0),
        "closed is not counted"
    );
    assert_eq!(
        sessions(host_b),
        vec![(moved.clone(), live), (quiet.clone(), idle)],
        "the moved session reads live from its episode on host-a"
    );

    let recent = console
        .list_machines(machines(Some(1000), 0))
        .await
        .expect("since");
    let recent_hosts: Vec<&str> = recent.machines.iter().map(|m| m.host_id.as_str()).collect();
    assert_eq!(
        recent_hosts,
        vec!["host-a"],
        "host-b last pulsed before since"
    );
    let one = console.list_machines(machines(None, 1)).await.expect("one");
    assert_eq!(one.machines.len(), 1);
    assert_eq!(one.machines[0].host_id, "host-a");
}

#[tokio::test]
async fn since_and_limit_are_bounded() {
    let harness = Harness::new().await;
    let mut console = Console::start(&harness).await;
    assert!(console.list_machines(machines(None, 200)).await.is_ok());
    assert!(
        console.list_machines(machines(Some(0), 0)).await.is_ok(),
        "since = now"
    );
    let refusals = [
        ("limit 201", machines(None, 201)),
        ("since in the future", machines(Some(-1), 0)),
        (
            "since before 2000",
            proto::ListMachinesRequest {
                since: Some(unix_timestamp(946_684_799)),
                limit: 0,
            },
        ),
    ];
    for (name, request) in refusals {
        let refused = console.list_machines(request).await.expect_err(name);
        assert!(invalid(&refused), "{name}: {refused:?}");
    }
}

fn unix_timestamp(seconds: i64) -> baton_proto::Timestamp {
    baton_proto::Timestamp { seconds, nanos: 0 }
}
