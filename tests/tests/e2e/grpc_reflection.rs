//! Each gRPC port's reflection lists the one service it serves, not every context's.

use baton_tests::{Baton, SERVICE_TOKEN};
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

async fn listed(address: &str) -> Vec<String> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let token: tonic::metadata::MetadataValue<_> =
        format!("Bearer {SERVICE_TOKEN}").parse().expect("header");
    let mut client =
        ServerReflectionClient::with_interceptor(channel, move |mut request: tonic::Request<()>| {
            request
                .metadata_mut()
                .insert("authorization", token.clone());
            Ok(request)
        });
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .expect("reflection answers a caller holding the service token")
        .into_inner();
    let answer = answers
        .message()
        .await
        .expect("stream")
        .expect("one answer");
    match answer.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => {
            let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
            names.sort();
            names
        }
        other => panic!("not a service list: {other:?}"),
    }
}

#[tokio::test]
async fn reflection_on_each_port_lists_only_the_service_it_serves() {
    let baton = Baton::start().await;
    for (service, name) in [
        ("registry", "baton.registry.v1.SessionRegistry"),
        ("provenance", "baton.provenance.v1.Provenance"),
        ("triage", "baton.triage.v1.Triage"),
        ("closer", "baton.closer.v1.Closer"),
        ("usage", "baton.usage.v1.Usage"),
    ] {
        assert_eq!(
            listed(&baton.addresses[service]).await,
            vec![name.to_string()],
            "{service}"
        );
    }
}
