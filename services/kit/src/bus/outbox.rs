//! The transactional outbox and its relay.
//!
//! [`enqueue`] writes a message into the publishing context's outbox table inside the caller's
//! transaction, so the message exists exactly when the change it reports does. The [`Relay`]
//! publishes rows in order with publisher confirms and deletes a row only after the broker
//! confirmed it; a crash in between republishes it (at-least-once), and consumers absorb the
//! duplicate by message id. Several relays may run: rows are taken with `FOR UPDATE SKIP LOCKED`.
//!
//! Each context's outbox has the same shape:
//! `(id uuid primary key, routing_key text, envelope jsonb, headers jsonb, created_at timestamptz)`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel};
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge};
use sqlx::types::Json;
use sqlx::{AssertSqlSafe, PgConnection, PgPool};
use tokio::sync::Notify;
use tracing::Instrument;
use uuid::Uuid;

use baton_proto::messages::Envelope;

use crate::bus::topology::{self, Names};
use crate::bus::{BusConfig, connect, reconnect_delay};
use crate::shutdown::Shutdown;
use crate::telemetry;
use crate::telemetry::component::{Component, PerComponent, within};

/// Rows a relay publishes per round.
const BATCH: i64 = 100;
/// How often a relay looks without being woken.
const POLL: Duration = Duration::from_millis(500);
/// How often the depth gauge is refreshed.
const DEPTH_EVERY: Duration = Duration::from_secs(10);
/// Longest a round may hold its rows locked waiting for the broker: a stalled or
/// flow-controlled broker must not pin a pooled connection and its row locks.
pub const DEFAULT_ROUND_TIMEOUT: Duration = Duration::from_secs(15);

/// A context's outbox table, schema-qualified (a constant, never user input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutboxTable(pub &'static str);

/// Writes `envelope` into the outbox within the caller's transaction, with the current trace
/// context, routed by its type.
pub async fn enqueue(
    connection: &mut PgConnection,
    table: OutboxTable,
    envelope: &Envelope,
) -> Result<(), sqlx::Error> {
    let mut headers = HashMap::new();
    telemetry::inject_current_into_map(&mut headers);
    let statement = format!(
        "INSERT INTO {} (id, routing_key, envelope, headers, created_at) VALUES ($1, $2, $3, $4, clock_timestamp())",
        table.0
    );
    sqlx::query(AssertSqlSafe(statement))
        .bind(envelope.id)
        .bind(&envelope.kind)
        .bind(Json(envelope))
        .bind(Json(headers))
        .execute(connection)
        .await?;
    Ok(())
}

/// Messages waiting in the outbox (a metric; also what tests wait on).
pub async fn depth(pool: &PgPool, table: OutboxTable) -> Result<i64, sqlx::Error> {
    let statement = format!("SELECT count(*) FROM {}", table.0);
    sqlx::query_scalar(AssertSqlSafe(statement))
        .fetch_one(pool)
        .await
}

#[derive(sqlx::FromRow)]
struct OutboxRow {
    id: Uuid,
    routing_key: String,
    envelope: Json<Envelope>,
    headers: Json<HashMap<String, String>>,
}

/// Publishes one context's outbox.
#[derive(Debug, Clone)]
pub struct Relay {
    component: Component,
    pool: PgPool,
    table: OutboxTable,
    bus: BusConfig,
    wake: Arc<Notify>,
    round_timeout: Duration,
}

impl Relay {
    /// `pool` must be allowed to read and delete the outbox rows of every tenant; `component`
    /// owns the outbox (its spans and metrics report as it).
    pub fn new(component: Component, pool: PgPool, table: OutboxTable, bus: BusConfig) -> Relay {
        Relay {
            component,
            pool,
            table,
            bus,
            wake: Arc::new(Notify::new()),
            round_timeout: DEFAULT_ROUND_TIMEOUT,
        }
    }

