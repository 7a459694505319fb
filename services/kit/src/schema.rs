//! Whether a context's database schema is the one this binary was built for.
//!
//! A service started with `--no-migrate` (every replica in a cluster: the migrations Job runs
//! them) must not serve on a schema that is behind its code, nor on one a newer release already
//! moved past. Each context's applied migrations live in `<schema>._sqlx_migrations`; the
//! binary embeds its own list. [`compare`] decides, [`state`] reads, and [`gate`] keeps a
//! service's readiness false (with one log line per change of state) until they agree.
//!
//! The rule: the schema is current when every migration the binary embeds is applied, with the
//! same checksum, and the database holds no applied migration the binary does not know.

use std::time::Duration;

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use tokio::sync::watch;

use crate::db::ContextDb;
use crate::shutdown::Shutdown;

/// One applied migration as the database records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub version: i64,
    pub checksum: Vec<u8>,
    pub success: bool,
}

/// One migration the binary embeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub version: i64,
    pub checksum: Vec<u8>,
}

/// How a context's schema compares with the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaState {
    /// Every embedded migration applied, nothing more.
    Current { version: i64 },
    /// Not migrated at all (no migration table, or an empty one).
    Missing { binary: i64 },
    /// Older than the binary: run the migrations first.
    Behind { database: i64, binary: i64 },
    /// Newer than the binary: an older release must not write to it.
    Ahead { database: i64, binary: i64 },
    /// A migration failed part-way or was edited after it was applied.
    Damaged { version: i64 },
}

impl SchemaState {
    pub fn is_current(&self) -> bool {
        matches!(self, SchemaState::Current { .. })
    }

    /// One line for operators: what is wrong and what to do.
    pub fn describe(&self) -> String {
        match self {
            SchemaState::Current { version } => format!("schema at version {version}"),
            SchemaState::Missing { binary } => {
                format!(
                    "schema not migrated (binary expects version {binary}): run `baton migrate`"
                )
            }
            SchemaState::Behind { database, binary } => format!(
                "schema at version {database}, binary expects {binary}: run `baton migrate`"
            ),
            SchemaState::Ahead { database, binary } => format!(
                "schema at version {database} is newer than this binary ({binary}): deploy the newer release"
            ),
            SchemaState::Damaged { version } => format!(
                "migration {version} failed part-way or was changed after it was applied: repair it by hand"
            ),
        }
    }
}

/// The decision, from what the database applied and what the binary embeds.
pub fn compare(applied: &[Applied], expected: &[Expected]) -> SchemaState {
    let binary = expected.iter().map(|m| m.version).max().unwrap_or(0);
    if let Some(failed) = applied.iter().find(|m| !m.success) {
        return SchemaState::Damaged {
            version: failed.version,
        };
    }
    let database = applied.iter().map(|m| m.version).max();
    let Some(database) = database else {
        return SchemaState::Missing { binary };
    };
    if applied
        .iter()
        .any(|m| !expected.iter().any(|e| e.version == m.version))
    {
        return SchemaState::Ahead { database, binary };
    }
    for migration in expected {
        match applied.iter().find(|m| m.version == migration.version) {
            None => return SchemaState::Behind { database, binary },
            Some(found) if found.checksum != migration.checksum => {
                return SchemaState::Damaged {
                    version: found.version,
                };
            }
            Some(_) => {}
        }
    }
    SchemaState::Current { version: database }
}

/// The migrations a binary embeds.
pub fn expected(migrator: &Migrator) -> Vec<Expected> {
    migrator
        .iter()
        .filter(|migration| !migration.migration_type.is_down_migration())
        .map(|migration| Expected {
            version: migration.version,
            checksum: migration.checksum.to_vec(),
        })
        .collect()
}

/// Reads the context's applied migrations through `pool` and compares them with `migrator`.
pub async fn state(
    pool: &PgPool,
    context: &ContextDb,
    migrator: &Migrator,
) -> Result<SchemaState, sqlx::Error> {
    let table = format!("{}._sqlx_migrations", context.schema);
    let exists = sqlx::query_scalar!("SELECT to_regclass($1)::text", table)
        .fetch_one(pool)
        .await?;
    let applied = match exists {
        None => Vec::new(),
        Some(_) => {
            let statement = format!("SELECT version, checksum, success FROM {table}");
            let rows: Vec<(i64, Vec<u8>, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(statement))
                .fetch_all(pool)
                .await?;
            rows.into_iter()
                .map(|(version, checksum, success)| Applied {
                    version,
                    checksum,
                    success,
                })
                .collect()
        }
    };
    Ok(compare(&applied, &expected(migrator)))
}

