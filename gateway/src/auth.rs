//! API-key authentication (CONTRACT section 0, "Auth") and who may spend which bucket.
//!
//! Runs before the body is read (the middleware is `http_layers::require_api_key`): a missing,
//! malformed, unknown or revoked `X-API-Key` is 401 whatever the body holds; a store failure is
//! 503. The tenant comes from the key, never from the request.
//!
//! Looking a key up costs nothing an attacker can aim at a tenant (issue 9):
//! - keys are cached by prefix for a short time (default 30 s), known prefixes and unknown
//!   ones alike, so a flood of one prefix reaches the database once per period; revocation
//!   takes effect within that time;
//! - a look-up is a read; `last_used_at` is written only after the secret verified;
//! - a well-formed key that fails verification spends the *client's* failure bucket, never
//!   the tenant's; with that bucket empty, prefixes the cache does not know are refused
//!   without a look-up (429), while a key the cache knows is still verified, so a flood from
//!   a shared address never locks a real key out;
//! - the per-key bucket is spent only after verification.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, Request};
use sqlx::PgPool;
use uuid::Uuid;

use crate::client_addr;
use crate::keys::PresentedKey;
use crate::tenants::{self, Scope, StoredKey};

/// Header carrying the key.
pub const API_KEY_HEADER: &str = "x-api-key";
/// Most prefixes cached at once, per kind (known keys and unknown prefixes apart, so a flood
/// of random prefixes never evicts a real key).
const MAX_CACHED_KEYS: usize = 10_000;

/// The authenticated caller, stored in request extensions for handlers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub tenant_id: Uuid,
    /// The member the key speaks for; `None`: unattributed.
    pub member: Option<String>,
}

/// What to do with a presented key before any secret is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// The cache's answer is fresh: use it.
    UseCache,
    /// Ask the database.
    Lookup,
    /// The client has no failed verifications left and the prefix is not a known key.
    Refuse,
}

/// The pure decision. `cached` is `(is a known key, age)` of the cache entry, if any.
pub fn plan(cached: Option<(bool, Duration)>, ttl: Duration, failures_left: bool) -> Plan {
    match cached {
        Some((_, age)) if age < ttl => Plan::UseCache,
        // A known key is re-read whatever the client's failures: its holder is not locked out.
        Some((true, _)) => Plan::Lookup,
        _ if failures_left => Plan::Lookup,
        _ => Plan::Refuse,
    }
}

/// The outcome of checking a presented key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// The secret verified: the key's tenant, scope (the caller checks the scope fits) and
    /// member.
    Verified(Uuid, Scope, Option<String>),
    /// Wrong secret, unknown or revoked: 401.
    Failed,
    /// Too many failed verifications from this client: 429 after this many seconds.
    Throttled(u64),
}

#[derive(Debug, Default)]
struct Caches {
    known: HashMap<String, (StoredKey, Instant)>,
    unknown: HashMap<String, Instant>,
    /// When each key's use was last written (`last_used_at` at most once per cache period).
    touched: HashMap<String, Instant>,
}

/// Resolves presented keys against the store, with short-lived caches of known and unknown
/// prefixes.
#[derive(Debug, Clone)]
pub struct KeyResolver {
    pool: PgPool,
    ttl: Duration,
    caches: Arc<Mutex<Caches>>,
}

