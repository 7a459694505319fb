//! API-key authentication (CONTRACT section 0, "Auth").
//!
//! Runs before the body is read: a missing, malformed, unknown or revoked `X-API-Key` is 401
//! whatever the body holds; a store failure is 503. The tenant comes from the key, never from
//! the request. Verified keys are cached for a short time (default 30 s) so the hot path does
//! not query the database; revocation therefore takes effect within that time.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::error::ErrorCode;

use crate::keys::PresentedKey;
use crate::response::HttpError;
use crate::state::AppState;
use crate::tenants::{self, StoredKey};

/// Header carrying the key.
pub const API_KEY_HEADER: &str = "x-api-key";
/// Most keys cached at once.
const MAX_CACHED_KEYS: usize = 10_000;

/// The authenticated caller, stored in request extensions for handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Principal {
    pub tenant_id: Uuid,
}

/// Resolves presented keys against the store, with a short-lived cache.
#[derive(Debug, Clone)]
pub struct KeyResolver {
    pool: PgPool,
    ttl: Duration,
    cache: Arc<Mutex<HashMap<String, (StoredKey, Instant)>>>,
}

impl KeyResolver {
    pub fn new(pool: PgPool, ttl: Duration) -> KeyResolver {
        KeyResolver {
            pool,
            ttl,
            cache: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The tenant a key belongs to; `None` for an unknown, revoked or wrong key.
    pub async fn resolve(&self, key: &PresentedKey) -> Result<Option<Uuid>, sqlx::Error> {
        if let Some(stored) = self.cached(&key.prefix) {
            return Ok(key
                .matches(&stored.secret_sha256)
                .then_some(stored.tenant_id));
        }
        let Some(stored) = tenants::find_live_key(&self.pool, &key.prefix).await? else {
            return Ok(None);
        };
        let tenant_id = key
            .matches(&stored.secret_sha256)
            .then_some(stored.tenant_id);
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.len() >= MAX_CACHED_KEYS {
            cache.clear();
        }
        cache.insert(key.prefix.clone(), (stored, Instant::now()));
        Ok(tenant_id)
    }

    fn cached(&self, prefix: &str) -> Option<StoredKey> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .get(prefix)
            .filter(|(_, fetched)| fetched.elapsed() < self.ttl)
            .map(|(stored, _)| stored.clone())
    }
}

/// Middleware on every `/api/v1` route: rate limit, then key check, then the handler.
pub async fn require_api_key(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, HttpError> {
    let presented = request
        .headers()
        .get(API_KEY_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty());
    let Some(presented) = presented else {
        return Err(HttpError::new(ErrorCode::Unauthorized, "missing X-API-Key"));
    };
    let Some(key) = PresentedKey::parse(presented) else {
        return Err(HttpError::new(
            ErrorCode::Unauthorized,
            "malformed X-API-Key",
        ));
    };
    let client_ip = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or_else(|| "unknown".to_string(), |info| info.0.ip().to_string());
    if let Err(retry_after) = state.limiter.check(&format!("{client_ip}:{}", key.prefix)) {
        return Err(
            HttpError::new(ErrorCode::RateLimited, "rate limit exceeded")
                .with_retry_after(retry_after),
        );
    }
    let tenant_id = state.keys.resolve(&key).await.map_err(|error| {
        tracing::warn!(error = %error, "api key store unavailable");
        HttpError::new(ErrorCode::ServiceUnavailable, "key store unavailable")
    })?;
    let Some(tenant_id) = tenant_id else {
        return Err(HttpError::new(
            ErrorCode::Unauthorized,
            "unknown or revoked key",
        ));
    };
    let mut request = request;
    request.extensions_mut().insert(Principal { tenant_id });
    Ok(next.run(request).await)
}
