//! Cross-site request forgery defences on the console's writes (sign-in, sign-out, undo).
//!
//! Three layers, each enough on its own in a current browser: the session cookie is
//! `SameSite=Strict` (a cross-site form post carries no session); the request's `Origin` (or,
//! failing that, `Sec-Fetch-Site`) must say the page that sent it is the console's own; and a
//! write made with a session must carry that session's CSRF token, compared in constant time.

use subtle::ConstantTimeEq;

/// Why a write was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The browser says another site sent it.
    CrossSite,
    /// The form's token is missing or not this session's.
    BadToken,
}

/// Whether the request came from a page of this same origin. `host` is the request's `Host`;
/// `origin` its `Origin` header; `fetch_site` its `Sec-Fetch-Site`. A request with neither
/// header (an old browser, a script) passes this check and relies on the token.
pub fn same_origin(
    origin: Option<&str>,
    host: Option<&str>,
    fetch_site: Option<&str>,
) -> Result<(), Refusal> {
    if let Some(origin) = origin {
        // `Origin: null` (sandboxed frames, some redirects) is never ours.
        let authority = origin
            .strip_prefix("https://")
            .or_else(|| origin.strip_prefix("http://"));
        return match (authority, host) {
            (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host) => Ok(()),
            _ => Err(Refusal::CrossSite),
        };
    }
    match fetch_site {
        None | Some("same-origin") | Some("none") => Ok(()),
        Some(_) => Err(Refusal::CrossSite),
    }
}

/// Whether the form's token is the session's (constant time).
pub fn token_matches(presented: Option<&str>, expected: &str) -> Result<(), Refusal> {
    match presented {
        Some(presented) if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) => Ok(()),
        _ => Err(Refusal::BadToken),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_origin_may_post() {
        let host = Some("console.example:8080");
        // (Origin, Sec-Fetch-Site, accepted)
        let table = [
            (Some("http://console.example:8080"), None, true),
            (
                Some("https://CONSOLE.example:8080"),
                Some("same-origin"),
                true,
            ),
            (Some("https://evil.example"), Some("cross-site"), false),
            (Some("http://console.example:8081"), None, false),
            (Some("null"), None, false),
            (None, Some("same-origin"), true),
            (None, Some("none"), true),
            (None, Some("same-site"), false),
            (None, Some("cross-site"), false),
            (None, None, true),
        ];
        for (origin, site, accepted) in table {
            assert_eq!(
                same_origin(origin, host, site).is_ok(),
                accepted,
                "{origin:?} {site:?}"
            );
        }
        assert_eq!(
            same_origin(Some("http://a"), None, None),
            Err(Refusal::CrossSite),
            "no Host to compare with"
        );
    }

    #[test]
    fn the_token_must_be_the_sessions() {
        assert!(token_matches(Some("abc"), "abc").is_ok());
        assert_eq!(token_matches(Some("abd"), "abc"), Err(Refusal::BadToken));
        assert_eq!(token_matches(Some(""), "abc"), Err(Refusal::BadToken));
        assert_eq!(token_matches(None, "abc"), Err(Refusal::BadToken));
    }
}
