//! Who is looking: the signed-in session (tenant, CSRF token), the viewer's zone, and the
//! instant reads are made at — extracted once per request for every console handler.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum_htmx::{HX_REQUEST, HxRedirect};
use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use baton_kit::clock::test_instant;
use baton_kit::grpc::OutboundCall;

use crate::console::cookies;
use crate::console::store::ConsoleSession;
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
pub(super) fn to_sign_in(partial: bool) -> Response {
    if partial {
        return (
            StatusCode::UNAUTHORIZED,
            HxRedirect(SIGN_IN.to_string()),
            "signed out",
        )
            .into_response();
    }
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_static(SIGN_IN))],
    )
        .into_response()
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Viewer, Response> {
        parts
            .extensions
            .get::<Viewer>()
            .cloned()
            .ok_or_else(|| to_sign_in(parts.headers.contains_key(HX_REQUEST)))
    }
}
