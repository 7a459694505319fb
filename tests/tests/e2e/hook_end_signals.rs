//! SessionEnd runs while its client exits: Gemini CLI sends SIGTERM to a hook that outlives its
//! timeout, and a terminal whose leading client has gone sends its foreground group SIGHUP.
//! Either used to end the hook before it had spooled the close, and the session never ended
//! (seen as the real Gemini CLI's `/quit` close never arriving under the suite's load). The
//! hook now catches both at SessionEnd and finishes its appends.

use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use baton_tests::hook::HookHome;

/// Nothing listens here: the close stays in the spool, where the test reads it.
const DOWN: &str = "http://127.0.0.1:9";

/// Whether `pid` has a handler installed for `signal` (`SigCgt` in `/proc/<pid>/status`).
fn catches(pid: u32, signal: Signal) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (signal as i32 - 1)) != 0)
}

#[tokio::test]
async fn a_session_end_sent_sigterm_and_sighup_mid_run_still_spools_its_close() {
    let home = HookHome::new(DOWN, "bk_unused");
    let mut child = home
        .command(&["gemini", "session-end"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn baton-hook");
    let pid = child.id().expect("pid");
    // The hook is waiting for its payload; once it has put its handlers up, the harness's
    // timeout and the terminal's hang-up arrive.
    let started = Instant::now();
    while !(catches(pid, Signal::SIGTERM) && catches(pid, Signal::SIGHUP)) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the SessionEnd hook never caught SIGTERM and SIGHUP"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let target = Pid::from_raw(pid as i32);
    kill(target, Signal::SIGTERM).expect("SIGTERM");
    kill(target, Signal::SIGHUP).expect("SIGHUP");

    let payload = json!({"session_id": "quitting", "hook_event_name": "SessionEnd",
        "reason": "exit", "cwd": "/w/app"});
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(payload.to_string().as_bytes())
        .await
        .expect("payload");
    drop(stdin);
    let status = child.wait().await.expect("the hook ran");
    assert_eq!(
        status.code(),
        Some(0),
        "it finished, not killed: {status:?}"
    );

    let closes: Vec<_> = home
        .spooled()
        .into_iter()
        .filter(|entry| entry["path"] == "/api/v1/agent-sessions/close")
        .collect();
    assert_eq!(closes.len(), 1, "the close is spooled once: {closes:?}");
    assert_eq!(closes[0]["body"]["sessionId"], "quitting");
    assert!(
        home.log_lines()
            .iter()
            .any(|line| line.contains("end_outlived_a_signal")),
        "the run says a signal arrived: {:?}",
        home.log_lines()
    );
}
