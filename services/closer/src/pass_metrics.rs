//! The closer pass's own metrics: passes by result and the judge's tokens.

use opentelemetry::metrics::Counter;

use baton_kit::telemetry::Component;
use baton_kit::telemetry::component::PerComponent;

/// `baton.closer.passes`: closer passes by result.
pub(crate) fn outcomes() -> &'static Counter<u64> {
    static COUNTER: PerComponent<Counter<u64>> = PerComponent::new();
    COUNTER.get_or_init(Component::Closer, |meter| {
        meter
            .u64_counter("baton.closer.passes")
            .with_unit("{pass}")
            .with_description("Closer passes by result")
            .build()
    })
}

/// `baton.closer.judge.tokens`: tokens the judge reported using (what the budget is charged),
/// by judge.
pub(crate) fn judge_tokens() -> &'static Counter<u64> {
    static COUNTER: PerComponent<Counter<u64>> = PerComponent::new();
    COUNTER.get_or_init(Component::Closer, |meter| {
        meter
            .u64_counter("baton.closer.judge.tokens")
            .with_unit("{token}")
            .with_description("Tokens the judge used, as charged to the tenants' budgets")
            .build()
    })
}
