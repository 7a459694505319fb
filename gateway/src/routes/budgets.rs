//! `/api/v1/budgets`: a tenant's spend limits (issue 24). `POST` creates one (strict body),
//! `GET` lists them with their current period's spend, forecast and crossed thresholds,
//! `DELETE /budgets/{id}` removes one. Each forwards one RPC to the usage context, which
//! evaluates the budgets as usage lands and raises `usage.budget.crossed` once per threshold.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use baton_proto::usage::v1 as proto;

use crate::path_ids::BudgetIdPath;
use crate::response::HttpResult;
use crate::routes::{iso_of, optional_iso};
use crate::state::{AppState, Caller};
use crate::strict::{self, StrictJson};

/// `POST /budgets` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BudgetBody {
    /// `tenant`, `project` or `member`.
    pub scope: String,
    #[serde(default, deserialize_with = "strict::present")]
    pub subject: Option<String>,
    /// `month` or `day`.
    pub period: String,
    pub limit_usd: f64,
    #[serde(default, deserialize_with = "strict::present")]
    pub thresholds: Option<Vec<u32>>,
    #[serde(default, deserialize_with = "strict::present")]
    pub timezone: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeriodAnswer {
    pub start_day: String,
    pub start: String,
    pub end: String,
    pub spent_usd: f64,
    /// The spend at the period's end at the pace so far (an estimate).
    pub forecast_usd: f64,
    pub crossed: Vec<u32>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetAnswer {
    pub id: String,
    pub scope: String,
    pub subject: Option<String>,
    pub period: String,
    pub limit_usd: f64,
    pub thresholds: Vec<u32>,
    pub timezone: String,
    pub created_at: Option<String>,
    pub current: Option<PeriodAnswer>,
}

#[derive(Debug, Serialize)]
pub struct BudgetsAnswer {
    pub budgets: Vec<BudgetAnswer>,
}

pub(crate) fn budget_answer(budget: proto::Budget) -> BudgetAnswer {
    BudgetAnswer {
        id: budget.id,
        scope: budget.scope,
        subject: budget.subject,
        period: budget.period,
        limit_usd: budget.limit_usd,
        thresholds: budget.thresholds,
        timezone: budget.timezone,
        created_at: optional_iso(budget.created_at.as_ref()),
        current: budget.current.map(|current| PeriodAnswer {
            start_day: current.start_day,
            start: iso_of(current.start.as_ref()),
            end: iso_of(current.end.as_ref()),
            spent_usd: current.spent_usd,
            forecast_usd: current.forecast_usd,
            crossed: current.crossed,
        }),
    }
}

/// Creates a budget; 201 with it and its current period.
pub async fn create(
    State(state): State<AppState>,
    Caller(call): Caller,
    StrictJson(body): StrictJson<BudgetBody>,
) -> HttpResult<(StatusCode, Json<BudgetAnswer>)> {
    let request = proto::CreateBudgetRequest {
        scope: body.scope,
        subject: body.subject,
        period: body.period,
        limit_usd: body.limit_usd,
        thresholds: body.thresholds.unwrap_or_default(),
        timezone: body.timezone,
    };
    let budget = state
        .usage
        .clone()
        .create_budget(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok((StatusCode::CREATED, Json(budget_answer(budget))))
}

/// The tenant's budgets with their current periods.
pub async fn list(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<BudgetsAnswer>> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    let listed = state
        .usage
        .clone()
        .list_budgets(state.outbound.request(&call, proto::ListBudgetsRequest {}))
        .await?
        .into_inner();
    Ok(Json(BudgetsAnswer {
        budgets: listed.budgets.into_iter().map(budget_answer).collect(),
    }))
}

/// Removes a budget; 204. Another tenant's or an unknown id is 404.
pub async fn delete(
    State(state): State<AppState>,
    Caller(call): Caller,
    BudgetIdPath(id): BudgetIdPath,
    RawQuery(query): RawQuery,
) -> HttpResult<StatusCode> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    state
        .usage
        .clone()
        .delete_budget(
            state
                .outbound
                .request(&call, proto::DeleteBudgetRequest { id }),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
