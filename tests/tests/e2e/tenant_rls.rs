//! Row-level security of every tenant-owned table, proven at the database and not by the
//! services' own `WHERE tenant_id = ...` filters.
//!
//! Every context's queries also filter by tenant, so a cross-tenant test over HTTP would pass
//! with the policies dropped. These tests go under the services: as each context's runtime
//! role, with tenant A set, they ask for tenant B's rows by their tenant id directly. Only the
//! policy can hide them. Tenant A's rows come from the real flows (a commitment, an opened and
//! pulsed session, an armed nudge, a closer pass); B's are copies of A's under another tenant
//! id, written by the superuser, so every table holds both tenants' rows.
//!
//! A second test reads the catalogue: a table created in any Baton schema without `ENABLE` and
//! `FORCE ROW LEVEL SECURITY` and a policy fails it, unless it is one of the few named
//! exemptions below, each with the reason no tenant can reach it.

use std::str::FromStr;
use std::time::Duration;

use serde_json::json;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AssertSqlSafe, PgPool};
use uuid::Uuid;

use baton_tests::Baton;

use crate::closer::{close, heartbeat, open_briefed_on_done, settled_pass};

/// The schemas Baton's contexts own.
pub(crate) const SCHEMAS: &[&str] = &[
    "registry",
    "provenance",
    "triage",
    "closer",
    "usage",
    "notify",
    "gateway",
];

/// Tables without row-level security, and why no tenant-scoped role can reach another tenant's
/// rows in them.
const EXEMPT: &[(&str, &str)] = &[
    (
        "gateway.tenants",
        "read before any tenant is known (key lookup); the runtime role has no DELETE and updates only deleted_at",
    ),
    (
        "gateway.api_keys",
        "looked up by key hash to find the tenant; there is no tenant to scope by until it matches",
    ),
    (
        "gateway.console_sessions",
        "looked up by the cookie token's hash to find the tenant, like api_keys; holds hashes and ids, no tenant data",
    ),
    (
        "registry.outbox",
        "the runtime role may only INSERT; the relay reads it as the maintenance role",
    ),
    (
        "usage.outbox",
        "the runtime role may only INSERT; the relay reads it as the maintenance role",
    ),
    (
        "closer.inbox",
        "message ids only, no tenant data (the consumer's idempotence record)",
    ),
    (
        "usage.model_pricing",
        "global reference data (dated model prices), no tenant column; the runtime role may only SELECT",
    ),
    (
        "usage.server_tool_pricing",
        "global reference data (dated per-call server-tool prices), no tenant column; the runtime role may only SELECT",
    ),
    (
        "usage.retention_runs",
        "counts per retention run, no tenant data; only the maintenance role reads or writes it",
    ),
];

/// Each context's runtime role and the tenant tables it serves.
const RUNTIME: &[(&str, &[&str])] = &[
    (
        "baton_registry",
        &["registry.agent_sessions", "registry.process_episodes"],
    ),
    (
        "baton_provenance",
        &[
            "provenance.memories",
            "provenance.commitments",
            "provenance.memory_events",
        ],
    ),
    ("baton_triage", &["triage.runs", "triage.attempts"]),
    (
        "baton_closer",
        &[
            "closer.passes",
            "closer.budgets",
            "closer.usage",
            "closer.verdicts",
        ],
    ),
    (
        "baton_usage",
        &[
            "usage.sessions",
            "usage.agents",
            "usage.orchestration_edges",
            "usage.token_usage",
            "usage.rollups",
            "usage.hook_deliveries",
            "usage.budgets",
            "usage.budget_crossings",
            "usage.runaway_policies",
            "usage.runaway_episodes",
        ],
    ),
    (
        "baton_notify",
        &["notify.webhooks", "notify.deliveries", "notify.attempts"],
    ),
    ("baton_gateway", &["gateway.call_keys"]),
];

