//! The in-process transport against the network one: the same server, the same client, the
//! same answers (token refusals, metadata, deadlines, trace parentage), minus the socket.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::Duration;

use http::uri::PathAndQuery;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tonic::body::Body;
use tonic::server::{NamedService, UnaryService};
use tonic::{Code, Request, Response, Status};
use tower::Service;
use tracing_subscriber::layer::SubscriberExt as _;
use uuid::Uuid;

use super::{BoxFuture, offer, serving};
use crate::clock::{Clock, iso};
use crate::config::Secret;
use crate::grpc::{
    CallContext, Outbound, OutboundCall, ServerSettings, TracedChannel, serve, traced_channel,
};
use crate::shutdown::{self, ShutdownTrigger};
use crate::telemetry::Component;

const TOKEN: &str = "the-right-token-123";
const SLEEP_KEY: &str = "x-probe-sleep-ms";
const PATH: &str = "/baton.test.v1.Probe/See";

/// What the handler saw of a call.
#[derive(Clone, PartialEq, prost::Message)]
struct Seen {
    #[prost(string, tag = "1")]
    tenant: String,
    #[prost(string, tag = "2")]
    now: String,
    /// Whether the call came over a socket (tonic records the peer only for those).
    #[prost(bool, tag = "3")]
    over_network: bool,
}

/// A one-method gRPC service answering what it saw; it sleeps first when asked to.
#[derive(Clone)]
struct Probe;

impl NamedService for Probe {
    const NAME: &'static str = "baton.test.v1.Probe";
}

impl Service<http::Request<Body>> for Probe {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<Seen, ()>::default());
            Ok(grpc.unary(See, request).await)
        })
    }
}

struct See;

impl UnaryService<()> for See {
    type Response = Seen;
    type Future = BoxFuture<Result<Response<Seen>, Status>>;

    fn call(&mut self, request: Request<()>) -> Self::Future {
        let sleep = request
            .metadata()
            .get(SLEEP_KEY)
            .and_then(|value| value.to_str().ok()?.parse().ok())
            .map(Duration::from_millis);
        let seen = CallContext::from_request(&request, &Clock::new(true)).map(|context| Seen {
            tenant: context.tenant_id.to_string(),
            now: iso(context.now),
            over_network: request.remote_addr().is_some(),
        });
        Box::pin(async move {
            if let Some(sleep) = sleep {
                tokio::time::sleep(sleep).await;
            }
            seen.map(Response::new)
        })
    }
}

