//! Budget evaluation as usage lands: inside the upload's transaction, after its rows and
//! rollups are written, each of the tenant's budgets reads its current period's spend and
//! records every threshold newly reached, with its `usage.budget.crossed` message in the outbox.
//!
//! - Exactly once: the crossing ledger's primary key (budget, period, threshold) admits one
//!   row, and the message is enqueued only by the transaction that inserted it.
//! - No crossing missed under concurrent uploads: uploads no longer serialise per tenant, so
//!   evaluation takes a per-tenant transaction lock first (only for tenants that keep budgets);
//!   the spend it then reads includes every upload that committed before it, and its own rows.
//! - The current period only (the one containing the upload's "now"): a backfill of last
//!   month's transcripts does not alert about last month.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::bus::outbox::{OutboxTable, enqueue};
use baton_proto::messages::{BUDGET_CROSSED, BudgetCrossed, Envelope};

use crate::budgets::rules::{self, Period};
use crate::budgets::store;

/// The usage context's outbox.
pub const OUTBOX: OutboxTable = OutboxTable("usage.outbox");

/// Evaluates every budget of the tenant at `now`; answers the crossings recorded.
pub async fn evaluate(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    now: DateTime<Utc>,
) -> Result<u32, sqlx::Error> {
    let budgets = store::all(connection, tenant_id).await?;
    if budgets.is_empty() {
        return Ok(0);
    }
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtext('baton.usage.budgets'), hashtext($1))",
        tenant_id.to_string(),
    )
    .execute(&mut *connection)
    .await?;
    let mut recorded = 0;
    for budget in &budgets {
        let (Some(period), Ok(zone)) =
            (Period::parse(&budget.period), budget.timezone.parse::<Tz>())
        else {
            continue;
        };
        let bounds = rules::bounds(period, &zone, now);
        let spent = store::spend(connection, tenant_id, budget, bounds.start, bounds.end).await?;
        let already = store::crossed(connection, tenant_id, budget.id, bounds.first_day).await?;
        let thresholds: Vec<u32> = budget.thresholds.iter().map(|t| *t as u32).collect();
        for threshold in rules::newly_crossed(spent, budget.limit_micros, &thresholds, &already) {
            let first = store::record_crossing(
                connection,
                tenant_id,
                budget.id,
                bounds.first_day,
                threshold,
                spent,
                now,
            )
            .await?;
            if !first {
                continue;
            }
            let crossed = BudgetCrossed {
                budget_id: budget.id,
                scope: budget.scope.clone(),
                subject: budget.subject.clone(),
                period: budget.period.clone(),
                period_start: bounds.first_day.to_string(),
                timezone: budget.timezone.clone(),
                threshold_percent: threshold,
                limit_usd: budget.limit_micros as f64 / 1e6,
                spent_usd: rules::usd(spent),
                crossed_at: now,
            };
            let envelope = Envelope::new(BUDGET_CROSSED, tenant_id, now, &crossed)
                .map_err(|error| sqlx::Error::Encode(Box::new(error)))?;
            enqueue(connection, OUTBOX, &envelope).await?;
            recorded += 1;
        }
    }
    Ok(recorded)
}
