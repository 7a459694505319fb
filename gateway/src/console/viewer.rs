//! Who is looking: the signed-in session (tenant, CSRF token), the viewer's zone, and the
//! instant reads are made at — extracted once per request for every console handler.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use baton_kit::clock::test_instant;
use baton_kit::grpc::OutboundCall;

use crate::console::cookies;
use crate::console::store::{self, ConsoleSession};
use crate::state::AppState;

/// The signed-in viewer of a console request.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub session: ConsoleSession,
    pub zone: Tz,
    /// The instant of this request's reads (the test clock's, when on and given).
    pub now: DateTime<Utc>,
    pub call: OutboundCall,
}

/// Where a viewer without a session is sent.
pub const SIGN_IN: &str = "/console/sign-in";

/// The test instant a console request carries in its cookie, when the test clock is on.
pub fn test_now(parts_headers: &axum::http::HeaderMap, test_mode: bool) -> Option<String> {
    if !test_mode {
        return None;
    }
    cookies::read(parts_headers, cookies::TEST_NOW_COOKIE)
        .map(|text| text.replace("%3A", ":").replace("%3a", ":"))
        .filter(|text| test_instant(text).is_some())
}

/// The answer to a request without a live session: a page load is sent to sign in; a partial
/// update (htmx) is told to send the whole page there.
fn to_sign_in(partial: bool) -> Response {
    if partial {
        let mut response = (StatusCode::UNAUTHORIZED, "signed out").into_response();
        response
            .headers_mut()
            .insert("hx-redirect", HeaderValue::from_static(SIGN_IN));
        return response;
    }
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_static(SIGN_IN))],
    )
        .into_response()
}

/// Middleware on every console page and fragment but sign-in and assets.
pub async fn require_session(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let partial = request.headers().contains_key("hx-request");
    let Some(token) = cookies::read(request.headers(), cookies::SESSION_COOKIE) else {
        return to_sign_in(partial);
    };
    let session = match store::find(&state.pool, token).await {
        Ok(Some(session)) => session,
        Ok(None) => return to_sign_in(partial),
        Err(error) => {
            tracing::warn!(error = %error, "console session store unavailable");
            return crate::console::page::unavailable("the session store");
        }
    };
    let zone = crate::console::view::zone(cookies::read(request.headers(), cookies::ZONE_COOKIE));
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

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Viewer, Response> {
        parts
            .extensions
            .get::<Viewer>()
            .cloned()
            .ok_or_else(|| to_sign_in(parts.headers.contains_key("hx-request")))
    }
}
