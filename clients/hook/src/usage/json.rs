//! The `--json` form of every report. Stable: fields are only ever added (README, "baton-hook
//! usage"). Tokens are `{input, output, cacheRead, cacheWrite5m, cacheWrite1h, total,
//! reasoning}` (`reasoning` is already inside `output` and not in `total`); every dollar figure
//! `costUsd` has its `unpricedTokens` beside it, and `serverTools` `{webSearchRequests,
//! webFetchRequests, costUsd, unpricedCalls}` beside the tokens (its cost is inside `costUsd`).

use std::collections::BTreeMap;

use baton_transcripts::{Corpus, Session, SkipReason, Tokens};
use serde_json::{Map, Value, json};

use super::aggregate::{Group, Selection, Sum, local_time};
use super::tree::TreeNode;

pub fn tokens(tokens: &Tokens) -> Value {
    json!({
        "input": tokens.input,
        "output": tokens.output,
        "cacheRead": tokens.cache_read,
        "cacheWrite5m": tokens.cache_write_5m,
        "cacheWrite1h": tokens.cache_write_1h,
        "total": tokens.total(),
        "reasoning": tokens.reasoning,
    })
}

fn figures(sum: &Sum) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert("tokens".into(), tokens(&sum.tokens));
    map.insert(
        "serverTools".into(),
        json!({
            "webSearchRequests": sum.server_tools.web_search,
            "webFetchRequests": sum.server_tools.web_fetch,
            "costUsd": sum.priced.server_tool_cost.usd(),
            "unpricedCalls": sum.priced.unpriced_calls,
        }),
    );
    map.insert("costUsd".into(), json!(sum.priced.cost.usd()));
    map.insert("unpricedTokens".into(), json!(sum.priced.unpriced_tokens));
    map.insert("requests".into(), json!(sum.requests));
    map
}

fn models(models: &BTreeMap<String, Sum>) -> Value {
    Value::Array(
        models
            .iter()
            .map(|(model, sum)| {
                let mut map = Map::new();
                map.insert("model".into(), json!(model));
                map.extend(figures(sum));
                Value::Object(map)
            })
            .collect(),
    )
}

fn group(label: (&str, Value), group: &Group) -> Map<String, Value> {
    let mut map = Map::new();
    map.insert(label.0.into(), label.1);
    map.extend(figures(&group.total));
    map.insert("models".into(), models(&group.models));
    map
}

/// The parts every report ends with: totals, unpriced tokens, skips and reading counts.
fn envelope(report: &str, selection: &Selection<'_>, corpus: &Corpus, rows: Value) -> Value {
    let total = selection.total();
    let skipped: Map<String, Value> = SkipReason::ALL
        .iter()
        .map(|reason| (camel(reason.as_str()), json!(corpus.skips.get(*reason))))
        .collect();
    let unpriced: Vec<Value> = selection
        .unpriced()
        .iter()
        .map(|(model, count)| json!({"model": model, "tokens": count}))
        .collect();
    json!({
        "report": report,
        "timezone": selection.timezone.name(),
        "rows": rows,
        "totals": Value::Object(figures(&total.total)),
        "unpriced": unpriced,
        "skipped": Value::Object(skipped),
        "malformedLines": corpus.malformed_lines,
        "quarantinedSessions": corpus.quarantined,
        "reads": {"cached": corpus.reads.cached, "tail": corpus.reads.tail, "full": corpus.reads.full},
    })
}

