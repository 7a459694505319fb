//! The tracer the `tracing` layer writes through: each new span goes to the provider of the
//! component its parent context carries (see [`super::component`]), or to the process-level
//! provider when it carries none (startup, migrations: work that belongs to no component).

use opentelemetry::Context;
use opentelemetry::trace::{SpanBuilder, Tracer};
use opentelemetry_sdk::trace::{SdkTracer, Span};

use super::component::Component;

/// Per-component tracers plus the fallback.
#[derive(Clone, Debug)]
pub(crate) struct RoutingTracer {
    components: Vec<(Component, SdkTracer)>,
    fallback: SdkTracer,
}

impl RoutingTracer {
    pub(crate) fn new(components: Vec<(Component, SdkTracer)>, fallback: SdkTracer) -> Self {
        RoutingTracer {
            components,
            fallback,
        }
    }

    fn pick(&self, component: Option<Component>) -> &SdkTracer {
        component
            .and_then(|component| {
                self.components
                    .iter()
                    .find(|(owner, _)| *owner == component)
                    .map(|(_, tracer)| tracer)
            })
            .unwrap_or(&self.fallback)
    }
}

impl Tracer for RoutingTracer {
    type Span = Span;

    fn build_with_context(&self, builder: SpanBuilder, parent_cx: &Context) -> Span {
        self.pick(parent_cx.get::<Component>().copied())
            .build_with_context(builder, parent_cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

    fn provider() -> (InMemorySpanExporter, SdkTracerProvider) {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        (exporter, provider)
    }

    #[test]
    fn a_span_goes_to_the_provider_of_its_parents_component() {
        let (registry_spans, registry) = provider();
        let (gateway_spans, gateway) = provider();
        let (fallback_spans, fallback) = provider();
        let tracer = RoutingTracer::new(
            vec![
                (Component::Registry, registry.tracer("t")),
                (Component::Gateway, gateway.tracer("t")),
            ],
            fallback.tracer("t"),
        );
        use opentelemetry::trace::Span as _;
        for (name, parent) in [
            ("registry", Component::Registry.context(Context::new())),
            ("gateway", Component::Gateway.context(Context::new())),
            (
                "triage-not-served",
                Component::Triage.context(Context::new()),
            ),
            ("none", Context::new()),
        ] {
            tracer
                .build_with_context(SpanBuilder::from_name(name), &parent)
                .end();
        }
        let names = |exporter: &InMemorySpanExporter| -> Vec<String> {
            exporter
                .get_finished_spans()
                .expect("spans")
                .iter()
                .map(|span| span.name.to_string())
                .collect()
        };
        assert_eq!(names(&registry_spans), ["registry"]);
        assert_eq!(names(&gateway_spans), ["gateway"]);
        assert_eq!(names(&fallback_spans), ["triage-not-served", "none"]);
    }
}
