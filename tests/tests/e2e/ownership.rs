//! Who owns what, read from the catalogue after the real migrations (issue 26, R10).
//!
//! Row-level security binds every role but a table's owner (FORCE aside, an owner can still
//! drop or alter the policy), so the whole scheme rests on the runtime roles owning nothing.
//! Each context's objects — schema, tables, sequences, indexes, views, functions, types — are
//! owned by its migration role, which cannot log in; no runtime or maintenance role owns any
//! object in the database; and each table exempt from row-level security grants its
//! non-owner roles exactly what its stated reason allows, no more.

use std::collections::BTreeMap;

use sqlx::PgPool;

use baton_tests::Baton;

use crate::tenant_rls::SCHEMAS as CONTEXTS;

/// Exempt tables: the stated reason, and the table-level privileges (sorted, comma-joined) and
/// UPDATE columns each non-owner role holds. A role not listed holds nothing.
type Grants = &'static [(&'static str, &'static str, &'static [&'static str])];

const EXEMPT_GRANTS: &[(&str, &str, Grants)] = &[
    (
        "registry.outbox",
        "the runtime role may only INSERT; the relay reads it as the maintenance role",
        &[
            ("baton_registry", "INSERT", &[]),
            ("baton_registry_maint", "DELETE,INSERT,SELECT,UPDATE", &[]),
        ],
    ),
    (
        "usage.outbox",
        "the runtime role may only INSERT; the relay reads it as the maintenance role",
        &[
            ("baton_usage", "INSERT", &[]),
            ("baton_usage_maint", "DELETE,INSERT,SELECT,UPDATE", &[]),
        ],
    ),
    (
        "gateway.tenants",
        "read before any tenant is known; the runtime role has no DELETE and updates only deleted_at",
        &[("baton_gateway", "INSERT,SELECT", &["deleted_at"])],
    ),
    (
        "gateway.api_keys",
        "looked up by key hash; the runtime role revokes and stamps use, never rewrites a key",
        &[(
            "baton_gateway",
            "INSERT,SELECT",
            &["last_used_at", "revoked_at"],
        )],
    ),
    (
        "gateway.console_sessions",
        "looked up by the cookie token's hash; the runtime role only revokes or deletes a session",
        &[("baton_gateway", "DELETE,INSERT,SELECT", &["revoked_at"])],
    ),
    (
        "closer.inbox",
        "message ids only: the consumer records and reads them, never changes one",
        &[("baton_closer", "INSERT,SELECT", &[])],
    ),
    (
        "usage.model_pricing",
        "global reference data: the runtime role may only read it",
        &[("baton_usage", "SELECT", &[])],
    ),
    (
        "usage.server_tool_pricing",
        "global reference data: the runtime role may only read it",
        &[("baton_usage", "SELECT", &[])],
    ),
    (
        "usage.retention_runs",
        "counts per retention run: only the maintenance role writes or reads it",
        &[("baton_usage_maint", "INSERT,SELECT", &[])],
    ),
];

/// Tables whose reason says they hold no tenant data: they must have no tenant column.
const NO_TENANT_COLUMN: &[&str] = &[
    "closer.inbox",
    "usage.model_pricing",
    "usage.server_tool_pricing",
    "usage.retention_runs",
];

fn owner_of(context: &str) -> String {
    format!("baton_{context}_owner")
}

/// Pairs of text from a catalogue query whose `$1` is the contexts' schemas.
async fn rows(admin: &PgPool, sql: &str) -> Vec<(String, String)> {
    sqlx::query_as(sqlx::AssertSqlSafe(sql.to_string()))
        .bind(CONTEXTS)
        .fetch_all(admin)
        .await
        .expect(sql)
}

#[tokio::test]
async fn every_object_is_owned_by_its_migration_role_and_runtime_roles_own_nothing() {
    let baton = Baton::start().await;
    let admin = baton.admin().await;
    let objects = rows(
        &admin,
        "SELECT n.nspname || '.' || c.relname || ' (' || c.relkind::text || ')', pg_get_userbyid(c.relowner)::text \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = ANY ($1) \
         UNION ALL SELECT n.nspname || '.' || p.proname || '()', pg_get_userbyid(p.proowner)::text \
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE n.nspname = ANY ($1) \
         UNION ALL SELECT n.nspname || '.' || t.typname || ' (type)', pg_get_userbyid(t.typowner)::text \
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace \
         WHERE n.nspname = ANY ($1) \
         UNION ALL SELECT n.nspname || ' (schema)', pg_get_userbyid(n.nspowner)::text \
         FROM pg_namespace n \
         WHERE n.nspname = ANY ($1)",
    )
    .await;
    assert!(
        objects.len() > 60,
        "the catalogue read found the objects: {objects:?}"
    );
    let wrong: Vec<String> = objects
        .iter()
        .filter(|(object, owner)| {
            let context = object.split(['.', ' ']).next().unwrap_or_default();
            *owner != owner_of(context)
        })
        .map(|(object, owner)| format!("{object} owned by {owner}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "objects not owned by their context's migration role: {wrong:?}"
    );

    // No runtime or maintenance role owns anything, anywhere in the database.
    let owned: Vec<(String, String)> = sqlx::query_as(
        "SELECT r.rolname::text, count(*)::text FROM pg_roles r JOIN ( \
           SELECT relowner AS owner FROM pg_class UNION ALL SELECT proowner FROM pg_proc \
           UNION ALL SELECT typowner FROM pg_type UNION ALL SELECT nspowner FROM pg_namespace) o \
           ON o.owner = r.oid \
         WHERE r.rolname LIKE 'baton\\_%' AND r.rolname NOT LIKE '%\\_owner' GROUP BY r.rolname",
    )
    .fetch_all(&admin)
    .await
    .expect("owners of objects");
    assert!(
        owned.is_empty(),
        "runtime or maintenance roles own objects: {owned:?}"
    );

    // The owners cannot log in: nothing runs as them but the migration step's SET ROLE.
    let login: Vec<(String, bool)> = sqlx::query_as(
        "SELECT rolname::text, rolcanlogin FROM pg_roles WHERE rolname LIKE 'baton\\_%\\_owner' ORDER BY 1",
    )
    .fetch_all(&admin)
    .await
    .expect("owners");
    assert_eq!(
        login.len(),
        CONTEXTS.len(),
        "one owner per context: {login:?}"
    );
    assert!(
        login.iter().all(|(_, can)| !can),
        "an owner role can log in: {login:?}"
    );
}

#[tokio::test]
async fn each_exemption_from_row_level_security_grants_only_what_its_reason_allows() {
    let baton = Baton::start().await;
    let admin = baton.admin().await;
    for (table, reason, expected) in EXEMPT_GRANTS {
        let (schema, name) = table.split_once('.').expect("schema.table");
        let owner = owner_of(schema);
        let held: Vec<(String, String)> = sqlx::query_as(
            "SELECT grantee::text, string_agg(privilege_type::text, ',' ORDER BY privilege_type) \
             FROM information_schema.role_table_grants \
             WHERE table_schema = $1 AND table_name = $2 AND grantee <> $3 GROUP BY grantee ORDER BY 1",
        )
        .bind(schema)
        .bind(name)
        .bind(&owner)
        .fetch_all(&admin)
        .await
        .expect("grants");
        // Column-level grants only (information_schema repeats a table-level UPDATE per column).
        let columns: Vec<(String, String)> = sqlx::query_as(
            "SELECT pg_get_userbyid(acl.grantee)::text, a.attname::text FROM pg_attribute a \
             CROSS JOIN LATERAL aclexplode(a.attacl) acl \
             WHERE a.attrelid = to_regclass($1 || '.' || $2) AND acl.privilege_type = 'UPDATE' \
               AND pg_get_userbyid(acl.grantee) <> $3 ORDER BY 1, 2",
        )
        .bind(schema)
        .bind(name)
        .bind(&owner)
        .fetch_all(&admin)
        .await
        .expect("column grants");
        let mut updates: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (role, column) in columns {
            updates.entry(role).or_default().push(column);
        }
        let wanted: Vec<(String, String)> = expected
            .iter()
            .map(|(role, privileges, _)| (role.to_string(), privileges.to_string()))
            .collect();
        assert_eq!(held, wanted, "{table} ({reason}): table privileges");
        let wanted_updates: BTreeMap<String, Vec<String>> = expected
            .iter()
            .filter(|(_, _, columns)| !columns.is_empty())
            .map(|(role, _, columns)| {
                (
                    role.to_string(),
                    columns.iter().map(|c| c.to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(
            updates, wanted_updates,
            "{table} ({reason}): UPDATE columns"
        );
    }
    for table in NO_TENANT_COLUMN {
        let (schema, name) = table.split_once('.').expect("schema.table");
        let tenant: Option<String> = sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = $2 AND column_name LIKE '%tenant%'",
        )
        .bind(schema)
        .bind(name)
        .fetch_optional(&admin)
        .await
        .expect("columns");
        assert_eq!(tenant, None, "{table} is exempt as holding no tenant data");
    }
}
