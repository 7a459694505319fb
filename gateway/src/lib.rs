//! `baton-gateway`: the hook-facing REST API (CONTRACT.md), translated into gRPC calls on the
//! services behind it. It owns only who is calling (schema `gateway`: tenants and API keys);
//! every domain answer comes from a service.

pub mod api_schema;
pub mod auth;
pub mod body;
pub mod call_keys;
pub mod client_addr;
pub mod config;
pub mod console;
pub mod csv_export;
pub mod health;
pub mod http_layers;
pub mod keys;
pub mod limits;
pub mod openapi;
pub mod path_ids;
pub mod rate_limit;
pub mod response;
pub mod routes;
mod rpc;
pub mod server;
pub mod state;
pub mod strict;
pub mod tenants;
pub mod testing;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};
use tokio::net::TcpListener;

use baton_kit::clock::Clock;
use baton_kit::db::{self, ContextDb};
use baton_kit::error::ApiError;
use baton_kit::grpc::{self, Outbound};
use baton_kit::telemetry::Component;
use baton_proto::closer::v1::closer_client::CloserClient;
use baton_proto::notify::v1::notify_client::NotifyClient;
use baton_proto::provenance::v1::provenance_client::ProvenanceClient;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;
use baton_proto::triage::v1::triage_client::TriageClient;
use baton_proto::usage::v1::usage_client::UsageClient;

pub use config::GatewayConfig;

use crate::auth::KeyResolver;
use crate::limits::Limits;
use crate::rate_limit::RateLimiter;
use crate::routes::{
    briefing, budgets, closer, events, liveness, memories, memory_reads, runaway, sessions, triage,
    usage, usage_upload, webhooks,
};
use crate::state::AppState;

/// The gateway's place in the database.
pub const DB: ContextDb = baton_kit::context_db!("gateway");

/// The gateway's migrations, embedded at build time.
pub fn migrator() -> sqlx::migrate::Migrator {
    sqlx::migrate!("./migrations")
}

