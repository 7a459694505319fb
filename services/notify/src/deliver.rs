//! The delivery worker: the outbox pattern applied to HTTP.
//!
//! The consumer only writes `pending` deliveries (due at once) in the transaction that reads
//! the alert; this worker sends them. A round claims due deliveries of any tenant on the
//! maintenance pool ([`store::claim_due`], `FOR UPDATE SKIP LOCKED`, leasing each for the
//! request timeout plus a margin), and for each, in the delivery's tenant: reads it with its
//! webhook, POSTs the signed body outside any transaction (no connection or row lock is held
//! while a receiver takes its time), then records the attempt and the delivery's next state in
//! one transaction, compare-and-set on the attempt count so a second worker that took the same
//! delivery after a lapsed lease records nothing. Any 2xx delivers; anything else (another
//! status, a timeout, a refused address) is a failed attempt, retried after
//! [`Backoff::delay`](crate::backoff::Backoff::delay) until `max_attempts`, then `failed`.
//! Redirects are not followed: a 3xx is a failure.
//!
//! Every attempt is in the attempt log with its status code or error class and duration. No
//! URL (a Slack webhook URL is itself a credential), body or secret goes into a log line or a
//! span; a span carries the delivery id, the event and the attempt's outcome.
//!
//! Deliveries run on the system clock, also under `BATON_TEST_CLOCK`: a receiver waits in real
//! time, so backoff tests set a short `BATON_NOTIFY__BACKOFF_BASE` instead.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt;
use rand::Rng;
use sqlx::PgPool;
use tokio::sync::Notify;
use tracing::Instrument;

use baton_kit::db::begin_tenant;
use baton_kit::shutdown::Shutdown;
use baton_kit::telemetry::Component;

use crate::address::{self, AddressPolicy, AddressRefused, ResolveFailed, VettedResolver};
use crate::config::DeliveryConfig;
use crate::metrics::Instruments;
use crate::signing;
use crate::store::{self, AttemptRow, Claimed, ClaimedId, Next};

/// Headroom past the request timeout before a claimed delivery may be taken again.
const LEASE_MARGIN: Duration = Duration::from_secs(30);
/// How often the backlog gauge is refreshed.
const BACKLOG_EVERY: Duration = Duration::from_secs(15);
/// `User-Agent` of every delivery.
const USER_AGENT: &str = "Baton-Webhooks/1";

/// Why an attempt failed: the attempt log's `error` class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptError {
    /// The receiver answered, not with a 2xx.
    HttpStatus,
    Timeout,
    Dns,
    Connect,
    /// The host is, or resolved only to, addresses the policy refuses.
    AddressRefused,
    /// The stored URL is not one the current policy sends to (e.g. `http` in hosted mode).
    InvalidUrl,
    /// Anything else the client reported.
    Request,
}

impl AttemptError {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptError::HttpStatus => "http_status",
            AttemptError::Timeout => "timeout",
            AttemptError::Dns => "dns",
            AttemptError::Connect => "connect",
            AttemptError::AddressRefused => "address_refused",
            AttemptError::InvalidUrl => "invalid_url",
            AttemptError::Request => "request",
        }
    }
}

/// Classifies a client error by what lies in its source chain.
fn classify(error: &reqwest::Error) -> AttemptError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if current.is::<AddressRefused>() {
            return AttemptError::AddressRefused;
        }
        if current.is::<ResolveFailed>() {
            return AttemptError::Dns;
        }
        source = current.source();
    }
    if error.is_timeout() {
        AttemptError::Timeout
    } else if error.is_connect() {
        AttemptError::Connect
    } else {
        AttemptError::Request
    }
}

/// The URL to send to, re-checked under the current policy.
fn target(url: &str, policy: AddressPolicy) -> Result<url::Url, AttemptError> {
    let parsed = url::Url::parse(url).map_err(|_| AttemptError::InvalidUrl)?;
    if let Some(host) = parsed.host() {
        address::vet_literal(policy, &host).map_err(|_| AttemptError::AddressRefused)?;
    }
    crate::webhook::validate_url(url, policy).map_err(|_| AttemptError::InvalidUrl)
}

