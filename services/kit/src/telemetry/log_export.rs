//! Logs over OTLP: the `opentelemetry-appender-tracing` bridge writing through a logger that
//! picks each record's component, as spans do ([`super::routing`]).
//!
//! The bridge sees the same events as the JSON lines on stdout and under the same filter
//! ([`super::log_filter`], sqlx's statement events only with `BATON_LOG_SQL=1`), so what
//! reaches the collector is exactly what reaches stdout: the same fields, the same privacy
//! rules (no memory content, excerpt, prompt or key is ever a log field). Two narrowings:
//! only Baton's own targets (`baton_*`) are exported — a library's chatter stays on stdout,
//! and the exporter's own stack (tonic, h2, hyper, opentelemetry) logging through the
//! exporter would feed itself — and a record inside a traced span carries its trace and span
//! id (the SDK reads them from the current context, which every entered span activates).

use std::borrow::Cow;

use opentelemetry::InstrumentationScope;
use opentelemetry::logs::{Logger, LoggerProvider, Severity};
use opentelemetry_sdk::logs::{SdkLogRecord, SdkLogger, SdkLoggerProvider};

use super::component::Component;

/// One logger provider per component plus the process's own (startup).
#[derive(Clone, Debug)]
pub(crate) struct RoutingLoggerProvider {
    components: Vec<(Component, SdkLoggerProvider)>,
    fallback: SdkLoggerProvider,
}

impl RoutingLoggerProvider {
    pub(crate) fn new(
        components: Vec<(Component, SdkLoggerProvider)>,
        fallback: SdkLoggerProvider,
    ) -> Self {
        RoutingLoggerProvider {
            components,
            fallback,
        }
    }
}

impl LoggerProvider for RoutingLoggerProvider {
    type Logger = RoutingLogger;

    fn logger_with_scope(&self, scope: InstrumentationScope) -> RoutingLogger {
        RoutingLogger {
            components: self
                .components
                .iter()
                .map(|(component, provider)| {
                    (*component, provider.logger_with_scope(scope.clone()))
                })
                .collect(),
            fallback: self.fallback.logger_with_scope(scope),
        }
    }

    fn logger(&self, name: impl Into<Cow<'static, str>>) -> RoutingLogger {
        self.logger_with_scope(InstrumentationScope::builder(name).build())
    }
}

/// Emits each record through the logger of the current context's component.
#[derive(Debug)]
pub(crate) struct RoutingLogger {
    components: Vec<(Component, SdkLogger)>,
    fallback: SdkLogger,
}

impl RoutingLogger {
    fn pick(&self) -> &SdkLogger {
        Component::current()
            .and_then(|component| {
                self.components
                    .iter()
                    .find(|(owner, _)| *owner == component)
                    .map(|(_, logger)| logger)
            })
            .unwrap_or(&self.fallback)
    }
}

impl Logger for RoutingLogger {
    type LogRecord = SdkLogRecord;

    fn create_log_record(&self) -> SdkLogRecord {
        self.pick().create_log_record()
    }

    fn emit(&self, record: SdkLogRecord) {
        self.pick().emit(record);
    }

    fn event_enabled(&self, level: Severity, target: &str, name: Option<&str>) -> bool {
        // Checked here as well as by the layer's filter: an event another layer asked for
        // (sqlx's statements, for the database layer) can pass a per-layer filter (see
        // `logs::JsonLines`), and only Baton's own records are exported.
        is_baton_target(target) && self.pick().event_enabled(level, target, name)
    }
}

/// Whether an event's target is Baton's own (a workspace crate: `baton_kit`, `baton_gateway`,
/// `baton_cli`, ...). The span bridge and the log bridge export only these.
pub fn is_baton_target(target: &str) -> bool {
    target.starts_with("baton_") || target == "baton" || target.starts_with("baton::")
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::logs::InMemoryLogExporter;

    #[test]
    fn a_record_goes_to_the_provider_of_its_component() {
        let exporter = |_: &str| InMemoryLogExporter::default();
        let registry_logs = exporter("registry");
        let fallback_logs = exporter("process");
        let provider = RoutingLoggerProvider::new(
            vec![(
                Component::Registry,
                SdkLoggerProvider::builder()
                    .with_simple_exporter(registry_logs.clone())
                    .build(),
            )],
            SdkLoggerProvider::builder()
                .with_simple_exporter(fallback_logs.clone())
                .build(),
        );
        let logger = provider.logger("t");
        {
            let _guard = Component::Registry
                .context(opentelemetry::Context::new())
                .attach();
            logger.emit(logger.create_log_record());
        }
        logger.emit(logger.create_log_record());
        assert_eq!(registry_logs.get_emitted_logs().expect("logs").len(), 1);
        assert_eq!(fallback_logs.get_emitted_logs().expect("logs").len(), 1);
    }

    #[test]
    fn only_workspace_crates_are_baton_targets() {
        assert!(is_baton_target("baton_registry::live_batch"));
        assert!(is_baton_target("baton_kit"));
        assert!(!is_baton_target("lapin::io_loop"));
        assert!(!is_baton_target("sqlx::query"));
        assert!(!is_baton_target("opentelemetry_sdk"));
    }
}
