//! Signing in with a console key and out again.
//!
//! The form exchanges a console key for a session cookie; the key itself is never stored in
//! the browser. Ingest keys are refused (they belong to hooks), as are unknown and revoked keys;
//! failed attempts spend the client's failure bucket exactly as failed API keys do, so the form
//! is no faster a way to guess keys than the API.

use std::net::{IpAddr, SocketAddr};

use askama::Template;
use axum::Extension;
use axum::Form;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::auth::Verification;
use crate::console::cookies;
use crate::console::csrf;
use crate::console::page::{self, Chrome};
use crate::console::store;
use crate::console::viewer::{SIGN_IN, Viewer};
use crate::keys::PresentedKey;
use crate::state::AppState;
use crate::tenants::Scope;

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage {
    chrome: Chrome,
    error: Option<String>,
}

fn sign_in_page(status: StatusCode, error: Option<&str>) -> Response {
    page::render(
        status,
        &SignInPage {
            chrome: Chrome::signed_out("Sign in"),
            error: error.map(str::to_string),
        },
    )
}

/// `GET /console/sign-in`.
pub async fn form() -> Response {
    sign_in_page(StatusCode::OK, None)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignInForm {
    key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignOutForm {
    csrf: Option<String>,
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// The refusal of a write another site's page sent; `None` when it came from the console.
pub fn cross_site_refusal(headers: &HeaderMap) -> Option<Response> {
    csrf::same_origin(
        header_text(headers, "origin"),
        header_text(headers, "host"),
        header_text(headers, "sec-fetch-site"),
    )
    .err()
    .map(|_| {
        page::problem(
            Chrome::signed_out("Refused"),
            StatusCode::FORBIDDEN,
            "Refused",
            "That form was sent from another site. Open the console and try again there.",
        )
    })
}

fn peer(connect: Option<&Extension<ConnectInfo<SocketAddr>>>) -> IpAddr {
    connect.map_or(IpAddr::from([0, 0, 0, 0]), |info| info.0.0.ip())
}

/// Whether the session cookie gets `Secure`: the console was reached over TLS.
fn secure(state: &AppState, headers: &HeaderMap, peer: IpAddr) -> bool {
    let trusted = state
        .trusted_proxies
        .iter()
        .any(|block| block.contains(peer));
    cookies::over_tls(header_text(headers, "x-forwarded-proto"), trusted)
}

fn redirect(to: &'static str, cookie: Option<String>) -> Response {
    let mut response = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_static(to))],
    )
        .into_response();
    if let Some(cookie) = cookie.and_then(|text| HeaderValue::from_str(&text).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// `POST /console/sign-in`.
pub async fn sign_in(
    State(state): State<AppState>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    form: Result<Form<SignInForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    if let Some(refused) = cross_site_refusal(&headers) {
        return refused;
    }
    let Ok(Form(form)) = form else {
        return sign_in_page(StatusCode::BAD_REQUEST, Some("Enter a console key."));
    };
    let Some(key) = PresentedKey::parse(&form.key) else {
        return sign_in_page(
            StatusCode::UNAUTHORIZED,
            Some("That is not a Baton key. Keys look like btn_… and are shown once when minted."),
        );
    };
    let peer = peer(connect.as_ref());
    let client = crate::auth::client_from(peer, &headers, &state.trusted_proxies);
    let verification = match state
        .keys
        .verify(&key, client, &state.failure_limiter)
        .await
    {
        Ok(verification) => verification,
        Err(error) => {
            tracing::warn!(error = %error, "api key store unavailable");
            return page::unavailable("the key store");
        }
    };
    let tenant_id = match verification {
        Verification::Verified(tenant_id, Scope::Console, _) => tenant_id,
        Verification::Verified(_, Scope::Ingest, _) => {
            return sign_in_page(
                StatusCode::UNAUTHORIZED,
                Some(
                    "That is an ingest key: it lets hooks report to Baton and cannot sign in. \
                     Ask an operator for a console key (baton key create --scope console).",
                ),
            );
        }
        Verification::Failed => {
            return sign_in_page(
                StatusCode::UNAUTHORIZED,
                Some("Unknown or revoked key. Check it was copied whole."),
            );
        }
        Verification::Throttled(retry_after) => {
            let mut response = sign_in_page(
                StatusCode::TOO_MANY_REQUESTS,
                Some("Too many failed sign-ins from this address. Wait a minute and try again."),
            );
            if let Ok(value) = HeaderValue::from_str(&retry_after.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            return response;
        }
    };
    let created = match store::create(&state.pool, tenant_id, &key.prefix).await {
        Ok(created) => created,
        Err(error) => {
            tracing::warn!(error = %error, "console session store unavailable");
            return page::unavailable("the session store");
        }
    };
    tracing::info!(tenant_id = %tenant_id, "console sign-in");
    let cookie = cookies::session(
        &created.token,
        store::SESSION_TTL.as_secs(),
        secure(&state, &headers, peer),
    );
    redirect("/console/fleet", Some(cookie))
}

/// `POST /console/sign-out`: revokes the session and clears the cookie.
pub async fn sign_out(
    State(state): State<AppState>,
    viewer: Viewer,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    form: Result<Form<SignOutForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    if let Some(refused) = cross_site_refusal(&headers) {
        return refused;
    }
    let presented = form.ok().and_then(|Form(form)| form.csrf);
    if csrf::token_matches(presented.as_deref(), &viewer.session.csrf_token).is_err() {
        return page::problem(
            Chrome::new(&viewer, "", "Refused"),
            StatusCode::FORBIDDEN,
            "Refused",
            "That form is out of date. Reload the page and try again.",
        );
    }
    if let Err(error) = store::revoke(&state.pool, &viewer.session.token_sha256).await {
        tracing::warn!(error = %error, "console session store unavailable");
        return page::unavailable("the session store");
    }
    let cookie = cookies::cleared(secure(&state, &headers, peer(connect.as_ref())));
    redirect(SIGN_IN, Some(cookie))
}
