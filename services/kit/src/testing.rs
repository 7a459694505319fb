//! Test support: a fresh database per test, dropped afterwards, and logging that prints only
//! when `TEST_LOG` is set.

use std::sync::Once;

use uuid::Uuid;

use sqlx::migrate::Migrator;
use tokio::net::TcpListener;

use crate::db::{self, ContextDb};

mod writes_held;
pub use writes_held::WritesHeld;

/// Admin connection for tests: `BATON_TEST_DATABASE_URL`, or local Postgres as `postgres`.
pub fn admin_url() -> String {
    std::env::var("BATON_TEST_DATABASE_URL")
        .ok()
        .filter(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

/// Replaces the database name of a Postgres URL.
pub fn with_database(url: &str, database: &str) -> String {
    let (without_query, query) = match url.split_once('?') {
        Some((head, tail)) => (head, format!("?{tail}")),
        None => (url, String::new()),
    };
    let scheme_end = without_query.find("://").map_or(0, |index| index + 3);
    let authority_and_path = &without_query[scheme_end..];
    let authority = authority_and_path
        .split_once('/')
        .map_or(authority_and_path, |(authority, _)| authority);
    format!(
        "{}{authority}/{database}{query}",
        &without_query[..scheme_end]
    )
}

/// A database created for one test and dropped when the value is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    url: String,
}

impl TestDatabase {
    /// Creates `baton_test_<random>` on the test cluster.
    pub async fn create() -> TestDatabase {
        TestDatabase::create_on(&admin_url()).await
    }

    /// Creates `baton_test_<random>` on the cluster `admin_url` points at (a private cluster
    /// a test may restart).
    pub async fn create_on(admin_url: &str) -> TestDatabase {
        let name = format!("baton_test_{}", Uuid::new_v4().simple());
        let url = with_database(admin_url, &name);
        db::ensure_database(&url)
            .await
            .expect("create test database (is Postgres running on 127.0.0.1:5432?)");
        TestDatabase { url }
    }

    /// A test database with each context's migrations applied, in the order given (as `baton
    /// migrate` applies them: one schema and its roles per context).
    pub async fn migrated(contexts: Vec<(&ContextDb, Migrator)>) -> TestDatabase {
        let database = TestDatabase::create().await;
        for (context, migrator) in contexts {
            db::migrate_context(database.url(), context, migrator)
                .await
                .unwrap_or_else(|error| panic!("migrate {}: {error}", context.schema));
        }
        database
    }

    /// Admin URL of the test database (superuser; runs migrations).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let url = self.url.clone();
        // Drop runs outside any async context we can rely on; use a private runtime.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                let _ = runtime.block_on(db::drop_database(&url));
            }
        })
        .join();
    }
}

/// Binds a free loopback port, spawns `serve` on it and returns its `host:port`.
pub async fn serve_on_free_port<F, Fut, E>(serve: F) -> String
where
    F: FnOnce(TcpListener) -> Fut,
    Fut: std::future::Future<Output = Result<(), E>> + Send + 'static,
    E: Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("addr").to_string();
    tokio::spawn(serve(listener));
    address
}

/// A fresh bus namespace (exchange and queue prefix) for one test.
pub fn bus_namespace() -> String {
    format!("t{}", Uuid::new_v4().simple())
}

/// Deletes a test namespace's queues and exchanges from the local broker (best effort).
pub fn delete_bus_namespace(namespace: &str) {
    let namespace = namespace.to_string();
    let _ = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let Ok(runtime) = runtime else { return };
        runtime.block_on(async move {
            use crate::bus::topology::{CONSUMERS, Names};
            use lapin::options::{ExchangeDeleteOptions, QueueDeleteOptions};
            let config = crate::bus::BusConfig {
                url: crate::config::SecretUrl::new(crate::bus::DEFAULT_AMQP_URL.to_string()),
                namespace: namespace.clone(),
                tls: crate::bus::tls::BusTls::default(),
            };
            let Ok(connection) = crate::bus::connect(&config, "test cleanup").await else {
                return;
            };
            let Ok(channel) = connection.create_channel().await else {
                return;
            };
            let names = Names::new(&namespace);
            for spec in CONSUMERS {
                for queue in [names.queue(spec), names.dead_letter_queue(spec)] {
                    let _ = channel
                        .queue_delete(queue.into(), QueueDeleteOptions::default())
                        .await;
                }
            }
            for exchange in [names.events(), names.dead_letter()] {
                let _ = channel
                    .exchange_delete(exchange.into(), ExchangeDeleteOptions::default())
                    .await;
            }
            let _ = connection.close(200, "done".into()).await;
        });
    })
    .join();
}

/// Installs a log subscriber once per test binary; output only when `TEST_LOG` is set.
pub fn init_logging() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("TEST_LOG").is_some() {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(
                    std::env::var("RUST_LOG").unwrap_or_else(|_| "info,sqlx=warn".to_string()),
                )
                .with_test_writer()
                .try_init();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:5432/postgres", "x"),
            "postgres://postgres@127.0.0.1:5432/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "y"),
            "postgres://u:p@h/y?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h:1", "z"), "postgres://h:1/z");
    }
}
