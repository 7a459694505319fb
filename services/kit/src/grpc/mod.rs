//! gRPC plumbing every service and client shares.
//!
//! Inbound: [`serve`] wraps a service's routes in one tower stack ([`CallStack`]: per-request
//! timeout, load shedding, trace, service token, global concurrency limit) and registers health
//! and reflection. Handlers read the caller's tenant and "now" with [`CallContext::from_request`].
//!
//! Outbound: [`Outbound::request`] stamps every call with the service token, the tenant, the
//! test instant (when the test clock is on) and the current W3C trace context; [`traced`]
//! wraps a [`channel`] so that each call is a CLIENT span, and goes in process to a co-located
//! server ([`local`]). Spans and metrics of both directions live in [`trace`].

pub mod call_service;
pub mod channels;
pub mod deadline;
pub mod local;
pub mod metadata;
pub mod run_events;
pub mod server;
pub mod session_read;
pub mod settings;
pub mod stack;
pub mod token;
pub mod trace;

pub use channels::{channel, channel_with_tls, traced_channel, traced_channel_with_tls};
pub use local::Transport;
pub use metadata::{CallContext, Outbound, OutboundCall, TENANT_KEY, call_instant};
pub use server::serve;
pub use settings::{CLIENT_TIMEOUT, ServerSettings};
pub use stack::CallStack;
pub use token::{ServiceTokenLayer, ServiceTokenService};
pub use trace::{ClientTrace, TraceLayer, TracedChannel, traced};
