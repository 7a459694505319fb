//! The usage context end to end with the real parts: the real Claude Code 2.1.332 with
//! `baton-hook` installed, against a real Baton and the Messages stand-in, is in the usage read
//! with exactly the usage the stand-in issued — while the session runs (its sidecar's tail) and
//! after it ends (SessionEnd's flush) — and its tree shows the subagent it spawned; the real
//! `baton-hook ingest` over the fixture transcripts in a fake HOME backfills through the real
//! gateway to the totals `baton-hook usage --json` reports on the same files, per day and per
//! model, and a second backfill sends nothing new.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use baton_tests::hook::HookHome;
use baton_tests::messages_standin::{Caller, Issued, MessagesStandIn, Reply, Script};
use baton_tests::poll::until;
use baton_tests::{Baton, Client, Tenant};

use crate::claude_hooks_real::{ClaudeScratch, claude_scratch};
use crate::claude_real::claude_binary;
use crate::usage_hook::lay_out;

const KINDS: [&str; 5] = [
    "input",
    "output",
    "cacheRead",
    "cacheWrite5m",
    "cacheWrite1h",
];

/// The five kinds of what the stand-in issued for requests Claude Code writes to its transcript.
fn issued_tokens(issued: &[Issued]) -> Value {
    let mut sums = [0u64; 5];
    for response in issued
        .iter()
        .filter(|response| matches!(response.caller, Caller::Main | Caller::Subagent))
    {
        let usage = response.usage;
        for (sum, count) in sums.iter_mut().zip([
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write_5m,
            usage.cache_write_1h,
        ]) {
            *sum += count;
        }
    }
    // Claude Code states no reasoning split (thinking is part of output): the read says 0.
    json!({"input": sums[0], "output": sums[1], "cacheRead": sums[2],
        "cacheWrite5m": sums[3], "cacheWrite1h": sums[4], "total": sums.iter().sum::<u64>(),
        "reasoning": 0})
}

async fn usage_total(client: &Client) -> Value {
    let answer = client.get("/api/v1/usage?groupBy=model").await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["total"]["tokens"].clone()
}

