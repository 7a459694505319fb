//! A call's metadata both ways: what a handler reads from it ([`CallContext`]: tenant and
//! "now") and what an outgoing call carries ([`Outbound`]: service token, tenant, test instant
//! and trace context).

use chrono::{DateTime, Utc};
use tonic::{Request, Status};
use uuid::Uuid;

use crate::clock::{Clock, TEST_NOW_KEY};
use crate::error::ApiError;
use crate::service_tokens::ServiceTokens;
use crate::telemetry;

/// Metadata key naming the tenant a call acts for.
pub const TENANT_KEY: &str = "x-baton-tenant";

/// What a handler needs from the call's metadata: who it acts for and when "now" is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallContext {
    pub tenant_id: Uuid,
    pub now: DateTime<Utc>,
}

impl CallContext {
    /// Reads the tenant (required) and the test instant (honoured only in test-clock mode).
    pub fn from_request<T>(request: &Request<T>, clock: &Clock) -> Result<CallContext, Status> {
        let metadata = request.metadata();
        let tenant_id = metadata
            .get(TENANT_KEY)
            .and_then(|value| value.to_str().ok())
            .and_then(|text| Uuid::parse_str(text).ok())
            .ok_or_else(|| {
                Status::from(ApiError::invalid_input(format!(
                    "metadata {TENANT_KEY} must be a tenant uuid"
                )))
            })?;
        let test_now = metadata
            .get(TEST_NOW_KEY)
            .and_then(|value| value.to_str().ok());
        let now = clock.now_for(test_now).map_err(Status::from)?;
        Ok(CallContext { tenant_id, now })
    }

    /// The identity of a call this handler makes onward: same tenant, and the same instant
    /// when the test clock is on.
    pub fn onward(&self, clock: &Clock) -> OutboundCall {
        OutboundCall {
            tenant_id: self.tenant_id,
            test_now: clock.test_mode().then(|| crate::clock::iso(self.now)),
        }
    }
}

/// "Now" for a call that acts for no tenant (cross-tenant maintenance).
pub fn call_instant<T>(request: &Request<T>, clock: &Clock) -> Result<DateTime<Utc>, Status> {
    let test_now = request
        .metadata()
        .get(TEST_NOW_KEY)
        .and_then(|value| value.to_str().ok());
    clock.now_for(test_now).map_err(Status::from)
}

/// Stamps outgoing calls with the service token, tenant, test instant and trace context.
#[derive(Debug, Clone)]
pub struct Outbound {
    tokens: ServiceTokens,
}

/// The identity and clock of one outgoing call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundCall {
    pub tenant_id: Uuid,
    /// The test instant to forward (only ever set when the caller runs the test clock).
    pub test_now: Option<String>,
}

impl Outbound {
    /// Sends whichever token the set currently sends (a rotation takes effect without a
    /// restart).
    pub fn new(service_token: impl Into<ServiceTokens>) -> Outbound {
        Outbound {
            tokens: service_token.into(),
        }
    }

    /// Wraps `message` in a request carrying the call's metadata.
    pub fn request<T>(&self, call: &OutboundCall, message: T) -> Request<T> {
        let mut request = self.maintenance_request(call.test_now.as_deref(), message);
        if let Ok(value) = call.tenant_id.to_string().parse() {
            request.metadata_mut().insert(TENANT_KEY, value);
        }
        request
    }

    /// A request that acts for no tenant (cross-tenant maintenance): token, test instant and
    /// trace context only.
    pub fn maintenance_request<T>(&self, test_now: Option<&str>, message: T) -> Request<T> {
        let mut request = Request::new(message);
        let metadata = request.metadata_mut();
        if let Ok(value) = self.tokens.authorization().parse() {
            metadata.insert("authorization", value);
        }
        if let Some(value) = test_now.and_then(|text| text.parse().ok()) {
            metadata.insert(TEST_NOW_KEY, value);
        }
        telemetry::inject_current_into_metadata(metadata);
        request
    }
}
