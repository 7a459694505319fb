//! An OTLP/gRPC receiver for tests: the real collector protocol (opentelemetry-proto's
//! `TraceService`, `MetricsService` and `LogsService`) on a free port, keeping every export it is sent, with
//! helpers that flatten the exports into spans and metric points by `service.name`.

use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::Span;
use tokio::net::TcpListener;

#[derive(Default)]
struct Store {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    logs: Vec<ExportLogsServiceRequest>,
}

/// A running receiver; stops with the test's runtime.
#[derive(Clone, Default)]
pub struct Receiver {
    store: Arc<Mutex<Store>>,
}

/// One exported span with the resource it came from.
#[derive(Debug, Clone)]
pub struct ReceivedSpan {
    pub service_name: String,
    pub resource: Vec<KeyValue>,
    pub span: Span,
}

/// One exported log record with the resource it came from.
#[derive(Debug, Clone)]
pub struct ReceivedLog {
    pub service_name: String,
    pub resource: Vec<KeyValue>,
    pub record: LogRecord,
}

/// One exported metric with the resource it came from.
#[derive(Debug, Clone)]
pub struct ReceivedMetric {
    pub service_name: String,
    pub metric: Metric,
}

/// The string form of an attribute value (ints and bools as text).
pub fn text(value: &Value) -> String {
    match value {
        Value::StringValue(text) => text.clone(),
        Value::IntValue(number) => number.to_string(),
        Value::BoolValue(flag) => flag.to_string(),
        Value::DoubleValue(number) => number.to_string(),
        other => format!("{other:?}"),
    }
}

/// Attribute `key` among `attributes`, as text.
pub fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|pair| pair.key == key)
        .and_then(|pair| pair.value.as_ref())
        .and_then(|value| value.value.as_ref())
        .map(text)
}

fn service_name(resource: Option<&Resource>) -> String {
    resource
        .and_then(|resource| attribute(&resource.attributes, "service.name"))
        .unwrap_or_default()
}

impl Receiver {
    /// Starts serving on 127.0.0.1 at a free port; returns the receiver and its endpoint URL.
    pub async fn start() -> (Receiver, String) {
        Receiver::start_with(None).await
    }

    /// Serves TLS only with `tls` (a collector behind a private CA); the endpoint is
    /// `https://localhost:<port>` so the certificate's name is what the exporter verifies.
    pub async fn start_tls(tls: tonic::transport::ServerTlsConfig) -> (Receiver, String) {
        Receiver::start_with(Some(tls)).await
    }

    async fn start_with(tls: Option<tonic::transport::ServerTlsConfig>) -> (Receiver, String) {
        let receiver = Receiver::default();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("addr");
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        let mut builder = tonic::transport::Server::builder();
        let endpoint = match tls {
            Some(tls) => {
                builder = builder.tls_config(tls).expect("receiver TLS");
                format!("https://localhost:{}", address.port())
            }
            None => format!("http://{address}"),
        };
        let server = builder
            .add_service(TraceServiceServer::new(receiver.clone()))
            .add_service(MetricsServiceServer::new(receiver.clone()))
            .add_service(LogsServiceServer::new(receiver.clone()))
            .serve_with_incoming(incoming);
        tokio::spawn(server);
        (receiver, endpoint)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        let store = self.store.lock().expect("store");
        let mut spans = Vec::new();
        for request in &store.traces {
            for resource_spans in &request.resource_spans {
                let name = service_name(resource_spans.resource.as_ref());
                let resource = resource_spans
                    .resource
                    .as_ref()
                    .map(|resource| resource.attributes.clone())
                    .unwrap_or_default();
                for scope in &resource_spans.scope_spans {
                    for span in &scope.spans {
                        spans.push(ReceivedSpan {
                            service_name: name.clone(),
                            resource: resource.clone(),
                            span: span.clone(),
                        });
                    }
                }
            }
        }
        spans
    }

    /// Every log record received so far.
    pub fn logs(&self) -> Vec<ReceivedLog> {
        let store = self.store.lock().expect("store");
        let mut logs = Vec::new();
        for request in &store.logs {
            for resource_logs in &request.resource_logs {
                let name = service_name(resource_logs.resource.as_ref());
                let resource = resource_logs
                    .resource
                    .as_ref()
                    .map(|resource| resource.attributes.clone())
                    .unwrap_or_default();
                for scope in &resource_logs.scope_logs {
                    for record in &scope.log_records {
                        logs.push(ReceivedLog {
                            service_name: name.clone(),
                            resource: resource.clone(),
                            record: record.clone(),
                        });
                    }
                }
            }
        }
        logs
    }

    /// Every metric received so far (each export of a metric is one entry).
    pub fn metrics(&self) -> Vec<ReceivedMetric> {
        let store = self.store.lock().expect("store");
        let mut metrics = Vec::new();
        for request in &store.metrics {
            for resource_metrics in &request.resource_metrics {
                let name = service_name(resource_metrics.resource.as_ref());
                for scope in &resource_metrics.scope_metrics {
                    for metric in &scope.metrics {
                        metrics.push(ReceivedMetric {
                            service_name: name.clone(),
                            metric: metric.clone(),
                        });
                    }
                }
            }
        }
        metrics
    }
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.store
            .lock()
            .expect("store")
            .traces
            .push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.store
            .lock()
            .expect("store")
            .metrics
            .push(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl LogsService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        self.store
            .lock()
            .expect("store")
            .logs
            .push(request.into_inner());
        Ok(tonic::Response::new(ExportLogsServiceResponse::default()))
    }
}
