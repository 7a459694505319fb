//! What end-to-end tests poll: any read until a condition holds, and a session's liveness.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Client;

/// Polls `read` every 50 ms until `done` holds, for at most `limit`; the value that held.
pub async fn until<F, Fut>(
    limit: Duration,
    what: &str,
    read: F,
    done: impl Fn(&Value) -> bool,
) -> Value
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let started = Instant::now();
    loop {
        let value = read().await;
        if done(&value) {
            return value;
        }
        assert!(started.elapsed() < limit, "{what}: never reached: {value}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The session run's liveness read, which must answer 200.
pub async fn liveness(client: &Client, run_id: &str) -> Value {
    let answer = client
        .get(&format!("/api/v1/agent-sessions/{run_id}/liveness"))
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    answer.body
}
