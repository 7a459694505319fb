//! `usage.orchestration_edges`: parent → child within a session (parent `""` is the main
//! agent), with the join path that proved it.
//!
//! Merge rule: an edge's first proof wins. The edge is stored once per (parent, child); a later
//! upload proving it by another join path changes nothing and is not counted as inserted.

use uuid::Uuid;

use super::Tx;
use crate::validate::Batch;

/// Inserts the batch's edges; answers how many were new.
pub async fn insert(tx: &mut Tx, tenant_id: Uuid, batch: &Batch) -> Result<u32, sqlx::Error> {
    if batch.edges.is_empty() {
        return Ok(0);
    }
    // agent, session id, parent, child, join path.
    let mut columns: [Vec<String>; 5] = Default::default();
    for edge in &batch.edges {
        columns[0].push(edge.agent.clone());
        columns[1].push(edge.session_id.clone());
        columns[2].push(edge.parent_agent_id.clone());
        columns[3].push(edge.child_agent_id.clone());
        columns[4].push(edge.join_path.clone());
    }
    // The first proof wins: an edge already stored keeps its join path.
    let inserted = sqlx::query!(
        "INSERT INTO usage.orchestration_edges (tenant_id, agent, session_id, parent_agent_id, \
           child_agent_id, join_path) \
         SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) \
         ON CONFLICT DO NOTHING",
        tenant_id,
        &columns[0],
        &columns[1],
        &columns[2],
        &columns[3],
        &columns[4],
    )
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(inserted as u32)
}
