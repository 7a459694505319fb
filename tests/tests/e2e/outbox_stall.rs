//! The outbox relay against a broker that stops confirming: a TCP proxy between the relay and
//! RabbitMQ stops passing the broker's bytes, so publisher confirms never arrive. The relay's
//! round must give its row locks back within its timeout instead of holding them until the
//! connection dies.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use baton_kit::bus::BusConfig;
use baton_kit::bus::outbox::{self, OutboxTable, Relay};
use baton_kit::testing::{TestDatabase, bus_namespace, delete_bus_namespace};
use baton_proto::messages::Envelope;
use sqlx::PgPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use uuid::Uuid;

const TABLE: OutboxTable = OutboxTable("public.stall_outbox");

/// Forwards to the local broker; once frozen, holds back everything the broker sends.
struct StallProxy {
    port: u16,
    frozen: Arc<AtomicBool>,
}

impl StallProxy {
    async fn start() -> StallProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new(AtomicBool::new(false));
        let flag = frozen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(upstream) = TcpStream::connect("127.0.0.1:5672").await else {
                    continue;
                };
                let (mut client_read, mut client_write) = client.into_split();
                let (mut upstream_read, mut upstream_write) = upstream.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
                });
                let flag = flag.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 16 * 1024];
                    loop {
                        let Ok(read) = upstream_read.read(&mut buffer).await else {
                            return;
                        };
                        if read == 0 {
                            return;
                        }
                        while flag.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                        if client_write.write_all(&buffer[..read]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        StallProxy { port, frozen }
    }
}

async fn enqueue(pool: &PgPool) -> Uuid {
    let envelope = Envelope {
        kind: "test.stalled".to_string(),
        version: 1,
        id: Uuid::new_v4(),
        tenant_id: Uuid::new_v4(),
        occurred_at: chrono::Utc::now(),
        data: serde_json::json!({}),
    };
    let mut connection = pool.acquire().await.unwrap();
    outbox::enqueue(&mut connection, TABLE, &envelope)
        .await
        .unwrap();
    envelope.id
}

/// Whether another transaction can lock the row now (a vanished row counts as free).
async fn row_is_free(pool: &PgPool, id: Uuid) -> bool {
    let mut transaction = pool.begin().await.unwrap();
    let locked = sqlx::query("SELECT id FROM public.stall_outbox WHERE id = $1 FOR UPDATE NOWAIT")
        .bind(id)
        .fetch_optional(&mut *transaction)
        .await;
    let _ = transaction.rollback().await;
    match locked {
        Ok(_) => true,
        Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("55P03") => false,
        Err(other) => panic!("unexpected error: {other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_that_stops_confirming_does_not_hold_the_relay_transaction_past_its_timeout() {
    let database = TestDatabase::create().await;
    let pool = PgPool::connect(database.url()).await.unwrap();
    sqlx::query(
        "CREATE TABLE public.stall_outbox (id uuid PRIMARY KEY, routing_key text NOT NULL, \
         envelope jsonb NOT NULL, headers jsonb NOT NULL DEFAULT '{}', created_at timestamptz NOT NULL)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let proxy = StallProxy::start().await;
    let namespace = bus_namespace();
    let bus = BusConfig {
        url: baton_kit::config::SecretUrl::new(format!(
            "amqp://guest:guest@127.0.0.1:{}/%2f",
            proxy.port
        )),
        namespace: namespace.clone(),
        tls: Default::default(),
    };
    let round_timeout = Duration::from_secs(1);
    let relay = Relay::new(
        baton_kit::telemetry::Component::Registry,
        pool.clone(),
        TABLE,
        bus,
    )
    .with_round_timeout(round_timeout);
    let waker = relay.waker();
    let (trigger, shutdown) = baton_kit::shutdown::channel();
    let running = tokio::spawn(relay.run(shutdown));

    // A first message goes through: the relay is connected and its confirms arrive.
    enqueue(&pool).await;
    waker.notify_one();
    let deadline = Instant::now() + Duration::from_secs(15);
    while outbox::depth(&pool, TABLE).await.unwrap() > 0 {
        assert!(
            Instant::now() < deadline,
            "the relay never published through the proxy"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The broker goes quiet; the next round locks its row and waits for a confirm.
    proxy.frozen.store(true, Ordering::SeqCst);
    let stalled = enqueue(&pool).await;
    waker.notify_one();
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut held_at = None;
    while held_at.is_none() && Instant::now() < deadline {
        if !row_is_free(&pool, stalled).await {
            held_at = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let held_at = held_at.expect("the fault landed: the relay held the row waiting for the broker");

    // Within the timeout (plus scheduling slack) the lock is given back.
    let released = loop {
        if row_is_free(&pool, stalled).await {
            break Some(held_at.elapsed());
        }
        if held_at.elapsed() > round_timeout + Duration::from_secs(3) {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        released.is_some(),
        "the relay kept its row locked past its round timeout"
    );

    proxy.frozen.store(false, Ordering::SeqCst);
    trigger.trigger();
    let _ = tokio::time::timeout(Duration::from_secs(5), running).await;
    delete_bus_namespace(&namespace);
}
