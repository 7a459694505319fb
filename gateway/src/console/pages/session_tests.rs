//! How the session page words an episode's end, for each way a process can stop.

use super::*;

#[test]
fn an_episode_without_an_end_reads_outcome_unknown() {
    // (ended, reason, newest, session state, contains)
    let table = [
        (
            true,
            Some("session_closed"),
            true,
            "closed",
            "ended with the session",
        ),
        (
            true,
            Some("process_exited"),
            true,
            "disconnected",
            "outcome unknown",
        ),
        (true, Some("stopped"), false, "live", "sidecar stopped"),
        (false, None, true, "disconnected", "outcome unknown"),
        (false, None, false, "disconnected", "running"),
        (false, None, true, "live", "running"),
        (false, None, true, "closed", "no end reported"),
    ];
    for (ended, reason, newest, state, expected) in table {
        let text = episode_end(ended, reason, newest, state);
        assert!(
            text.contains(expected),
            "{ended} {reason:?} {newest} {state}: {text}"
        );
    }
}
