//! Budgets at the boundary: a CreateBudget request checked field by field, and budgets read
//! back with their current period's spend, forecast and crossings.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::clock::to_timestamp;
use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::text;
use baton_proto::usage::v1 as proto;

use crate::budgets::rules::{self, Period};
use crate::budgets::store::{self, Budget};
use crate::store::db_error;

/// Thresholds when none are given.
pub const DEFAULT_THRESHOLDS: [u32; 3] = [50, 80, 100];
/// Largest limit, USD.
const MAX_LIMIT_USD: f64 = 1e9;

/// Checks a CreateBudget request; answers the budget to store (not yet stored).
pub fn budget_of(
    request: &proto::CreateBudgetRequest,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Budget, ApiError> {
    let subject = match (request.scope.as_str(), request.subject.as_deref()) {
        ("tenant", None) => None,
        ("tenant", Some(_)) => {
            return Err(ApiError::invalid_input(
                "subject must be absent for a tenant budget",
            ));
        }
        ("project", Some(project)) => Some(text::project(project)?),
        ("member", Some(member)) => Some(baton_kit::member::member(member)?),
        ("project" | "member", None) => {
            return Err(ApiError::invalid_input(
                "subject is required for a project or member budget",
            ));
        }
        _ => {
            return Err(ApiError::invalid_input(
                "scope must be tenant, project or member",
            ));
        }
    };
    let period = Period::parse(&request.period)
        .ok_or_else(|| ApiError::invalid_input("period must be month or day"))?;
    let limit = request.limit_usd;
    if !limit.is_finite() || !(0.01..=MAX_LIMIT_USD).contains(&limit) {
        return Err(ApiError::invalid_input(
            "limitUsd must be between 0.01 and 1000000000",
        ));
    }
    let mut thresholds = if request.thresholds.is_empty() {
        DEFAULT_THRESHOLDS.to_vec()
    } else {
        request.thresholds.clone()
    };
    thresholds.sort_unstable();
    thresholds.dedup();
    if thresholds.len() > 10 || thresholds.iter().any(|t| !(1..=1000).contains(t)) {
        return Err(ApiError::invalid_input(
            "thresholds must be at most 10 percentages, each 1 to 1000",
        ));
    }
    let timezone = match request.timezone.as_deref() {
        None => "UTC".to_string(),
        Some(name) => name
            .parse::<Tz>()
            .map(|zone| zone.name().to_string())
            .map_err(|_| ApiError::invalid_input("timezone must be an IANA zone name"))?,
    };
    Ok(Budget {
        id,
        scope: request.scope.clone(),
        subject,
        period: period.as_str().to_string(),
        limit_micros: (limit * 1e6).round() as i64,
        thresholds: thresholds.into_iter().map(|t| t as i32).collect(),
        timezone,
        created_at: now,
    })
}

/// Stores a checked budget and answers it with its current period.
pub async fn create(
    pool: &PgPool,
    tenant_id: Uuid,
    budget: &Budget,
    now: DateTime<Utc>,
) -> Result<proto::Budget, ApiError> {
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    if !store::insert(&mut tx, tenant_id, budget)
        .await
        .map_err(db_error)?
    {
        return Err(ApiError::conflict(format!(
            "a tenant keeps at most {} budgets",
            store::MAX_BUDGETS
        )));
    }
    let answer = with_period(&mut tx, tenant_id, budget, now).await?;
    tx.commit().await.map_err(db_error)?;
    Ok(answer)
}

/// The tenant's budgets with their current periods.
pub async fn list(
    pool: &PgPool,
    tenant_id: Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<proto::Budget>, ApiError> {
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    let budgets = store::all(&mut tx, tenant_id).await.map_err(db_error)?;
    let mut answers = Vec::with_capacity(budgets.len());
    for budget in &budgets {
        answers.push(with_period(&mut tx, tenant_id, budget, now).await?);
    }
    tx.commit().await.map_err(db_error)?;
    Ok(answers)
}

/// Deletes a budget by its id (text from the wire).
pub async fn delete(pool: &PgPool, tenant_id: Uuid, id: &str) -> Result<(), ApiError> {
    let id = Uuid::parse_str(id).map_err(|_| ApiError::invalid_input("id must be a uuid"))?;
    let mut tx = begin_tenant(pool, tenant_id).await.map_err(db_error)?;
    let deleted = store::delete(&mut tx, tenant_id, id)
        .await
        .map_err(db_error)?;
    tx.commit().await.map_err(db_error)?;
    if deleted {
        Ok(())
    } else {
        Err(ApiError::not_found("no budget with that id"))
    }
}

async fn with_period(
    connection: &mut sqlx::PgConnection,
    tenant_id: Uuid,
    budget: &Budget,
    now: DateTime<Utc>,
) -> Result<proto::Budget, ApiError> {
    let period = Period::parse(&budget.period).unwrap_or(Period::Month);
    let zone: Tz = budget.timezone.parse().unwrap_or(Tz::UTC);
    let bounds = rules::bounds(period, &zone, now);
    let spent = store::spend(connection, tenant_id, budget, bounds.start, bounds.end)
        .await
        .map_err(db_error)?;
    let mut crossed = store::crossed(connection, tenant_id, budget.id, bounds.first_day)
        .await
        .map_err(db_error)?;
    crossed.sort_unstable();
    let spent_usd = rules::usd(spent);
    Ok(proto::Budget {
        id: budget.id.to_string(),
        scope: budget.scope.clone(),
        subject: budget.subject.clone(),
        period: budget.period.clone(),
        limit_usd: budget.limit_micros as f64 / 1e6,
        thresholds: budget.thresholds.iter().map(|t| *t as u32).collect(),
        timezone: budget.timezone.clone(),
        created_at: Some(to_timestamp(budget.created_at)),
        current: Some(proto::BudgetPeriod {
            start_day: bounds.first_day.to_string(),
            start: Some(to_timestamp(bounds.start)),
            end: Some(to_timestamp(bounds.end)),
            spent_usd,
            forecast_usd: rules::forecast(spent_usd, &bounds, now),
            crossed,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(scope: &str, subject: Option<&str>) -> proto::CreateBudgetRequest {
        proto::CreateBudgetRequest {
            scope: scope.to_string(),
            subject: subject.map(str::to_string),
            period: "month".to_string(),
            limit_usd: 100.0,
            thresholds: Vec::new(),
            timezone: None,
        }
    }

    #[test]
    fn a_budget_request_is_checked_field_by_field() {
        let now = "2026-12-01T00:00:00Z".parse().expect("instant");
        let id = Uuid::nil();
        let ok = budget_of(&request("tenant", None), id, now).expect("tenant budget");
        assert_eq!(
            (ok.thresholds, ok.limit_micros, ok.timezone.as_str()),
            (vec![50, 80, 100], 100_000_000, "UTC")
        );
        assert!(budget_of(&request("member", Some("alice")), id, now).is_ok());
        assert!(budget_of(&request("project", Some("-home-me-repo")), id, now).is_ok());
        let cases: Vec<(proto::CreateBudgetRequest, &str)> = vec![
            (request("tenant", Some("x")), "subject must be absent"),
            (request("member", None), "subject is required"),
            (request("member", Some("unattributed")), "member may not be"),
            (request("team", None), "scope must be"),
            (
                proto::CreateBudgetRequest {
                    period: "week".into(),
                    ..request("tenant", None)
                },
                "period must be",
            ),
            (
                proto::CreateBudgetRequest {
                    limit_usd: 0.0,
                    ..request("tenant", None)
                },
                "limitUsd",
            ),
            (
                proto::CreateBudgetRequest {
                    limit_usd: f64::NAN,
                    ..request("tenant", None)
                },
                "limitUsd",
            ),
            (
                proto::CreateBudgetRequest {
                    thresholds: vec![0],
                    ..request("tenant", None)
                },
                "thresholds",
            ),
            (
                proto::CreateBudgetRequest {
                    thresholds: (1..=11).collect(),
                    ..request("tenant", None)
                },
                "thresholds",
            ),
            (
                proto::CreateBudgetRequest {
                    timezone: Some("Mars/Base".into()),
                    ..request("tenant", None)
                },
                "timezone",
            ),
        ];
        for (bad, expected) in cases {
            let error = budget_of(&bad, id, now).expect_err(expected);
            assert!(
                error.detail.contains(expected),
                "{expected}: {}",
                error.detail
            );
        }
    }
}
