//! Test support for the crates whose tests read provenance's tables (triage's handshake tests
//! as well as provenance's own). Compiled always: it is one function, and a feature would build
//! this crate twice.

use sqlx::PgPool;
use uuid::Uuid;

/// Inserts `count` events attributed to `run`, all on one new memory, as `admin` (real rows,
/// one statement each for the memory and the events: fast enough for a flood of hundreds).
pub async fn seed_events(admin: &PgPool, tenant: Uuid, run: Uuid, count: usize) {
    let memory_id = Uuid::now_v7();
    sqlx::query!(
        "INSERT INTO provenance.memories (tenant_id, id, memory_type, topic, content, \
           content_sha256, status, created_at, updated_at) \
         VALUES ($1, $2, 'note', 'bulk', 'bulk', sha256($2::uuid::text::bytea), 'open', now(), \
           now())",
        tenant,
        memory_id,
    )
    .execute(admin)
    .await
    .expect("memory");
    let ids: Vec<Uuid> = (0..count).map(|_| Uuid::now_v7()).collect();
    sqlx::query!(
        "INSERT INTO provenance.memory_events (tenant_id, id, memory_id, event_kind, actor_kind, \
           payload, created_at) \
         SELECT $1, id, $2, 'create', 'user_api', jsonb_build_object('sessionRunId', $3::text), \
           now() \
         FROM unnest($4::uuid[]) AS id",
        tenant,
        memory_id,
        run.to_string(),
        &ids,
    )
    .execute(admin)
    .await
    .expect("events");
}
