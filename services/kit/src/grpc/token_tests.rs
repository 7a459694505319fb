//! The service-token check against a real tower concurrency limit: a refused call must give
//! back the capacity its `poll_ready` reserved.

use std::convert::Infallible;
use std::time::Duration;

use tonic::body::Body;
use tower::{Layer, Service, ServiceExt};

use super::ServiceTokenLayer;
use crate::config::Secret;

fn request(token: &str) -> http::Request<Body> {
    http::Request::builder()
        .uri("/baton.registry.v1.Registry/Open")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .expect("request")
}

#[tokio::test]
async fn a_refused_call_does_not_keep_the_capacity_it_reserved() {
    let handler = tower::service_fn(|_request: http::Request<Body>| async {
        Ok::<_, Infallible>(http::Response::new(Body::empty()))
    });
    // One call in flight at a time, shared by every clone (as across connections).
    let limited = tower::limit::ConcurrencyLimit::new(handler, 1);
    let layer = ServiceTokenLayer::new(Secret::new("the-right-token-123".to_string()));
    let mut first = layer.layer(limited.clone());
    let mut second = layer.layer(limited);

    let refused = first
        .ready()
        .await
        .unwrap()
        .call(request("wrong"))
        .await
        .unwrap();
    assert_eq!(refused.headers()["grpc-status"], "16", "unauthenticated");

    let ready = tokio::time::timeout(Duration::from_secs(2), second.ready()).await;
    assert!(ready.is_ok(), "the refused call still holds the only slot");
    let answered = ready
        .unwrap()
        .unwrap()
        .call(request("the-right-token-123"))
        .await
        .unwrap();
    assert!(
        answered.headers().get("grpc-status").is_none(),
        "the authorized call reached the handler"
    );
}
