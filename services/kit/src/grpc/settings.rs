//! What a gRPC server is set up with ([`ServerSettings`]), and how long any outgoing call may
//! take ([`CLIENT_TIMEOUT`]).

use std::time::Duration;

use crate::grpc_tls::GrpcTls;
use crate::schema::Readiness;
use crate::service_tokens::ServiceTokens;
use crate::telemetry::Component;

/// Settings of a gRPC server.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// Whose calls these are (their spans' and metrics' `service.name`).
    pub component: Component,
    /// The tokens a call may carry.
    pub service_token: ServiceTokens,
    /// Longest a single call may run before it is cancelled.
    pub request_timeout: Duration,
    /// Most calls in flight across all connections; beyond it, calls are shed.
    pub max_concurrent_requests: usize,
    /// Health reports NOT_SERVING until this is ready (the schema gate).
    pub readiness: Readiness,
    /// Serve TLS only, requiring client certificates (see [`crate::grpc_tls`]).
    pub tls: Option<GrpcTls>,
}

impl ServerSettings {
    pub fn new(component: Component, service_token: impl Into<ServiceTokens>) -> ServerSettings {
        ServerSettings {
            component,
            service_token: service_token.into(),
            request_timeout: Duration::from_secs(10),
            max_concurrent_requests: 512,
            readiness: Readiness::ready(),
            tls: None,
        }
    }

    /// Serves with mutual TLS when `tls` is set.
    pub fn with_tls(mut self, tls: Option<GrpcTls>) -> ServerSettings {
        self.tls = tls;
        self
    }

    /// Reports NOT_SERVING to health checks until `readiness` is ready.
    pub fn with_readiness(mut self, readiness: Readiness) -> ServerSettings {
        self.readiness = readiness;
        self
    }
}

/// Longest an outgoing call may take, on the wire or in process.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