#[tokio::test]
async fn every_table_in_a_baton_schema_forces_row_level_security_or_is_a_named_exemption() {
    let baton = Baton::start().await;
    let admin = baton.admin().await;
    let tables: Vec<(String, bool, bool, i64)> = sqlx::query_as(
        "SELECT n.nspname || '.' || c.relname, c.relrowsecurity, c.relforcerowsecurity, \
                (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid) \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY($1) AND c.relname NOT LIKE '\\_sqlx%' \
         ORDER BY 1",
    )
    .bind(SCHEMAS)
    .fetch_all(&admin)
    .await
    .expect("catalogue");
    assert!(
        tables.len() >= 14,
        "the catalogue read found the tables: {tables:?}"
    );
    let mut unprotected = Vec::new();
    for (table, enabled, forced, policies) in &tables {
        let exempt = EXEMPT.iter().any(|(name, _)| name == table);
        let protected = *enabled && *forced && *policies > 0;
        if !protected && !exempt {
            unprotected.push(format!(
                "{table} (enabled {enabled}, forced {forced}, policies {policies})"
            ));
        }
    }
    assert!(
        unprotected.is_empty(),
        "tables without ENABLE + FORCE ROW LEVEL SECURITY and a policy: {unprotected:?}"
    );
    for (name, _) in EXEMPT {
        assert!(
            tables.iter().any(|(table, ..)| table == name),
            "exemption {name} names no table: remove it"
        );
    }
    let covered: Vec<&str> = RUNTIME
        .iter()
        .flat_map(|(_, list)| list.iter().copied())
        .collect();
    for (table, ..) in &tables {
        let exempt = EXEMPT.iter().any(|(name, _)| name == table);
        assert!(
            exempt || covered.contains(&table.as_str()),
            "{table} is protected but not exercised by the isolation test below: add it to RUNTIME"
        );
    }
}

#[tokio::test]
async fn as_each_runtime_role_another_tenants_rows_are_invisible_and_untouchable() {
    let baton = Baton::start_with(&[("BATON_CLOSER__ENABLED", "true")]).await;
    let tenant = baton.create_tenant("rls-a").await;
    let a: Uuid = tenant.tenant_id.parse().expect("tenant id");
    let b = Uuid::now_v7();
    let c = Uuid::now_v7();
    let admin = baton.admin().await;
    populate(&baton, &tenant, &admin, a).await;
    copy_to_tenant(&admin, a, b).await;

    for (role, tables) in RUNTIME {
        let pool = runtime_pool(baton.database.url(), role).await;
        for table in tables.iter().copied() {
            let held = count_as_admin(&admin, table, b).await;
            assert!(held > 0, "{table}: B's rows exist (the copy worked)");
            check_table(&pool, role, table, a, b, c).await;
        }
    }
}

/// What one runtime role may see and change in one table while tenant A is set.
async fn check_table(pool: &PgPool, role: &str, table: &str, a: Uuid, b: Uuid, c: Uuid) {
    let count = format!("SELECT count(*) FROM {table} WHERE tenant_id = $1");
    let mut tx = baton_kit::db::begin_tenant(pool, a).await.expect("begin");
    let own: i64 = sqlx::query_scalar(AssertSqlSafe(count.clone()))
        .bind(a)
        .fetch_one(&mut *tx)
        .await
        .unwrap_or_else(|error| panic!("{role} reads {table}: {error}"));
    assert!(
        own > 0,
        "{role} with A set sees A's rows in {table} (positive control)"
    );
    let foreign: i64 = sqlx::query_scalar(AssertSqlSafe(count.clone()))
        .bind(b)
        .fetch_one(&mut *tx)
        .await
        .expect("count");
    assert_eq!(
        foreign, 0,
        "{role} with A set sees none of B's rows in {table}"
    );
    tx.rollback().await.expect("rollback");

    for verb in ["UPDATE", "DELETE"] {
        let statement = match verb {
            "UPDATE" => format!("UPDATE {table} SET tenant_id = tenant_id WHERE tenant_id = $1"),
            _ => format!("DELETE FROM {table} WHERE tenant_id = $1"),
        };
        if !granted(pool, table, verb).await {
            continue;
        }
        let mut tx = baton_kit::db::begin_tenant(pool, a).await.expect("begin");
        let touched = sqlx::query(AssertSqlSafe(statement.clone()))
            .bind(b)
            .execute(&mut *tx)
            .await
            .expect("statement")
            .rows_affected();
        assert_eq!(
            touched, 0,
            "{role} with A set cannot {verb} B's rows in {table}"
        );
        let mine = sqlx::query(AssertSqlSafe(statement))
            .bind(a)
            .execute(&mut *tx)
            .await
            .expect("statement")
            .rows_affected();
        assert!(
            mine > 0,
            "{role} can {verb} A's own rows in {table} (positive control)"
        );
        tx.rollback().await.expect("rollback: nothing is changed");
    }

    if granted(pool, table, "INSERT").await {
        // A's row written under a third tenant's id: the policy's WITH CHECK refuses it.
        let statement = retenanted_insert(pool, table).await;
        let mut tx = baton_kit::db::begin_tenant(pool, a).await.expect("begin");
        let refused = sqlx::query(AssertSqlSafe(statement))
            .bind(a)
            .bind(c)
            .execute(&mut *tx)
            .await
            .expect_err("a row for another tenant is refused");
        let code = refused
            .as_database_error()
            .and_then(|error| error.code())
            .map(|code| code.to_string());
        assert_eq!(
            code.as_deref(),
            Some("42501"),
            "{role} inserting another tenant's row into {table}: {refused}"
        );
        tx.rollback().await.expect("rollback");
    }

    let unscoped: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
        .fetch_one(pool)
        .await
        .expect("count");
    assert_eq!(
        unscoped, 0,
        "{role} with no tenant set sees nothing in {table}"
    );
}

