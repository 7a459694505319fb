//! In-process transport between co-located services.
//!
//! `baton serve all` (or any `serve` naming several services) runs callers and callees in one
//! process. Their calls need not cross loopback TCP and HTTP/2: the composition root [`offer`]s
//! each gRPC address it bound; [`crate::grpc::serve`] places the server's [`CallStack`] under
//! that address — the very stack its network connections get, service-token check, trace span,
//! deadline, load shedding and concurrency limit included; and a client built for that address
//! ([`crate::grpc::traced`]) hands each request to that stack directly. Messages are still
//! encoded, and metadata (token, tenant, test instant, trace context) still travels as headers;
//! only the socket and the HTTP/2 framing are skipped. Health and reflection probes use bare
//! network channels and never come this way.
//!
//! Until the callee serves (it reaches its database first) and from its stop signal on, the
//! client uses its network channel, so start-up and drain behave as they did on the wire.
//!
//! mTLS: an in-process call carries no TLS, by decision. TLS protects bytes on a wire between
//! processes; here there is no wire, the bytes never leave the process's memory, and a caller
//! still proves itself with the service token as on every hop. A deployment that wants every
//! hop on the wire anyway sets `BATON_GRPC_IN_PROCESS=false`.
//!
//! [`CallStack`]: crate::grpc::CallStack

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::TryFutureExt as _;
use tonic::body::Body;
use tonic::transport::Channel;
use tower::{Layer, Service};

use super::call_service::{BoxError, CallService};
use super::deadline::{Deadline, DeadlineLayer};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The addresses this process serves in process, each with its server's stack once it serves.
static DIRECTORY: Mutex<Vec<(SocketAddr, Arc<Slot>)>> = Mutex::new(Vec::new());

/// Where one offered server's stack goes.
#[derive(Default)]
struct Slot {
    stack: OnceLock<CallService>,
    /// Set at the server's stop signal: from then on callers use the network, as they would
    /// find the server no longer taking calls there.
    closed: AtomicBool,
}

impl Slot {
    fn serving(&self) -> Option<&CallService> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        self.stack.get()
    }
}

/// Marks `address` as served by this process: calls to it from this process may stay in
/// process once the server there serves. Call it after binding and before building clients.
pub fn offer(address: SocketAddr) {
    let mut directory = DIRECTORY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !directory.iter().any(|(offered, _)| *offered == address) {
        directory.push((address, Arc::default()));
    }
}

/// Whether a server serves `address` in process now (offered, serving, not stopped).
pub fn serving(address: SocketAddr) -> bool {
    slot(address).is_some_and(|slot| slot.serving().is_some())
}

fn slot(address: SocketAddr) -> Option<Arc<Slot>> {
    let directory = DIRECTORY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    directory
        .iter()
        .find(|(offered, _)| *offered == address)
        .map(|(_, slot)| slot.clone())
}

/// Puts a server's stack under `address` if that address was offered. In process calls stop
/// when the returned guard drops (at the server's stop signal).
pub(crate) fn provide(address: SocketAddr, stack: CallService) -> Option<Provided> {
    let slot = slot(address)?;
    // A second server on one address cannot happen (the bind would fail); keep the first.
    let _ = slot.stack.set(stack);
    slot.closed.store(false, Ordering::Release);
    Some(Provided(slot))
}

/// Ends in process calls to one server when dropped.
pub(crate) struct Provided(Arc<Slot>);

impl Drop for Provided {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
    }
}

/// The socket address of a configured target (`host:port` or a URI with an IP host), if it
/// names one; host names never match an offered address.
fn socket_address(address: &str) -> Option<SocketAddr> {
    let authority = match address.split_once("://") {
        Some((_, rest)) => rest.split('/').next().unwrap_or(rest),
        None => address,
    };
    authority.parse().ok()
}

/// Where a client's calls go: straight into a co-located server's stack while it serves, else
/// over `network`. A `tower::Service` like the channel it wraps, so tonic clients and
/// [`crate::grpc::ClientTrace`] use it unchanged.
#[derive(Clone)]
pub struct Transport {
    network: Channel,
    target: Option<Arc<Slot>>,
    /// The caller's own per-call timeout on the in-process path (the channel has its own).
    client_deadline: DeadlineLayer,
    /// Set by `poll_ready` when it readied the in-process stack; `call` then uses it.
    in_process: Option<Deadline<CallService>>,
}

impl Transport {
    /// A transport to `address` over `network`, in process when this process offered
    /// `address`. `client_timeout` is the channel's own per-call timeout, kept in process.
    pub fn new(address: &str, network: Channel, client_timeout: Duration) -> Transport {
        Transport {
            network,
            target: socket_address(address).and_then(slot),
            client_deadline: DeadlineLayer::new(client_timeout),
            in_process: None,
        }
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Transport")
            .field("offered_in_process", &self.target.is_some())
            .finish_non_exhaustive()
    }
}

impl Service<http::Request<Body>> for Transport {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Result<http::Response<Body>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        let serving = self.target.as_ref().and_then(|slot| slot.serving());
        let Some(stack) = serving else {
            // Not (or no longer) serving in process: a readied stack gives its permit back.
            self.in_process = None;
            return self.network.poll_ready(cx).map_err(Into::into);
        };
        let deadline = self.client_deadline;
        self.in_process
            .get_or_insert_with(|| deadline.layer(stack.clone()))
            .poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        match &mut self.in_process {
            Some(stack) => stack.call(request),
            None => Box::pin(self.network.call(request).err_into()),
        }
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;
