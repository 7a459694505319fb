//! Memory writes, the typed events read and the briefing over HTTP (CONTRACT sections 7, 10, 11).

use serde_json::{Value, json};

use baton_tests::Baton;

use crate::startup;

fn remember(content: &str, run: Option<&str>) -> Value {
    let mut body = json!({"memoryType": "commitment", "topic": "ship", "content": content, "project": "baton"});
    if let Some(run) = run {
        body["sessionRunId"] = json!(run);
    }
    body
}

#[tokio::test]
async fn memory_writes_carry_the_run_and_read_back_through_the_events_route() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("memories").await;
    let run = crate::open_session(&client, "m").await;

    let created = client
        .post(
            "/api/v1/memories",
            &remember("ship v1", Some(&run.to_uppercase())),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["embedded"], "off");
    assert_eq!(created.body["memory"]["memoryType"], "commitment");
    assert_eq!(created.body["memory"]["scope"], "personal");
    assert!(created.body["commitmentId"].is_string());
    let memory_id = created.body["memory"]["id"]
        .as_str()
        .expect("id")
        .to_string();

    let revised = client
        .post(
            &format!("/api/v1/memories/{memory_id}/revise"),
            &json!({"memoryType": "commitment", "topic": "ship", "content": "ship v1.1", "project": "baton",
                    "sessionRunId": run, "predecessorId": "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a"}),
        )
        .await;
    assert_eq!(revised.status, 200, "{:?}", revised.body);
    let successor = revised.body["memory"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let resolved = client
        .post(
            &format!("/api/v1/memories/{successor}/resolve"),
            &json!({"status": "resolved", "sessionRunId": run}),
        )
        .await;
    assert_eq!(resolved.status, 200);
    assert_eq!(resolved.body["status"], "resolved");
    let invalid = client
        .post(
            &format!("/api/v1/memories/{successor}/resolve"),
            &json!({"status": "waiting"}),
        )
        .await;
    assert_eq!(
        (invalid.status, invalid.refusal()),
        (409, json!({"error": "invalid_transition"}))
    );

    let page_one = client
        .get(&format!("/api/v1/agent-sessions/{run}/events?limit=2"))
        .await;
    assert_eq!(page_one.status, 200, "{:?}", page_one.body);
    assert_eq!(page_one.body["truncated"], false);
    let mut kinds: Vec<Value> = Vec::new();
    let mut page = page_one.body.clone();
    loop {
        kinds.extend(
            page["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|item| item["eventKind"].clone()),
        );
        let Some(cursor) = page.get("nextCursor").and_then(Value::as_str) else {
            break;
        };
        let next = client
            .get(&format!(
                "/api/v1/agent-sessions/{run}/events?limit=2&cursor={cursor}"
            ))
            .await;
        assert_eq!(next.status, 200, "{:?}", next.body);
        page = next.body;
        assert_ne!(
            page.get("nextCursor"),
            Some(&Value::Null),
            "absent, never null"
        );
    }
    // remember: create; revise (carried): create + supersede + the predecessor's resolve;
    // resolve: resolve.
    assert_eq!(
        kinds,
        vec![
            json!("create"),
            json!("create"),
            json!("supersede"),
            json!("resolve"),
            json!("resolve")
        ]
    );
    let item = &page_one.body["items"][0];
    assert_eq!(item["sessionRunId"], run.as_str());
    assert_eq!(item["actorKind"], "user_api");
    assert_eq!(item.as_object().expect("object").len(), 6);

    let history = client
        .get(&format!("/api/v1/memories/{memory_id}/history"))
        .await;
    assert_eq!(history.status, 200);
    let entry = &history.body["events"][0];
    assert_eq!(entry["payload"]["present"], true);
    assert_eq!(entry["payload"]["jsonType"], "object");
    assert!(entry["payload"]["byteLength"].as_i64().expect("size") > 0);
    assert!(
        !history.body.to_string().contains(&run),
        "history never shows payload values"
    );

    let read = client.get(&format!("/api/v1/memories/{memory_id}")).await;
    assert_eq!(read.status, 200, "{:?}", read.body);
    assert_eq!(read.body["status"], "superseded");
    assert_eq!(read.body["supersededBy"], successor.as_str());
}

#[tokio::test]
async fn memory_routes_refuse_bad_input_with_the_contract_codes() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("owner").await;
    let other = baton.create_tenant("other").await;
    let theirs = baton
        .client(&other)
        .post("/api/v1/agent-sessions/open", &startup("t"))
        .await;
    let foreign_run = theirs.body["sessionRunId"]
        .as_str()
        .expect("run")
        .to_string();

    let foreign = client
        .post("/api/v1/memories", &remember("x", Some(&foreign_run)))
        .await;
    assert_eq!(
        (foreign.status, foreign.refusal()),
        (400, json!({"error": "invalid_input"}))
    );
    let events = baton
        .client(&other)
        .get(&format!("/api/v1/agent-sessions/{foreign_run}/events"))
        .await;
    assert_eq!(events.status, 200, "{:?}", events.body);
    assert_eq!(events.body["items"], json!([]), "nothing persisted");

    let facts = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "fact", "topic": "t", "content": "c", "facts": []}),
        )
        .await;
    assert_eq!(facts.status, 400);
    assert_eq!(facts.body["error"], "invalid_input");
    assert!(
        facts.body["detail"]
            .as_str()
            .expect("detail")
            .contains("facts")
    );

    let cases = [
        json!({"memoryType": "thought", "topic": "t", "content": "c"}),
        json!({"memoryType": "note", "topic": "t", "content": "c", "actor": "x"}),
        json!({"memoryType": "note", "topic": "t", "content": "x".repeat(2001)}),
        json!({"memoryType": "note", "topic": "t", "content": "c", "sessionRunId": "nope"}),
        json!({"memoryType": "note", "topic": "t", "content": "c", "tags": vec!["x"; 33]}),
    ];
    for body in cases {
        let answer = client.post("/api/v1/memories", &body).await;
        assert_eq!(answer.status, 400, "{body}");
    }
    let duplicate_body = json!({"memoryType": "fact", "topic": "t", "content": "same"});
    assert_eq!(
        client
            .post("/api/v1/memories", &duplicate_body)
            .await
            .status,
        201
    );
    let duplicate = client.post("/api/v1/memories", &duplicate_body).await;
    assert_eq!(
        (duplicate.status, duplicate.refusal()),
        (409, json!({"error": "duplicate_memory"}))
    );

    for path in [
        "/api/v1/memories/not-a-uuid/archive",
        "/api/v1/memories/0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a/archive",
    ] {
        let answer = client.post_raw(path, String::new()).await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (404, json!({"error": "not_found"})),
            "{path}"
        );
    }
    let note = client
        .post(
            "/api/v1/memories",
            &json!({"memoryType": "note", "topic": "t", "content": "archive me"}),
        )
        .await;
    let note_id = note.body["memory"]["id"].as_str().expect("id").to_string();
    let archived = client
        .post_raw(
            &format!("/api/v1/memories/{note_id}/archive"),
            String::new(),
        )
        .await;
    assert_eq!(archived.body, json!({"id": note_id, "status": "archived"}));
    let again = client
        .post(&format!("/api/v1/memories/{note_id}/archive"), &json!({}))
        .await;
    assert_eq!(again.status, 404, "already archived");

    let run = client
        .post("/api/v1/agent-sessions/open", &startup("q"))
        .await;
    let run = run.body["sessionRunId"].as_str().expect("run").to_string();
    for query in [
        "cursor=nope",
        "limit=0",
        "limit=101",
        "limit=abc",
        "limit=1.5",
        "limit=",
        "cursro=x",
        "offset=1",
        "limit=1&limit=2",
    ] {
        let answer = client
            .get(&format!("/api/v1/agent-sessions/{run}/events?{query}"))
            .await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (400, json!({"error": "invalid_input"})),
            "{query}"
        );
    }
    for bad_run in [
        foreign_run.as_str(),
        "not-a-uuid",
        "0190b3a4-7d2e-7c41-9a3b-2f1e4d5c6b7a",
    ] {
        let answer = client
            .get(&format!("/api/v1/agent-sessions/{bad_run}/events"))
            .await;
        assert_eq!(answer.status, 400, "{bad_run}");
    }
}

