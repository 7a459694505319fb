//! The console's cookies: the session cookie (HttpOnly, SameSite=Strict, Secure over TLS), and
//! reading cookies off a request.

use axum::http::HeaderMap;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "baton_console";
/// The viewer's IANA zone, set by the console's script from the browser (not a secret).
pub const ZONE_COOKIE: &str = "baton_tz";
/// With the test clock on only: the instant the console's reads are made at.
pub const TEST_NOW_COOKIE: &str = "baton_test_now";
/// Everything the console serves lives under this path, and so do its cookies.
pub const PATH: &str = "/console";

/// The value of cookie `name` in the request's `Cookie` headers, if any.
pub fn read<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|line| line.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// `Set-Cookie` for a new session: `max_age` seconds, HttpOnly, SameSite=Strict, and Secure
/// when the console is served over TLS.
pub fn session(token: &str, max_age: u64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{SESSION_COOKIE}={token}; Path={PATH}; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"
    )
}

/// `Set-Cookie` that removes the session cookie.
pub fn cleared(secure: bool) -> String {
    session("", 0, secure)
}

/// Whether the browser reached the console over TLS: the connection itself is plain HTTP
/// behind an ingress, so only a trusted proxy's `X-Forwarded-Proto` says so.
pub fn over_tls(forwarded_proto: Option<&str>, from_trusted_proxy: bool) -> bool {
    from_trusted_proxy
        && forwarded_proto
            .and_then(|value| value.split(',').next())
            .is_some_and(|first| first.trim().eq_ignore_ascii_case("https"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn cookies_are_read_by_exact_name_across_headers() {
        let mut headers = HeaderMap::new();
        headers.append(
            "cookie",
            HeaderValue::from_static("a=1; baton_console_x=no"),
        );
        headers.append(
            "cookie",
            HeaderValue::from_static("baton_tz=Europe%2FBerlin;baton_console=tok"),
        );
        assert_eq!(read(&headers, SESSION_COOKIE), Some("tok"));
        assert_eq!(read(&headers, ZONE_COOKIE), Some("Europe%2FBerlin"));
        assert_eq!(read(&headers, "missing"), None);
    }

    #[test]
    fn the_session_cookie_is_http_only_strict_and_secure_over_tls() {
        let plain = session("t", 60, false);
        assert_eq!(
            plain,
            "baton_console=t; Path=/console; Max-Age=60; HttpOnly; SameSite=Strict"
        );
        assert!(session("t", 60, true).ends_with("; SameSite=Strict; Secure"));
        assert!(cleared(false).contains("Max-Age=0"));
    }

    #[test]
    fn only_a_trusted_proxy_says_https() {
        // (X-Forwarded-Proto, from a trusted proxy, over TLS)
        let table = [
            (Some("https"), true, true),
            (Some("HTTPS, http"), true, true),
            (Some("http"), true, false),
            (Some("https"), false, false),
            (None, true, false),
        ];
        for (proto, trusted, expected) in table {
            assert_eq!(over_tls(proto, trusted), expected, "{proto:?} {trusted}");
        }
    }
}
