//! The runaway policy at the boundary: checked field by field, read with its defaults.

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_proto::usage::v1 as proto;

use crate::runaway::rules::Policy;
use crate::runaway::store;
use crate::store::db_error;

/// Checks a SetRunawayPolicy request.
pub fn policy_of(request: &proto::RunawayPolicy) -> Result<Policy, ApiError> {
    if !(1..=1440).contains(&request.window_minutes) {
        return Err(ApiError::invalid_input("windowMinutes must be 1 to 1440"));
    }
    if !request.spend_usd.is_finite() || !(0.01..=1_000_000.0).contains(&request.spend_usd) {
        return Err(ApiError::invalid_input(
            "spendUsd must be between 0.01 and 1000000",
        ));
    }
    if !(1..=10_080).contains(&request.unattended_minutes) {
        return Err(ApiError::invalid_input(
            "unattendedMinutes must be 1 to 10080",
        ));
    }
    Ok(Policy {
        window_minutes: request.window_minutes,
        spend_micros: (request.spend_usd * 1e6).round() as i64,
        unattended_minutes: request.unattended_minutes,
    })
}

fn answer(policy: &Policy) -> proto::RunawayPolicy {
    proto::RunawayPolicy {
        window_minutes: policy.window_minutes,
        spend_usd: policy.spend_micros as f64 / 1e6,
        unattended_minutes: policy.unattended_minutes,
    }
}

/// The tenant's policy (the defaults when it set none).
pub async fn get(pool: &PgPool, tenant_id: Uuid) -> Result<proto::RunawayPolicy, ApiError> {
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    let policy = store::policy(&mut tx, tenant_id).await.map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    Ok(answer(&policy))
}

/// Replaces the tenant's policy; later uploads are judged by it.
pub async fn set(
    pool: &PgPool,
    tenant_id: Uuid,
    policy: &Policy,
    now: DateTime<Utc>,
) -> Result<proto::RunawayPolicy, ApiError> {
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    store::set_policy(&mut tx, tenant_id, policy, now)
        .await
        .map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    Ok(answer(policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_checked_field_by_field() {
        let good = proto::RunawayPolicy {
            window_minutes: 15,
            spend_usd: 10.0,
            unattended_minutes: 60,
        };
        assert_eq!(policy_of(&good).expect("good"), Policy::default());
        let cases = [
            (
                proto::RunawayPolicy {
                    window_minutes: 0,
                    ..good
                },
                "windowMinutes",
            ),
            (
                proto::RunawayPolicy {
                    window_minutes: 1441,
                    ..good
                },
                "windowMinutes",
            ),
            (
                proto::RunawayPolicy {
                    spend_usd: 0.0,
                    ..good
                },
                "spendUsd",
            ),
            (
                proto::RunawayPolicy {
                    spend_usd: f64::INFINITY,
                    ..good
                },
                "spendUsd",
            ),
            (
                proto::RunawayPolicy {
                    unattended_minutes: 0,
                    ..good
                },
                "unattendedMinutes",
            ),
        ];
        for (bad, field) in cases {
            let error = policy_of(&bad).expect_err(field);
            assert!(error.detail.contains(field), "{field}: {}", error.detail);
        }
    }
}