/// `INSERT INTO table (...) SELECT ...`: the rows of tenant `$1` again under tenant `$2`,
/// over every column that accepts a value (generated columns recompute themselves).
async fn retenanted_insert(pool: &PgPool, table: &str) -> String {
    let (schema, name) = table.split_once('.').expect("schema.table");
    let columns: Vec<String> = sqlx::query_scalar(
        "SELECT quote_ident(column_name::text) FROM information_schema.columns \
         WHERE table_schema = $1 AND table_name = $2 AND is_generated = 'NEVER' \
           AND coalesce(identity_generation::text, '') <> 'ALWAYS' \
         ORDER BY ordinal_position",
    )
    .bind(schema)
    .bind(name)
    .fetch_all(pool)
    .await
    .expect("columns");
    let list = columns.join(", ");
    let values = columns
        .iter()
        .map(|column| format!("r.{column}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "INSERT INTO {table} ({list}) SELECT {values} FROM {table} t, LATERAL \
         jsonb_populate_record(NULL::{table}, to_jsonb(t) || jsonb_build_object('tenant_id', $2::uuid)) r \
         WHERE t.tenant_id = $1"
    )
}

async fn granted(pool: &PgPool, table: &str, privilege: &str) -> bool {
    sqlx::query_scalar("SELECT has_table_privilege(current_user, $1, $2)")
        .bind(table)
        .bind(privilege)
        .fetch_one(pool)
        .await
        .expect("privilege")
}

async fn runtime_pool(admin_url: &str, role: &str) -> PgPool {
    let options = PgConnectOptions::from_str(admin_url)
        .expect("url")
        .username(role);
    PgPoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .expect("runtime role connects")
}

async fn count_as_admin(admin: &PgPool, table: &str, tenant: Uuid) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT count(*) FROM {table} WHERE tenant_id = $1"
    )))
    .bind(tenant)
    .fetch_one(admin)
    .await
    .expect("count")
}

