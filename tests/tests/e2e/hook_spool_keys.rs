//! Spool and drain for Codex and Cursor as for Claude Code, with each spooled line's
//! idempotence key recorded by the server (issue 26, R11): a line sent again is visible there
//! as a resend and counted, where the answer alone (a repeated close reads "already closed")
//! could never show it.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use baton_tests::hook::HookHome;
use baton_tests::recording_proxy::{Recorded, RecordingProxy};
use baton_tests::{Baton, Tenant};

/// Nothing listens here: a server that is down.
const DOWN: &str = "http://127.0.0.1:9";

/// A turn end and a session end as `harness` sends them.
fn payloads(harness: &str, session: &str) -> [(&'static str, Value); 2] {
    match harness {
        "cursor" => [
            (
                "stop",
                json!({"conversation_id": session, "session_id": session, "hook_event_name": "stop",
                    "status": "completed", "loop_count": 0, "workspace_roots": ["/w/app"]}),
            ),
            (
                "session-end",
                json!({"conversation_id": session, "session_id": session, "hook_event_name": "sessionEnd",
                    "reason": "completed", "workspace_roots": ["/w/app"]}),
            ),
        ],
        "codex" => [
            (
                "stop",
                json!({"session_id": session, "hook_event_name": "Stop", "turn_id": "t-1",
                    "model": "gpt-5.5", "cwd": "/w/app", "stop_hook_active": false,
                    "last_assistant_message": "done"}),
            ),
            (
                "session-end",
                json!({"session_id": session, "hook_event_name": "SessionEnd", "reason": "other",
                    "cwd": "/w/app", "model": "gpt-5.5"}),
            ),
        ],
        _ => [
            (
                "stop",
                json!({"session_id": session, "hook_event_name": "Stop",
                    "last_assistant_message": "done"}),
            ),
            (
                "session-end",
                json!({"session_id": session, "hook_event_name": "SessionEnd", "reason": "other"}),
            ),
        ],
    }
}

/// The lifecycle calls the proxy saw (the usage context's delivery uploads drain from their
/// own spool and are not what these tests are about).
fn lifecycle(proxy: &RecordingProxy) -> Vec<Recorded> {
    proxy
        .requests()
        .into_iter()
        .filter(|request| request.path.starts_with("/api/v1/agent-sessions/"))
        .collect()
}

fn key_of(entry: &Value) -> String {
    entry["key"]
        .as_str()
        .unwrap_or_else(|| panic!("a spooled line without a key: {entry}"))
        .to_string()
}

/// The server's record: key → resends, for the tenant.
async fn recorded(admin: &sqlx::PgPool, tenant: &Tenant) -> HashMap<String, i32> {
    let tenant: uuid::Uuid = tenant.tenant_id.parse().expect("tenant id");
    sqlx::query_as::<_, (String, i32)>(
        "SELECT key::text, resends FROM gateway.call_keys WHERE tenant_id = $1",
    )
    .bind(tenant)
    .fetch_all(admin)
    .await
    .expect("call keys")
    .into_iter()
    .collect()
}

/// For each harness: a turn end and a session end spooled while the server is down, then a
/// drain whose first answer is lost after the server committed it (the proxy forwards the
/// heartbeat and answers 503). The next drain sends that line again with the same key: the
/// server records one resend for it and none for the close, and the session is closed once.
#[tokio::test]
async fn a_spooled_call_whose_answer_was_lost_is_resent_with_its_key_and_counted_once() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("spool-keys").await;
    let admin = baton.admin().await;
    let mut resent_total = 0;
    for harness in ["claude-code", "codex", "cursor"] {
        let session = format!("lost-{harness}");
        let run = client.open_startup(harness, &session).await;
        let mut home = HookHome::new(DOWN, &tenant.api_key);
        for (word, payload) in payloads(harness, &session) {
            let ran = home.run(&[harness, word], &payload).await;
            assert_eq!(ran.code, Some(0), "{harness} {word}: {ran:?}");
        }
        let spooled = home.spooled();
        let paths: Vec<&str> = spooled
            .iter()
            .map(|entry| entry["path"].as_str().expect("path"))
            .collect();
        assert_eq!(
            paths,
            [
                "/api/v1/agent-sessions/heartbeat",
                "/api/v1/agent-sessions/close"
            ],
            "{harness}"
        );
        let (heartbeat, close) = (key_of(&spooled[0]), key_of(&spooled[1]));
        assert_ne!(heartbeat, close, "{harness}: a key per line");

        let proxy = RecordingProxy::start(&baton.base_url).await;
        home.set("BATON_URL", &proxy.url);
        proxy.lose_answers(1);
        let first = home.command(&["drain"]).status().await.expect("drain");
        assert!(first.success());
        assert_eq!(
            home.spooled().len(),
            2,
            "{harness}: a lost answer keeps its line"
        );
        let second = home.command(&["drain"]).status().await.expect("drain");
        assert!(second.success());
        assert!(home.spooled().is_empty(), "{harness}: all delivered");

        let sent: Vec<Option<String>> = lifecycle(&proxy).into_iter().map(|r| r.key).collect();
        assert_eq!(
            sent,
            [
                Some(heartbeat.clone()),
                Some(heartbeat.clone()),
                Some(close.clone())
            ],
            "{harness}: the heartbeat twice with its own key, then the close"
        );
        let record = recorded(&admin, &tenant).await;
        assert_eq!(record.get(&heartbeat), Some(&1), "{harness}: {record:?}");
        assert_eq!(record.get(&close), Some(&0), "{harness}: {record:?}");
        resent_total += 1;
        let row = client.get(&format!("/api/v1/agent-sessions/{run}")).await;
        assert_eq!(row.status, 200, "{:?}", row.body);
        assert!(row.body["closedAt"].is_string(), "{harness}: closed");
        assert_eq!(row.body["activationEpoch"], 1, "{harness}: closed once");
    }
    let total: i64 = recorded(&admin, &tenant)
        .await
        .values()
        .map(|resends| i64::from(*resends))
        .sum();
    assert_eq!(total, resent_total, "one resend per lost answer, no more");
}

