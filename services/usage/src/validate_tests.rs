use super::*;
use baton_proto::Timestamp;

fn now() -> DateTime<Utc> {
    "2026-06-01T12:00:00Z".parse().expect("instant")
}

fn ts(text: &str) -> Option<Timestamp> {
    Some(baton_kit::clock::to_timestamp(
        text.parse().expect("instant"),
    ))
}

fn session() -> proto::SessionFact {
    proto::SessionFact {
        agent: "claude-code".to_string(),
        session_id: "s-1".to_string(),
        project_slug: "-home-me-repo".to_string(),
        client_versions: vec!["2.1.100".to_string()],
        output_under_reported: false,
        first_activity_at: ts("2026-06-01T10:00:00Z"),
        last_activity_at: ts("2026-06-01T11:00:00Z"),
    }
}

fn sub_agent() -> proto::AgentFact {
    proto::AgentFact {
        agent: "claude-code".to_string(),
        session_id: "s-1".to_string(),
        agent_id: Some("a1".to_string()),
        kind: "subagent".to_string(),
        parent_agent_id: None,
        subagent_type: Some("Explore".to_string()),
        spawn_tool: Some("Task".to_string()),
        model: Some("claude-haiku-4-5".to_string()),
        first_activity_at: ts("2026-06-01T10:00:00Z"),
        last_activity_at: ts("2026-06-01T10:30:00Z"),
        ended: None,
        ended_at: None,
    }
}

fn usage(key: &str, output: u64) -> proto::UsageFact {
    proto::UsageFact {
        agent: "claude-code".to_string(),
        session_id: "s-1".to_string(),
        agent_id: None,
        dedup_key: key.to_string(),
        model: Some("claude-opus-4-5".to_string()),
        at: ts("2026-06-01T10:10:00Z"),
        input: 10,
        output,
        cache_read: 0,
        cache_write_5m: 0,
        cache_write_1h: 0,
        service_tier: Some("standard".to_string()),
        speed: None,
        inference_geo: Some(String::new()),
        sidechain: false,
        reasoning: 0,
        web_search_requests: 0,
        web_fetch_requests: 0,
    }
}

fn batch_of(edit: impl FnOnce(&mut proto::UploadBatchRequest)) -> Result<Batch, ApiError> {
    let mut request = proto::UploadBatchRequest {
        host_id: "host-1".to_string(),
        hostname: Some("laptop".to_string()),
        client_version: Some("0.1.0".to_string()),
        sessions: vec![session()],
        agents: vec![sub_agent()],
        edges: vec![proto::EdgeFact {
            agent: "claude-code".to_string(),
            session_id: "s-1".to_string(),
            parent_agent_id: None,
            child_agent_id: "a1".to_string(),
            join_path: "tool_result".to_string(),
        }],
        usage: vec![usage("msg_1:req_1", 5)],
        deliveries: vec![proto::DeliveryFact {
            delivery_id: "0190a1b2-0000-7000-8000-000000000001".to_string(),
            agent: "claude-code".to_string(),
            session_id: "s-1".to_string(),
            event: "UserPromptSubmit".to_string(),
            observed_at: ts("2026-06-01T10:00:00Z"),
        }],
    };
    edit(&mut request);
    batch(&request, None, now())
}

#[test]
fn a_well_formed_batch_is_accepted_whole() {
    let batch = batch_of(|_| {}).expect("valid");
    assert_eq!(
        batch.usage[0].modifiers.inference_geo, None,
        "empty geo is none"
    );
    assert_eq!(batch.agents[0].agent_id, "a1");
    assert!(batch.referenced_sessions().is_empty());
    assert!(batch.referenced_agents().is_empty());
}

