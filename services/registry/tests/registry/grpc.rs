//! The gRPC adapter over a real server on port 0.

use tonic::Code;
use uuid::Uuid;

use baton_kit::ErrorCode;
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_proto::registry::v1 as proto;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;

use crate::Harness;

const TOKEN: &str = "registry-test-service-token";

#[tokio::test]
async fn rpc_calls_need_the_service_token_and_a_tenant() {
    let harness = Harness::new().await;
    let address = harness.serve(TOKEN, false).await;
    let channel = baton_kit::grpc::channel(&address).expect("channel");
    let mut client = SessionRegistryClient::new(channel);
    let key = proto::SessionKey {
        agent: "codex".to_string(),
        session_id: "g".to_string(),
    };
    let request = proto::CloseRequest {
        key: Some(key.clone()),
        observed_at: None,
    };

    let anonymous = client.close(request.clone()).await.expect_err("no token");
    assert_eq!(anonymous.code(), Code::Unauthenticated);

    let wrong = Outbound::new(baton_kit::Secret::new("wrong-token-of-some-length".into()));
    let call = OutboundCall {
        tenant_id: Uuid::now_v7(),
        test_now: None,
    };
    let refused = client
        .close(wrong.request(&call, request.clone()))
        .await
        .expect_err("bad token");
    assert_eq!(refused.code(), Code::Unauthenticated);

    let outbound = Outbound::new(baton_kit::Secret::new(TOKEN.into()));
    let mut no_tenant = tonic::Request::new(request.clone());
    no_tenant.metadata_mut().insert(
        "authorization",
        format!("Bearer {TOKEN}").parse().expect("ascii"),
    );
    let missing = client.close(no_tenant).await.expect_err("no tenant");
    assert_eq!(ErrorCode::from_status(&missing), ErrorCode::InvalidInput);

    let not_found = client
        .close(outbound.request(&call, request))
        .await
        .expect_err("404");
    assert_eq!(ErrorCode::from_status(&not_found), ErrorCode::NotFound);
}

#[tokio::test]
async fn open_then_read_by_natural_key_over_grpc() {
    let harness = Harness::new().await;
    let address = harness.serve(TOKEN, false).await;
    let mut client =
        SessionRegistryClient::new(baton_kit::grpc::channel(&address).expect("channel"));
    let outbound = Outbound::new(baton_kit::Secret::new(TOKEN.into()));
    let call = OutboundCall {
        tenant_id: Uuid::now_v7(),
        test_now: None,
    };
    let key = proto::SessionKey {
        agent: " codex ".to_string(),
        session_id: "g-1".to_string(),
    };
    let opened = client
        .open(outbound.request(
            &call,
            proto::OpenRequest {
                key: Some(key.clone()),
                source: proto::Source::Startup.into(),
                project: Some("  baton ".to_string()),
                ..Default::default()
            },
        ))
        .await
        .expect("open")
        .into_inner();
    assert!(opened.created);
    let read = client
        .get_session(outbound.request(
            &call,
            proto::GetSessionRequest {
                lookup: Some(proto::get_session_request::Lookup::Key(key)),
            },
        ))
        .await
        .expect("read")
        .into_inner()
        .session
        .expect("session");
    assert_eq!(read.session_run_id, opened.session_run_id);
    assert_eq!(read.agent, "codex", "trimmed");
    assert_eq!(read.project.as_deref(), Some("baton"), "trimmed");
    assert_eq!(read.liveness, proto::Liveness::Live as i32);

    let bad = client
        .open(outbound.request(
            &call,
            proto::OpenRequest {
                key: Some(proto::SessionKey {
                    agent: "Codex".to_string(),
                    session_id: "x".to_string(),
                }),
                source: proto::Source::Startup.into(),
                ..Default::default()
            },
        ))
        .await
        .expect_err("agent must be a slug");
    assert_eq!(ErrorCode::from_status(&bad), ErrorCode::InvalidInput);
}
