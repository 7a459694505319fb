//! `GetTree`: one session's agents, edges, status and figures.
//!
//! - The main agent is always in the tree (a session has one even before its row arrives).
//! - An agent's parent is its edge's parent (the first proof stored), else the parent its
//!   agent fact named, else the main agent. `rolledUp` is the agent's own figures plus every
//!   descendant's; a cycle in hostile data is cut, never followed forever.
//! - Status per agent by [`crate::status`] at the call's "now".
//! - Delegation savings by [`crate::savings`] at the main agent's model.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::clock::to_timestamp;
use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;
use baton_usage_model::PriceTable;

use crate::figures::Sums;
use crate::rollups::Delta;
use crate::savings::{PricedRow, savings};
use crate::status::{Evidence, status};
use crate::store::db_error;
use crate::stored_row::{select_stored_rows, stored_row};

/// A stored session: a `usage.sessions` row, read whole with `sqlx::query_as!` (the select
/// list is [`select_session_rows`]'s), then its open runaway reasons.
#[derive(Debug, Clone, Default)]
pub struct SessionRow {
    pub agent: String,
    pub session_id: String,
    pub project_slug: String,
    pub host_ids: Vec<String>,
    /// The members that reported the session (never the unattributed `""`).
    pub members: Vec<String>,
    pub client_versions: Vec<String>,
    pub output_under_reported: bool,
    pub first_activity_at: Option<DateTime<Utc>>,
    pub last_activity_at: Option<DateTime<Utc>>,
    pub last_prompt_at: Option<DateTime<Utc>>,
    pub last_stop_at: Option<DateTime<Utc>>,
    /// Why it is flagged as running away now (open episodes' reasons): read after the row,
    /// selected as an empty list.
    pub runaway: Vec<String>,
}

/// `sqlx::query_as!` of whole [`SessionRow`]s: the select list, then `$rest` (a string literal:
/// the `FROM`/`WHERE` clause and what follows), then the statement's arguments. The list is
/// written once here because sqlx checks one literal against the schema.
macro_rules! select_session_rows {
    ($rest:literal $(+ $more:literal)*, $($argument:expr),+ $(,)?) => {
        sqlx::query_as!(
            $crate::tree::SessionRow,
            r#"SELECT agent, session_id, project_slug, host_ids, members, client_versions,
                 output_under_reported, first_activity_at, last_activity_at, last_prompt_at,
                 last_stop_at, '{}'::text[] AS "runaway!" "#
                + $rest $(+ $more)*,
            $($argument),+
        )
    };
}
pub(crate) use select_session_rows;

/// A stored agent.
#[derive(Debug, Clone, Default)]
pub struct AgentRow {
    pub agent_id: String,
    pub kind: String,
    pub parent_agent_id: Option<String>,
    pub subagent_type: Option<String>,
    pub spawn_tool: Option<String>,
    pub model: Option<String>,
    pub first_activity_at: Option<DateTime<Utc>>,
    pub last_activity_at: Option<DateTime<Utc>>,
    pub ended: Option<String>,
}

/// A stored edge (`""` parent = main).
#[derive(Debug, Clone)]
pub struct EdgeRow {
    pub parent_agent_id: String,
    pub child_agent_id: String,
    pub join_path: String,
}

/// Everything stored about one session.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub session: SessionRow,
    pub agents: Vec<AgentRow>,
    pub edges: Vec<EdgeRow>,
    /// By agent id (`""` = main).
    pub usage: BTreeMap<String, Vec<PricedRow>>,
}

fn opt_ts(at: Option<DateTime<Utc>>) -> Option<baton_proto::Timestamp> {
    at.map(to_timestamp)
}

fn opt_id(id: &str) -> Option<String> {
    (!id.is_empty()).then(|| id.to_string())
}