/// Whether a service may take traffic. Starts false under [`gate`]; [`Readiness::ready`] is
/// always true (tests, embedded use).
#[derive(Debug, Clone)]
pub struct Readiness(watch::Receiver<bool>);

impl Readiness {
    pub fn ready() -> Readiness {
        let (_sender, receiver) = watch::channel(true);
        Readiness(receiver)
    }

    pub fn is_ready(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once ready (or never, if the gate stopped first).
    pub async fn wait(mut self) {
        let _ = self.0.wait_for(|ready| *ready).await;
    }
}

/// How often a service whose schema does not match looks again.
pub const RECHECK: Duration = Duration::from_secs(2);

/// Watches the context's schema until it matches the binary: readiness stays false meanwhile
/// and each change of state is logged once (`schema not ready`), then `schema ready`.
pub fn gate(
    pool: PgPool,
    context: &'static ContextDb,
    migrator: Migrator,
    shutdown: Shutdown,
) -> Readiness {
    let (sender, receiver) = watch::channel(false);
    tokio::spawn(async move {
        let mut last: Option<String> = None;
        loop {
            let described = match state(&pool, context, &migrator).await {
                Ok(found) if found.is_current() => {
                    tracing::info!(
                        schema = context.schema,
                        state = found.describe(),
                        "schema ready"
                    );
                    let _ = sender.send(true);
                    return;
                }
                Ok(found) => found.describe(),
                Err(error) => format!("schema version unreadable: {error}"),
            };
            if last.as_deref() != Some(described.as_str()) {
                tracing::warn!(
                    schema = context.schema,
                    state = described.as_str(),
                    "schema not ready; refusing traffic until it matches"
                );
                last = Some(described);
            }
            tokio::select! {
                () = tokio::time::sleep(RECHECK) => {}
                () = shutdown.clone().wait() => return,
            }
        }
    });
    Readiness(receiver)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(version: i64, checksum: u8) -> Applied {
        Applied {
            version,
            checksum: vec![checksum],
            success: true,
        }
    }

    fn expected(version: i64, checksum: u8) -> Expected {
        Expected {
            version,
            checksum: vec![checksum],
        }
    }

    #[test]
    fn the_schema_is_current_only_when_both_lists_agree() {
        let binary = [expected(1, 1), expected(2, 2)];
        let failed = Applied {
            success: false,
            ..applied(2, 2)
        };
        let cases: Vec<(&str, Vec<Applied>, SchemaState)> = vec![
            (
                "same",
                vec![applied(1, 1), applied(2, 2)],
                SchemaState::Current { version: 2 },
            ),
            ("never migrated", vec![], SchemaState::Missing { binary: 2 }),
            (
                "one behind",
                vec![applied(1, 1)],
                SchemaState::Behind {
                    database: 1,
                    binary: 2,
                },
            ),
            (
                "a newer release ran",
                vec![applied(1, 1), applied(2, 2), applied(3, 3)],
                SchemaState::Ahead {
                    database: 3,
                    binary: 2,
                },
            ),
            (
                "edited after applying",
                vec![applied(1, 1), applied(2, 9)],
                SchemaState::Damaged { version: 2 },
            ),
            (
                "failed part-way",
                vec![applied(1, 1), failed],
                SchemaState::Damaged { version: 2 },
            ),
            (
                "a gap in the middle",
                vec![applied(2, 2)],
                SchemaState::Behind {
                    database: 2,
                    binary: 2,
                },
            ),
        ];
        for (name, database, want) in cases {
            assert_eq!(compare(&database, &binary), want, "{name}");
        }
    }

    #[test]
    fn only_the_current_state_reads_as_ready_and_every_other_names_the_fix() {
        assert!(SchemaState::Current { version: 4 }.is_current());
        let behind = SchemaState::Behind {
            database: 3,
            binary: 4,
        };
        assert!(!behind.is_current());
        assert!(behind.describe().contains("baton migrate"));
        assert!(
            SchemaState::Ahead {
                database: 5,
                binary: 4
            }
            .describe()
            .contains("newer release")
        );
    }
}
