//! Telemetry: a request carrying `traceparent` yields a registry server span whose parent is the
//! gateway's span, in the caller's trace (in-memory exporter, services in-process).

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tokio::net::TcpListener;
use tracing_subscriber::layer::SubscriberExt;

use baton_kit::config::Env;
use baton_kit::db;
use baton_kit::testing::TestDatabase;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn exporter() -> &'static (InMemorySpanExporter, SdkTracerProvider) {
    static TELEMETRY: OnceLock<(InMemorySpanExporter, SdkTracerProvider)> = OnceLock::new();
    TELEMETRY.get_or_init(|| {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::set_global_default(subscriber).expect("first subscriber");
        (exporter, provider)
    })
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| {
            let names: Vec<_> = spans.iter().map(|span| span.name.to_string()).collect();
            panic!("no span {name}; have {names:?}")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registry_server_span_is_a_child_of_the_gateway_span() {
    let (exporter, provider) = exporter();
    let database = TestDatabase::create().await;
    db::migrate_context(
        database.url(),
        &baton_registry::DB,
        baton_registry::migrator(),
    )
    .await
    .expect("migrate registry");
    db::migrate_context(
        database.url(),
        &baton_gateway::DB,
        baton_gateway::migrator(),
    )
    .await
    .expect("migrate gateway");

    let registry_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let registry_addr = registry_listener.local_addr().expect("addr").to_string();
    let env = Env::from_pairs([
        ("BATON_SERVICE_TOKEN", "trace-test-service-token"),
        ("BATON_DATABASE_URL", database.url()),
        ("BATON_REGISTRY__ADDR", registry_addr.as_str()),
    ]);
    let registry_config = baton_registry::RegistryConfig::from_env(&env).expect("config");
    tokio::spawn(baton_registry::serve(
        registry_config,
        registry_listener,
        baton_kit::shutdown::Shutdown::never(),
    ));
    let gateway_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let gateway_addr = gateway_listener.local_addr().expect("addr");
    let gateway_config = baton_gateway::GatewayConfig::from_env(&env).expect("config");
    let pool = db::connect_runtime(database.url(), None, &baton_gateway::DB, 1)
        .await
        .expect("gateway pool");
    let tenant = baton_gateway::tenants::create_tenant(&pool, "trace")
        .await
        .expect("tenant");
    tokio::spawn(baton_gateway::serve(
        gateway_config,
        gateway_listener,
        std::future::pending(),
    ));

    let response = reqwest::Client::new()
        .post(format!("http://{gateway_addr}/api/v1/agent-sessions/open"))
        .header("x-api-key", &tenant.api_key)
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
        .json(&json!({"agent": "codex", "sessionId": "traced", "source": "startup"}))
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), 200);

    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().expect("spans");
    let gateway = named(&spans, "POST /api/v1/agent-sessions/open");
    let registry = named(&spans, "baton.registry.v1.SessionRegistry/Open");
    assert_eq!(gateway.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(gateway.parent_span_id.to_string(), CALLER_SPAN);
    assert_eq!(registry.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(registry.parent_span_id, gateway.span_context.span_id());
    let attributes: Vec<String> = spans
        .iter()
        .flat_map(|span| span.attributes.iter().map(|kv| kv.value.to_string()))
        .collect();
    assert!(
        !attributes
            .iter()
            .any(|value| value.contains(&tenant.api_key)),
        "no key in any span attribute"
    );
}
