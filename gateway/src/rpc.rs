//! `rpc!`: one unary call from a handler to a service behind the gateway.

/// Calls `method` on a clone of `state`'s `client` with `message` sent for `call` (its tenant,
/// test instant and the service token), and answers the reply's message or the call's
/// [`tonic::Status`], which `?` turns into a [`crate::response::HttpError`].
///
/// `rpc!(state.usage.list_budgets(&call, request))` stands for
/// `state.usage.clone().list_budgets(state.outbound.request(&call, request)).await` with the
/// reply's message taken out.
macro_rules! rpc {
    ($state:ident . $client:ident . $method:ident ($call:expr, $message:expr $(,)?)) => {
        $state
            .$client
            .clone()
            .$method($state.outbound.request($call, $message))
            .await
            .map(::tonic::Response::into_inner)
    };
}

pub(crate) use rpc;
