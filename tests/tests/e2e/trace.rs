//! Telemetry: a request carrying `traceparent` yields a registry server span whose parent is the
//! gateway's CLIENT span under the gateway's request span, in the caller's trace (in-memory
//! exporter, services in-process).

use std::sync::OnceLock;

use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tokio::net::TcpListener;
use tracing_subscriber::layer::SubscriberExt;

use baton_kit::config::Env;
use baton_kit::db;
use baton_kit::testing::{TestDatabase, serve_on_free_port};

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
async fn registry_server_span_is_a_child_of_the_gateways_client_span() {
    let (exporter, provider) = exporter();
    let database = TestDatabase::migrated(vec![
        (&baton_registry::DB, baton_registry::migrator()),
        (&baton_gateway::DB, baton_gateway::migrator()),
    ])
    .await;

    let registry_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let registry_addr = registry_listener.local_addr().expect("addr").to_string();
    let env = Env::from_pairs([
        ("BATON_SERVICE_TOKEN", "trace-test-service-token"),
        ("BATON_DATABASE_URL", database.url()),
        ("BATON_DATABASE_MAX_CONNECTIONS", "4"),
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
    let mut gateway_config = baton_gateway::GatewayConfig::from_env(&env).expect("config");
    // The test plays the trusted proxy: only its traceparent is followed (issue 29).
    gateway_config.trusted_proxies = loopback_is_trusted();
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
    let of_kind = |kind: SpanKind| {
        spans
            .iter()
            .find(|span| {
                span.name == "baton.registry.v1.SessionRegistry/Open" && span.span_kind == kind
            })
            .unwrap_or_else(|| panic!("no {kind:?} span for SessionRegistry/Open"))
    };
    let (client, registry) = (of_kind(SpanKind::Client), of_kind(SpanKind::Server));
    assert_eq!(gateway.span_context.trace_id().to_string(), TRACE_ID);
    assert_eq!(gateway.parent_span_id.to_string(), CALLER_SPAN);
    assert_eq!(registry.span_context.trace_id().to_string(), TRACE_ID);
    // gateway request -> gateway's CLIENT span -> registry's SERVER span.
    assert_eq!(client.parent_span_id, gateway.span_context.span_id());
    assert_eq!(registry.parent_span_id, client.span_context.span_id());
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

/// Serves `serve` on a fresh port-0 listener; returns its address.
/// The gateway follows a caller's `traceparent` only from a trusted proxy; these tests send it
/// from 127.0.0.1.
fn loopback_is_trusted() -> Vec<baton_gateway::client_addr::Cidr> {
    baton_gateway::client_addr::parse_list("127.0.0.1/32").expect("cidr")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_spans_the_close_request_the_bus_and_the_closers_resolve() {
    const CLOSE_TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4737";
    let (exporter, provider) = exporter();
    let database = TestDatabase::migrated(vec![
        (&baton_registry::DB, baton_registry::migrator()),
        (&baton_provenance::DB, baton_provenance::migrator()),
        (&baton_triage::DB, baton_triage::migrator()),
        (&baton_closer::DB, baton_closer::migrator()),
        (&baton_gateway::DB, baton_gateway::migrator()),
    ])
    .await;
    let namespace = baton_kit::testing::bus_namespace();
    let env = Env::from_pairs([
        ("BATON_SERVICE_TOKEN", "trace-test-service-token"),
        ("BATON_DATABASE_URL", database.url()),
        ("BATON_DATABASE_MAX_CONNECTIONS", "4"),
        ("BATON_BUS_NAMESPACE", namespace.as_str()),
        ("BATON_CLOSER__ENABLED", "true"),
    ]);
    let never = baton_kit::shutdown::Shutdown::never;
    let registry_config = baton_registry::RegistryConfig::from_env(&env).expect("config");
    let registry =
        serve_on_free_port(|listener| baton_registry::serve(registry_config, listener, never()))
            .await;
    let mut provenance_config = baton_provenance::ProvenanceConfig::from_env(&env).expect("config");
    provenance_config.registry_addr = registry.clone();
    let provenance = serve_on_free_port(|listener| {
        baton_provenance::serve(provenance_config, listener, never().wait())
    })
    .await;
    let mut triage_config = baton_triage::TriageConfig::from_env(&env).expect("config");
    triage_config.registry_addr = registry.clone();
    triage_config.provenance_addr = provenance.clone();
    let triage =
        serve_on_free_port(|listener| baton_triage::serve(triage_config, listener, never().wait()))
            .await;
    let mut closer_config = baton_closer::CloserConfig::from_env(&env).expect("config");
    closer_config.registry_addr = registry.clone();
    closer_config.provenance_addr = provenance.clone();
    closer_config.triage_addr = triage.clone();
    let closer =
        serve_on_free_port(|listener| baton_closer::serve(closer_config, listener, never())).await;
    let mut gateway_config = baton_gateway::GatewayConfig::from_env(&env).expect("config");
    gateway_config.registry_addr = registry;
    gateway_config.provenance_addr = provenance;
    gateway_config.triage_addr = triage;
    gateway_config.closer_addr = closer;
    gateway_config.trusted_proxies = loopback_is_trusted();
    let gateway = serve_on_free_port(|listener| {
        baton_gateway::serve(gateway_config, listener, never().wait())
    })
    .await;
    let pool = db::connect_runtime(database.url(), None, &baton_gateway::DB, 1)
        .await
        .expect("pool");
    let tenant = baton_gateway::tenants::create_tenant(&pool, "trace")
        .await
        .expect("tenant");

    let http = reqwest::Client::new();
    let post = |path: &str, body: serde_json::Value| {
        http.post(format!("http://{gateway}/api/v1{path}"))
            .header("x-api-key", &tenant.api_key)
            .json(&body)
    };
    let created: serde_json::Value = post(
        "/memories",
        json!({"memoryType": "commitment", "topic": "orders-uuid", "content": "Migrate the orders table to uuid keys"}),
    )
    .send()
    .await
    .expect("remember")
    .json()
    .await
    .expect("json");
    let memory = created["memory"]["id"].as_str().expect("id").to_string();
    let opened: serde_json::Value = post(
        "/agent-sessions/open",
        json!({"agent": "codex", "sessionId": "t", "source": "startup",
               "briefedMemories": [{"id": memory, "topic": "orders-uuid", "status": "open"}]}),
    )
    .send()
    .await
    .expect("open")
    .json()
    .await
    .expect("json");
    let run: uuid::Uuid = opened["sessionRunId"]
        .as_str()
        .expect("run")
        .parse()
        .expect("uuid");
    post(
        "/agent-sessions/heartbeat",
        json!({"agent": "codex", "sessionId": "t", "lastMessageExcerpt": "Done: migrated the orders table to uuid keys."}),
    )
    .send()
    .await
    .expect("heartbeat");
    let closed = post(
        "/agent-sessions/close",
        json!({"agent": "codex", "sessionId": "t"}),
    )
    .header("traceparent", format!("00-{CLOSE_TRACE}-{CALLER_SPAN}-01"))
    .send()
    .await
    .expect("close");
    assert_eq!(closed.status(), 200);

    let admin = sqlx::PgPool::connect(database.url()).await.expect("admin");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let outcome: Option<Option<String>> =
            sqlx::query_scalar("SELECT outcome FROM closer.passes WHERE session_run_id = $1")
                .bind(run)
                .fetch_optional(&admin)
                .await
                .expect("pass");
        if outcome.flatten().as_deref() == Some("completed") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the closer never finished"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The consumer's span ends after its pass is settled and acked: flush until the whole
    // chain is in, within a deadline, instead of pausing and hoping.
    let expected = [
        "POST /api/v1/agent-sessions/close",
        "baton.registry.v1.SessionRegistry/Close",
        "registry.session.closed publish",
        "registry.session.closed process",
        "baton.provenance.v1.Provenance/Transition",
    ];
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let _ = provider.force_flush();
        let spans = exporter.get_finished_spans().expect("spans");
        let in_trace: Vec<String> = spans
            .iter()
            .filter(|span| span.span_context.trace_id().to_string() == CLOSE_TRACE)
            .map(|span| span.name.to_string())
            .collect();
        let missing: Vec<&str> = expected
            .iter()
            .copied()
            .filter(|name| !in_trace.iter().any(|seen| seen == name))
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{missing:?} missing from {in_trace:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    baton_kit::testing::delete_bus_namespace(&namespace);
}
