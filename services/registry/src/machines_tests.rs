//! Grouping pulses into machines, case by case.

use super::*;

fn at(seconds: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_772_352_000 + seconds, 0).expect("valid")
}

fn run(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

/// A pulse of session `session` on `host` at `seconds`, from client `client` version `version`.
fn pulse(episode: u128, session: u128, host: &str, client: &str, seconds: i64) -> HostPulse {
    HostPulse {
        episode_id: Uuid::from_u128(1000 + episode),
        session_run_id: run(session),
        host_id: host.to_string(),
        host_label: None,
        client: client.to_string(),
        client_version: Some(format!("v{seconds}")),
        host_client: None,
        pid: 100 + episode as i64,
        last_pulse_at: at(seconds),
    }
}

fn labelled(label: &str, pulse: HostPulse) -> HostPulse {
    HostPulse {
        host_label: Some(label.to_string()),
        ..pulse
    }
}

fn seen(states: &[(u128, State)]) -> HashMap<Uuid, SeenSession> {
    states
        .iter()
        .map(|(n, state)| {
            (
                run(*n),
                SeenSession {
                    agent: "claude-code".to_string(),
                    session_id: format!("s{n}"),
                    project: None,
                    opened_at: at(0),
                    state: *state,
                },
            )
        })
        .collect()
}

/// A machine reduced to what a case checks: host, label, last pulse, (live, idle,
/// disconnected), the listed sessions in order, and clients as `name@version`.
type Shape = (
    String,
    Option<String>,
    i64,
    (u32, u32, u32),
    Vec<u128>,
    Vec<String>,
);

fn shape(machine: &Machine) -> Shape {
    (
        machine.host_id.clone(),
        machine.host_label.clone(),
        machine.last_pulse_at.timestamp() - 1_772_352_000,
        (machine.live, machine.idle, machine.disconnected),
        machine
            .sessions
            .iter()
            .map(|session| session.session_run_id.as_u128())
            .collect(),
        machine
            .clients
            .iter()
            .map(|client| {
                format!(
                    "{}@{}",
                    client.client,
                    client.client_version.as_deref().unwrap_or("-")
                )
            })
            .collect(),
    )
}

fn expect(
    host: &str,
    label: Option<&str>,
    last: i64,
    counts: (u32, u32, u32),
    sessions: &[u128],
    clients: &[&str],
) -> Shape {
    (
        host.to_string(),
        label.map(str::to_string),
        last,
        counts,
        sessions.to_vec(),
        clients.iter().map(|client| client.to_string()).collect(),
    )
}

#[test]
fn grouping_table() {
    use State::{Closed, Disconnected, Idle, Live};
    type Case<'a> = (
        &'a str,
        Vec<HostPulse>,
        Vec<(u128, State)>,
        usize,
        Vec<Shape>,
    );
    let table: Vec<Case<'_>> = vec![
        ("no pulses", vec![], vec![], 10, vec![]),
        (
            "two hosts, newest first",
            vec![
                pulse(1, 1, "host-a", "claude-code", 10),
                pulse(2, 2, "host-b", "codex", 20),
            ],
            vec![(1, Live), (2, Idle)],
            10,
            vec![
                expect("host-b", None, 20, (0, 1, 0), &[2], &["codex@v20"]),
                expect("host-a", None, 10, (1, 0, 0), &[1], &["claude-code@v10"]),
            ],
        ),
        (
            "one client per name, from its newest episode; clients in name order",
            vec![
                pulse(1, 1, "host-a", "codex", 10),
                pulse(2, 2, "host-a", "codex", 30),
                pulse(3, 3, "host-a", "claude-code", 20),
            ],
            vec![(1, Idle), (2, Idle), (3, Idle)],
            10,
            vec![expect(
                "host-a",
                None,
                30,
                (0, 3, 0),
                &[2, 3, 1],
                &["claude-code@v20", "codex@v30"],
            )],
        ),
        (
            "newest label that was set wins; an unlabelled newer pulse keeps it",
            vec![
                labelled("old name", pulse(1, 1, "host-a", "codex", 10)),
                labelled("new name", pulse(2, 1, "host-a", "codex", 20)),
                pulse(3, 1, "host-a", "codex", 30),
            ],
            vec![(1, Live)],
            10,
            vec![expect(
                "host-a",
                Some("new name"),
                30,
                (1, 0, 0),
                &[1],
                &["codex@v30"],
            )],
        ),
        (
            "closed sessions are neither listed nor counted",
            vec![
                pulse(1, 1, "host-a", "codex", 10),
                pulse(2, 2, "host-a", "codex", 20),
                pulse(3, 3, "host-a", "codex", 30),
            ],
            vec![(1, Disconnected), (2, Closed), (3, Closed)],
            10,
            vec![expect("host-a", None, 30, (0, 0, 1), &[1], &["codex@v30"])],
        ),
        (
            "live first, then by last pulse on this host",
            vec![
                pulse(1, 1, "host-a", "codex", 50),
                pulse(2, 2, "host-a", "codex", 10),
                pulse(3, 3, "host-a", "codex", 40),
                pulse(4, 4, "host-a", "codex", 30),
            ],
            vec![(1, Disconnected), (2, Live), (3, Idle), (4, Live)],
            10,
            vec![expect(
                "host-a",
                None,
                50,
                (2, 1, 1),
                &[4, 2, 1, 3],
                &["codex@v50"],
            )],
        ),
        (
            "a session on two hosts shows on both, with its one state",
            vec![
                pulse(1, 1, "host-a", "codex", 10),
                pulse(2, 1, "host-b", "codex", 20),
            ],
            vec![(1, Idle)],
            10,
            vec![
                expect("host-b", None, 20, (0, 1, 0), &[1], &["codex@v20"]),
                expect("host-a", None, 10, (0, 1, 0), &[1], &["codex@v10"]),
            ],
        ),
        (
            "the limit keeps the most recently pulsed; ties by host id",
            vec![
                pulse(1, 1, "host-c", "codex", 10),
                pulse(2, 2, "host-b", "codex", 20),
                pulse(3, 3, "host-a", "codex", 20),
            ],
            vec![(1, Idle), (2, Idle), (3, Idle)],
            2,
            vec![
                expect("host-a", None, 20, (0, 1, 0), &[3], &["codex@v20"]),
                expect("host-b", None, 20, (0, 1, 0), &[2], &["codex@v20"]),
            ],
        ),
        (
            "a session the read did not see is left out",
            vec![pulse(1, 9, "host-a", "codex", 10)],
            vec![],
            10,
            vec![expect("host-a", None, 10, (0, 0, 0), &[], &["codex@v10"])],
        ),
    ];
    for (name, pulses, states, limit, expected) in table {
        let got: Vec<Shape> = machines(&pulses, &seen(&states), limit)
            .iter()
            .map(shape)
            .collect();
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn a_session_shows_its_newest_episode_on_the_host() {
    let pulses = vec![
        pulse(1, 1, "host-a", "codex", 10),
        pulse(2, 1, "host-a", "codex", 30),
        pulse(3, 1, "host-a", "codex", 20),
    ];
    let listed = machines(&pulses, &seen(&[(1, State::Live)]), 10);
    let session = &listed[0].sessions[0];
    assert_eq!(session.pid, 102);
    assert_eq!(session.last_pulse_at, at(30));
    assert_eq!(session.session_id, "s1");
}

#[test]
fn a_machine_lists_at_most_fifty_sessions_but_counts_all() {
    let pulses: Vec<HostPulse> = (0..60)
        .map(|n| pulse(n, n, "host-a", "codex", n as i64))
        .collect();
    let states: Vec<(u128, State)> = (0..60).map(|n| (n, State::Idle)).collect();
    let listed = machines(&pulses, &seen(&states), 10);
    assert_eq!(listed[0].idle, 60);
    assert_eq!(listed[0].sessions.len(), MAX_SESSIONS_PER_MACHINE);
    assert_eq!(listed[0].sessions[0].session_run_id, run(59));
}

#[test]
fn limits_and_since() {
    let table = [(0, Some(100)), (1, Some(1)), (200, Some(200)), (201, None)];
    for (requested, expected) in table {
        assert_eq!(limit(requested).ok(), expected, "{requested}");
    }
    let now = at(0);
    assert_eq!(since(None, now), Ok(now - Duration::days(7)));
    assert_eq!(since(Some(now), now), Ok(now));
    assert!(since(Some(now + Duration::milliseconds(1)), now).is_err());
    let before_2000 = DateTime::from_timestamp(946_684_799, 0).expect("valid");
    assert!(since(Some(before_2000), now).is_err());
    let at_2000 = DateTime::from_timestamp(946_684_800, 0).expect("valid");
    assert_eq!(since(Some(at_2000), now), Ok(at_2000));
}
