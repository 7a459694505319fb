//! Generation metering: reserve against the tenant's monthly token budget before a call,
//! record the usage after it, release the reservation either way. Over budget, nothing is
//! reserved, the pass is refused, and nothing is billed.

use chrono::{DateTime, Datelike, TimeZone, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;

/// The metering ledger.
#[derive(Debug, Clone)]
pub struct Meter {
    pool: PgPool,
    default_monthly_tokens: i64,
}

/// Which pass a reservation belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassKey {
    pub tenant_id: Uuid,
    pub run_id: Uuid,
    pub epoch: i64,
}

/// The first instant of `now`'s calendar month (UTC).
pub fn month_start(now: DateTime<Utc>) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(now)
}

impl Meter {
    pub fn new(pool: PgPool, default_monthly_tokens: i64) -> Meter {
        Meter {
            pool,
            default_monthly_tokens,
        }
    }

    /// Reserves `tokens`; `None` when the month's usage plus open reservations would pass the
    /// budget. Serialized per tenant, so two passes cannot both take the last tokens.
    pub async fn reserve(
        &self,
        pass: PassKey,
        tokens: i64,
        now: DateTime<Utc>,
    ) -> Result<Option<Uuid>, ApiError> {
        let mut transaction = begin_tenant(&self.pool, pass.tenant_id).await?;
        sqlx::query!(
            "SELECT pg_advisory_xact_lock(hashtextextended('closer.budget:' || $1::text, 0))",
            pass.tenant_id.to_string(),
        )
        .execute(&mut *transaction)
        .await?;
        let limit = sqlx::query_scalar!(
            "SELECT monthly_token_limit FROM closer.budgets WHERE tenant_id = $1",
            pass.tenant_id,
        )
        .fetch_optional(&mut *transaction)
        .await?;
        let limit = limit.unwrap_or(self.default_monthly_tokens);
        let spent = sqlx::query_scalar!(
            r#"SELECT coalesce(sum(tokens), 0)::bigint AS "spent!" FROM closer.usage
               WHERE tenant_id = $1 AND ((kind = 'usage' AND created_at >= $2)
                                      OR (kind = 'reservation' AND released_at IS NULL))"#,
            pass.tenant_id,
            month_start(now),
        )
        .fetch_one(&mut *transaction)
        .await?;
        crate::budget_gauge::record(pass.tenant_id, (now.year(), now.month()), spent, limit);
        if spent + tokens > limit {
            transaction.commit().await?;
            return Ok(None);
        }
        let id = Uuid::now_v7();
        sqlx::query!(
            "INSERT INTO closer.usage (tenant_id, id, session_run_id, activation_epoch, kind, \
               tokens, created_at) \
             VALUES ($1, $2, $3, $4, 'reservation', $5, $6)",
            pass.tenant_id,
            id,
            pass.run_id,
            pass.epoch,
            tokens,
            now,
        )
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(Some(id))
    }

    /// Records what the call used (if it used anything) and releases the reservation.
    pub async fn settle(
        &self,
        pass: PassKey,
        reservation: Uuid,
        used: Option<i64>,
        now: DateTime<Utc>,
    ) -> Result<(), ApiError> {
        let mut transaction = begin_tenant(&self.pool, pass.tenant_id).await?;
        if let Some(tokens) = used {
            sqlx::query!(
                "INSERT INTO closer.usage (tenant_id, id, session_run_id, activation_epoch, kind, \
                   tokens, created_at) \
                 VALUES ($1, $2, $3, $4, 'usage', $5, $6)",
                pass.tenant_id,
                Uuid::now_v7(),
                pass.run_id,
                pass.epoch,
                tokens.max(0),
                now,
            )
            .execute(&mut *transaction)
            .await?;
        }
        sqlx::query!(
            "UPDATE closer.usage SET released_at = $3 WHERE tenant_id = $1 AND id = $2",
            pass.tenant_id,
            reservation,
            now,
        )
        .execute(&mut *transaction)
        .await?;
        transaction.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_start_at_midnight_on_the_first() {
        let now = Utc
            .with_ymd_and_hms(2026, 11, 30, 6, 22, 40)
            .single()
            .expect("valid");
        assert_eq!(
            month_start(now),
            Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0)
                .single()
                .expect("valid")
        );
    }
}
