//! Hostile text at every boundary (issue 9): every string field of every route — body, query
//! and path — with U+0000, another C0 control, a C1 control, a bidi override and a line
//! separator (the last two only where the field is an identifier), and invalid UTF-8. Each is
//! 400 with the contract's body, and nothing is written.

use serde_json::{Value, json};

use baton_tests::{Baton, Client};

const MEMORY_BODY: &str =
    r#"{"memoryType":"note","topic":"t","content":"c","project":"baton","tags":["x"]}"#;

/// (route, body, JSON pointer of a string field, is the field prose)
fn body_fields() -> Vec<(&'static str, Value, &'static str, bool)> {
    let open = json!({"agent": "claude-code", "sessionId": "other", "source": "startup",
        "project": "baton", "scope": "work", "followsSessionId": "h",
        "selector": {"kind": "scope_project", "scope": "work", "project": "baton"},
        "briefedMemories": [{"id": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", "topic": "t",
            "status": "open"}]});
    let pulse = json!({"agent": "claude-code", "sessionId": "h",
        "episodeId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a", "client": "claude-code",
        "clientVersion": "2.1.0", "hostClient": "cursor", "hostId": "host", "pid": 7});
    let memory: Value = serde_json::from_str(MEMORY_BODY).expect("json");
    let mut cases = vec![];
    for pointer in [
        "/agent",
        "/sessionId",
        "/project",
        "/scope",
        "/followsSessionId",
        "/selector/scope",
        "/selector/project",
        "/briefedMemories/0/topic",
        "/briefedMemories/0/status",
    ] {
        cases.push(("/api/v1/agent-sessions/open", open.clone(), pointer, false));
    }
    let heartbeat = json!({"agent": "claude-code", "sessionId": "h", "lastMessageExcerpt": "e"});
    cases.push((
        "/api/v1/agent-sessions/heartbeat",
        heartbeat.clone(),
        "/sessionId",
        false,
    ));
    cases.push((
        "/api/v1/agent-sessions/heartbeat",
        heartbeat,
        "/lastMessageExcerpt",
        true,
    ));
    cases.push((
        "/api/v1/agent-sessions/close",
        crate::key("h"),
        "/sessionId",
        false,
    ));
    for pointer in [
        "/sessionId",
        "/client",
        "/clientVersion",
        "/hostClient",
        "/hostId",
    ] {
        cases.push((
            "/api/v1/agent-sessions/pulse",
            pulse.clone(),
            pointer,
            false,
        ));
    }
    cases.push((
        "/api/v1/agent-sessions/triage/begin",
        crate::key("h"),
        "/sessionId",
        false,
    ));
    let complete = json!({"agent": "claude-code", "sessionId": "h",
        "attemptId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"});
    cases.push((
        "/api/v1/agent-sessions/triage/complete",
        complete,
        "/sessionId",
        false,
    ));
    for (pointer, prose) in [
        ("/topic", false),
        ("/content", true),
        ("/project", false),
        ("/tags/0", false),
    ] {
        cases.push(("/api/v1/memories", memory.clone(), pointer, prose));
        cases.push((
            "/api/v1/memories/{id}/revise",
            memory.clone(),
            pointer,
            prose,
        ));
    }
    cases.push((
        "/api/v1/memories/{id}/resolve",
        json!({"status": "resolved"}),
        "/status",
        false,
    ));
    cases
}

/// The hostile values for a field: (name, value).
fn hostile(prose: bool) -> Vec<(&'static str, String)> {
    let mut values = vec![
        ("U+0000", "a\u{0000}b".to_string()),
        ("ESC", "a\u{001b}b".to_string()),
        ("C1 NEL", "a\u{0085}b".to_string()),
        ("DEL", "a\u{007f}b".to_string()),
    ];
    if !prose {
        values.push(("RLO bidi override", "a\u{202e}b".to_string()));
        values.push(("U+2028", "a\u{2028}b".to_string()));
        values.push(("tab", "a\tb".to_string()));
    }
    values
}

async fn counts(admin: &sqlx::PgPool) -> Vec<i64> {
    let mut counts = vec![];
    for table in [
        "registry.agent_sessions",
        "registry.process_episodes",
        "provenance.memories",
        "provenance.memory_events",
    ] {
        let count: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(admin)
                .await
                .expect("count");
        counts.push(count);
    }
    let excerpt: Option<String> =
        sqlx::query_scalar("SELECT last_message_excerpt FROM registry.agent_sessions LIMIT 1")
            .fetch_one(admin)
            .await
            .expect("excerpt");
    counts.push(i64::from(excerpt.is_some()));
    counts
}

