//! `baton.closer.budget.utilization`: the highest share of its monthly judge-token budget any
//! tenant has used this calendar month (UTC), as this process has seen it (ratio, 1 = the
//! budget is spent and passes are refused).
//!
//! Recorded where the budget is checked (`metering::Meter::reserve`), from the same
//! figures that decide. No tenant label: ids would make one series per tenant; the dashboard
//! and the alert want the worst tenant, and each replica reports its own worst (Prometheus
//! takes the `max` across replicas). A month's figures are dropped when the month turns.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use opentelemetry::metrics::Gauge;
use uuid::Uuid;

use baton_kit::telemetry::Component;
use baton_kit::telemetry::component::PerComponent;

/// Each tenant's latest utilization in one month.
#[derive(Debug, Default)]
pub struct Utilization {
    month: Option<(i32, u32)>,
    by_tenant: HashMap<Uuid, f64>,
}

impl Utilization {
    /// Notes a tenant's utilization in `month`; answers the highest this month.
    pub fn observe(&mut self, tenant: Uuid, month: (i32, u32), ratio: f64) -> f64 {
        if self.month != Some(month) {
            self.month = Some(month);
            self.by_tenant.clear();
        }
        self.by_tenant.insert(tenant, ratio.max(0.0));
        self.by_tenant.values().copied().fold(0.0, f64::max)
    }
}

/// The share of `limit` that `spent` is; a zero budget is fully used.
pub fn ratio(spent: i64, limit: i64) -> f64 {
    if limit <= 0 {
        return 1.0;
    }
    spent.max(0) as f64 / limit as f64
}

fn gauge() -> &'static Gauge<f64> {
    static GAUGE: PerComponent<Gauge<f64>> = PerComponent::new();
    GAUGE.get_or_init(Component::Closer, |meter| {
        meter
            .f64_gauge("baton.closer.budget.utilization")
            .with_unit("1")
            .with_description(
                "Highest share of its monthly judge-token budget a tenant has used this month",
            )
            .build()
    })
}

/// Records one budget check.
pub fn record(tenant: Uuid, month: (i32, u32), spent: i64, limit: i64) {
    static STATE: LazyLock<Mutex<Utilization>> = LazyLock::new(Mutex::default);
    let highest = STATE
        .lock()
        .map(|mut state| state.observe(tenant, month, ratio(spent, limit)))
        .unwrap_or_else(|poisoned| {
            poisoned
                .into_inner()
                .observe(tenant, month, ratio(spent, limit))
        });
    gauge().record(highest, &[]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_tenant_of_the_month_is_reported_and_a_new_month_starts_over() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let mut state = Utilization::default();
        let steps = [
            (a, (2026, 11), 0.25, 0.25),
            (b, (2026, 11), 0.75, 0.75),
            (a, (2026, 11), 0.5, 0.75),
            (b, (2026, 11), 0.1, 0.5),
            (a, (2026, 12), 0.05, 0.05),
        ];
        for (tenant, month, ratio, highest) in steps {
            assert_eq!(state.observe(tenant, month, ratio), highest);
        }
        assert_eq!(ratio(50, 100), 0.5);
        assert_eq!(ratio(1, 0), 1.0);
        assert_eq!(ratio(-3, 10), 0.0);
    }
}
