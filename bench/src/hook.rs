//! Hook latency as a whole process, spawn to exit, over 200 runs each against a local gateway:
//! `baton-hook` at Stop (one heartbeat) and at SessionEnd (one durable spool append), with two
//! baselines measured in the same run — `true` (the process-spawn floor) and `curl` posting
//! the same heartbeat (the shell-script hook most tools use) — and the prompt hook, whose only
//! work is the delivery record every run also writes, so that record's cost shows on its own.
//! Runs are interleaved so drift hits every variant alike. The bar (issue 25): Stop's median at
//! most 0.4x curl's.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use baton_tests::Baton;
use baton_tests::hook::HookHome;

use crate::stats::{millis, percentile};

const RUNS: usize = 200;

struct Variant {
    label: &'static str,
    latencies: Vec<Duration>,
}

fn timed(mut command: Command, stdin: Option<&[u8]>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.spawn()?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(bytes)?;
    }
    let status = child.wait()?;
    let elapsed = started.elapsed();
    anyhow::ensure!(status.success(), "a measured process failed: {status}");
    Ok(elapsed)
}

pub async fn run() -> anyhow::Result<()> {
    println!("hook: spawn-to-exit latency, {RUNS} runs per variant, interleaved");
    let baton = Baton::start_with(&[
        ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "10000000"),
        ("BATON_LOG", "warn,baton=info"),
        ("BATON_TEST_CLOCK", "0"),
    ])
    .await;
    let tenant = baton.create_tenant("bench-hook").await;
    let client = baton.client(&tenant);
    // Both sessions the measured hooks name are open: a SessionEnd of a session the server
    // never saw is refused (404), which the hook's detached drain logs as a failure.
    let mut end_run = String::new();
    for session in ["bench-stop", "bench-end"] {
        let open = json!({"agent": "claude-code", "sessionId": session, "source": "startup"});
        let answer = client.post("/api/v1/agent-sessions/open", &open).await;
        anyhow::ensure!(answer.status == 200, "open {session}: {:?}", answer.body);
        if session == "bench-end" {
            end_run = answer.body["sessionRunId"]
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
    }
    let home = std::sync::Arc::new(HookHome::new(&baton.base_url, &tenant.api_key));
    let measuring = home.clone();
    let stop =
        json!({"session_id": "bench-stop", "hook_event_name": "Stop", "stop_hook_active": false,
        "cwd": "/w/app", "last_assistant_message": "Done: the migration is applied."})
        .to_string();
    let end = json!({"session_id": "bench-end", "hook_event_name": "SessionEnd", "reason": "other",
        "cwd": "/w/app"})
    .to_string();
    let heartbeat = json!({"agent": "claude-code", "sessionId": "bench-stop",
        "lastMessageExcerpt": "Done: the migration is applied."})
    .to_string();
    // What every hook run also pays, measured alone: the identifier-only delivery record, a
    // durable append to the usage spool (the prompt hook does nothing else).
    let prompt = json!({"session_id": "bench-stop", "hook_event_name": "UserPromptSubmit",
        "cwd": "/w/app", "prompt": "apply the migration"})
    .to_string();
    let url = format!("{}/api/v1/agent-sessions/heartbeat", baton.base_url);
    let key_header = format!("X-API-Key: {}", tenant.api_key);

    let measured = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<Variant>> {
        let home = measuring;
        let mut variants: Vec<Variant> = [
            "true (spawn floor)",
            "curl POST heartbeat",
            "baton-hook Stop (heartbeat)",
            "baton-hook SessionEnd (spool)",
            "baton-hook prompt (delivery record)",
        ]
        .into_iter()
        .map(|label| Variant {
            label,
            latencies: Vec::with_capacity(RUNS),
        })
        .collect();
        // Warm the page cache, the connection path and the server's pools.
        for _ in 0..10 {
            timed(
                home.std_command(&["claude-code", "stop"]),
                Some(stop.as_bytes()),
            )?;
        }
        for _ in 0..RUNS {
            variants[0]
                .latencies
                .push(timed(Command::new("true"), None)?);
            let mut curl = Command::new("curl");
            curl.args([
                "-s",
                "-f",
                "-o",
                "/dev/null",
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "-H",
                &key_header,
                "--data",
                &heartbeat,
                &url,
            ]);
            variants[1].latencies.push(timed(curl, None)?);
            variants[2].latencies.push(timed(
                home.std_command(&["claude-code", "stop"]),
                Some(stop.as_bytes()),
            )?);
            variants[3].latencies.push(timed(
                home.std_command(&["claude-code", "session-end"]),
                Some(end.as_bytes()),
            )?);
            variants[4].latencies.push(timed(
                home.std_command(&["claude-code", "user-prompt-submit"]),
                Some(prompt.as_bytes()),
            )?);
        }
        anyhow::ensure!(
            home.log_lines().is_empty(),
            "the hook logged failures: {:?}",
            home.log_lines()
        );
        Ok(variants)
    })
    .await??;
    // Each SessionEnd appended to the spool; the detached drains deliver them. What shows that
    // they did: the spool empties, nothing was logged, and the server holds the session closed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let row = client
            .get(&format!("/api/v1/agent-sessions/{end_run}"))
            .await;
        let closed =
            row.body["closedAt"].is_string() || row.body["session"]["closedAt"].is_string();
        if closed && home.spooled().is_empty() {
            break;
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the spooled SessionEnds were not delivered: {:?}, {} pending",
            row.body,
            home.spooled().len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    anyhow::ensure!(
        home.log_lines().is_empty(),
        "the hook logged failures: {:?}",
        home.log_lines()
    );

    let mut medians = Vec::new();
    for variant in &measured {
        let mut sorted = variant.latencies.clone();
        sorted.sort_unstable();
        let median = percentile(&sorted, 0.5);
        medians.push(median);
        println!(
            "  {:<34} median {:>6.2} ms   p90 {:>6.2} ms   p99 {:>6.2} ms",
            variant.label,
            millis(median),
            millis(percentile(&sorted, 0.9)),
            millis(percentile(&sorted, 0.99)),
        );
    }
    let (floor, curl, stop, end, record) =
        (medians[0], medians[1], medians[2], medians[3], medians[4]);
    println!(
        "  Stop vs curl: {:.2}x curl's median (bar: <= 0.40x); Stop median {:.2} ms; \
         SessionEnd median {:.2} ms; delivery record alone {:.2} ms over the spawn floor {:.2} ms \
         (at Stop it runs beside the heartbeat)",
        stop.as_secs_f64() / curl.as_secs_f64().max(f64::EPSILON),
        millis(stop),
        millis(end),
        millis(record.saturating_sub(floor)),
        millis(floor)
    );
    Ok(())
}