/// Sums of rows.
pub fn sums_of(rows: &[PricedRow]) -> Sums {
    let mut sums = Sums::default();
    for row in rows {
        let model = row
            .record
            .model
            .as_deref()
            .map(baton_usage_model::pricing::normalize_model)
            .unwrap_or_default();
        let delta = Delta::of(&row.record.tokens, &row.record.server_tools, &row.price);
        sums.add(&model, &delta);
    }
    sums
}

/// The session's summary line.
pub fn summary(session: &SessionRow, agent_count: u32, sums: &Sums) -> proto::SessionSummary {
    proto::SessionSummary {
        agent: session.agent.clone(),
        session_id: session.session_id.clone(),
        project_slug: session.project_slug.clone(),
        host_ids: session.host_ids.clone(),
        members: session.members.clone(),
        client_versions: session.client_versions.clone(),
        output_under_reported: session.output_under_reported,
        first_activity_at: opt_ts(session.first_activity_at),
        last_activity_at: opt_ts(session.last_activity_at),
        agent_count,
        figures: Some(sums.figures()),
        // Set by ListSessions only.
        position: String::new(),
        runaway: session.runaway.clone(),
    }
}

/// The tree answer (pure).
pub fn assemble(
    stored: &Stored,
    table: &PriceTable,
    now: DateTime<Utc>,
    window: Duration,
) -> proto::GetTreeResponse {
    let mut agents = stored.agents.clone();
    if !agents.iter().any(|agent| agent.agent_id.is_empty()) {
        agents.push(AgentRow {
            agent_id: String::new(),
            kind: "main".to_string(),
            ..AgentRow::default()
        });
    }
    // The main agent first, then by first activity (unknown last), then by id.
    let order = |agent: &AgentRow| {
        (
            !agent.agent_id.is_empty(),
            agent.first_activity_at.is_none(),
            agent.first_activity_at,
            agent.agent_id.clone(),
        )
    };
    agents.sort_by_key(order);
    let known: HashSet<&str> = agents.iter().map(|agent| agent.agent_id.as_str()).collect();
    let mut parent: HashMap<&str, &str> = HashMap::new();
    for agent in agents.iter().filter(|agent| !agent.agent_id.is_empty()) {
        let named = agent
            .parent_agent_id
            .as_deref()
            .filter(|id| known.contains(id))
            .unwrap_or("");
        parent.insert(agent.agent_id.as_str(), named);
    }
    for edge in &stored.edges {
        if known.contains(edge.parent_agent_id.as_str())
            && known.contains(edge.child_agent_id.as_str())
        {
            parent.insert(edge.child_agent_id.as_str(), edge.parent_agent_id.as_str());
        }
    }
    let own: HashMap<&str, Sums> = agents
        .iter()
        .map(|agent| {
            let rows = stored
                .usage
                .get(&agent.agent_id)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            (agent.agent_id.as_str(), sums_of(rows))
        })
        .collect();
    let mut rolled: HashMap<&str, Sums> = own.clone();
    for agent in &agents {
        let mut seen = HashSet::from([agent.agent_id.as_str()]);
        let mut at = agent.agent_id.as_str();
        while let Some(&up) = parent.get(at) {
            if !seen.insert(up) {
                break;
            }
            if let (Some(target), Some(mine)) =
                (rolled.get_mut(up), own.get(agent.agent_id.as_str()))
            {
                target.merge(mine);
            }
            at = up;
        }
    }
    let session = &stored.session;
    let main_model = agents
        .iter()
        .find(|agent| agent.agent_id.is_empty())
        .and_then(|main| main.model.clone())
        .or_else(|| {
            stored
                .usage
                .get("")
                .and_then(|rows| rows.iter().max_by_key(|row| row.record.timestamp_ms))
                .and_then(|row| row.record.model.clone())
        });
    let tree_agents = agents
        .iter()
        .map(|agent| {
            let is_main = agent.agent_id.is_empty();
            let evidence = Evidence {
                is_main,
                last_activity_at: if is_main {
                    agent.last_activity_at.max(session.last_activity_at)
                } else {
                    agent.last_activity_at
                },
                last_prompt_at: session.last_prompt_at,
                last_stop_at: session.last_stop_at,
                ended: agent.ended.as_deref(),
            };
            let id = agent.agent_id.as_str();
            proto::TreeAgent {
                agent_id: opt_id(id),
                kind: agent.kind.clone(),
                parent_agent_id: parent.get(id).and_then(|parent| opt_id(parent)),
                subagent_type: agent.subagent_type.clone(),
                spawn_tool: agent.spawn_tool.clone(),
                model: agent.model.clone(),
                status: status(&evidence, now, window).as_str().to_string(),
                first_activity_at: opt_ts(agent.first_activity_at),
                last_activity_at: opt_ts(agent.last_activity_at),
                own: own.get(id).map(Sums::figures),
                rolled_up: rolled.get(id).map(Sums::figures),
            }
        })
        .collect::<Vec<_>>();
    let mut total = Sums::default();
    for sums in own.values() {
        total.merge(sums);
    }
    // Usage of agents the tree does not list still counts in the session's figures.
    for (agent_id, rows) in &stored.usage {
        if !known.contains(agent_id.as_str()) {
            total.merge(&sums_of(rows));
        }
    }
    proto::GetTreeResponse {
        session: Some(summary(session, tree_agents.len() as u32, &total)),
        agents: tree_agents,
        edges: stored
            .edges
            .iter()
            .map(|edge| proto::TreeEdge {
                parent_agent_id: opt_id(&edge.parent_agent_id),
                child_agent_id: edge.child_agent_id.clone(),
                join_path: edge.join_path.clone(),
            })
            .collect(),
        delegation_savings: Some(savings(&stored.usage, main_model.as_deref(), table)),
    }
}