/// Codex and Cursor, as the Claude Code test in `hook_spool.rs`: calls spooled while the
/// server was down, drains SIGKILLed mid-way, then a last drain. Nothing is lost, every call
/// carries its line's key, each kill re-sends at most the call it was on, and the server's
/// count of resends is exactly the repeats that reached it after a success (at most the repeats
/// the proxy saw: a repeat whose first copy died before the server answered is a first
/// delivery there).
#[tokio::test]
async fn codex_and_cursor_drains_killed_mid_way_lose_nothing_and_each_resend_is_counted() {
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("spool-keys-kill").await;
    let admin = baton.admin().await;
    let mut resends_before = 0;
    for harness in ["codex", "cursor"] {
        let sessions: Vec<String> = (0..40).map(|n| format!("{harness}-{n:02}")).collect();
        for session in &sessions {
            client.open_startup(harness, session).await;
        }
        let mut home = HookHome::new(DOWN, &tenant.api_key);
        for _round in 0..3 {
            for session in &sessions {
                for (word, payload) in payloads(harness, session) {
                    assert_eq!(home.run(&[harness, word], &payload).await.code, Some(0));
                }
            }
        }
        let spooled = home.spooled();
        assert_eq!(spooled.len(), 240, "{harness}");
        let keys: HashSet<String> = spooled.iter().map(key_of).collect();
        assert_eq!(
            keys.len(),
            spooled.len(),
            "{harness}: every line its own key"
        );

        let proxy = RecordingProxy::start(&baton.base_url).await;
        home.set("BATON_URL", &proxy.url);
        let killed_mid_way = home.kill_drains(&proxy, 12).await;
        assert!(killed_mid_way > 0, "{harness}: the kills landed mid-way");
        let finished = home.command(&["drain"]).status().await.expect("drain");
        assert!(finished.success());
        assert!(home.spooled().is_empty(), "{harness}: every call delivered");

        let sent = lifecycle(&proxy);
        let mut times: HashMap<String, usize> = HashMap::new();
        for request in &sent {
            let key = request
                .key
                .clone()
                .expect("every drained call carries its key");
            assert!(keys.contains(&key), "{harness}: a key that was spooled");
            *times.entry(key).or_default() += 1;
        }
        assert_eq!(times.len(), keys.len(), "{harness}: no line lost");
        let repeats = sent.len() - keys.len();
        assert!(
            repeats <= killed_mid_way,
            "{harness}: {repeats} repeats for {killed_mid_way} kills mid-way"
        );
        let record = recorded(&admin, &tenant).await;
        let mine: HashMap<&String, &i32> = record
            .iter()
            .filter(|(key, _)| keys.contains(*key))
            .collect();
        assert_eq!(
            mine.len(),
            keys.len(),
            "{harness}: the server recorded every key"
        );
        let resends: usize = mine.values().map(|resends| **resends as usize).sum();
        for (key, resent) in &mine {
            assert!(
                (**resent as usize) < times[*key],
                "{harness}: {key} counted {resent} resends, sent {} times",
                times[*key]
            );
        }
        println!(
            "{harness}: kills mid-way {killed_mid_way}, calls sent {}, repeats {repeats}, resends recorded {resends}",
            sent.len()
        );
        resends_before += resends;
    }
    let total: usize = recorded(&admin, &tenant)
        .await
        .values()
        .map(|resends| *resends as usize)
        .sum();
    assert_eq!(total, resends_before);
}