async fn assert_refused(client: &Client, path: &str, body: &Value, what: &str) {
    let answer = client.post(path, body).await;
    assert_eq!(
        (answer.status, answer.refusal()),
        (400, json!({"error": "invalid_input"})),
        "{what}"
    );
}

#[tokio::test]
async fn hostile_text_is_refused_at_every_boundary_and_stored_nowhere() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("hostile").await;
    let run_id = crate::open_session(&client, "h").await;
    let memory = client
        .post_raw("/api/v1/memories", MEMORY_BODY.to_string())
        .await;
    assert_eq!(memory.status, 201);
    let memory_id = memory.body["memory"]["id"]
        .as_str()
        .expect("memory")
        .to_string();
    let admin = baton.admin().await;
    let before = counts(&admin).await;

    for (route, body, pointer, prose) in body_fields() {
        let path = route.replace("{id}", &memory_id);
        for (name, value) in hostile(prose) {
            let mut bad = body.clone();
            *bad.pointer_mut(pointer).expect("field exists") = json!(value);
            assert_refused(
                &client,
                &path,
                &bad,
                &format!("{route} {pointer} with {name}"),
            )
            .await;
        }
        // Invalid UTF-8 inside the field's string: not JSON at all.
        let mut marked = body.clone();
        *marked.pointer_mut(pointer).expect("field exists") = json!("@@MARK@@");
        let text = marked.to_string();
        let (head, tail) = text.split_once("@@MARK@@").expect("marker");
        let mut invalid = head.as_bytes().to_vec();
        invalid.extend_from_slice(b"a\xffb");
        invalid.extend_from_slice(tail.as_bytes());
        let answer = client.post_bytes(&path, invalid).await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (400, json!({"error": "invalid_request"})),
            "{route} {pointer} with invalid UTF-8"
        );
    }

    let encoded = [
        ("U+0000", "a%00b"),
        ("ESC", "a%1Bb"),
        ("C1 NEL", "a%C2%85b"),
        ("invalid UTF-8", "a%FFb"),
        ("RLO bidi override", "a%E2%80%AEb"),
    ];
    for (name, value) in encoded {
        for query in [
            format!("/api/v1/briefing?kind=project&project={value}"),
            format!("/api/v1/briefing?kind=scope&scope={value}"),
            format!("/api/v1/prompts/debrief?project={value}"),
            format!("/api/v1/prompts/debrief?agent=claude-code&sessionId={value}"),
            format!("/api/v1/prompts/debrief?agent={value}&sessionId=h"),
            format!("/api/v1/agent-sessions/{run_id}/events?cursor={value}"),
        ] {
            let answer = client.get(&query).await;
            assert_eq!(
                (answer.status, answer.refusal()),
                (400, json!({"error": "invalid_input"})),
                "{query} ({name})"
            );
        }
        for (path, status, error) in [
            (
                format!("/api/v1/agent-sessions/{value}"),
                400,
                "invalid_input",
            ),
            (
                format!("/api/v1/agent-sessions/{value}/events"),
                400,
                "invalid_input",
            ),
            (
                format!("/api/v1/agent-sessions/{value}/liveness"),
                400,
                "invalid_input",
            ),
            (
                format!("/api/v1/agent-sessions/{value}/triage-attempts"),
                400,
                "invalid_input",
            ),
            (format!("/api/v1/memories/{value}"), 404, "not_found"),
            (
                format!("/api/v1/memories/{value}/history"),
                404,
                "not_found",
            ),
        ] {
            let answer = client.get(&path).await;
            assert_eq!(
                (answer.status, answer.refusal()),
                (status, json!({"error": error})),
                "{path} ({name})"
            );
        }
        for action in ["revise", "resolve", "archive"] {
            let path = format!("/api/v1/memories/{value}/{action}");
            let answer = client.post(&path, &json!({"status": "resolved"})).await;
            assert_eq!(
                (answer.status, answer.refusal()),
                (404, json!({"error": "not_found"})),
                "{path} ({name})"
            );
        }
    }
    // The smallest case of the report, exactly.
    let smallest = client
        .post_raw(
            "/api/v1/agent-sessions/open",
            r#"{"agent":"a","sessionId":"\u0000","source":"startup"}"#.to_string(),
        )
        .await;
    assert_eq!(
        (smallest.status, smallest.refusal()),
        (400, json!({"error": "invalid_input"}))
    );
    assert_eq!(counts(&admin).await, before, "nothing was written");
}
