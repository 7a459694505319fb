//! What every console page shares: the frame (navigation, zone, sign-out), rendering a
//! template into a response, and the pages that say what failed.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use tonic::Status;

use baton_kit::error::ErrorCode;

use crate::console::viewer::Viewer;

/// The frame around a page's content.
#[derive(Debug, Clone)]
pub struct Chrome {
    /// Which navigation entry is this page (`fleet`, `sessions`, `usage`, or empty).
    pub active: &'static str,
    pub title: String,
    /// The session's CSRF token for the sign-out form; empty when signed out.
    pub csrf: String,
    /// The viewer's zone, as the page names it.
    pub zone: String,
    pub signed_in: bool,
}

impl Chrome {
    pub fn new(viewer: &Viewer, active: &'static str, title: impl Into<String>) -> Chrome {
        Chrome {
            active,
            title: title.into(),
            csrf: viewer.session.csrf_token.clone(),
            zone: viewer.zone.name().to_string(),
            signed_in: true,
        }
    }

    pub fn signed_out(title: impl Into<String>) -> Chrome {
        Chrome {
            active: "",
            title: title.into(),
            csrf: String::new(),
            zone: String::new(),
            signed_in: false,
        }
    }
}

/// One option of a `<select>`, chosen or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub value: &'static str,
    pub selected: bool,
}

/// The options for `values`, with `current` chosen.
pub fn choices(values: &[&'static str], current: &str) -> Vec<Choice> {
    values
        .iter()
        .map(|value| Choice {
            value,
            selected: *value == current,
        })
        .collect()
}

/// A rendered template with a status.
pub fn render(status: StatusCode, template: &impl Template) -> Response {
    match template.render() {
        Ok(body) => (status, Html(body)).into_response(),
        Err(error) => {
            tracing::error!(error = %error, "console template failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the console failed to render this page",
            )
                .into_response()
        }
    }
}

#[derive(Template)]
#[template(path = "console/problem.html")]
pub struct Problem {
    pub chrome: Chrome,
    pub heading: String,
    pub detail: String,
}

/// A page saying what failed, with the status the failure deserves.
pub fn problem(
    chrome: Chrome,
    status: StatusCode,
    heading: impl Into<String>,
    detail: impl Into<String>,
) -> Response {
    render(
        status,
        &Problem {
            chrome,
            heading: heading.into(),
            detail: detail.into(),
        },
    )
}

/// A dependency the page needs is down: 503 with its name.
pub fn unavailable(what: &str) -> Response {
    problem(
        Chrome::signed_out("Unavailable"),
        StatusCode::SERVICE_UNAVAILABLE,
        "Temporarily unavailable",
        format!("Baton could not reach {what}. Reload the page in a moment."),
    )
}

/// A failed call to a service, as a page: not found stays not found (another tenant's ids
/// read exactly like ids that never existed), bad input is 400, the rest says which service.
pub fn from_status(viewer: &Viewer, service: &str, status: &Status) -> Response {
    let chrome = Chrome::new(viewer, "", "Error");
    match ErrorCode::from_status(status) {
        ErrorCode::NotFound => not_found(viewer),
        ErrorCode::InvalidInput | ErrorCode::InvalidRequest => problem(
            chrome,
            StatusCode::BAD_REQUEST,
            "That request is not valid",
            status.message().to_string(),
        ),
        code => {
            tracing::warn!(service, code = ?code, "console read failed");
            problem(
                chrome,
                StatusCode::SERVICE_UNAVAILABLE,
                "Temporarily unavailable",
                format!("The {service} service did not answer. Reload the page in a moment."),
            )
        }
    }
}

/// 404 in the frame.
pub fn not_found(viewer: &Viewer) -> Response {
    problem(
        Chrome::new(viewer, "", "Not found"),
        StatusCode::NOT_FOUND,
        "Not found",
        "Nothing with that id exists in your tenant.",
    )
}
