//! Notify against real Postgres (a fresh database per test), the real RabbitMQ (a fresh bus
//! namespace per test), and a real HTTP receiver on 127.0.0.1 that records what it gets.
//! Notify itself is served over gRPC on port 0, as `baton serve notify` would run it.

mod claims;
mod deliveries;
mod ssrf;
mod webhooks;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::serve::ListenerExt;
use chrono::Utc;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::ShortString;
use lapin::{BasicProperties, Connection};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tonic::transport::Channel;
use uuid::Uuid;

use baton_kit::bus::BusConfig;
use baton_kit::bus::topology::{self, Names};
use baton_kit::config::{Env, Secret};
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_kit::shutdown::{self, ShutdownTrigger};
use baton_kit::testing::{TestDatabase, bus_namespace, delete_bus_namespace, init_logging};
use baton_proto::messages::{BUDGET_CROSSED, BudgetCrossed, Envelope};
use baton_proto::notify::v1 as proto;
use baton_proto::notify::v1::notify_client::NotifyClient;

pub const TOKEN: &str = "notify-test-service-token";

/// How long a test waits for something the service does in the background.
const PATIENCE: Duration = Duration::from_secs(20);

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Hit {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct ReceiverState {
    hits: Mutex<Vec<Hit>>,
    /// TCP connections accepted, whether or not a request followed.
    connections: AtomicUsize,
    /// Statuses to answer with, in order; 200 once empty.
    script: Mutex<VecDeque<u16>>,
}

/// A webhook receiver on 127.0.0.1.
pub struct Receiver {
    pub address: SocketAddr,
    state: Arc<ReceiverState>,
}

async fn receive(
    State(state): State<Arc<ReceiverState>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    state.hits.lock().expect("hits").push(Hit { headers, body });
    let status = state
        .script
        .lock()
        .expect("script")
        .pop_front()
        .unwrap_or(200);
    StatusCode::from_u16(status).expect("a status")
}

impl Receiver {
    /// Answers with `script`'s statuses in order, then 200.
    pub async fn start(script: &[u16]) -> Receiver {
        let state = Arc::new(ReceiverState::default());
        state.script.lock().expect("script").extend(script);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("addr");
        let counted = state.clone();
        let listener = listener.tap_io(move |_stream| {
            counted.connections.fetch_add(1, Ordering::SeqCst);
        });
        let router = axum::Router::new()
            .route("/{*path}", axum::routing::post(receive))
            .with_state(state.clone());
        tokio::spawn(axum::serve(listener, router).into_future());
        Receiver { address, state }
    }

    pub fn url(&self, scheme: &str, host: &str, path: &str) -> String {
        format!("{scheme}://{host}:{}{path}", self.address.port())
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state.hits.lock().expect("hits").clone()
    }

    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }
}

/// Notify served on port 0 with its own database and bus namespace.
pub struct Harness {
    pub database: TestDatabase,
    pub admin: PgPool,
    pub namespace: String,
    client: NotifyClient<Channel>,
    outbound: Outbound,
    publisher: Connection,
    trigger: ShutdownTrigger,
}

impl Harness {
    /// Self-hosted (private addresses and `http` allowed), fast retries.
    pub async fn self_hosted() -> Harness {
        Harness::start(&[("BATON_NOTIFY__ALLOW_PRIVATE_ADDRESSES", "true")]).await
    }

    /// Hosted (the default policy), one attempt per delivery.
    pub async fn hosted() -> Harness {
        Harness::start(&[("BATON_NOTIFY__MAX_ATTEMPTS", "1")]).await
    }

    pub async fn start(settings: &[(&str, &str)]) -> Harness {
        init_logging();
        let database =
            TestDatabase::migrated(vec![(&baton_notify::DB, baton_notify::migrator())]).await;
        let namespace = bus_namespace();
        let mut env = Env::from_pairs([
            ("BATON_SERVICE_TOKEN", TOKEN),
            ("BATON_DATABASE_URL", database.url()),
            ("BATON_DATABASE_MAX_CONNECTIONS", "4"),
            ("BATON_BUS_NAMESPACE", namespace.as_str()),
            ("BATON_NOTIFY__BACKOFF_BASE", "50ms"),
            ("BATON_NOTIFY__BACKOFF_MAX", "200ms"),
            ("BATON_NOTIFY__POLL_INTERVAL", "50ms"),
            ("BATON_NOTIFY__MAX_ATTEMPTS", "5"),
            ("BATON_NOTIFY__REQUEST_TIMEOUT", "3s"),
        ]);
        for (key, value) in settings {
            env = env.with(key, value);
        }
        let config = baton_notify::NotifyConfig::from_env(&env).expect("config");
        let bus = config.bus.clone();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("addr");
        let (trigger, shutdown) = shutdown::channel();
        tokio::spawn(baton_notify::serve(config, listener, shutdown));
        let client = NotifyClient::connect(format!("http://{address}"))
            .await
            .expect("connect to notify");
        let publisher = connect_publisher(&bus).await;
        let admin = PgPool::connect(database.url()).await.expect("admin pool");
        Harness {
            database,
            admin,
            namespace,
            client,
            outbound: Outbound::new(Secret::new(TOKEN.to_string())),
            publisher,
            trigger,
        }
    }

