//! Health, readiness, the OpenAPI document and unknown routes.

use serde_json::json;

use baton_tests::Baton;

#[tokio::test]
async fn health_readiness_openapi_and_unknown_routes() {
    let baton = Baton::start().await;
    let anonymous = baton.anonymous();
    assert_eq!(anonymous.get("/healthz").await.status, 200);
    // Each service reports SERVING once its schema check passed, a moment after it listens.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let ready = loop {
        let ready = anonymous.get("/readyz").await;
        if ready.status == 200 || tokio::time::Instant::now() > deadline {
            break ready;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(ready.status, 200, "{:?}", ready.body);
    assert_eq!(
        ready.body["checks"],
        json!({"database": true, "schema": true, "registry": true, "provenance": true, "triage": true})
    );

    let openapi = anonymous.get("/api/v1/openapi.json").await;
    assert_eq!(openapi.status, 200);
    let paths = openapi.body["paths"].as_object().expect("paths");
    for path in [
        "/api/v1/agent-sessions/open",
        "/api/v1/agent-sessions/heartbeat",
        "/api/v1/agent-sessions/close",
        "/api/v1/agent-sessions/{sessionRunId}",
    ] {
        assert!(paths.contains_key(path), "{path}");
    }
    let open = &paths["/api/v1/agent-sessions/open"]["post"];
    // The body schema is a named component (generated from the request type).
    let body = &open["requestBody"]["content"]["application/json"]["schema"];
    let body = match body["$ref"].as_str() {
        Some(reference) => {
            let name = reference.trim_start_matches("#/components/schemas/");
            &openapi.body["components"]["schemas"][name]
        }
        None => body,
    };
    assert_eq!(body["properties"]["briefedMemories"]["maxItems"], 100);
    assert_eq!(body["additionalProperties"], false);

    let tenant = baton.create_tenant("routes").await;
    let missing = baton.client(&tenant).get("/api/v1/nothing-here").await;
    assert_eq!(
        (missing.status, missing.refusal()),
        (404, json!({"error": "not_found"}))
    );
}
