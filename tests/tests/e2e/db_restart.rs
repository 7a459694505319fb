//! Postgres restarted under concurrent writers (issue 9). On a private cluster (never the
//! shared one): eight writers write memories with retries while the cluster restarts. Every
//! failed call is a 503 with `Retry-After` (a lost connection is retryable, not a bug),
//! every acknowledged write is stored exactly once, and the stack serves again within
//! seconds without a restart of its own.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::Mutex;

use baton_tests::Baton;
use baton_tests::private_postgres::PrivatePostgres;

const WRITERS: usize = 8;
const WRITES_PER_WRITER: usize = 40;
const DOWN_FOR: Duration = Duration::from_secs(6);

#[derive(Default)]
struct Tally {
    /// Contents the server acknowledged (201, or 409 duplicate on a retry of a write whose
    /// first answer was lost).
    acknowledged: HashSet<String>,
    /// Statuses of failed calls.
    failures: Vec<(u16, bool)>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_answers_503_loses_nothing_and_heals_itself() {
    let cluster = Arc::new(PrivatePostgres::start());
    let baton = Baton::start_on_cluster(
        &cluster.admin_url(),
        &[
            ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "1000000"),
            ("BATON_DATABASE_MAX_CONNECTIONS", "4"),
        ],
    )
    .await;
    let (_, client) = baton.tenant_client("restart").await;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let restarted = Arc::new(AtomicBool::new(false));
    let mut writers = vec![];
    for writer in 0..WRITERS {
        let (client, tally, restarted) = (client.clone(), tally.clone(), restarted.clone());
        writers.push(tokio::spawn(async move {
            for index in 0..WRITES_PER_WRITER {
                let content = format!("writer {writer} write {index}");
                let body = json!({"memoryType": "note", "topic": "restart", "content": content});
                let mut retried = false;
                loop {
                    let answer = client.post("/api/v1/memories", &body).await;
                    let duplicate =
                        answer.status == 409 && answer.body["error"] == "duplicate_memory";
                    if answer.status == 201 || (retried && duplicate) {
                        tally.lock().await.acknowledged.insert(content.clone());
                        break;
                    }
                    let retry_after = answer.headers.contains_key("retry-after");
                    tally
                        .lock()
                        .await
                        .failures
                        .push((answer.status, retry_after));
                    retried = true;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                if index == WRITES_PER_WRITER / 4 {
                    // Hold a quarter of the writes back until the restart has begun.
                    while !restarted.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    restarted.store(true, Ordering::SeqCst);
    let stopping = cluster.clone();
    tokio::task::spawn_blocking(move || stopping.stop())
        .await
        .expect("stop");
    // Down for longer than a pool waits for a connection (5 s), so writers see it fail.
    tokio::time::sleep(DOWN_FOR).await;
    let starting = cluster.clone();
    tokio::task::spawn_blocking(move || starting.start_again())
        .await
        .expect("start");
    let back = Instant::now();
    // The stack serves again within seconds of the database's return.
    loop {
        let probe = client
            .post(
                "/api/v1/memories",
                &json!({"memoryType": "note", "topic": "probe",
                "content": format!("probe {}", back.elapsed().as_nanos())}),
            )
            .await;
        if probe.status == 201 {
            break;
        }
        assert_eq!(probe.status, 503, "while recovering: {}", probe.body);
        assert!(
            back.elapsed() < Duration::from_secs(10),
            "still failing after 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for writer in writers {
        writer.await.expect("writer");
    }
    let tally = tally.lock().await;
    assert_eq!(tally.acknowledged.len(), WRITERS * WRITES_PER_WRITER);
    assert!(
        !tally.failures.is_empty(),
        "the restart was felt by the writers"
    );
    for (status, retry_after) in &tally.failures {
        assert_eq!(*status, 503, "every failed call is a 503");
        assert!(*retry_after, "every 503 says when to retry");
    }
    let admin = baton.admin().await;
    let stored: Vec<(String, i64)> = sqlx::query_as(
        "SELECT content, count(*) FROM provenance.memories WHERE topic = 'restart' GROUP BY content",
    )
    .fetch_all(&admin)
    .await
    .expect("stored writes");
    assert_eq!(
        stored.len(),
        WRITERS * WRITES_PER_WRITER,
        "every acknowledged write is stored"
    );
    assert!(
        stored.iter().all(|(_, count)| *count == 1),
        "and stored once"
    );
    drop(admin);
    drop(baton);
    drop(cluster);
}

#[tokio::test]
async fn an_unreachable_service_is_503_with_retry_after() {
    // The gateway alone, its services on a port nothing listens on.
    let nowhere = "127.0.0.1:1";
    let baton = Baton::start_services(
        &["gateway"],
        &[
            ("BATON_REGISTRY__ADDR", nowhere),
            ("BATON_PROVENANCE__ADDR", nowhere),
            ("BATON_TRIAGE__ADDR", nowhere),
            ("BATON_CLOSER__ADDR", nowhere),
        ],
    )
    .await;
    let (_, client) = baton.tenant_client("lost").await;
    for (path, body) in [
        ("/api/v1/agent-sessions/open", crate::startup("lost")),
        (
            "/api/v1/memories",
            json!({"memoryType": "note", "topic": "t", "content": "c"}),
        ),
    ] {
        let answer = client.post(path, &body).await;
        assert_eq!(
            (answer.status, answer.refusal()),
            (503, json!({"error": "service_unavailable"})),
            "{path}"
        );
        assert_eq!(answer.headers["retry-after"], "1", "{path}");
    }
}