#[test]
fn every_violation_rejects_the_batch() {
    type Edit = Box<dyn FnOnce(&mut proto::UploadBatchRequest)>;
    let table: Vec<(&str, Edit)> = vec![
        (
            "empty batch",
            Box::new(|r| {
                r.sessions.clear();
                r.agents.clear();
                r.edges.clear();
                r.usage.clear();
                r.deliveries.clear();
            }),
        ),
        (
            "host id with a slash",
            Box::new(|r| r.host_id = "a/b".to_string()),
        ),
        (
            "host id too long",
            Box::new(|r| r.host_id = "h".repeat(129)),
        ),
        (
            "hostname with a control",
            Box::new(|r| r.hostname = Some("a\u{1b}b".to_string())),
        ),
        (
            "agent not a slug",
            Box::new(|r| r.sessions[0].agent = "Claude".to_string()),
        ),
        (
            "session id too long",
            Box::new(|r| r.sessions[0].session_id = "s".repeat(257)),
        ),
        (
            "project with newline",
            Box::new(|r| r.sessions[0].project_slug = "a\nb".to_string()),
        ),
        (
            "33 client versions",
            Box::new(|r| r.sessions[0].client_versions = vec!["1".to_string(); 33]),
        ),
        (
            "first after last",
            Box::new(|r| r.sessions[0].first_activity_at = ts("2026-06-01T11:30:00Z")),
        ),
        (
            "instant before 2000",
            Box::new(|r| r.usage[0].at = ts("1999-12-31T00:00:00Z")),
        ),
        (
            "instant two days ahead",
            Box::new(|r| r.usage[0].at = ts("2026-06-03T12:00:00Z")),
        ),
        ("usage without at", Box::new(|r| r.usage[0].at = None)),
        (
            "duplicate session",
            Box::new(|r| r.sessions.push(session())),
        ),
        ("duplicate agent", Box::new(|r| r.agents.push(sub_agent()))),
        (
            "unknown kind",
            Box::new(|r| r.agents[0].kind = "helper".to_string()),
        ),
        (
            "main with an id",
            Box::new(|r| r.agents[0].kind = "main".to_string()),
        ),
        (
            "subagent without id",
            Box::new(|r| r.agents[0].agent_id = None),
        ),
        (
            "ended without endedAt",
            Box::new(|r| r.agents[0].ended = Some("completed".to_string())),
        ),
        (
            "endedAt without ended",
            Box::new(|r| r.agents[0].ended_at = ts("2026-06-01T10:30:00Z")),
        ),
        (
            "ended word unknown",
            Box::new(|r| {
                r.agents[0].ended = Some("finished".to_string());
                r.agents[0].ended_at = ts("2026-06-01T10:30:00Z");
            }),
        ),
        (
            "own parent",
            Box::new(|r| r.agents[0].parent_agent_id = Some("a1".to_string())),
        ),
        (
            "join path unknown",
            Box::new(|r| r.edges[0].join_path = "guess".to_string()),
        ),
        (
            "edge to itself",
            Box::new(|r| r.edges[0].parent_agent_id = Some("a1".to_string())),
        ),
        (
            "tokens above bound",
            Box::new(|r| r.usage[0].output = MAX_TOKENS + 1),
        ),
        (
            "dedup key empty",
            Box::new(|r| r.usage[0].dedup_key = String::new()),
        ),
        (
            "model with control",
            Box::new(|r| r.usage[0].model = Some("m\u{7}".to_string())),
        ),
        (
            "delivery id not a uuid",
            Box::new(|r| r.deliveries[0].delivery_id = "d-1".to_string()),
        ),
        (
            "event with a space",
            Box::new(|r| r.deliveries[0].event = "User Prompt".to_string()),
        ),
        (
            "event too long",
            Box::new(|r| r.deliveries[0].event = "E".repeat(65)),
        ),
        (
            "10001 usage rows",
            Box::new(|r| {
                r.usage = (0..10_001).map(|i| usage(&format!("m{i}"), 1)).collect();
            }),
        ),
        (
            "2001 deliveries",
            Box::new(|r| {
                let one = r.deliveries[0].clone();
                r.deliveries = vec![one; 2001];
            }),
        ),
    ];
    for (name, edit) in table {
        let refused = batch_of(edit).expect_err(name);
        assert_eq!(
            refused.code,
            baton_kit::error::ErrorCode::InvalidInput,
            "{name}"
        );
    }
}

#[test]
fn any_event_name_is_accepted_and_ended_facts_parse() {
    let batch = batch_of(|r| {
        r.deliveries[0].event = "SomeFutureHook_v2".to_string();
        r.agents[0].ended = Some("error".to_string());
        r.agents[0].ended_at = ts("2026-06-01T10:30:00Z");
    })
    .expect("valid");
    assert_eq!(batch.deliveries[0].event, "SomeFutureHook_v2");
    assert_eq!(
        batch.agents[0].ended.as_ref().map(|(w, _)| w.as_str()),
        Some("error")
    );
}

#[test]
fn copies_inside_one_batch_fold_by_the_collision_rule() {
    let batch = batch_of(|r| {
        r.usage = vec![usage("k", 3), usage("k", 9), usage("k", 4)];
        let mut side = usage("k", 500);
        side.sidechain = true;
        r.usage.push(side);
    })
    .expect("valid");
    assert_eq!(batch.usage.len(), 1);
    assert_eq!(batch.usage[0].tokens.output, 9);
    assert!(!batch.usage[0].sidechain);
}

#[test]
fn references_outside_the_batch_are_listed_for_the_store() {
    let batch = batch_of(|r| {
        r.sessions.clear();
        r.agents.clear();
        r.usage[0].agent_id = Some("a9".to_string());
    })
    .expect("valid shape");
    assert_eq!(
        batch.referenced_sessions(),
        [crate::keys::SessionKey::new("claude-code", "s-1")]
    );
    let agents: Vec<String> = batch
        .referenced_agents()
        .into_iter()
        .map(|k| k.agent_id)
        .collect();
    assert_eq!(agents, ["a1", "a9"]);
}