/// Tenant A's rows in every tenant table, through the real routes where a route writes them.
async fn populate(baton: &Baton, tenant: &baton_tests::Tenant, admin: &PgPool, a: Uuid) {
    let client = baton.client(tenant);
    let (run, _) = open_briefed_on_done(&client, "rls-1").await;
    let pulse = json!({"agent": "claude-code", "sessionId": "rls-1", "episodeId": Uuid::now_v7(),
        "client": "claude-code", "hostId": "h-rls", "pid": 4242});
    let pulsed = client.post("/api/v1/agent-sessions/pulse", &pulse).await;
    assert_eq!(pulsed.status, 200, "{:?}", pulsed.body);
    // A spooled call's idempotence key, which the gateway records per tenant.
    let keyed = reqwest::Client::new()
        .post(format!("{}/api/v1/agent-sessions/pulse", baton.base_url))
        .header("x-api-key", &tenant.api_key)
        .header("idempotency-key", Uuid::new_v4().to_string())
        .json(&pulse)
        .send()
        .await
        .expect("keyed pulse");
    assert_eq!(keyed.status(), 200);
    let armed = client
        .post(
            "/api/v1/agent-sessions/triage/begin",
            &json!({"agent": "claude-code", "sessionId": "rls-1", "turnCount": 3}),
        )
        .await;
    assert_eq!(armed.status, 200, "{:?}", armed.body);
    assert_eq!(armed.body["armed"], true, "{:?}", armed.body);
    heartbeat(
        &client,
        "rls-1",
        "Done: migrated the orders table to uuid keys.",
    )
    .await;
    close(&client, "rls-1").await;
    settled_pass(admin, &run, 1, Duration::from_secs(30)).await;
    // Budgets are set by operators and usage is metered only by the remote judge: written
    // here directly, in the shape the closer writes them.
    sqlx::query("INSERT INTO closer.budgets (tenant_id, monthly_token_limit) VALUES ($1, 1000)")
        .bind(a)
        .execute(admin)
        .await
        .expect("budget");
    sqlx::query(
        "INSERT INTO closer.usage (tenant_id, id, session_run_id, activation_epoch, kind, tokens, created_at) \
         VALUES ($1, $2, $3, 1, 'usage', 10, now())",
    )
    .bind(a)
    .bind(Uuid::now_v7())
    .bind(run.parse::<Uuid>().expect("run"))
    .execute(admin)
    .await
    .expect("usage");
    // Alerts: a webhook (to a name that resolves to loopback, so its delivery is refused and
    // logged as an attempt), a budget the upload below crosses, a runaway policy it passes.
    let hook = client
        .post(
            "/api/v1/webhooks",
            &json!({"url": "https://localhost:9/rls", "events": ["budget.crossed"]}),
        )
        .await;
    assert_eq!(hook.status, 201, "{:?}", hook.body);
    let budget = client
        .post(
            "/api/v1/budgets",
            &json!({"scope": "tenant", "period": "month", "limitUsd": 0.01, "thresholds": [1]}),
        )
        .await;
    assert_eq!(budget.status, 201, "{:?}", budget.body);
    let policy = client
        .put(
            "/api/v1/runaway-policy",
            &json!({"windowMinutes": 15, "spendUsd": 0.01, "unattendedMinutes": 60}),
        )
        .await;
    assert_eq!(policy.status, 200, "{:?}", policy.body);
    // The usage context's tables, from a real upload (every table gets a row); in the
    // upload's month, so the budget's current period holds it.
    let uploaded = client
        .at(crate::usage_upload::NOW)
        .post(
            "/api/v1/usage/batches",
            &crate::usage_upload::tree_batch("rls-1", &Uuid::now_v7().to_string()),
        )
        .await;
    assert_eq!(uploaded.status, 200, "{:?}", uploaded.body);
    // A session that spends past the runaway policy's $0.01 inside its window.
    let burner = client
        .post(
            "/api/v1/usage/batches",
            &crate::budgets::batch("rls-burner", "rls", 0..1),
        )
        .await;
    assert_eq!(burner.status, 200, "{:?}", burner.body);
    // The crossing travels the bus to notify, whose refused attempt is the last row written.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while count_as_admin(admin, "notify.attempts", a).await == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "notify never attempted the delivery"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Copies every tenant table's rows of `from` under tenant `to`, as the superuser (which
/// row-level security does not apply to), with foreign-key triggers off for the copy.
async fn copy_to_tenant(admin: &PgPool, from: Uuid, to: Uuid) {
    let mut tx = admin.begin().await.expect("begin");
    sqlx::query("SET LOCAL session_replication_role = replica")
        .execute(&mut *tx)
        .await
        .expect("replica");
    for table in RUNTIME.iter().flat_map(|(_, tables)| tables.iter()) {
        let statement = retenanted_insert(admin, table).await;
        let copied = sqlx::query(AssertSqlSafe(statement))
            .bind(from)
            .bind(to)
            .execute(&mut *tx)
            .await
            .unwrap_or_else(|error| panic!("copy {table}: {error}"))
            .rows_affected();
        assert!(copied > 0, "{table} holds A's rows after the flows");
    }
    tx.commit().await.expect("commit");
}