#[tokio::test]
async fn the_briefing_is_strict_and_writes_nothing() {
    let baton = Baton::start().await;
    let (_, client) = baton.tenant_client("briefing").await;
    let run = crate::open_session(&client, "b").await;
    client
        .post("/api/v1/memories", &remember("brief me", Some(&run)))
        .await;
    for query in [
        "",
        "kind=scope",
        "kind=all&scope=work",
        "mode=full",
        "kind=all&mode=huge",
        "kind=all&sectionLimit=0",
        "kind=all&sections=nope",
        "kind=all&sections=overdue,overdue",
    ] {
        let answer = client.get(&format!("/api/v1/briefing?{query}")).await;
        assert_eq!(answer.status, 400, "{query}");
    }
    let briefing = client
        .get("/api/v1/briefing?kind=project&project=baton&mode=full")
        .await;
    assert_eq!(briefing.status, 200, "{:?}", briefing.body);
    assert_eq!(
        briefing.body["selector"],
        json!({"kind": "project", "project": "baton"})
    );
    assert_eq!(briefing.body["mode"], "full");
    let item = &briefing.body["commitments"]["items"][0];
    assert_eq!(item["topic"], "ship");
    assert_eq!(item["dueAt"], json!(null));
    assert_eq!(item["overdue"], false);
    assert_eq!(briefing.body["blockers"], json!({"count": 0, "items": []}));
    let events = client
        .get(&format!("/api/v1/agent-sessions/{run}/events"))
        .await;
    assert_eq!(events.status, 200, "{:?}", events.body);
    assert_eq!(
        events.body["items"].as_array().expect("items").len(),
        1,
        "the briefing wrote nothing"
    );
}
