//! The web console under `/console` (issue 11): a tenant's fleet live, its sessions, each
//! session's episodes, agents, cost and closer passes with Undo, and usage over time.
//!
//! Server-rendered HTML (askama templates, auto-escaped) with htmx for the fleet's live list
//! and Chart.js for the usage charts, both vendored and embedded in the binary. Every page reads
//! the services over gRPC exactly as the API does, with the tenant of the signed-in console
//! session, so another tenant's ids read as not found.
//!
//! Sign-in exchanges a console key for a session cookie; ingest keys cannot sign in, and the
//! cookie opens nothing under `/api/v1` (which takes only `X-API-Key`, and refuses console keys).

pub mod assets;
pub mod colours;
pub mod cookies;
pub mod csrf;
pub mod filters;
pub mod headers;
pub mod page;
pub mod pages;
pub mod section;
pub mod session_gate;
pub mod session_merge;
pub mod sign_in;
pub mod store;
pub mod tree;
pub mod view;
pub mod viewer;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::console::page::Chrome;
use crate::state::AppState;

async fn home() -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_static("/console/fleet"))],
    )
        .into_response()
}

async fn missing() -> Response {
    page::problem(
        Chrome::signed_out("Not found"),
        StatusCode::NOT_FOUND,
        "Not found",
        "The console has no page at this address.",
    )
}

/// The routes under `/console`.
pub fn router(state: AppState) -> Router<AppState> {
    let signed_in = Router::new()
        .route("/fleet", get(pages::fleet::page))
        .route("/fleet/live", get(pages::fleet::fragment))
        .route("/sessions", get(pages::sessions::page))
        .route("/sessions/export", get(pages::sessions::export))
        .route("/sessions/{run_id}", get(pages::session::page))
        .route("/sessions/{run_id}/undo", post(pages::undo::undo))
        .route(
            "/transcripts/{agent}/{session_id}",
            get(pages::transcript_session::page),
        )
        .route("/keys", get(pages::keys::page))
        .route("/alerts", get(pages::alerts::page))
        .route("/usage", get(pages::usage::page))
        .route("/usage/export", get(pages::usage::export))
        .route("/sign-out", post(sign_in::sign_out))
        .route_layer(from_fn_with_state(state, session_gate::require_session));
    Router::new()
        .route("/", get(home))
        .route("/sign-in", get(sign_in::form).post(sign_in::sign_in))
        .route("/assets/{name}", get(assets::serve))
        .merge(signed_in)
        .fallback(missing)
        .layer(from_fn(headers::secure))
}
