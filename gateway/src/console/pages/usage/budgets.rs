//! The usage page's budget table: each budget of the tenant in its current period, with its
//! spend, forecast and the thresholds crossed so far.

use baton_proto::usage::v1 as usage;

use crate::console::view;
use crate::console::viewer::Viewer;
use crate::rpc::rpc;
use crate::state::AppState;

/// A budget as the usage page shows it.
pub struct BudgetRow {
    pub watches: String,
    pub period: String,
    pub limit: String,
    pub spent: String,
    pub forecast: String,
    /// Percent of the limit spent so far.
    pub percent: String,
    pub crossed: String,
    pub over: bool,
}

fn budget_row(budget: &usage::Budget) -> BudgetRow {
    let current = budget.current.clone().unwrap_or_default();
    let watches = match (budget.scope.as_str(), &budget.subject) {
        ("tenant", _) => "whole tenant".to_string(),
        (scope, Some(subject)) => format!("{scope} {subject}"),
        (scope, None) => scope.to_string(),
    };
    let percent = if budget.limit_usd > 0.0 {
        100.0 * current.spent_usd / budget.limit_usd
    } else {
        0.0
    };
    BudgetRow {
        watches,
        period: format!(
            "{} from {} ({})",
            budget.period, current.start_day, budget.timezone
        ),
        limit: view::usd(budget.limit_usd),
        spent: view::usd(current.spent_usd),
        forecast: view::usd(current.forecast_usd),
        percent: format!("{percent:.0}%"),
        crossed: if current.crossed.is_empty() {
            "none".to_string()
        } else {
            current
                .crossed
                .iter()
                .map(|threshold| format!("{threshold}%"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        over: current.forecast_usd > budget.limit_usd,
    }
}

/// The tenant's budgets in their current periods (`None`: usage could not list them).
pub(super) async fn current(state: &AppState, viewer: &Viewer) -> Option<Vec<BudgetRow>> {
    rpc!(
        state
            .usage
            .list_budgets(&viewer.call, usage::ListBudgetsRequest {})
    )
    .map(|answer| answer.budgets.iter().map(budget_row).collect())
    .map_err(|status| {
        tracing::warn!(code = ?status.code(), "console: budgets unavailable");
    })
    .ok()
}