impl KeyResolver {
    pub fn new(pool: PgPool, ttl: Duration) -> KeyResolver {
        KeyResolver {
            pool,
            ttl,
            caches: Arc::new(Mutex::new(Caches::default())),
        }
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the cache holds for `prefix`: the stored key (None for an unknown prefix), its age.
    fn cached(&self, prefix: &str) -> Option<(Option<StoredKey>, Duration)> {
        let caches = self.caches();
        if let Some((stored, fetched)) = caches.known.get(prefix) {
            return Some((Some(stored.clone()), fetched.elapsed()));
        }
        caches
            .unknown
            .get(prefix)
            .map(|fetched| (None, fetched.elapsed()))
    }

    fn remember(&self, prefix: &str, stored: Option<&StoredKey>) {
        let mut caches = self.caches();
        let now = Instant::now();
        match stored {
            Some(stored) => {
                caches.unknown.remove(prefix);
                if caches.known.len() >= MAX_CACHED_KEYS {
                    caches.known.clear();
                }
                caches
                    .known
                    .insert(prefix.to_string(), (stored.clone(), now));
            }
            None => {
                caches.known.remove(prefix);
                if caches.unknown.len() >= MAX_CACHED_KEYS {
                    caches.unknown.clear();
                }
                caches.unknown.insert(prefix.to_string(), now);
            }
        }
    }

    /// Whether this verified use of `prefix` should be written now; marks it written.
    fn due_for_touch(&self, prefix: &str) -> bool {
        let mut caches = self.caches();
        let due = caches
            .touched
            .get(prefix)
            .is_none_or(|touched| touched.elapsed() >= self.ttl);
        if due {
            if caches.touched.len() >= MAX_CACHED_KEYS {
                caches.touched.clear();
            }
            caches.touched.insert(prefix.to_string(), Instant::now());
        }
        due
    }

    /// Checks `key` for a request from `client`, spending the client's failure bucket on a
    /// failed verification.
    pub async fn verify(
        &self,
        key: &PresentedKey,
        client: IpAddr,
        failures: &crate::rate_limit::RateLimiter,
    ) -> Result<Verification, sqlx::Error> {
        let client_key = client.to_string();
        let cached = self.cached(&key.prefix);
        let failures_left = failures.available(&client_key);
        let shape = cached
            .as_ref()
            .map(|(stored, age)| (stored.is_some(), *age));
        let stored = match plan(shape, self.ttl, failures_left.is_ok()) {
            Plan::UseCache => cached.and_then(|(stored, _)| stored),
            Plan::Lookup => {
                let stored = tenants::find_live_key(&self.pool, &key.prefix).await?;
                self.remember(&key.prefix, stored.as_ref());
                stored
            }
            Plan::Refuse => {
                return Ok(Verification::Throttled(failures_left.err().unwrap_or(1)));
            }
        };
        match stored.filter(|stored| key.matches(&stored.secret_sha256)) {
            Some(stored) => {
                if self.due_for_touch(&key.prefix)
                    && let Err(error) = tenants::touch_key(&self.pool, &key.prefix).await
                {
                    tracing::warn!(error = %error, "could not record api key use");
                }
                Ok(Verification::Verified(
                    stored.tenant_id,
                    stored.scope(),
                    stored.member.clone(),
                ))
            }
            None => Ok(match failures.check(&client_key) {
                Ok(()) => Verification::Failed,
                Err(retry_after) => Verification::Throttled(retry_after),
            }),
        }
    }
}

/// The client address of a request: the peer, or what trusted proxies say it is.
pub(crate) fn client_of(request: &Request, trusted: &[client_addr::Cidr]) -> IpAddr {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |info| info.0.ip());
    client_from(peer, request.headers(), trusted)
}

/// Whether the connection's peer is one of the trusted proxies.
pub(crate) fn peer_is_trusted_proxy(request: &Request, trusted: &[client_addr::Cidr]) -> bool {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .is_some_and(|info| trusted.iter().any(|cidr| cidr.contains(info.0.ip())))
}

/// The client address from the peer and the request's `X-Forwarded-For` headers.
pub(crate) fn client_from(
    peer: IpAddr,
    headers: &axum::http::HeaderMap,
    trusted: &[client_addr::Cidr],
) -> IpAddr {
    let forwarded: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    let forwarded = (!forwarded.is_empty()).then(|| forwarded.join(","));
    client_addr::client_address(peer, forwarded.as_deref(), trusted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_follow_the_cache_and_the_clients_failures() {
        let ttl = Duration::from_secs(30);
        let fresh = Duration::from_secs(1);
        let stale = Duration::from_secs(31);
        // (cache entry, failures left, plan)
        let table = [
            (Some((true, fresh)), true, Plan::UseCache),
            (Some((true, fresh)), false, Plan::UseCache),
            (Some((false, fresh)), true, Plan::UseCache),
            (Some((false, fresh)), false, Plan::UseCache),
            (Some((true, stale)), true, Plan::Lookup),
            (Some((true, stale)), false, Plan::Lookup),
            (Some((false, stale)), true, Plan::Lookup),
            (Some((false, stale)), false, Plan::Refuse),
            (None, true, Plan::Lookup),
            (None, false, Plan::Refuse),
        ];
        for (cached, failures_left, expected) in table {
            assert_eq!(
                plan(cached, ttl, failures_left),
                expected,
                "{cached:?} {failures_left}"
            );
        }
    }
}
