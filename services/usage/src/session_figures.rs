//! `SessionFigures`: several sessions' summaries by natural key, for the console's session list.
//!
//! - 1..200 refs (duplicates included), each validated as an upload's session key; a key named
//!   twice is answered once, at its first place.
//! - Sessions with no stored row are left out, as are other tenants' (row-level security).
//! - Each session is summarised by [`crate::summaries`], exactly as `ListSessions` does.

use std::collections::{HashMap, HashSet};

use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;

use crate::keys::SessionKey;
use crate::store::db_error;
use crate::summaries::summarise;
use crate::tree::{SessionRow, select_session_rows};
use crate::validate;

/// Most refs one call may name.
pub const MAX_REFS: usize = 200;

/// The keys to look up, in the order asked, each once.
pub fn requested(refs: &[proto::SessionRef]) -> Result<Vec<SessionKey>, ApiError> {
    if refs.is_empty() || refs.len() > MAX_REFS {
        return Err(ApiError::invalid_input("sessions must hold 1 to 200 refs"));
    }
    let mut seen = HashSet::new();
    let mut keys = Vec::new();
    for reference in refs {
        let key = validate::key(&reference.agent, &reference.session_id)?;
        if seen.insert(key.clone()) {
            keys.push(key);
        }
    }
    Ok(keys)
}

/// The stored rows among `found` that were asked for, in the order asked. `found` may hold
/// rows nobody asked for (the lookup matches agents and session ids separately).
pub fn in_order(order: &[SessionKey], found: Vec<SessionRow>) -> Vec<SessionRow> {
    let mut by_key: HashMap<SessionKey, SessionRow> = found
        .into_iter()
        .map(|row| (SessionKey::new(&row.agent, &row.session_id), row))
        .collect();
    order.iter().filter_map(|key| by_key.remove(key)).collect()
}

/// The summaries of the stored sessions among `keys`, in their order.
pub async fn figures(
    pool: &PgPool,
    tenant_id: Uuid,
    keys: &[SessionKey],
) -> Result<proto::SessionFiguresResponse, ApiError> {
    let mut agents: Vec<&str> = keys.iter().map(|key| key.agent.as_str()).collect();
    agents.sort_unstable();
    agents.dedup();
    let session_ids: Vec<&str> = keys.iter().map(|key| key.session_id.as_str()).collect();
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    // `= ANY` on the primary key's columns rather than a join with `unnest`: an index scan
    // whatever the statistics say (see the upload's stored-key lookup). It may match a session
    // id under another requested agent; `in_order` drops what was not asked for.
    let found = select_session_rows!(
        "FROM usage.sessions \
         WHERE tenant_id = $1 AND agent = ANY($2::text[]) AND session_id = ANY($3::text[])",
        tenant_id,
        &agents as &[&str],
        &session_ids as &[&str],
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(db_error)?;
    let sessions = in_order(keys, found);
    let summaries = summarise(&mut tx, tenant_id, &sessions).await?;
    tx.commit().await.map_err(db_error)?;
    Ok(proto::SessionFiguresResponse {
        sessions: summaries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(agent: &str, session_id: &str) -> proto::SessionRef {
        proto::SessionRef {
            agent: agent.to_string(),
            session_id: session_id.to_string(),
        }
    }

    fn key(agent: &str, session_id: &str) -> SessionKey {
        SessionKey::new(agent, session_id)
    }

    #[test]
    fn refs_are_bounded_validated_and_answered_once_in_order() {
        let cases: Vec<(Vec<proto::SessionRef>, Option<Vec<SessionKey>>)> = vec![
            (vec![], None),
            (
                vec![reference("codex", "b"), reference("claude-code", "a")],
                Some(vec![key("codex", "b"), key("claude-code", "a")]),
            ),
            (
                vec![
                    reference("codex", "b"),
                    reference("codex", "a"),
                    reference("codex", "b"),
                ],
                Some(vec![key("codex", "b"), key("codex", "a")]),
            ),
            (
                vec![reference("codex", "a"); MAX_REFS],
                Some(vec![key("codex", "a")]),
            ),
            (vec![reference("codex", "a"); MAX_REFS + 1], None),
            (vec![reference("Codex!", "a")], None),
            (vec![reference("codex", "")], None),
            (vec![reference("codex", &"s".repeat(257))], None),
        ];
        for (refs, expected) in cases {
            assert_eq!(requested(&refs).ok(), expected, "{} refs", refs.len());
        }
    }

    fn row(agent: &str, session_id: &str) -> SessionRow {
        SessionRow {
            agent: agent.to_string(),
            session_id: session_id.to_string(),
            ..SessionRow::default()
        }
    }

    #[test]
    fn rows_come_back_in_the_order_asked_without_strays() {
        let order = [
            key("codex", "b"),
            key("claude-code", "x"),
            key("claude-code", "a"),
        ];
        let found = vec![
            row("claude-code", "a"),
            row("codex", "a"),
            row("codex", "b"),
            row("claude-code", "b"),
        ];
        let got: Vec<SessionKey> = in_order(&order, found)
            .into_iter()
            .map(|row| key(&row.agent, &row.session_id))
            .collect();
        assert_eq!(got, [key("codex", "b"), key("claude-code", "a")]);
    }
}
