//! Which component a span or a measurement belongs to.
//!
//! `baton serve all` runs every component in one process, yet each must report as itself. A
//! component is carried two ways:
//!
//! - **Spans**: as a value in the OpenTelemetry [`Context`]. Every entry point (HTTP request,
//!   gRPC call, consumed message, relayed message) parents its root span on a context holding
//!   its [`Component`] ([`Component::context`]); with context activation every descendant span
//!   inherits it, and the routing tracer hands each new span to that component's provider.
//! - **Metrics**: explicitly. Every instrument is created from its component's meter
//!   ([`meter`]) and cached per component ([`PerComponent`]), because a measurement recorded in
//!   a background loop has no span to inherit from.

use std::sync::OnceLock;

use opentelemetry::Context;
use opentelemetry::metrics::Meter;
use opentelemetry_sdk::metrics::SdkMeterProvider;

/// A Baton component: the unit that reports its own `service.name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    Gateway,
    Registry,
    Provenance,
    Triage,
    Closer,
    Usage,
    Notify,
}

impl Component {
    pub const ALL: [Component; 7] = [
        Component::Gateway,
        Component::Registry,
        Component::Provenance,
        Component::Triage,
        Component::Closer,
        Component::Usage,
        Component::Notify,
    ];

    /// The OpenTelemetry `service.name` this component reports.
    pub fn service_name(self) -> &'static str {
        match self {
            Component::Gateway => "baton-gateway",
            Component::Registry => "baton-registry",
            Component::Provenance => "baton-provenance",
            Component::Triage => "baton-triage",
            Component::Closer => "baton-closer",
            Component::Usage => "baton-usage",
            Component::Notify => "baton-notify",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            Component::Gateway => 0,
            Component::Registry => 1,
            Component::Provenance => 2,
            Component::Triage => 3,
            Component::Closer => 4,
            Component::Usage => 5,
            Component::Notify => 6,
        }
    }

    /// `parent` with this component attached: parent a root span on it.
    pub fn context(self, parent: Context) -> Context {
        parent.with_value(self)
    }

    /// The component of the current OpenTelemetry context (the entered span's), if any.
    pub fn current() -> Option<Component> {
        Context::map_current(|context| context.get::<Component>().copied())
    }
}

/// Runs `future` with `component` in its OpenTelemetry context: its log lines name the
/// component and a span it opens without a parent is the component's. (A task it spawns starts
/// afresh; entry points mark their own spans.)
pub fn within<F: std::future::Future>(
    component: Component,
    future: F,
) -> opentelemetry::context::WithContext<F> {
    use opentelemetry::context::FutureExt as _;
    future.with_context(component.context(Context::new()))
}

/// One lazily-built value per component (an instrument, typically).
pub struct PerComponent<T>([OnceLock<T>; Component::ALL.len()]);

impl<T> PerComponent<T> {
    pub const fn new() -> PerComponent<T> {
        PerComponent([const { OnceLock::new() }; Component::ALL.len()])
    }

    pub fn get_or_init(&self, component: Component, init: impl FnOnce(Meter) -> T) -> &T {
        self.0[component.index()].get_or_init(|| init(meter(component)))
    }
}

impl<T> Default for PerComponent<T> {
    fn default() -> PerComponent<T> {
        PerComponent::new()
    }
}

static METER_PROVIDERS: OnceLock<Vec<(Component, SdkMeterProvider)>> = OnceLock::new();

/// Installs the per-component meter providers (once per process; later calls are ignored).
pub(crate) fn install_meter_providers(providers: Vec<(Component, SdkMeterProvider)>) {
    let _ = METER_PROVIDERS.set(providers);
}

/// The meter of `component`'s own provider (a no-op meter when metrics are not exported).
pub fn meter(component: Component) -> Meter {
    use opentelemetry::metrics::MeterProvider as _;
    METER_PROVIDERS
        .get()
        .and_then(|providers| providers.iter().find(|(owner, _)| *owner == component))
        .map_or_else(
            || opentelemetry::global::meter(component.service_name()),
            |(_, provider)| provider.meter("baton"),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_component_has_a_distinct_name_and_slot() {
        let names: std::collections::HashSet<_> =
            Component::ALL.iter().map(|c| c.service_name()).collect();
        let slots: std::collections::HashSet<_> =
            Component::ALL.iter().map(|c| c.index()).collect();
        assert_eq!(names.len(), Component::ALL.len());
        assert_eq!(slots, (0..Component::ALL.len()).collect());
    }

    #[test]
    fn a_component_rides_in_the_context_it_parents() {
        let context = Component::Triage.context(Context::new());
        let _guard = context.attach();
        assert_eq!(Component::current(), Some(Component::Triage));
    }
}