    fn request<T>(&self, tenant: Uuid, message: T) -> tonic::Request<T> {
        self.outbound.request(
            &OutboundCall {
                tenant_id: tenant,
                test_now: None,
            },
            message,
        )
    }

    pub async fn create_webhook(
        &self,
        tenant: Uuid,
        url: &str,
        events: &[&str],
        format: Option<&str>,
    ) -> Result<proto::CreateWebhookResponse, tonic::Status> {
        let message = proto::CreateWebhookRequest {
            url: url.to_string(),
            events: events.iter().map(|event| event.to_string()).collect(),
            format: format.map(str::to_string),
        };
        self.client
            .clone()
            .create_webhook(self.request(tenant, message))
            .await
            .map(tonic::Response::into_inner)
    }

    /// Creates a JSON webhook for `events` that posts to `receiver`'s `path` over loopback http.
    pub async fn hook(
        &self,
        tenant: Uuid,
        receiver: &Receiver,
        path: &str,
        events: &[&str],
    ) -> proto::CreateWebhookResponse {
        let url = receiver.url("http", "127.0.0.1", path);
        self.create_webhook(tenant, &url, events, None)
            .await
            .expect("create webhook")
    }

    pub async fn list_webhooks(&self, tenant: Uuid) -> Vec<proto::Webhook> {
        self.client
            .clone()
            .list_webhooks(self.request(tenant, proto::ListWebhooksRequest {}))
            .await
            .expect("list webhooks")
            .into_inner()
            .webhooks
    }

    pub async fn delete_webhook(&self, tenant: Uuid, id: &str) -> Result<(), tonic::Status> {
        let message = proto::DeleteWebhookRequest { id: id.to_string() };
        self.client
            .clone()
            .delete_webhook(self.request(tenant, message))
            .await
            .map(|_| ())
    }

    pub async fn list_deliveries(&self, tenant: Uuid) -> Vec<proto::Delivery> {
        let message = proto::ListDeliveriesRequest {
            webhook_id: None,
            limit: None,
        };
        self.client
            .clone()
            .list_deliveries(self.request(tenant, message))
            .await
            .expect("list deliveries")
            .into_inner()
            .deliveries
    }

    /// Publishes `envelope` on the test namespace's events exchange, as the usage outbox
    /// relay does (persistent, confirmed by the broker).
    pub async fn publish(&self, envelope: &Envelope) {
        let channel = self.publisher.create_channel().await.expect("channel");
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirms");
        let names = Names::new(&self.namespace);
        // Declares the queues too, so a message published before the consumer subscribed
        // waits in its queue.
        topology::declare_all(&channel, &names)
            .await
            .expect("topology");
        let payload = serde_json::to_vec(envelope).expect("json");
        let confirm = channel
            .basic_publish(
                ShortString::from(names.events()),
                ShortString::from(envelope.kind.clone()),
                BasicPublishOptions::default(),
                &payload,
                BasicProperties::default()
                    .with_message_id(ShortString::from(envelope.id.to_string()))
                    .with_content_type(ShortString::from("application/json"))
                    .with_delivery_mode(2),
            )
            .await
            .expect("publish")
            .await
            .expect("confirm");
        assert!(confirm.is_ack(), "the broker refused the message");
        let _ = channel.close(200, "published".into()).await;
    }

    /// Waits until the tenant's deliveries satisfy `done`; returns them.
    pub async fn deliveries_when(
        &self,
        tenant: Uuid,
        done: impl Fn(&[proto::Delivery]) -> bool,
    ) -> Vec<proto::Delivery> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let deliveries = self.list_deliveries(tenant).await;
            if done(&deliveries) {
                return deliveries;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "deliveries never reached the expected state: {deliveries:#?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.trigger.trigger();
        delete_bus_namespace(&self.namespace);
    }
}

async fn connect_publisher(bus: &BusConfig) -> Connection {
    baton_kit::bus::connect(bus, "notify test publisher")
        .await
        .expect("is RabbitMQ running on 127.0.0.1:5672?")
}

/// A `usage.budget.crossed` envelope for `tenant`.
pub fn budget_crossed(tenant: Uuid) -> Envelope {
    let crossed = BudgetCrossed {
        budget_id: Uuid::now_v7(),
        scope: "project".to_string(),
        subject: Some("baton".to_string()),
        period: "month".to_string(),
        period_start: "2025-06-01".to_string(),
        timezone: "UTC".to_string(),
        threshold_percent: 80,
        limit_usd: 100.0,
        spent_usd: 80.5,
        crossed_at: Utc::now(),
    };
    Envelope::new(BUDGET_CROSSED, tenant, Utc::now(), &crossed).expect("envelope")
}

/// Whether every delivery is settled and there is `count` of them.
pub fn settled(count: usize) -> impl Fn(&[proto::Delivery]) -> bool {
    move |deliveries| {
        deliveries.len() == count
            && deliveries
                .iter()
                .all(|delivery| delivery.state != "pending")
    }
}