#[test]
fn an_out_of_bounds_new_count_is_refused_naming_its_field() {
    type Edit = fn(&mut proto::UploadBatchRequest);
    let table: [(&str, Edit); 3] = [
        ("usage[].reasoning is above 1000000000000", |r| {
            r.usage[0].reasoning = MAX_TOKENS + 1
        }),
        ("usage[].webSearchRequests is above 1000000", |r| {
            r.usage[0].web_search_requests = MAX_SERVER_TOOL_CALLS + 1
        }),
        ("usage[].webFetchRequests is above 1000000", |r| {
            r.usage[0].web_fetch_requests = MAX_SERVER_TOOL_CALLS + 1
        }),
    ];
    for (detail, edit) in table {
        let refused = batch_of(edit).expect_err(detail);
        assert_eq!(refused.code, baton_kit::error::ErrorCode::InvalidInput);
        assert_eq!(refused.detail, detail);
    }
}

#[test]
fn reasoning_and_server_tool_calls_reach_the_record_priced_and_every_join_path_is_known() {
    let batch = batch_of(|r| {
        r.usage[0].output = 50;
        r.usage[0].reasoning = 20;
        r.usage[0].web_search_requests = MAX_SERVER_TOOL_CALLS;
        r.usage[0].web_fetch_requests = 2;
    })
    .expect("valid");
    let record = batch.usage[0].record();
    assert_eq!((record.tokens.output, record.tokens.reasoning), (50, 20));
    assert_eq!(record.tokens.total(), 10 + 50, "reasoning is inside output");
    assert_eq!(
        (
            record.server_tools.web_search,
            record.server_tools.web_fetch
        ),
        (MAX_SERVER_TOOL_CALLS, 2)
    );
    use baton_usage_model::JoinPath;
    let parsers_write = [
        JoinPath::ToolResult,
        JoinPath::AgentProgress,
        JoinPath::MetaFile,
        JoinPath::TaskNotification,
        JoinPath::QueueOperation,
        JoinPath::CodexSource,
        JoinPath::CodexReviewEcho,
        JoinPath::Compaction,
        JoinPath::Directory,
        JoinPath::LegacySibling,
        JoinPath::InlineSidechain,
    ];
    assert_eq!(parsers_write.map(JoinPath::as_str), JOIN_PATHS);
    for path in JOIN_PATHS {
        let accepted = batch_of(|r| r.edges[0].join_path = path.to_string());
        assert!(accepted.is_ok(), "{path}");
    }
}

#[test]
fn a_row_is_read_by_its_harness_rules_and_an_unknown_agent_by_claude_codes() {
    use baton_usage_model::Harness;
    // (agent on the wire, harness its record is priced and deduplicated as)
    let cases = [
        ("claude-code", Harness::ClaudeCode),
        ("codex", Harness::Codex),
        ("gemini", Harness::Gemini),
        ("copilot", Harness::Copilot),
        ("cursor", Harness::ClaudeCode),
    ];
    for (agent, harness) in cases {
        let row = Usage {
            agent: agent.to_string(),
            session_id: "s-1".to_string(),
            agent_id: String::new(),
            dedup_key: "k".to_string(),
            model: Some("gemini-2.5-pro".to_string()),
            at: chrono::DateTime::from_timestamp(1_780_000_000, 0).expect("time"),
            tokens: Default::default(),
            server_tools: Default::default(),
            modifiers: Default::default(),
            sidechain: false,
        };
        assert_eq!(row.record().harness, harness, "{agent}");
    }
}

#[test]
fn a_copilot_row_is_priced_by_its_model_at_list_price_whatever_its_route() {
    use baton_usage_model::{Harness, PriceTable};
    // (model as Copilot CLI writes it, service tier: `copilot` = served by GitHub's service)
    let cases = [
        ("claude-sonnet-4.5", Some("copilot")),
        ("gpt-4o", None),
        ("gpt-5.2", Some("copilot")),
    ];
    let table = PriceTable::bundled();
    for (model, tier) in cases {
        let row = Usage {
            agent: "copilot".to_string(),
            session_id: "s-1".to_string(),
            agent_id: String::new(),
            dedup_key: "s-1:1".to_string(),
            model: Some(model.to_string()),
            at: chrono::DateTime::from_timestamp(1_796_188_709, 0).expect("time"),
            tokens: baton_usage_model::Tokens {
                input: 900,
                output: 7,
                cache_read: 100,
                ..Default::default()
            },
            server_tools: Default::default(),
            modifiers: baton_usage_model::record::Modifiers {
                service_tier: tier.map(str::to_string),
                ..Default::default()
            },
            sidechain: false,
        };
        let record = row.record();
        assert_eq!(record.harness, Harness::Copilot);
        let priced = crate::row_price::price(&table, &record);
        assert!(priced.priced && priced.cost > 0, "{model}");
    }
}