/// A probe server on a free port, offered in process or not; returns its address and its stop.
async fn start(in_process: bool) -> (SocketAddr, ShutdownTrigger, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    if in_process {
        offer(address);
    }
    let mut settings = ServerSettings::new(Component::Registry, Secret::new(TOKEN.to_string()));
    settings.request_timeout = Duration::from_millis(300);
    let (trigger, stop) = shutdown::channel();
    let served = tokio::spawn(async move {
        serve(listener, settings, Probe, stop.wait())
            .await
            .expect("serve");
    });
    if in_process {
        tokio::time::timeout(Duration::from_secs(5), async {
            while !serving(address) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the server takes in-process calls");
    }
    (address, trigger, served)
}

fn client(address: SocketAddr) -> TracedChannel {
    traced_channel(Component::Gateway, &address.to_string()).expect("channel")
}

async fn see(channel: TracedChannel, request: Request<()>) -> Result<Seen, Status> {
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|error| Status::unavailable(error.to_string()))?;
    grpc.unary(
        request,
        PathAndQuery::from_static(PATH),
        tonic_prost::ProstCodec::<(), Seen>::default(),
    )
    .await
    .map(Response::into_inner)
}

fn outbound_call(tenant: Uuid, test_now: &str) -> OutboundCall {
    OutboundCall {
        tenant_id: tenant,
        test_now: Some(test_now.to_string()),
    }
}

#[tokio::test]
async fn the_service_token_is_checked_in_process_exactly_as_over_the_network() {
    let (local, _stop_local, _) = start(true).await;
    let (remote, _stop_remote, _) = start(false).await;
    let tenant = Uuid::new_v4();
    let test_now = "2031-05-06T07:08:09.000Z";
    for (address, over_network) in [(local, false), (remote, true)] {
        let right = Outbound::new(Secret::new(TOKEN.to_string()));
        let wrong = Outbound::new(Secret::new("a-wrong-token-4567".to_string()));
        let mut without = right.request(&outbound_call(tenant, test_now), ());
        without.metadata_mut().remove("authorization");

        let refused = see(client(address), without).await.expect_err("no token");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
        assert_eq!(
            refused.message(),
            "missing or invalid service token or client credential"
        );
        let refused = see(
            client(address),
            wrong.request(&outbound_call(tenant, test_now), ()),
        )
        .await
        .expect_err("wrong token");
        assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");

        let seen = see(
            client(address),
            right.request(&outbound_call(tenant, test_now), ()),
        )
        .await
        .expect("a valid token reaches the handler");
        assert_eq!(
            seen,
            Seen {
                tenant: tenant.to_string(),
                now: test_now.to_string(),
                over_network,
            },
            "tenant and test instant reach the handler's CallContext"
        );
    }
}

#[tokio::test]
async fn a_call_past_the_servers_deadline_is_cancelled_in_process_as_over_the_network() {
    let (local, _stop_local, _) = start(true).await;
    let (remote, _stop_remote, _) = start(false).await;
    let outbound = Outbound::new(Secret::new(TOKEN.to_string()));
    for address in [local, remote] {
        let mut request =
            outbound.request(&outbound_call(Uuid::new_v4(), "2031-05-06T07:08:09Z"), ());
        request
            .metadata_mut()
            .insert(SLEEP_KEY, "5000".parse().expect("value"));
        let started = std::time::Instant::now();
        let cancelled = see(client(address), request).await.expect_err("too slow");
        assert_eq!(
            cancelled.code(),
            Code::Cancelled,
            "{address}: {cancelled:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(3), "{address}");
    }
}

#[tokio::test]
async fn a_stopped_server_takes_no_more_in_process_calls() {
    let (local, stop, served) = start(true).await;
    let outbound = Outbound::new(Secret::new(TOKEN.to_string()));
    let request = || outbound.request(&outbound_call(Uuid::new_v4(), "2031-05-06T07:08:09Z"), ());
    let seen = see(client(local), request()).await.expect("served");
    assert!(!seen.over_network, "in process while serving");

    stop.trigger();
    served.await.expect("stopped");
    assert!(!serving(local));
    let refused = see(client(local), request()).await.expect_err("stopped");
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
}

#[tokio::test]
async fn the_callees_server_span_is_a_child_of_the_callers_client_span_in_process() {
    let (local, _stop, _) = start(true).await;
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let outbound = Outbound::new(Secret::new(TOKEN.to_string()));
    {
        let _default = tracing::subscriber::set_default(subscriber);
        let request = outbound.request(&outbound_call(Uuid::new_v4(), "2031-05-06T07:08:09Z"), ());
        let seen = see(client(local), request).await.expect("served");
        assert!(!seen.over_network);
    }
    let _ = provider.force_flush();
    let spans = exporter.get_finished_spans().expect("spans");
    let of_kind = |kind: SpanKind| {
        spans
            .iter()
            .find(|span| span.span_kind == kind && span.name == "baton.test.v1.Probe/See")
            .unwrap_or_else(|| panic!("a {kind:?} span among {spans:#?}"))
    };
    let (client_span, server_span) = (of_kind(SpanKind::Client), of_kind(SpanKind::Server));
    assert_eq!(
        server_span.span_context.trace_id(),
        client_span.span_context.trace_id()
    );
    assert_eq!(
        server_span.parent_span_id,
        client_span.span_context.span_id(),
        "traceparent travelled in process"
    );
}
