//! `/api/v1/budgets`: a tenant's spend limits (issue 24). `POST` creates one (strict body),
//! `GET` lists them with their current period's spend, forecast and crossed thresholds,
//! `DELETE /budgets/{id}` removes one. Each forwards one RPC to the usage context, which
//! evaluates the budgets as usage lands and raises `usage.budget.crossed` once per threshold.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use baton_proto::usage::v1 as proto;

use crate::api_schema::enums::{BudgetPeriod, BudgetScope};
use crate::api_schema::text::Timestamp;
use crate::api_schema::{Bounded, List, Nullable, errors};
use crate::path_ids::BudgetIdPath;
use crate::response::HttpResult;
use crate::routes::{iso_of, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::{self, NoQuery, StrictJson};

/// Thresholds in percent of the limit: 1..1000 each, at most 10.
type Thresholds = List<Bounded<1, 1000>, 10>;

/// `POST /budgets` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BudgetBody {
    /// `tenant`, `project` or `member`.
    #[schema(schema_with = BudgetScope::schema)]
    pub scope: String,
    /// The project slug or member name; absent for tenant.
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(max_length = 256, nullable = false)]
    pub subject: Option<String>,
    /// `month` or `day`.
    #[schema(schema_with = BudgetPeriod::schema)]
    pub period: String,
    #[schema(minimum = 0.01, maximum = 1_000_000_000)]
    pub limit_usd: f64,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = Thresholds::schema)]
    pub thresholds: Option<Vec<u32>>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(max_length = 64, nullable = false)]
    pub timezone: Option<String>,
}

/// A budget's current period.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PeriodAnswer {
    #[schema(format = Date)]
    pub start_day: String,
    #[schema(schema_with = Timestamp::schema)]
    pub start: String,
    #[schema(schema_with = Timestamp::schema)]
    pub end: String,
    pub spent_usd: f64,
    /// The spend at the period's end at the pace so far (an estimate).
    pub forecast_usd: f64,
    #[schema(schema_with = Thresholds::schema)]
    pub crossed: Vec<u32>,
}

/// A budget and its current period.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetAnswer {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(schema_with = BudgetScope::schema)]
    pub scope: String,
    #[schema(required = true)]
    pub subject: Option<String>,
    #[schema(schema_with = BudgetPeriod::schema)]
    pub period: String,
    pub limit_usd: f64,
    #[schema(schema_with = Thresholds::schema)]
    pub thresholds: Vec<u32>,
    pub timezone: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub created_at: Option<String>,
    #[schema(inline, required = true)]
    pub current: Option<PeriodAnswer>,
}

/// `GET /budgets` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct BudgetsAnswer {
    #[schema(max_items = 100)]
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

/// Create a budget
///
/// A USD limit per calendar month or day (cut in `timezone`, UTC by default) for the tenant, a
/// project or a member, with thresholds in percent (default 50, 80, 100); each crossing of a
/// period raises `usage.budget.crossed` once. 201 with the budget and its current period.
#[utoipa::path(
    post,
    path = "/api/v1/budgets",
    tag = "budgets",
    operation_id = "createBudget",
    request_body(content = BudgetBody,
        example = json!({"scope": "tenant", "period": "month", "limitUsd": 500.0})),
    responses((status = 201, description = "success", body = BudgetAnswer), errors::Conflict),
)]
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
    let budget = rpc!(state.usage.create_budget(&call, request))?;
    Ok((StatusCode::CREATED, Json(budget_answer(budget))))
}

/// The tenant's budgets, each with its current period's spend, forecast and crossed thresholds
#[utoipa::path(
    get,
    path = "/api/v1/budgets",
    tag = "budgets",
    operation_id = "listBudgets",
    responses((status = 200, description = "success", body = BudgetsAnswer)),
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(call): Caller,
    _: NoQuery,
) -> HttpResult<Json<BudgetsAnswer>> {
    let listed = rpc!(
        state
            .usage
            .list_budgets(&call, proto::ListBudgetsRequest {})
    )?;
    Ok(Json(BudgetsAnswer {
        budgets: listed.budgets.into_iter().map(budget_answer).collect(),
    }))
}

/// Remove a budget and its record of crossings
///
/// 204; another tenant's or an unknown id is 404.
#[utoipa::path(
    delete,
    path = "/api/v1/budgets/{id}",
    tag = "budgets",
    operation_id = "deleteBudget",
    params(BudgetIdPath),
    responses((status = 204, description = "deleted"), errors::NotFound),
)]
pub async fn delete(
    State(state): State<AppState>,
    Caller(call): Caller,
    BudgetIdPath(id): BudgetIdPath,
    _: NoQuery,
) -> HttpResult<StatusCode> {
    rpc!(
        state
            .usage
            .delete_budget(&call, proto::DeleteBudgetRequest { id })
    )?;
    Ok(StatusCode::NO_CONTENT)
}