fn camel(kebab: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in kebab.chars() {
        if c == '-' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

pub fn daily(selection: &Selection<'_>, corpus: &Corpus) -> Value {
    let rows = selection
        .daily()
        .iter()
        .map(|(day, g)| Value::Object(group(("date", json!(day.to_string())), g)))
        .collect();
    envelope("daily", selection, corpus, Value::Array(rows))
}

pub fn models_report(selection: &Selection<'_>, corpus: &Corpus) -> Value {
    envelope("models", selection, corpus, models(&selection.models()))
}

pub fn blocks(selection: &Selection<'_>, corpus: &Corpus) -> Value {
    let rows = selection
        .blocks()
        .iter()
        .map(|(start, g)| {
            let mut map = group(
                ("blockStart", json!(local_time(*start, selection.timezone))),
                g,
            );
            map.insert(
                "blockEnd".into(),
                json!(local_time(start + 5 * 3_600_000, selection.timezone)),
            );
            activity(&mut map, g, selection);
            Value::Object(map)
        })
        .collect();
    envelope("blocks", selection, corpus, Value::Array(rows))
}

/// A group's first and last request, in the report's zone.
fn activity(map: &mut Map<String, Value>, group: &Group, selection: &Selection<'_>) {
    let zone = selection.timezone;
    map.insert(
        "firstActivity".into(),
        json!(group.first_ms.map(|ms| local_time(ms, zone))),
    );
    map.insert(
        "lastActivity".into(),
        json!(group.last_ms.map(|ms| local_time(ms, zone))),
    );
}

pub fn sessions(selection: &Selection<'_>, corpus: &Corpus) -> Value {
    let rows = selection
        .sessions()
        .iter()
        .map(|((harness, id), g)| {
            let session = selection.sessions.get(&(*harness, id.as_str())).copied();
            let mut map = group(("sessionId", json!(id)), g);
            map.insert("harness".into(), json!(harness.as_str()));
            map.insert(
                "project".into(),
                json!(session.map(|s| s.project_slug.clone())),
            );
            activity(&mut map, g, selection);
            map.insert(
                "versions".into(),
                json!(session.map(|s| s.versions.iter().collect::<Vec<_>>())),
            );
            map.insert(
                "outputUnderReported".into(),
                json!(session.is_some_and(|s| s.output_under_reported)),
            );
            map.extend(client_figures(session, g));
            Value::Object(map)
        })
        .collect();
    envelope("session", selection, corpus, Value::Array(rows))
}

/// The client's own figures beside Baton's, and the differences (client − Baton).
fn client_figures(session: Option<&Session>, group: &Group) -> Map<String, Value> {
    let mut map = Map::new();
    let cost = session.and_then(|s| s.client_cost_usd);
    map.insert("clientCostUsd".into(), json!(cost));
    map.insert(
        "clientCostDifferenceUsd".into(),
        json!(cost.map(|c| c - group.total.priced.cost.usd())),
    );
    let client = session.map(|s| &s.client_tokens).filter(|t| !t.is_empty());
    map.insert(
        "clientTokens".into(),
        match client {
            Some(by_model) => {
                let mut all = Tokens::default();
                for t in by_model.values() {
                    all += *t;
                }
                let diff = |a: u64, b: u64| a as i64 - b as i64;
                let ours = group.total.tokens;
                json!({
                    "byModel": by_model.iter().map(|(m, t)| (m.clone(), tokens(t))).collect::<Map<_, _>>(),
                    "total": tokens(&all),
                    "difference": {
                        "input": diff(all.input, ours.input),
                        "output": diff(all.output, ours.output),
                        "cacheRead": diff(all.cache_read, ours.cache_read),
                        "cacheWrite5m": diff(all.cache_write_5m, ours.cache_write_5m),
                        "cacheWrite1h": diff(all.cache_write_1h, ours.cache_write_1h),
                    },
                })
            }
            None => Value::Null,
        },
    );
    map
}

pub fn tree(
    session: &Session,
    nodes: &[TreeNode],
    selection: &Selection<'_>,
    corpus: &Corpus,
) -> Value {
    let agents: Vec<Value> = nodes
        .iter()
        .map(|node| {
            let agent = &node.agent;
            let mut map = Map::new();
            map.insert(
                "agentId".into(),
                json!(agent.agent_id.clone().unwrap_or_else(|| "main".to_string())),
            );
            map.insert("kind".into(), json!(agent.kind));
            map.insert("parentAgentId".into(), json!(node.parent_label));
            map.insert("depth".into(), json!(node.depth));
            map.insert("subagentType".into(), json!(agent.subagent_type));
            map.insert("description".into(), json!(agent.description));
            map.insert("spawnTool".into(), json!(agent.spawn_tool));
            map.insert(
                "joinPath".into(),
                json!(agent.join_path.map(|p| p.as_str())),
            );
            map.insert("hasTranscript".into(), json!(agent.has_file));
            map.insert("model".into(), json!(node.model));
            map.extend(figures(&node.own));
            map.insert("rolledUp".into(), Value::Object(figures(&node.rolled_up)));
            Value::Object(map)
        })
        .collect();
    let mut value = envelope("tree", selection, corpus, Value::Array(Vec::new()));
    if let Value::Object(map) = &mut value {
        map.remove("rows");
        map.insert("sessionId".into(), json!(session.session_id));
        map.insert("harness".into(), json!(session.harness.as_str()));
        map.insert("project".into(), json!(session.project_slug));
        map.insert("agents".into(), Value::Array(agents));
    }
    value
}