#[tokio::test]
async fn a_real_claude_session_is_in_the_usage_read_while_it_runs_and_after_it_ends() {
    claude_binary();
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("usage-real").await;
    let gate = std::env::temp_dir().join(format!("usage-gate-{}", uuid::Uuid::new_v4().simple()));
    let standin = MessagesStandIn::start(Script {
        main: vec![
            Reply::Spawn {
                subagent_type: "general-purpose".to_string(),
                description: "Count the files".to_string(),
                prompt: "Count the files in this folder.".to_string(),
                model: Some("haiku".to_string()),
            },
            // The turn's last answer waits: the session is running while the test reads.
            Reply::After {
                gate: gate.clone(),
                reply: Box::new(Reply::Text("The subagent found no files.".to_string())),
            },
        ],
        subagent: vec![Reply::Text("There are no files.".to_string())],
    })
    .await;
    let scratch = claude_scratch(&baton, &tenant.api_key, &standin);
    scratch.install().await;
    let session_id = uuid::Uuid::new_v4().to_string();
    let child = scratch.claude("Delegate the count.", &["--session-id", &session_id]);

    // Mid-session: the spawn and the subagent's answer are written; the last answer is held.
    let held = until(
        Duration::from_secs(120),
        "the held request",
        || async {
            let seen = standin
                .requests()
                .iter()
                .filter(|request| request.caller == Some(Caller::Main))
                .count();
            json!(seen)
        },
        |seen| seen.as_u64() >= Some(2),
    )
    .await;
    assert!(held.as_u64() >= Some(2));
    // The held answer is issued (counted by the stand-in) before its gate opens; Claude Code
    // has not written it yet.
    let issued = standin.issued();
    let held_sequence = issued
        .iter()
        .filter(|response| response.caller == Caller::Main)
        .map(|response| response.sequence)
        .max()
        .expect("main responses");
    let written: Vec<Issued> = issued
        .into_iter()
        .filter(|response| response.sequence != held_sequence)
        .collect();
    let so_far = issued_tokens(&written);
    assert!(so_far["total"].as_u64() > Some(0));
    let live = until(
        Duration::from_secs(60),
        "the sidecar's upload mid-session",
        || usage_total(&client),
        |total| *total == so_far,
    )
    .await;
    assert_eq!(
        live, so_far,
        "while it runs: exactly what was issued so far"
    );
    let probe = client
        .post(
            "/api/v1/agent-sessions/heartbeat",
            &json!({"agent": "claude-code", "sessionId": session_id}),
        )
        .await;
    assert_eq!(probe.status, 200, "{:?}", probe.body);
    let run_id = probe.body["sessionRunId"]
        .as_str()
        .expect("run")
        .to_string();

    std::fs::write(&gate, "go").expect("release the last answer");
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("claude finished")
        .expect("claude ran");
    assert!(output.status.success(), "{output:?}");
    let all = issued_tokens(&standin.issued());
    assert_ne!(all, so_far, "the last answer added usage");
    let ended = until(
        Duration::from_secs(60),
        "SessionEnd's flush",
        || usage_total(&client),
        |total| *total == all,
    )
    .await;
    assert_eq!(ended, all, "after it ends: exactly what was issued");

    let tree = client
        .get(&format!("/api/v1/agent-sessions/{run_id}/tree"))
        .await;
    assert_eq!(tree.status, 200, "{:?}", tree.body);
    let agents = tree.body["agents"].as_array().expect("agents").clone();
    let kinds: Vec<&str> = agents.iter().filter_map(|a| a["kind"].as_str()).collect();
    assert_eq!(kinds, ["main", "subagent"], "{}", tree.body);
    let subagent = &agents[1];
    assert_eq!(subagent["subagentType"], "general-purpose");
    assert_eq!(
        subagent["status"], "completed",
        "its spawn's result is in the parent's transcript"
    );
    assert_eq!(
        agents[0]["rolledUp"]["tokens"], all,
        "the tree rolls every token up"
    );
    let _ = std::fs::remove_file(&gate);
}

