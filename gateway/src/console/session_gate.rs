//! The gate in front of every signed-in console page: a request without a live session is sent
//! to sign in; one with a session goes on with its [`Viewer`] in its extensions.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum_htmx::HX_REQUEST;
use chrono::Utc;

use baton_kit::clock::test_instant;
use baton_kit::grpc::OutboundCall;

use crate::console::cookies;
use crate::console::page;
use crate::console::store;
use crate::console::view;
use crate::console::viewer::{Viewer, test_now, to_sign_in};
use crate::state::AppState;

/// Middleware on every console page and fragment but sign-in and assets.
pub async fn require_session(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let partial = request.headers().contains_key(HX_REQUEST);
    let Some(token) = cookies::read(request.headers(), cookies::SESSION_COOKIE) else {
        return to_sign_in(partial);
    };
    let session = match store::find(&state.pool, token).await {
        Ok(Some(session)) => session,
        Ok(None) => return to_sign_in(partial),
        Err(error) => {
            tracing::warn!(error = %error, "console session store unavailable");
            return page::unavailable("the session store");
        }
    };
    let zone = view::zone(cookies::read(request.headers(), cookies::ZONE_COOKIE));
    let test_now = test_now(request.headers(), state.clock.test_mode());
    let now = test_now
        .as_deref()
        .and_then(test_instant)
        .unwrap_or_else(Utc::now);
    let call = OutboundCall {
        tenant_id: session.tenant_id,
        test_now,
    };
    request.extensions_mut().insert(Viewer {
        session,
        zone,
        now,
        call,
    });
    next.run(request).await
}
