//! The facts registry publishes, written to its outbox in the transaction that makes them true.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::bus::outbox::{self, OutboxTable};
use baton_kit::error::ApiError;
use baton_proto::messages::{self, Envelope, SessionClosed, SessionResurrected};

use crate::session::{Lease, Liveness, Session};

/// Registry's outbox.
pub const OUTBOX: OutboxTable = OutboxTable("registry.outbox");

async fn write<T: serde::Serialize>(
    connection: &mut PgConnection,
    kind: &str,
    tenant_id: Uuid,
    now: DateTime<Utc>,
    payload: &T,
) -> Result<(), ApiError> {
    let envelope = Envelope::new(kind, tenant_id, now, payload)
        .map_err(|_| ApiError::internal("could not encode a bus message"))?;
    outbox::enqueue(connection, OUTBOX, &envelope).await?;
    Ok(())
}

/// `registry.session.closed` for a row just closed; explicit or implicit by the row's own
/// discriminator (`closed_at <= last_seen_at + lease`).
pub async fn closed(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session: &Session,
    lease: Lease,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let closed_at = session
        .closed_at
        .ok_or_else(|| ApiError::internal("a closed message for an open row"))?;
    let payload = SessionClosed {
        session_run_id: session.id,
        activation_epoch: session.activation_epoch,
        explicit: lease.liveness(Some(closed_at), session.last_seen_at, now)
            == Liveness::ClosedExplicitly,
        closed_at,
    };
    write(
        connection,
        messages::SESSION_CLOSED,
        tenant_id,
        now,
        &payload,
    )
    .await
}

/// `registry.session.closed` for a row the sweep closed (always implicit: the close lands past
/// lease and grace).
pub async fn swept(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session_run_id: Uuid,
    activation_epoch: i64,
    closed_at: DateTime<Utc>,
) -> Result<(), ApiError> {
    let payload = SessionClosed {
        session_run_id,
        activation_epoch,
        explicit: false,
        closed_at,
    };
    write(
        connection,
        messages::SESSION_CLOSED,
        tenant_id,
        closed_at,
        &payload,
    )
    .await
}

/// `registry.session.resurrected` for a row whose epoch just moved.
pub async fn resurrected(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    session: &Session,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let payload = SessionResurrected {
        session_run_id: session.id,
        activation_epoch: session.activation_epoch,
    };
    write(
        connection,
        messages::SESSION_RESURRECTED,
        tenant_id,
        now,
        &payload,
    )
    .await
}