/// `baton-hook usage <report> --json --timezone UTC` on the home's transcripts.
async fn local_report(home: &HookHome, report: &str) -> Value {
    let output = home
        .command(&["usage", report, "--json", "--timezone", "UTC"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("baton-hook usage");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("usage json")
}

pub(crate) async fn ingest(home: &HookHome) -> Value {
    let output = home
        .command(&["ingest", "--json"])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("baton-hook ingest");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert_eq!(output.status.code(), Some(0), "{summary} {output:?}");
    summary
}

/// A Baton open to any request rate, a tenant `name`, and its hook home with `files` laid out
/// and all ingested.
pub(crate) async fn backfilled(name: &str, files: fn(&Path)) -> (Baton, Tenant, HookHome) {
    let baton = Baton::unthrottled().await;
    let tenant = baton.create_tenant(name).await;
    let home = HookHome::new(&baton.base_url, &tenant.api_key);
    files(&home.home);
    ingest_all(&home).await;
    (baton, tenant, home)
}

/// A first `baton-hook ingest` of `home`, which sends rows and fails none.
pub(crate) async fn ingest_all(home: &HookHome) {
    let first = ingest(home).await;
    assert!(first["rowsSent"].as_u64() > Some(0), "{first}");
    assert_eq!(first["failures"], json!([]), "{first}");
}

/// The usage read's range over the dates `days` is keyed by: the first, to the day after the last.
pub(crate) fn day_range<V>(days: &BTreeMap<String, V>) -> (String, String) {
    let day =
        |key: Option<&String>| -> chrono::NaiveDate { key.expect("a day").parse().expect("date") };
    let from = day(days.keys().next());
    let to = day(days.keys().last()) + chrono::Duration::days(1);
    (from.to_string(), to.to_string())
}

/// The figures both sides report, keyed: tokens by kind, unpriced tokens, cost in micro-dollars.
fn figures(figures: &Value) -> (Value, u64, i64) {
    let tokens = KINDS
        .iter()
        .chain(["total"].iter())
        .map(|kind| (kind.to_string(), figures["tokens"][kind].clone()))
        .collect::<serde_json::Map<_, _>>();
    let cost = figures["costUsd"].as_f64().expect("costUsd");
    (
        Value::Object(tokens),
        figures["unpricedTokens"].as_u64().expect("unpricedTokens"),
        (cost * 1e6).round() as i64,
    )
}

/// The server's usage groups over `[from, to)` days (UTC): each group's key and figures.
pub(crate) async fn usage_groups(
    client: &Client,
    group_by: &str,
    from: &str,
    to: &str,
) -> Vec<(String, Value)> {
    let answer = client
        .get(&format!(
            "/api/v1/usage?groupBy={group_by}&timezone=UTC&from={from}T00:00:00Z&to={to}T00:00:00Z"
        ))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|group| {
            (
                group["key"].as_str().expect("key").to_string(),
                group["figures"].clone(),
            )
        })
        .collect()
}

async fn server_groups(
    client: &Client,
    group_by: &str,
    from: &str,
    to: &str,
) -> BTreeMap<String, (Value, u64, i64)> {
    usage_groups(client, group_by, from, to)
        .await
        .into_iter()
        .map(|(key, group)| (key, figures(&group)))
        .collect()
}

#[tokio::test]
async fn a_fixture_backfill_totals_what_baton_hook_usage_reports_per_day_and_model() {
    let (baton, tenant, home) = backfilled("backfill", lay_out).await;
    let client = baton.client(&tenant);

    let daily = local_report(&home, "daily").await;
    let local_days: BTreeMap<String, (Value, u64, i64)> = daily["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            (
                row["date"].as_str().expect("date").to_string(),
                figures(row),
            )
        })
        .collect();
    assert!(local_days.len() >= 2, "the fixtures span several days");
    let (from, to) = day_range(&local_days);
    assert_eq!(
        server_groups(&client, "day", &from, &to).await,
        local_days,
        "per day, the server's totals are the local report's"
    );
    let models = local_report(&home, "models").await;
    // The server groups by the normalised model id (`claude-opus-4-5-20251101` and
    // `claude-opus-4-5` are one model, as the price table sees them); the local report by the id
    // as written. Models with no tokens (`<synthetic>`) are left out on both sides.
    let mut merged: BTreeMap<String, Value> = BTreeMap::new();
    for row in models["rows"].as_array().expect("rows") {
        let model =
            baton_transcripts::pricing::normalize_model(row["model"].as_str().expect("model"));
        let entry = merged
            .entry(model)
            .or_insert_with(|| json!({"tokens": {}, "costUsd": 0.0, "unpricedTokens": 0}));
        for kind in KINDS.iter().chain(["total"].iter()) {
            let sum = entry["tokens"][kind].as_u64().unwrap_or(0)
                + row["tokens"][kind].as_u64().expect("count");
            entry["tokens"][*kind] = json!(sum);
        }
        let cost =
            entry["costUsd"].as_f64().unwrap_or(0.0) + row["costUsd"].as_f64().expect("cost");
        entry["costUsd"] = json!(cost);
        let unpriced = entry["unpricedTokens"].as_u64().unwrap_or(0)
            + row["unpricedTokens"].as_u64().expect("unpriced");
        entry["unpricedTokens"] = json!(unpriced);
    }
    let priced_only = |groups: BTreeMap<String, (Value, u64, i64)>| {
        groups
            .into_iter()
            .filter(|(_, (tokens, _, _))| tokens["total"] != 0)
            .collect::<BTreeMap<_, _>>()
    };
    let local_models = priced_only(
        merged
            .iter()
            .map(|(model, sums)| (model.clone(), figures(sums)))
            .collect(),
    );
    assert_eq!(
        priced_only(server_groups(&client, "model", &from, &to).await),
        local_models,
        "per model, the server's totals are the local report's"
    );

    let before = server_groups(&client, "day", &from, &to).await;
    let second = ingest(&home).await;
    assert_eq!(second["rowsSent"], 0, "{second}");
    assert_eq!(second["nothingNew"], true, "{second}");
    assert_eq!(server_groups(&client, "day", &from, &to).await, before);
}