/// Errors that stop the gateway.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Database(#[from] db::DbError),
    #[error(transparent)]
    Client(#[from] ApiError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The whole HTTP surface. Layers, outermost first: request span and metrics, then in-flight
/// bound, timeout and body limit; `/api/v1` routes add rate limit and API-key auth before any
/// body is read.
pub fn router(state: AppState, limits: Limits) -> Router {
    let mut api = Router::new();
    if state.clock.test_mode() {
        // Only with BATON_TEST_CLOCK: without it the route does not exist (DESIGN 3.1).
        api = api.route("/_test/sweep", post(testing::sweep));
    }
    let api = api
        .route("/agent-sessions/open", post(sessions::open))
        .route("/agent-sessions/heartbeat", post(sessions::heartbeat))
        .route("/agent-sessions/close", post(sessions::close))
        .route("/agent-sessions/pulse", post(liveness::pulse))
        .route(
            "/agent-sessions/{session_run_id}/liveness",
            get(liveness::read),
        )
        .route("/agent-sessions/{session_run_id}", get(sessions::row))
        .route("/agent-sessions/{session_run_id}/events", get(events::list))
        .route(
            "/agent-sessions/{session_run_id}/closer",
            get(closer::passes),
        )
        .route(
            "/agent-sessions/{session_run_id}/triage-attempts",
            get(triage::attempts),
        )
        .route("/agent-sessions/triage/begin", post(triage::begin))
        .route("/agent-sessions/triage/complete", post(triage::complete))
        .route("/prompts/debrief", get(triage::debrief))
        .route("/memories", post(memories::remember))
        .route("/memories/{id}", get(memory_reads::read))
        .route("/memories/{id}/history", get(memory_reads::history))
        .route("/memories/{id}/revise", post(memories::revise))
        .route("/memories/{id}/resolve", post(memories::resolve))
        .route("/memories/{id}/archive", post(memories::archive))
        .route("/briefing", get(briefing::briefing))
        .route("/usage", get(usage::query))
        .route("/budgets", get(budgets::list).post(budgets::create))
        .route("/budgets/{id}", axum::routing::delete(budgets::delete))
        .route("/runaway-policy", get(runaway::get).put(runaway::put))
        .route("/webhooks", get(webhooks::list).post(webhooks::create))
        .route("/webhooks/deliveries", get(webhooks::deliveries))
        .route("/webhooks/{id}", axum::routing::delete(webhooks::delete))
        .route("/usage/batches", post(usage_upload::upload))
        .route("/usage/sessions", get(usage::sessions))
        .route("/agent-sessions/{session_run_id}/tree", get(usage::tree))
        .fallback(response::not_found)
        .method_not_allowed_fallback(response::method_not_allowed)
        // Inside the auth layer: it needs the caller's tenant.
        .layer(from_fn_with_state(state.clone(), call_keys::record))
        .layer(from_fn_with_state(
            state.clone(),
            http_layers::require_api_key,
        ))
        // Added after the auth layer, so it stays public.
        .route("/openapi.json", get(openapi::document));
    let routes = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .nest("/api/v1", api)
        .nest("/console", console::router(state.clone()))
        .fallback(response::not_found);
    limits
        .apply(routes)
        .layer(from_fn_with_state(state.clone(), http_layers::trace))
        .with_state(state)
}

/// Builds the shared state: database pool, service clients, key cache, rate limiter.
pub async fn state(config: &GatewayConfig) -> Result<AppState, ServeError> {
    let pool = db::connect_runtime(
        config.common.database_url.expose(),
        config
            .database_url
            .as_ref()
            .map(baton_kit::config::SecretUrl::expose),
        &DB,
        config.common.database_max_connections,
    )
    .await?;
    let pool_for_gate = pool.clone();
    let registry_channel =
        grpc::channel_with_tls(&config.registry_addr, config.common.grpc_tls.as_ref())?;
    let provenance_channel =
        grpc::channel_with_tls(&config.provenance_addr, config.common.grpc_tls.as_ref())?;
    let triage_channel =
        grpc::channel_with_tls(&config.triage_addr, config.common.grpc_tls.as_ref())?;
    Ok(AppState::new(state::Shared {
        registry: SessionRegistryClient::new(grpc::traced(
            Component::Gateway,
            &config.registry_addr,
            registry_channel.clone(),
        )),
        registry_channel,
        provenance: ProvenanceClient::new(grpc::traced(
            Component::Gateway,
            &config.provenance_addr,
            provenance_channel.clone(),
        )),
        provenance_channel,
        triage: TriageClient::new(grpc::traced(
            Component::Gateway,
            &config.triage_addr,
            triage_channel.clone(),
        )),
        closer: CloserClient::new(grpc::traced_channel_with_tls(
            Component::Gateway,
            &config.closer_addr,
            config.common.grpc_tls.as_ref(),
        )?),
        usage: UsageClient::new(grpc::traced_channel_with_tls(
            Component::Gateway,
            &config.usage_addr,
            config.common.grpc_tls.as_ref(),
        )?)
        .max_decoding_message_size(16 << 20),
        notify: NotifyClient::new(grpc::traced_channel_with_tls(
            Component::Gateway,
            &config.notify_addr,
            config.common.grpc_tls.as_ref(),
        )?),
        usage_body_limit: config.usage_body_limit,
        triage_channel,
        keys: KeyResolver::new(pool.clone(), config.key_cache_ttl),
        pool,
        outbound: Outbound::new(&config.common.service_token),
        clock: Clock::new(config.common.test_clock),
        limiter: Arc::new(RateLimiter::new(
            config.rate_limit_requests,
            config.rate_limit_window,
        )),
        failure_limiter: Arc::new(RateLimiter::new(
            config.rate_limit_failures,
            config.rate_limit_window,
        )),
        trusted_proxies: Arc::new(config.trusted_proxies.clone()),
        schema: baton_kit::schema::gate(
            pool_for_gate,
            &DB,
            migrator(),
            baton_kit::shutdown::Shutdown::never(),
        ),
    }))
}

/// Serves the gateway on an already-bound listener until `shutdown` resolves, then drains.
pub async fn serve(
    config: GatewayConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let state = state(&config).await?;
    let policy = server::ConnectionPolicy {
        header_read_timeout: config.header_read_timeout,
        max_connections_per_client: config.max_connections_per_client,
        trusted_proxies: state.trusted_proxies.clone(),
    };
    let limits = Limits {
        body_limit: config.body_limit,
        body_timeout: config.body_timeout,
        request_timeout: config.request_timeout,
        max_in_flight: config.max_in_flight,
    };
    let app = router(state, limits);
    server::serve(listener, app, policy, shutdown).await?;
    Ok(())
}
