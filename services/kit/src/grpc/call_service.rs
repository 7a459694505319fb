//! What the call stack hands around: a server's routes inside the stack, boxed, and the error
//! of a call that never became a response.

use tonic::body::Body;
use tower::util::BoxCloneSyncService;

/// What a failed call (one that never became a response) carries.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A server's routes inside its whole [`CallStack`](crate::grpc::CallStack), boxed: what each
/// network connection and each in-process caller calls.
pub type CallService = BoxCloneSyncService<http::Request<Body>, http::Response<Body>, BoxError>;