/// What one attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Outcome {
    status_code: Option<u16>,
    error: Option<AttemptError>,
}

/// Sends claimed deliveries until shutdown.
#[derive(Debug, Clone)]
pub struct Worker {
    pool: PgPool,
    maintenance: PgPool,
    client: reqwest::Client,
    config: DeliveryConfig,
    policy: AddressPolicy,
    wake: Arc<Notify>,
}

/// The worker could not start.
#[derive(Debug, thiserror::Error)]
#[error("could not build the webhook HTTP client: {0}")]
pub struct ClientError(#[from] reqwest::Error);

impl Worker {
    /// `pool` is the runtime role's (tenant transactions), `maintenance` the maintenance
    /// role's (the cross-tenant claim and backlog count).
    pub fn new(
        pool: PgPool,
        maintenance: PgPool,
        config: DeliveryConfig,
    ) -> Result<Worker, ClientError> {
        let policy = AddressPolicy::from_allow_private(config.allow_private_addresses);
        let client = reqwest::Client::builder()
            // The only resolver: it drops non-public answers, and the connector dials exactly
            // what it returns (no second lookup to rebind between check and connect).
            .dns_resolver(Arc::new(VettedResolver::new(policy)))
            // A redirect would connect somewhere unvetted; a 3xx is a failed attempt.
            .redirect(reqwest::redirect::Policy::none())
            // A proxy from the environment would connect on our behalf, unvetted.
            .no_proxy()
            .https_only(policy == AddressPolicy::PublicOnly)
            .connect_timeout(config.request_timeout)
            .timeout(config.request_timeout)
            .user_agent(USER_AGENT)
            .build()?;
        Ok(Worker {
            pool,
            maintenance,
            client,
            config,
            policy,
            wake: Arc::new(Notify::new()),
        })
    }

    /// Wakes the worker (a delivery was just committed): send now rather than at the next
    /// poll.
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Claims and sends due deliveries until `shutdown`; in-flight attempts finish first.
    pub async fn run(self, shutdown: Shutdown) {
        let lease = self.config.request_timeout + LEASE_MARGIN;
        let batch = self.config.concurrency as i64;
        let mut last_backlog: Option<Instant> = None;
        while !shutdown.is_triggered() {
            if last_backlog.is_none_or(|at| at.elapsed() >= BACKLOG_EVERY) {
                last_backlog = Some(Instant::now());
                self.record_backlog().await;
            }
            let claimed = match store::claim_due(&self.maintenance, Utc::now(), lease, batch).await
            {
                Ok(claimed) => claimed,
                Err(error) => {
                    tracing::warn!(error = %error, "could not claim due deliveries");
                    Vec::new()
                }
            };
            let full = claimed.len() as i64 == batch;
            futures::stream::iter(claimed)
                .for_each_concurrent(self.config.concurrency, |claimed| self.attempt(claimed))
                .await;
            if full {
                continue;
            }
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(self.config.poll_interval) => {}
                () = shutdown.clone().wait() => return,
            }
        }
    }

    async fn record_backlog(&self) {
        match store::backlog(&self.maintenance).await {
            Ok((pending, retrying)) => Instruments::notify().backlog(pending, retrying),
            Err(error) => tracing::warn!(error = %error, "could not count the delivery backlog"),
        }
    }

    /// One attempt at one claimed delivery, as a root span of the notify component.
    async fn attempt(&self, claimed: ClaimedId) {
        let span = tracing::info_span!(
            "notify.deliver",
            otel.kind = "client",
            delivery.id = %claimed.id,
            event = tracing::field::Empty,
            attempt = tracing::field::Empty,
            http.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        baton_kit::telemetry::detached::root(&span, Component::Notify, []);
        let result = self
            .attempt_in_span(claimed, &span)
            .instrument(span.clone())
            .await;
        if let Err(error) = result {
            let _entered = span.enter();
            tracing::warn!(error = %error, "delivery attempt could not be recorded; it is retried when its claim lapses");
        }
    }

    async fn attempt_in_span(
        &self,
        claimed: ClaimedId,
        span: &tracing::Span,
    ) -> Result<(), sqlx::Error> {
        let mut transaction = begin_tenant(&self.pool, claimed.tenant_id).await?;
        let delivery = store::load_claimed(&mut transaction, claimed.tenant_id, claimed.id).await?;
        transaction.commit().await?;
        let Some(delivery) = delivery else {
            return Ok(());
        };
        let number = delivery.attempts + 1;
        span.record("event", delivery.event.as_str());
        span.record("attempt", number);
        let at = Utc::now();
        let started = Instant::now();
        let outcome = self.send(&delivery, at.timestamp()).await;
        let elapsed = started.elapsed();
        if let Some(code) = outcome.status_code {
            span.record("http.response.status_code", code);
        }
        if let Some(error) = outcome.error {
            span.record("error.type", error.as_str());
        }
        let next = match outcome.error {
            None => Next::Delivered,
            Some(_) if number as u32 >= self.config.max_attempts => Next::Failed,
            Some(_) => {
                let jitter = rand::rng().random::<f64>();
                let delay = self.config.backoff.delay(number as u32, jitter);
                Next::RetryAt(
                    Utc::now() + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX),
                )
            }
        };
        let mut transaction = begin_tenant(&self.pool, claimed.tenant_id).await?;
        let settled = store::settle(
            &mut transaction,
            claimed.tenant_id,
            claimed.id,
            delivery.attempts,
            next,
            Utc::now(),
        )
        .await?;
        if !settled {
            // Another worker recorded this attempt number first (our claim had lapsed).
            transaction.rollback().await?;
            return Ok(());
        }
        store::insert_attempt(
            &mut transaction,
            claimed.tenant_id,
            &AttemptRow {
                delivery_id: claimed.id,
                number,
                at,
                duration_ms: elapsed.as_millis().min(i32::MAX as u128) as i32,
                status_code: outcome.status_code.map(i32::from),
                error: outcome.error.map(|error| error.as_str().to_string()),
            },
        )
        .await?;
        transaction.commit().await?;
        let instruments = Instruments::notify();
        instruments.attempt(
            elapsed.as_secs_f64(),
            outcome.error.map(AttemptError::as_str),
        );
        match next {
            Next::Delivered => instruments.settled("delivered"),
            Next::Failed => instruments.settled("failed"),
            Next::RetryAt(_) => {}
        }
        tracing::info!(
            attempt = number,
            status = outcome.status_code,
            error = outcome.error.map(AttemptError::as_str),
            delivered = next == Next::Delivered,
            "delivery attempted"
        );
        Ok(())
    }

    /// POSTs the signed body; never panics, never reads the answer's body.
    async fn send(&self, delivery: &Claimed, timestamp: i64) -> Outcome {
        let failed = |error| Outcome {
            status_code: None,
            error: Some(error),
        };
        let Some(secret) = delivery.secret.as_deref() else {
            // The webhook was deleted after the claim; its deliveries are cancelled.
            return failed(AttemptError::InvalidUrl);
        };
        let url = match target(&delivery.url, self.policy) {
            Ok(url) => url,
            Err(error) => return failed(error),
        };
        let signature = signing::signature(secret, timestamp, delivery.body.as_bytes());
        let request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("X-Baton-Event", delivery.event.as_str())
            .header("X-Baton-Delivery", delivery.id.to_string())
            .header("X-Baton-Timestamp", timestamp.to_string())
            .header("X-Baton-Signature", signature)
            .body(delivery.body.clone());
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                Outcome {
                    status_code: Some(status.as_u16()),
                    error: (!status.is_success()).then_some(AttemptError::HttpStatus),
                }
            }
            Err(error) => failed(classify(&error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_urls_are_rechecked_under_the_current_policy() {
        assert_eq!(
            target("http://example.com/", AddressPolicy::PublicOnly),
            Err(AttemptError::InvalidUrl)
        );
        assert_eq!(
            target("https://127.0.0.1/", AddressPolicy::PublicOnly),
            Err(AttemptError::AddressRefused)
        );
        assert_eq!(
            target("https://[::ffff:10.0.0.1]/", AddressPolicy::PublicOnly),
            Err(AttemptError::AddressRefused)
        );
        assert!(target("http://127.0.0.1:9/", AddressPolicy::AllowPrivate).is_ok());
    }
}
