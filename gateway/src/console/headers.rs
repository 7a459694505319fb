//! Headers on every console response: a strict Content Security Policy (scripts and styles
//! from this origin only, no inline script or style, no eval, no framing), no sniffing, no
//! referrer to other sites, and no caching of pages (they hold a tenant's data).
//!
//! The referrer policy is `same-origin`, not `no-referrer`: under `no-referrer` a browser sends
//! `Origin: null` even on the console's own form posts, and the origin check on writes
//! ([`crate::console::csrf`]) could not tell them from another site's.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The policy. `img-src data:` is for Chart.js's canvas exports; nothing else loads from
/// anywhere but this origin.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The fixed headers, name and value.
pub fn fixed() -> [(HeaderName, &'static str); 6] {
    [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
        (
            HeaderName::from_static("permissions-policy"),
            "camera=(), microphone=(), geolocation=()",
        ),
    ]
}

/// Middleware: the fixed headers, and `Cache-Control: no-store` unless the handler chose one
/// (assets do).
pub async fn secure(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in fixed() {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_no_inline_script_style_or_eval() {
        for forbidden in ["'unsafe-inline'", "'unsafe-eval'", "*", "http:", "https:"] {
            assert!(
                !CONTENT_SECURITY_POLICY.contains(forbidden),
                "{forbidden} in the policy"
            );
        }
        for required in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ] {
            assert!(CONTENT_SECURITY_POLICY.contains(required), "{required}");
        }
    }
}