    /// Bounds how long one round (select, publish, confirms, delete) may hold its row locks.
    pub fn with_round_timeout(mut self, round_timeout: Duration) -> Relay {
        self.round_timeout = round_timeout;
        self
    }

    /// Signals the relay that a message was just committed (publish now rather than at the
    /// next poll).
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Runs until shutdown, reconnecting after broker failures.
    pub async fn run(self, shutdown: Shutdown) {
        let component = self.component;
        within(component, self.relay(shutdown)).await;
    }

    async fn relay(self, shutdown: Shutdown) {
        // Consecutive failures, reset by a successful round; each failure waits longer.
        let mut failures = 0;
        while !shutdown.is_triggered() {
            if failures > 0 {
                tokio::select! {
                    () = tokio::time::sleep(reconnect_delay(failures - 1)) => {}
                    () = shutdown.clone().wait() => return,
                }
            }
            // The connection must outlive the channel: both are held for this round.
            let (_connection, channel) = match self.open_channel().await {
                Ok(opened) => opened,
                Err(error) => {
                    tracing::warn!(error = %error, table = self.table.0, "outbox relay cannot reach the broker");
                    failures += 1;
                    continue;
                }
            };
            let mut last_depth = tokio::time::Instant::now() - DEPTH_EVERY;
            loop {
                match self.publish_batch(&channel).await {
                    Ok(published) => {
                        failures = 0;
                        if last_depth.elapsed() >= DEPTH_EVERY {
                            last_depth = tokio::time::Instant::now();
                            self.record_depth().await;
                        }
                        if published == 0 {
                            tokio::select! {
                                () = self.wake.notified() => {}
                                () = tokio::time::sleep(POLL) => {}
                                () = shutdown.clone().wait() => return,
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(error = %error, table = self.table.0, "outbox relay round failed; starting over");
                        failures += 1;
                        break;
                    }
                }
            }
        }
    }

    /// Records the outbox depth gauge (messages not yet confirmed by the broker).
    async fn record_depth(&self) {
        static DEPTH: PerComponent<Gauge<i64>> = PerComponent::new();
        let gauge = DEPTH.get_or_init(self.component, |meter| {
            meter
                .i64_gauge("baton.outbox.depth")
                .with_unit("{message}")
                .with_description("Messages waiting in an outbox")
                .build()
        });
        if let Ok(count) = depth(&self.pool, self.table).await {
            gauge.record(count, &[KeyValue::new("outbox", self.table.0)]);
        }
    }

    /// `baton.bus.published`, once the rows' confirms are in and their delete is committed.
    fn count_published(&self, rows: &[OutboxRow]) {
        static PUBLISHED: PerComponent<Counter<u64>> = PerComponent::new();
        let counter = PUBLISHED.get_or_init(self.component, |meter| {
            meter
                .u64_counter("baton.bus.published")
                .with_unit("{message}")
                .with_description("Messages the outbox relay published and the broker confirmed")
                .build()
        });
        for row in rows {
            counter.add(
                1,
                &[
                    KeyValue::new("outbox", self.table.0),
                    KeyValue::new("messaging.destination.name", row.routing_key.clone()),
                ],
            );
        }
    }

    async fn open_channel(&self) -> Result<(lapin::Connection, Channel), RelayError> {
        let connection = connect(&self.bus, &format!("relay {}", self.table.0)).await?;
        let channel = connection.create_channel().await?;
        // Every publish is confirmed by the broker before its row is deleted.
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        topology::declare_all(&channel, &Names::new(&self.bus.namespace)).await?;
        Ok((connection, channel))
    }

    /// Publishes up to one batch within the round timeout; on a timeout the transaction is
    /// dropped (rolled back, locks released) and the round starts over on a new channel, so
    /// the rows are published again later (at-least-once).
    async fn publish_batch(&self, channel: &Channel) -> Result<usize, RelayError> {
        match tokio::time::timeout(self.round_timeout, self.publish_batch_unbounded(channel)).await
        {
            Ok(result) => result,
            Err(_) => Err(RelayError::TimedOut(self.round_timeout)),
        }
    }

    async fn publish_batch_unbounded(&self, channel: &Channel) -> Result<usize, RelayError> {
        let mut transaction = self.pool.begin().await?;
        // The database enforces the same bound should this process stall with the locks held.
        let guard = format!(
            "SET LOCAL idle_in_transaction_session_timeout = {}",
            self.round_timeout.as_millis().max(1) + 5_000
        );
        sqlx::query(AssertSqlSafe(guard))
            .execute(&mut *transaction)
            .await?;
        let statement = format!(
            "SELECT id, routing_key, envelope, headers FROM {} \
             ORDER BY created_at, id LIMIT {BATCH} FOR UPDATE SKIP LOCKED",
            self.table.0
        );
        let rows: Vec<OutboxRow> = sqlx::query_as(AssertSqlSafe(statement))
            .fetch_all(&mut *transaction)
            .await?;
        if rows.is_empty() {
            transaction.commit().await?;
            return Ok(0);
        }
        let exchange = Names::new(&self.bus.namespace).events();
        let mut confirms = Vec::with_capacity(rows.len());
        for row in &rows {
            let parent = telemetry::extract_from_map(&row.headers.0);
            let span = tracing::info_span!(
                "bus.publish",
                otel.name = %format!("{} publish", row.routing_key),
                otel.kind = "producer",
                messaging.system = "rabbitmq",
                messaging.destination.name = %exchange,
                messaging.message.id = %row.id,
            );
            telemetry::set_component_parent(&span, parent, self.component);
            let confirm = async {
                let payload = serde_json::to_vec(&row.envelope.0).map_err(RelayError::Encode)?;
                let mut headers = HashMap::new();
                telemetry::inject_current_into_map(&mut headers);
                let properties = properties(&row.envelope.0, &headers);
                let confirm = channel
                    .basic_publish(
                        ShortString::from(exchange.clone()),
                        ShortString::from(row.routing_key.clone()),
                        BasicPublishOptions::default(),
                        &payload,
                        properties,
                    )
                    .await?;
                Ok::<_, RelayError>(confirm)
            }
            .instrument(span)
            .await?;
            confirms.push(confirm);
        }
        for confirm in confirms {
            let confirmation = confirm.await?;
            if !confirmation.is_ack() {
                return Err(RelayError::Nacked);
            }
        }
        let ids: Vec<Uuid> = rows.iter().map(|row| row.id).collect();
        let statement = format!("DELETE FROM {} WHERE id = ANY($1)", self.table.0);
        sqlx::query(AssertSqlSafe(statement))
            .bind(&ids)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        self.count_published(&rows);
        tracing::debug!(
            published = ids.len(),
            table = self.table.0,
            "outbox relayed"
        );
        Ok(ids.len())
    }
}

/// Persistent JSON message carrying its id, type and trace context.
fn properties(envelope: &Envelope, trace: &HashMap<String, String>) -> BasicProperties {
    let mut headers = FieldTable::default();
    for (key, value) in trace {
        headers.insert(
            ShortString::from(key.clone()),
            AMQPValue::LongString(LongString::from(value.clone())),
        );
    }
    BasicProperties::default()
        .with_message_id(ShortString::from(envelope.id.to_string()))
        .with_type(ShortString::from(envelope.kind.clone()))
        .with_content_type(ShortString::from("application/json"))
        // 2 = persistent: written to disk by the broker.
        .with_delivery_mode(2)
        .with_headers(headers)
}

/// Why a relay round failed.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Broker(#[from] lapin::Error),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    #[error("could not encode an envelope: {0}")]
    Encode(serde_json::Error),
    #[error("the broker refused a message")]
    Nacked,
    #[error("the broker did not confirm within {0:?}")]
    TimedOut(Duration),
}
