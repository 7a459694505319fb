//! What every handler shares.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sqlx::PgPool;
use tonic::transport::Channel;

use baton_kit::clock::{Clock, TEST_NOW_KEY, test_instant};
use baton_kit::error::ErrorCode;
use baton_kit::grpc::{Outbound, OutboundCall, TracedChannel};
use baton_proto::closer::v1::closer_client::CloserClient;
use baton_proto::notify::v1::notify_client::NotifyClient;
use baton_proto::provenance::v1::provenance_client::ProvenanceClient;
use baton_proto::registry::v1::session_registry_client::SessionRegistryClient;
use baton_proto::triage::v1::triage_client::TriageClient;
use baton_proto::usage::v1::usage_client::UsageClient;

use crate::auth::{KeyResolver, Principal};
use crate::client_addr::Cidr;
use crate::rate_limit::RateLimiter;
use crate::response::HttpError;

/// The gateway's shared state, behind one `Arc`: axum hands every request its own copy of the
/// state, and a copy of [`Shared`] would clone five gRPC clients and three channels (each a
/// buffer sender and a service stack) per request — about 7% of the process's CPU at 2,400
/// heartbeats/s before this (issue 25's profile). A handler clones only the client it calls.
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What every handler shares: clients of the services behind the gateway, auth and limits.
#[derive(Debug)]
pub struct Shared {
    pub registry: SessionRegistryClient<TracedChannel>,
    pub provenance: ProvenanceClient<TracedChannel>,
    pub triage: TriageClient<TracedChannel>,
    pub closer: CloserClient<TracedChannel>,
    pub usage: UsageClient<TracedChannel>,
    pub notify: NotifyClient<TracedChannel>,
    /// Largest usage upload after decompression.
    pub usage_body_limit: usize,
    /// Channels to the services behind the gateway, kept (untraced) for readiness probes.
    pub registry_channel: Channel,
    pub provenance_channel: Channel,
    pub triage_channel: Channel,
    pub pool: PgPool,
    pub outbound: Outbound,
    pub clock: Clock,
    pub keys: KeyResolver,
    /// Per verified key (`<client>:<prefix>`), spent only after the secret verified.
    pub limiter: Arc<RateLimiter>,
    /// Per client address, spent by failed verifications.
    pub failure_limiter: Arc<RateLimiter>,
    /// Peers whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Arc<Vec<Cidr>>,
    /// Whether the gateway schema is the one this binary expects (`/readyz`).
    pub schema: baton_kit::schema::Readiness,
}

/// The member the request's key speaks for (`None`: unattributed), for the calls that
/// attribute work to it (session opens, heartbeats, pulses, usage uploads), which attach it
/// with `baton_kit::member::attach`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member(pub Option<String>);

impl FromRequestParts<AppState> for Member {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Member, HttpError> {
        parts
            .extensions
            .get::<Principal>()
            .map(|principal| Member(principal.member.clone()))
            .ok_or_else(|| HttpError::new(ErrorCode::Unauthorized, "no principal"))
    }
}

impl Member {
    /// `message` as a call for `call` that attributes its work to this member.
    pub fn request<T>(&self, state: &Shared, call: &OutboundCall, message: T) -> tonic::Request<T> {
        let mut request = state.outbound.request(call, message);
        baton_kit::member::attach(&mut request, self.0.as_deref());
        request
    }
}

/// The caller of a request as outgoing RPCs see it: tenant from the key, and the test instant
/// when the test clock is on (a malformed one is 400).
#[derive(Debug, Clone)]
pub struct Caller(pub OutboundCall);

impl FromRequestParts<AppState> for Caller {
    type Rejection = HttpError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, HttpError> {
        let principal = parts
            .extensions
            .get::<Principal>()
            .cloned()
            .ok_or_else(|| HttpError::new(ErrorCode::Unauthorized, "no principal"))?;
        let test_now = if state.clock.test_mode() {
            match parts.headers.get(TEST_NOW_KEY) {
                None => None,
                Some(value) => {
                    let text = value
                        .to_str()
                        .ok()
                        .filter(|text| test_instant(text).is_some());
                    let text = text.ok_or_else(|| {
                        HttpError::new(
                            ErrorCode::InvalidInput,
                            "X-Baton-Test-Now is not an RFC 3339 instant in 2000..2100",
                        )
                    })?;
                    Some(text.to_string())
                }
            }
        } else {
            None
        };
        Ok(Caller(OutboundCall {
            tenant_id: principal.tenant_id,
            test_now,
        }))
    }
}
