//! Serving a service's routes: health and reflection added, every call through the
//! [`CallStack`], offered in process to co-located callers.

use std::convert::Infallible;
use std::future::Future;

use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tower::{Layer, Service};

use super::local;
use super::settings::ServerSettings;
use super::stack::CallStack;

/// Serves `routes` on `listener` until `shutdown` resolves, with health and reflection added.
/// `service_name` is the fully-qualified gRPC name reported SERVING to health checks.
pub async fn serve<S>(
    listener: TcpListener,
    settings: ServerSettings,
    service: S,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    let initial = if settings.readiness.is_ready() {
        tonic_health::ServingStatus::Serving
    } else {
        tonic_health::ServingStatus::NotServing
    };
    for name in [S::NAME, ""] {
        health_reporter.set_service_status(name, initial).await;
    }
    if !settings.readiness.is_ready() {
        let reporter = health_reporter.clone();
        let readiness = settings.readiness.clone();
        tokio::spawn(async move {
            readiness.wait().await;
            for name in [S::NAME, ""] {
                reporter
                    .set_service_status(name, tonic_health::ServingStatus::Serving)
                    .await;
            }
        });
    }
    // Reflection lists only what this port serves (the descriptor set holds every context).
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(baton_proto::FILE_DESCRIPTOR_SET)
        .with_service_name(S::NAME)
        .build_v1()
        .map_err(|error| {
            tracing::error!(error = %error, "reflection descriptor set invalid");
        })
        .ok();
    let mut routes = Routes::new(service).add_service(health_service);
    if let Some(reflection) = reflection {
        routes = routes.add_service(reflection);
    }
    // Timeout, load shedding, trace, service token, concurrency limit: see `CallStack`.
    let stack = CallStack::new(&settings);
    // A co-located caller gets the same stack without the wire, when the process offered this
    // address (`local`); it stops at the stop signal, as the listener does.
    let in_process = listener
        .local_addr()
        .ok()
        .and_then(|address| local::provide(address, stack.layer(routes.clone().prepare())));
    let shutdown = async move {
        shutdown.await;
        drop(in_process);
    };
    let mut builder = Server::builder();
    if let Some(tls) = &settings.tls {
        builder = builder.tls_config(tls.server())?;
    }
    builder
        .layer(stack)
        .add_routes(routes)
        // Nagle off: replies are small and latency-bound.
        .serve_with_incoming_shutdown(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            shutdown,
        )
        .await
}
