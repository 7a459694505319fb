//! Work that runs apart from the request that caused it: the heartbeat batch worker, sweeps,
//! retention rounds. Such a task starts with an empty context, so by default its spans would
//! report as the process (`service.name=baton`), form one-span traces of their own, and its
//! statements would miss `db.client.operation.duration` (which needs the component).
//!
//! [`root`] makes one round of such work a root span of its component and links it to the
//! request spans it serves (a batch serves many, so links rather than one parent: OpenTelemetry's
//! model for batch processing). [`served_by_current`] is what a caller hands the task.

use opentelemetry::Context;
pub use opentelemetry::trace::SpanContext;
use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::component::Component;

/// The span context of the current (request) span, if it is traced: the link a detached task
/// records to the request it serves.
pub fn served_by_current() -> Option<SpanContext> {
    let context = tracing::Span::current().context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then_some(span_context)
}

/// Makes `span` a root span of `component` (a new trace, exported under the component's
/// `service.name`) linked to every span in `served`. Enter or `instrument` with it afterwards;
/// statements under it are measured as the component's.
pub fn root(
    span: &tracing::Span,
    component: Component,
    served: impl IntoIterator<Item = SpanContext>,
) {
    super::set_component_parent(span, Context::new(), component);
    for link in served {
        span.add_link(link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn a_batch_is_a_root_of_its_component_linked_to_each_request() {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("t")));
        tracing::subscriber::with_default(subscriber, || {
            let served: Vec<SpanContext> = (0..2)
                .map(|_| {
                    let request = tracing::info_span!("request");
                    let _entered = request.enter();
                    served_by_current().expect("a traced request")
                })
                .collect();
            let batch = tracing::info_span!("batch");
            root(&batch, Component::Registry, served);
            let _entered = batch.enter();
            assert_eq!(Component::current(), Some(Component::Registry));
        });
        let spans = exporter.get_finished_spans().expect("spans");
        let requests: Vec<_> = spans.iter().filter(|s| s.name == "request").collect();
        let batch = spans.iter().find(|s| s.name == "batch").expect("batch");
        assert_eq!(batch.parent_span_id, opentelemetry::trace::SpanId::INVALID);
        let linked: Vec<_> = batch
            .links
            .iter()
            .map(|link| link.span_context.span_id())
            .collect();
        assert_eq!(
            linked,
            requests
                .iter()
                .map(|r| r.span_context.span_id())
                .collect::<Vec<_>>()
        );
    }
}
