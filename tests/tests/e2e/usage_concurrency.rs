//! Concurrent uploads of one tenant (issues 25 and 26): no lock serialises them, so the
//! collision rule and the rollups must come out exactly as a serial upload of the same
//! batches would leave them, whatever the interleaving.

use futures::future::join_all;
use serde_json::{Value, json};

use baton_tests::{Baton, Client};

use crate::usage_upload::{BATCHES, NOW, totals};

const UPLOADERS: usize = 8;
const SHARED_KEYS: usize = 60;

/// Batch `k`: its own session (carried, so the batch stands alone) on host `k % 4`, and a copy
/// of most of the shared keys whose size depends on (k, key), so every key has one strict
/// winner under the collision rule: the largest non-sidechain copy.
fn batch(k: usize) -> Value {
    let session = format!("conc-{k}");
    let usage: Vec<Value> = (0..SHARED_KEYS)
        .filter(|key| !(key + k).is_multiple_of(5))
        .map(|key| {
            json!({
                "agent": "claude-code", "sessionId": session,
                "dedupKey": format!("msg_shared_{key}:req_{key}"),
                "model": if key.is_multiple_of(2) { "claude-opus-4-5" } else { "claude-haiku-4-5" },
                "at": "2026-03-01T10:06:00Z", "input": 100 + key, "output": 10 + (k * 7 + key * 13) % 97,
                "cacheRead": 20, "cacheWrite5m": 3, "cacheWrite1h": 1,
                "sidechain": (k + key).is_multiple_of(7)
            })
        })
        .collect();
    json!({
        "hostId": format!("host-{}", k % 4),
        "sessions": [{"agent": "claude-code", "sessionId": session, "projectSlug": "-w-app",
            "firstActivityAt": "2026-03-01T10:00:00Z", "lastActivityAt": "2026-03-01T10:20:00Z"}],
        "agents": [{"agent": "claude-code", "sessionId": session, "kind": "main",
            "model": "claude-opus-4-5", "lastActivityAt": "2026-03-01T10:20:00Z"}],
        "usage": usage,
    })
}

async fn upload(client: &Client, body: &Value) {
    let answer = client.post(BATCHES, body).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
}

/// The figures both tenants must agree on: tokens and cost per model, per host and per session
/// (which session holds each key is the collision rule's choice).
async fn figures(client: &Client) -> Vec<Value> {
    let mut figures = vec![strip(totals(client).await)];
    for group in ["host", "session"] {
        let answer = client
            .get(&format!(
                "/api/v1/usage?from=2026-03-01T00:00:00Z&to=2026-03-02T00:00:00Z&groupBy={group}"
            ))
            .await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        figures.push(strip(answer.body));
    }
    figures
}

/// The answer without what differs by tenant or by read.
fn strip(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.retain(|key, _| key == "groups" || key == "total");
    }
    value
}

#[tokio::test]
async fn eight_overlapping_uploads_at_once_leave_what_a_serial_upload_leaves() {
    let baton = Baton::start().await;
    let bodies: Vec<Value> = (0..UPLOADERS).map(batch).collect();

    let serial = baton
        .client(&baton.create_tenant("conc-serial").await)
        .at(NOW);
    for body in &bodies {
        upload(&serial, body).await;
    }
    let expected = figures(&serial).await;
    assert_ne!(
        expected[0]["groups"],
        json!([]),
        "the serial tenant's figures are empty"
    );

    // Several rounds, each a fresh tenant and a different order of arrival.
    for round in 0..3 {
        let tenant = baton.create_tenant(&format!("conc-{round}")).await;
        let client = baton.client(&tenant).at(NOW);
        let mut order: Vec<usize> = (0..UPLOADERS).collect();
        order.rotate_left(round * 3);
        if round % 2 == 1 {
            order.reverse();
        }
        join_all(order.iter().map(|&k| upload(&client, &bodies[k]))).await;
        assert_eq!(
            figures(&client).await,
            expected,
            "round {round}: concurrent uploads differ from the serial upload"
        );
        // And sent again, all at once, nothing changes.
        join_all(order.iter().map(|&k| upload(&client, &bodies[k]))).await;
        assert_eq!(
            figures(&client).await,
            expected,
            "round {round}: a resend changed the figures"
        );
    }
}
