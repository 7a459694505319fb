//! Reacting to `registry.session.closed`: one pass per (run, epoch), idempotent on the message
//! id. A message is acknowledged once the pass is settled (or was already); a message the
//! closer cannot read is returned until the delivery limit sends it to the dead-letter queue.

use std::sync::Arc;

use baton_kit::bus::consumer::{Disposition, Received};
use baton_kit::clock::Clock;
use baton_proto::messages::{SESSION_CLOSED, SessionClosed};

use crate::metering::PassKey;
use crate::pass::{PassCall, Passes};
use crate::store;

/// Handles one delivery.
pub async fn handle(passes: Arc<Passes>, clock: Clock, received: Received) -> Disposition {
    let envelope = match received.envelope {
        Ok(envelope) => envelope,
        Err(error) => {
            tracing::warn!(error = %error, prior = received.prior_deliveries, "unreadable message");
            return Disposition::Requeue;
        }
    };
    if envelope.kind != SESSION_CLOSED {
        return Disposition::Ack;
    }
    let closed: SessionClosed = match envelope.payload(SESSION_CLOSED) {
        Ok(closed) => closed,
        Err(error) => {
            tracing::warn!(error = %error, prior = received.prior_deliveries, "unreadable session.closed");
            return Disposition::Requeue;
        }
    };
    let pool = passes.pool();
    match store::seen(pool, envelope.id).await {
        Ok(true) => return Disposition::Ack,
        Ok(false) => {}
        Err(error) => {
            tracing::warn!(error = error.code.as_str(), "inbox unavailable");
            return Disposition::Requeue;
        }
    }
    let call = PassCall {
        key: PassKey {
            tenant_id: envelope.tenant_id,
            run_id: closed.session_run_id,
            epoch: closed.activation_epoch,
        },
        now: clock.now(),
        test_now: None,
    };
    match passes.run(&call).await {
        Ok(settled) => {
            if let Some(settled) = settled {
                record_lag(&closed, clock.now(), settled.outcome.as_str());
            }
            match store::remember(pool, envelope.id, clock.now()).await {
                Ok(()) => Disposition::Ack,
                Err(_) => Disposition::Requeue,
            }
        }
        Err(error) => {
            tracing::warn!(
                error = error.code.as_str(),
                "closer pass could not run; message returned"
            );
            Disposition::Requeue
        }
    }
}

/// `baton.closer.lag` (s): from the session's close to its pass settling, for passes run from
/// the close message (the closer's promise to the user: how soon a finished commitment shows
/// resolved).
fn record_lag(closed: &SessionClosed, now: chrono::DateTime<chrono::Utc>, outcome: &'static str) {
    use baton_kit::telemetry::component::PerComponent;
    use baton_kit::telemetry::{Component, buckets};
    use opentelemetry::KeyValue;
    use opentelemetry::metrics::Histogram;
    static LAG: PerComponent<Histogram<f64>> = PerComponent::new();
    let histogram = LAG.get_or_init(Component::Closer, |meter| {
        meter
            .f64_histogram("baton.closer.lag")
            .with_unit("s")
            .with_description("Time from a session's close to its settled closer pass")
            .with_boundaries(buckets::LAG_SECONDS.to_vec())
            .build()
    });
    let lag = (now - closed.closed_at).num_milliseconds().max(0) as f64 / 1000.0;
    histogram.record(lag, &[KeyValue::new("result", outcome)]);
}
