//! Internal clients calling the gRPC services directly with credentials of their own: minted
//! by the real `baton client create`, scoped by service, method and read-only, and revoked by
//! `baton client revoke` without a restart.

use std::time::Duration;

use serde_json::Value;
use tonic::Code;
use uuid::Uuid;

use baton_kit::config::Secret;
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_proto::provenance::v1 as provenance;
use baton_proto::provenance::v1::provenance_client::ProvenanceClient;
use baton_proto::registry::v1 as registry;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;
use baton_tests::{Baton, binary};

fn baton_client(args: &[&str]) -> Value {
    let output = std::process::Command::new(binary("baton"))
        .arg("client")
        .args(args)
        .output()
        .expect("run baton client");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap_or(Value::Null)
}

async fn get_session(
    address: &str,
    token: &str,
    call: &OutboundCall,
    run: &str,
) -> Result<(), Code> {
    let mut client =
        SessionRegistryClient::new(baton_kit::grpc::channel(address).expect("channel"));
    let request = registry::GetSessionRequest {
        lookup: Some(registry::get_session_request::Lookup::SessionRunId(
            run.to_string(),
        )),
    };
    let outbound = Outbound::new(Secret::new(token.to_string()));
    client
        .get_session(outbound.request(call, request))
        .await
        .map(|_| ())
        .map_err(|status| status.code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_client_calls_what_it_may_and_nothing_once_revoked() {
    let dir = std::env::temp_dir().join(format!("baton-clients-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("clients.jsonl");
    let file_text = file.to_string_lossy().to_string();
    let dash = baton_client(&[
        "create",
        "--name",
        "dash",
        "--services",
        "registry",
        "--read-only",
        "--file",
        &file_text,
    ]);
    let ops = baton_client(&[
        "create",
        "--name",
        "ops",
        "--services",
        "registry",
        "--methods",
        "Open",
        "--file",
        &file_text,
    ]);
    let dash_token = dash["token"].as_str().expect("token").to_string();
    let ops_token = ops["token"].as_str().expect("token").to_string();
    let stored = std::fs::read_to_string(&file).expect("clients file");
    assert!(
        !stored.contains(&dash_token),
        "the file holds hashes, never tokens"
    );

    let baton = Baton::start_with(&[
        ("BATON_GRPC_CLIENTS_FILE", file_text.as_str()),
        ("BATON_SERVICE_TOKEN_RELOAD", "100ms"),
    ])
    .await;
    let tenant = baton.create_tenant("clients").await;
    let run = baton
        .client(&tenant)
        .open_startup("claude-code", "c-1")
        .await;
    let call = OutboundCall {
        tenant_id: tenant.tenant_id.parse().expect("tenant"),
        test_now: None,
    };
    let registry_address = &baton.addresses["registry"];

    assert_eq!(
        get_session(registry_address, &dash_token, &call, &run).await,
        Ok(())
    );
    let mut client =
        SessionRegistryClient::new(baton_kit::grpc::channel(registry_address).expect("channel"));
    let open = |token: &str| {
        Outbound::new(Secret::new(token.to_string())).request(
            &call,
            registry::OpenRequest {
                key: Some(registry::SessionKey {
                    agent: "claude-code".into(),
                    session_id: "c-2".into(),
                }),
                source: registry::Source::Startup as i32,
                ..Default::default()
            },
        )
    };
    let refused = client.open(open(&dash_token)).await.expect_err("read-only");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(client.open(open(&ops_token)).await.is_ok(), "ops may Open");
    assert_eq!(
        get_session(registry_address, &ops_token, &call, &run).await,
        Err(Code::PermissionDenied),
        "GetSession is not in ops's methods"
    );
    let mut memories = ProvenanceClient::new(
        baton_kit::grpc::channel(&baton.addresses["provenance"]).expect("channel"),
    );
    let other_service = memories
        .get_memory(Outbound::new(Secret::new(dash_token.clone())).request(
            &call,
            provenance::GetMemoryRequest {
                memory_id: Uuid::now_v7().to_string(),
            },
        ))
        .await
        .expect_err("provenance is not in dash's services");
    assert_eq!(other_service.code(), Code::PermissionDenied);
    assert_eq!(
        get_session(
            registry_address,
            "bic_dash_not-the-token-at-all",
            &call,
            &run
        )
        .await,
        Err(Code::Unauthenticated)
    );

    baton_client(&["revoke", "--name", "dash", "--file", &file_text]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = get_session(registry_address, &dash_token, &call, &run).await;
        if answer == Err(Code::Unauthenticated) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still served after revoke: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        client.open(open(&ops_token)).await.is_ok(),
        "other clients keep working"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
