//! Errors that say why (issue 28): every 4xx carries `detail` naming the field and the rule,
//! from the gateway's parser and from the services alike, and never the value sent.

use serde_json::{Value, json};

use baton_tests::Baton;

/// A value no detail may repeat: what a user pastes into the wrong field.
const SECRET: &str = "sk-ant-hunter2-private";

fn open(extra: Value) -> Value {
    let mut body = json!({"agent": "claude-code", "sessionId": "detail", "source": "startup"});
    for (key, value) in extra.as_object().expect("object") {
        body[key] = value.clone();
    }
    body
}

#[tokio::test]
async fn each_refusal_names_its_field_and_rule_without_the_value_sent() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("detail").await;
    // (what was wrong, the request, words the detail must hold)
    let posts = [
        (
            "a string where an array goes",
            "/api/v1/agent-sessions/open",
            open(json!({"briefedMemories": SECRET})),
            vec!["briefedMemories", "expected", "got a string"],
        ),
        (
            "a misspelled key",
            "/api/v1/agent-sessions/open",
            open(json!({"sesionId": SECRET})),
            vec!["unknown field `sesionId`"],
        ),
        (
            "a missing key",
            "/api/v1/agent-sessions/close",
            json!({"agent": "claude-code"}),
            vec!["missing field `sessionId`"],
        ),
        (
            "a bad id deep in an array",
            "/api/v1/agent-sessions/open",
            open(json!({"briefedMemories": [{"id": SECRET, "topic": "t", "status": "open"}]})),
            vec!["briefedMemories"],
        ),
        (
            "null where a value is optional",
            "/api/v1/agent-sessions/open",
            open(json!({"project": null})),
            vec!["project"],
        ),
    ];
    for (what, path, body, words) in posts {
        let answer = client.post(path, &body).await;
        assert_eq!(answer.status, 400, "{what}: {}", answer.body);
        check(&answer.body, &words, what);
    }
    let gets = [
        (
            "a range the service refuses",
            "/api/v1/usage?from=2025-01-01T00:00:00Z&to=2026-03-01T00:00:00Z".to_string(),
            vec!["400 days"],
        ),
        (
            "an instant that is not one",
            format!("/api/v1/usage?from={SECRET}"),
            vec!["from"],
        ),
        (
            "an unknown query parameter",
            format!("/api/v1/usage?secret={SECRET}"),
            vec!["unknown query parameter secret"],
        ),
    ];
    for (what, path, words) in gets {
        let answer = client.get(&path).await;
        assert_eq!(answer.status, 400, "{what}: {}", answer.body);
        check(&answer.body, &words, what);
    }
}

/// The detail holds every word, repeats nothing submitted, and the code is unchanged.
fn check(body: &Value, words: &[&str], what: &str) {
    assert_eq!(body["error"], "invalid_input", "{what}: {body}");
    let detail = body["detail"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no detail in {body}"));
    for word in words {
        assert!(detail.contains(word), "{what}: {word:?} not in {detail:?}");
    }
    assert!(
        !detail.contains(SECRET) && !detail.contains("hunter2"),
        "{what}: the detail repeats the value sent: {detail:?}"
    );
}
