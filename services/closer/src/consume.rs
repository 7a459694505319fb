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
        Ok(_) => match store::remember(pool, envelope.id, clock.now()).await {
            Ok(()) => Disposition::Ack,
            Err(_) => Disposition::Requeue,
        },
        Err(error) => {
            tracing::warn!(
                error = error.code.as_str(),
                "closer pass could not run; message returned"
            );
            Disposition::Requeue
        }
    }
}