/// Reads one session whole; `None` when nothing is stored for it.
pub async fn load(
    pool: &PgPool,
    tenant_id: Uuid,
    agent: &str,
    session_id: &str,
) -> Result<Option<Stored>, ApiError> {
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    let session = select_session_rows!(
        "FROM usage.sessions WHERE tenant_id = $1 AND agent = $2 AND session_id = $3",
        tenant_id,
        agent,
        session_id,
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(db_error)?;
    let Some(mut session) = session else {
        return Ok(None);
    };
    session.runaway = crate::runaway::store::open_reasons(
        &mut tx,
        tenant_id,
        &[agent.to_string()],
        &[session_id.to_string()],
    )
    .await
    .map_err(db_error)?
    .into_iter()
    .map(|(_, _, reason)| reason)
    .collect();
    let agents = sqlx::query_as!(
        AgentRow,
        "SELECT agent_id, kind, parent_agent_id, subagent_type, spawn_tool, model, \
           first_activity_at, last_activity_at, ended \
         FROM usage.agents WHERE tenant_id = $1 AND agent = $2 AND session_id = $3",
        tenant_id,
        agent,
        session_id,
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(db_error)?;
    let edges = sqlx::query_as!(
        EdgeRow,
        "SELECT parent_agent_id, child_agent_id, join_path FROM usage.orchestration_edges \
         WHERE tenant_id = $1 AND agent = $2 AND session_id = $3 \
         ORDER BY parent_agent_id, child_agent_id",
        tenant_id,
        agent,
        session_id,
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(db_error)?;
    let rows = select_stored_rows!(
        "",
        "WHERE tenant_id = $1 AND agent = $2 AND session_id = $3",
        tenant_id,
        agent,
        session_id,
    )
    .fetch_all(&mut *tx)
    .await
    .map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    let mut usage: BTreeMap<String, Vec<PricedRow>> = BTreeMap::new();
    for row in rows {
        let stored = stored_row!(row);
        let priced = stored.priced(agent, session_id);
        usage.entry(stored.agent_id).or_default().push(priced);
    }
    Ok(Some(Stored {
        session,
        agents,
        edges,
        usage,
    }))
}
