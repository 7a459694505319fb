//! Import rejects `sessionRunId` anywhere and writes nothing when it does.

use baton_kit::error::ErrorCode;

use crate::{Harness, call, t};

#[tokio::test]
async fn import_with_a_session_run_id_anywhere_is_rejected_and_writes_nothing() {
    let (harness, tenant) = Harness::with_tenant().await;
    let run = harness.open(tenant, "imp", None, t(0)).await;
    let documents = [
        format!(
            r#"{{"memories":[{{"memoryType":"note","topic":"t","content":"c","sessionRunId":"{run}"}}]}}"#
        ),
        format!(
            r#"{{"memories":[{{"memoryType":"note","topic":"t","content":"c","events":[{{"eventKind":"resolve","payload":{{"sessionRunId":"{run}"}}}}]}}]}}"#
        ),
        format!(
            r#"{{"memories":[{{"memoryType":"note","topic":"t","content":"c"}},{{"memoryType":"note","topic":"u","content":"c","events":[{{"eventKind":"create","payload":{{"nested":{{"sessionRunId":"{run}"}}}}}}]}}]}}"#
        ),
    ];
    for document in documents {
        let error = harness
            .provenance
            .import(&call(tenant, t(1)), &document)
            .await
            .expect_err("rejected");
        assert_eq!(error.code, ErrorCode::InvalidInput);
        assert!(error.detail.contains("sessionRunId"));
    }
    assert_eq!(harness.count("memories").await, 0);
    assert_eq!(harness.count("events").await, 0);
    let page = harness
        .provenance
        .run_events(&call(tenant, t(1)), run, None, 50)
        .await
        .expect("page");
    assert!(page.items.is_empty(), "nothing landed in the run");
}

#[tokio::test]
async fn a_clean_import_writes_memories_with_import_events_and_no_provenance() {
    let (harness, tenant) = Harness::with_tenant().await;
    let document = r#"{"memories":[
        {"memoryType":"commitment","topic":"t","content":"carried over","project":"baton"},
        {"memoryType":"decision","topic":"d","content":"use postgres","events":[{"eventKind":"revise","payload":{"source":"legacy"}}]}
    ]}"#;
    let ids = harness
        .provenance
        .import(&call(tenant, t(1)), document)
        .await
        .expect("import");
    assert_eq!(ids.len(), 2);
    let events = harness.events(tenant).await;
    let kinds: Vec<&str> = events.iter().map(|(_, kind, _)| kind.as_str()).collect();
    assert_eq!(kinds, vec!["import", "import", "revise"]);
    assert!(events.iter().all(|(_, _, run)| run.is_none()));
    assert_eq!(harness.count("commitments").await, 1);
}
