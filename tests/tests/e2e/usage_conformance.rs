//! The server agrees with the machine on real transcripts: the whole conformance corpus
//! (`fixtures/conformance/`: 47 Claude Code sessions and 29 Codex rollouts from public
//! repositories) laid out in a fake HOME, backfilled by the real `baton-hook ingest` through the
//! real gateway, gives the same figures per day, per model, per session and per agent of each
//! tree as `baton-hook usage --json` on the same files; a second backfill sends nothing and
//! changes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use baton_kit::config::Secret;
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_client::UsageClient;
use serde_json::Value;

use baton_tests::Client;
use baton_tests::hook::HookHome;

use crate::usage_real::{backfilled, day_range, ingest, usage_groups};

const KINDS: [&str; 6] = [
    "input",
    "output",
    "cacheRead",
    "cacheWrite5m",
    "cacheWrite1h",
    "total",
];

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// Every source's `projects/` under `~/.claude/projects`, every `sessions/` under
/// `~/.codex/sessions`.
pub(crate) fn lay_out_corpus(home: &Path) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/conformance");
    for (harness, inner, target) in [
        ("claude-code", "projects", ".claude/projects"),
        ("codex", "sessions", ".codex/sessions"),
    ] {
        let target = home.join(target);
        std::fs::create_dir_all(&target).expect("mkdir");
        for source in std::fs::read_dir(corpus.join(harness)).expect("corpus") {
            let source = source.expect("source").path();
            if source.join(inner).is_dir() {
                copy_tree(&source.join(inner), &target);
            }
        }
    }
}

pub(crate) async fn local(home: &HookHome, words: &[&str]) -> Value {
    let output = home
        .command(&[&["usage"], words, &["--json", "--timezone", "UTC"]].concat())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("baton-hook usage");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("usage json")
}

/// Token kinds of a figures object (REST and local JSON share the names).
fn tokens(figures: &Value) -> Vec<u64> {
    KINDS
        .iter()
        .map(|kind| figures["tokens"][kind].as_u64().unwrap_or(0))
        .collect()
}

async fn server_groups(
    client: &Client,
    group_by: &str,
    from: &str,
    to: &str,
) -> BTreeMap<String, Vec<u64>> {
    usage_groups(client, group_by, from, to)
        .await
        .into_iter()
        .map(|(key, group)| (key, tokens(&group)))
        .filter(|(_, kinds)| kinds.iter().any(|k| *k > 0))
        .collect()
}

#[tokio::test]
async fn the_conformance_corpus_uploaded_gives_the_local_figures_per_day_model_session_and_tree() {
    let (baton, tenant, home) = backfilled("conformance", lay_out_corpus).await;
    let client = baton.client(&tenant);
    // Per day.
    let daily = local(&home, &["daily"]).await;
    let local_days: BTreeMap<String, Vec<u64>> = daily["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| (row["date"].as_str().expect("date").to_string(), tokens(row)))
        .filter(|(_, kinds)| kinds.iter().any(|k| *k > 0))
        .collect();
    assert!(local_days.len() > 20, "the corpus spans many days");
    // The range the corpus spans (a read covers at most 400 days).
    let (from, to) = day_range(&local_days);
    let (from, to) = (from.as_str(), to.as_str());
    let server_days = server_groups(&client, "day", from, to).await;
    assert_eq!(server_days, local_days, "per day");

    // Per session: the server keys a session by harness and id.
    let sessions = local(&home, &["session"]).await;
    let local_sessions: BTreeMap<String, Vec<u64>> = sessions["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            let key = format!(
                "{}/{}",
                row["harness"].as_str().expect("harness"),
                row["sessionId"].as_str().expect("sessionId")
            );
            (key, tokens(row))
        })
        .filter(|(_, kinds)| kinds.iter().any(|k| *k > 0))
        .collect();
    assert!(local_sessions.len() > 50, "{}", local_sessions.len());
    assert_eq!(
        server_groups(&client, "session", from, to).await,
        local_sessions,
        "per session"
    );

    // Per model: the server groups by the normalised id.
    let models = local(&home, &["models"]).await;
    let mut local_models: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for row in models["rows"].as_array().expect("rows") {
        let model =
            baton_transcripts::pricing::normalize_model(row["model"].as_str().expect("model"));
        let sums = local_models
            .entry(model)
            .or_insert_with(|| vec![0; KINDS.len()]);
        for (sum, kind) in sums.iter_mut().zip(tokens(row)) {
            *sum += kind;
        }
    }
    local_models.retain(|_, kinds| kinds.iter().any(|k| *k > 0));
    let server_models: BTreeMap<String, Vec<u64>> = server_groups(&client, "model", from, to)
        .await
        .into_iter()
        .filter(|(model, _)| model != "(no model)" && !model.is_empty())
        .collect();
    local_models.remove("(no model)");
    assert_eq!(server_models, local_models, "per model");

    // Trees: a Claude Code session with subagents and compaction, a Codex session with two
    // spawned threads.
    let call = OutboundCall {
        tenant_id: tenant.tenant_id.parse().expect("tenant"),
        test_now: None,
    };
    let outbound = Outbound::new(Secret::new(baton_tests::SERVICE_TOKEN.to_string()));
    let channel = baton_kit::grpc::channel(&baton.addresses["usage"]).expect("channel");
    for (agent, session) in [
        ("claude-code", "fa812bfe-b295-4cca-9c2f-fdf01028cb46"),
        ("codex", "019ce3fb-1087-7980-8f92-8d0171aaea6a"),
    ] {
        let tree = local(&home, &["tree", session]).await;
        let local_agents: BTreeMap<String, (Option<String>, Vec<u64>)> = tree["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .map(|node| {
                let id = node["agentId"].as_str().expect("agentId").to_string();
                let join = node["joinPath"].as_str().map(str::to_string);
                (id, (join, tokens(node)))
            })
            .collect();
        assert!(local_agents.len() >= 3, "{session}: {local_agents:?}");
        let answer = UsageClient::new(channel.clone())
            .get_tree(outbound.request(
                &call,
                proto::GetTreeRequest {
                    agent: agent.to_string(),
                    session_id: session.to_string(),
                },
            ))
            .await
            .expect("tree")
            .into_inner();
        let joins: BTreeMap<String, String> = answer
            .edges
            .iter()
            .map(|edge| (edge.child_agent_id.clone(), edge.join_path.clone()))
            .collect();
        let server_agents: BTreeMap<String, (Option<String>, Vec<u64>)> = answer
            .agents
            .iter()
            .map(|node| {
                let id = node.agent_id.clone().unwrap_or_else(|| "main".to_string());
                let own = node
                    .own
                    .clone()
                    .unwrap_or_default()
                    .tokens
                    .unwrap_or_default();
                let kinds = vec![
                    own.input,
                    own.output,
                    own.cache_read,
                    own.cache_write_5m,
                    own.cache_write_1h,
                    own.total,
                ];
                (id.clone(), (joins.get(&id).cloned(), kinds))
            })
            .collect();
        assert_eq!(server_agents, local_agents, "{session}: the tree");
    }

    // A second backfill sends nothing and changes nothing.
    let second = ingest(&home).await;
    assert_eq!(second["rowsSent"], 0, "{second}");
    assert_eq!(server_groups(&client, "day", from, to).await, server_days);
}
