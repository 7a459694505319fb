//! Lining up concurrent writers. A race that a lock must settle only shows when the racers
//! overlap, and on a fast machine they may finish one after another by chance, so a test of
//! the lock would pass without it. Holding writes to one table of the racers' path stops each
//! racer at its write; once enough of them wait, the writes are let go together. With the
//! lock under test the racers queue on it and one writes; without it they all reach the write.

use std::time::{Duration, Instant};

use sqlx::{PgPool, Postgres, Transaction};

/// `LOCK TABLE … IN SHARE MODE` held in an open transaction: reads of the table go on,
/// inserts, updates and deletes wait until [`WritesHeld::release_once_waiting`].
pub struct WritesHeld {
    transaction: Transaction<'static, Postgres>,
}

impl WritesHeld {
    /// Holds writes to `table` (schema-qualified, named by the test itself), as `admin`.
    pub async fn on(admin: &PgPool, table: &str) -> WritesHeld {
        let mut transaction = admin.begin().await.expect("begin");
        let statement = format!("LOCK TABLE {table} IN SHARE MODE");
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *transaction)
            .await
            .expect("lock table");
        WritesHeld { transaction }
    }

    /// Waits (at most a minute) until at least `racers` sessions of this database wait on a
    /// lock, then lets the writes go.
    pub async fn release_once_waiting(self, admin: &PgPool, racers: i64) {
        let started = Instant::now();
        loop {
            let waiting = waiting_on_locks(admin).await;
            if waiting >= racers {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "only {waiting} of {racers} racers ever waited on a lock"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.transaction.rollback().await.expect("release");
    }
}

/// Sessions of the current database now waiting on a heavyweight lock (a table, a row's
/// transaction, an advisory lock).
async fn waiting_on_locks(admin: &PgPool) -> i64 {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "waiting!" FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock'"#
    )
    .fetch_one(admin)
    .await
    .expect("pg_stat_activity")
}
