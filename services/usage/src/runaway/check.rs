//! Runaway evaluation as usage lands: inside the upload's transaction, after its rows are
//! written, each session the batch carried usage for is read once (one set-based statement for
//! the whole batch): its newest usage, its main agent's newest usage, its last user prompt, the
//! spend inside the sliding window ending at its newest usage, the spend since the last prompt
//! and its open episodes. Each reason then steps its episode ([`rules::step`]): a new episode
//! is inserted and `usage.runaway.flagged` enqueued once (the partial unique index admits one
//! open episode per session and reason, so a concurrent upload's insert does nothing); a
//! condition that no longer holds closes its episode at the session's newest usage.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::bus::outbox::enqueue;
use baton_proto::messages::{Envelope, RUNAWAY_FLAGGED, RunawayFlagged};

use crate::budgets::check::OUTBOX;
use crate::budgets::rules::usd;
use crate::keys::SessionKey;
use crate::runaway::rules::{self, Policy, Reason, Step};
use crate::runaway::store;

/// One session as the evaluation reads it.
#[derive(Debug)]
struct Reading {
    agent: String,
    session_id: String,
    newest: Option<DateTime<Utc>>,
    newest_main: Option<DateTime<Utc>>,
    last_prompt_at: Option<DateTime<Utc>>,
    window_spent: Option<String>,
    since_prompt_spent: Option<String>,
    open: Option<Vec<String>>,
}

fn femtos(text: Option<&str>) -> i128 {
    text.and_then(|text| text.split('.').next())
        .and_then(|whole| whole.parse().ok())
        .unwrap_or(0)
}

/// Evaluates the sessions `keys` of the tenant; answers the flags raised.
pub async fn evaluate(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    keys: &BTreeSet<SessionKey>,
    now: DateTime<Utc>,
) -> Result<u32, sqlx::Error> {
    if keys.is_empty() {
        return Ok(0);
    }
    let policy = store::policy(connection, tenant_id).await?;
    let [agents, sessions] = SessionKey::columns(keys);
    let readings = sqlx::query_as!(
        Reading,
        "SELECT k.agent AS \"agent!\", k.session_id AS \"session_id!\", \
           n.newest AS \"newest?\", n.newest_main AS \"newest_main?\", \
           s.last_prompt_at AS \"last_prompt_at?\", \
           (SELECT sum(t.cost)::text FROM usage.token_usage t \
             WHERE t.tenant_id = $1 AND t.agent = k.agent AND t.session_id = k.session_id \
               AND t.at >= n.newest - make_interval(mins => $4) AND t.at <= n.newest) \
             AS \"window_spent?\", \
           (SELECT sum(t.cost)::text FROM usage.token_usage t \
             WHERE t.tenant_id = $1 AND t.agent = k.agent AND t.session_id = k.session_id \
               AND t.at > s.last_prompt_at) AS \"since_prompt_spent?\", \
           (SELECT array_agg(e.reason) FROM usage.runaway_episodes e \
             WHERE e.tenant_id = $1 AND e.agent = k.agent AND e.session_id = k.session_id \
               AND e.ended_at IS NULL) AS \"open?\" \
         FROM unnest($2::text[], $3::text[]) AS k(agent, session_id) \
         CROSS JOIN LATERAL ( \
           SELECT max(t.at) AS newest, max(t.at) FILTER (WHERE t.agent_id = '') AS newest_main \
           FROM usage.token_usage t \
           WHERE t.tenant_id = $1 AND t.agent = k.agent AND t.session_id = k.session_id) AS n \
         LEFT JOIN usage.sessions s \
           ON s.tenant_id = $1 AND s.agent = k.agent AND s.session_id = k.session_id",
        tenant_id,
        &agents,
        &sessions,
        policy.window_minutes as i32,
    )
    .fetch_all(&mut *connection)
    .await?;
    let mut flagged = 0;
    for reading in readings {
        let Some(newest) = reading.newest else {
            continue;
        };
        let open = reading.open.clone().unwrap_or_default();
        let window_spent = femtos(reading.window_spent.as_deref());
        let unattended =
            rules::unattended_since(&policy, reading.newest_main, reading.last_prompt_at);
        let checks = [
            (
                Reason::Spend,
                rules::over_spend(&policy, window_spent).then_some(newest),
                window_spent,
            ),
            (
                Reason::Unattended,
                unattended,
                femtos(reading.since_prompt_spent.as_deref()),
            ),
        ];
        for (reason, since, spent) in checks {
            let is_open = open.iter().any(|held| held == reason.as_str());
            match rules::step(is_open, since.is_some()) {
                Step::Nothing => {}
                Step::Clear => {
                    store::close(
                        connection,
                        tenant_id,
                        &reading.agent,
                        &reading.session_id,
                        reason,
                        newest,
                    )
                    .await?;
                }
                Step::Flag => {
                    let started_at = since.unwrap_or(newest);
                    let first = store::open(
                        connection,
                        tenant_id,
                        &reading.agent,
                        &reading.session_id,
                        reason,
                        started_at,
                        spent,
                    )
                    .await?;
                    if first {
                        let flagged_message = message(&policy, &reading, reason, started_at, spent);
                        let envelope =
                            Envelope::new(RUNAWAY_FLAGGED, tenant_id, now, &flagged_message)
                                .map_err(|error| sqlx::Error::Encode(Box::new(error)))?;
                        enqueue(connection, OUTBOX, &envelope).await?;
                        flagged += 1;
                    }
                }
            }
        }
    }
    Ok(flagged)
}

fn message(
    policy: &Policy,
    reading: &Reading,
    reason: Reason,
    started_at: DateTime<Utc>,
    spent: i128,
) -> RunawayFlagged {
    let (minutes, limit_usd) = match reason {
        Reason::Spend => (policy.window_minutes, policy.spend_micros as f64 / 1e6),
        Reason::Unattended => (policy.unattended_minutes, 0.0),
    };
    RunawayFlagged {
        agent: reading.agent.clone(),
        session_id: reading.session_id.clone(),
        reason: reason.as_str().to_string(),
        started_at,
        spent_usd: usd(spent),
        minutes,
        limit_usd,
    }
}
