//! The console's cookies: the session cookie (HttpOnly, SameSite=Strict, Secure over TLS), and
//! reading cookies off a request.

use axum::http::HeaderMap;
use cookie::time::Duration;
use cookie::{Cookie, SameSite};

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "baton_console";
/// The viewer's IANA zone, set by the console's script from the browser (not a secret).
pub const ZONE_COOKIE: &str = "baton_tz";
/// With the test clock on only: the instant the console's reads are made at.
pub const TEST_NOW_COOKIE: &str = "baton_test_now";
/// Everything the console serves lives under this path, and so do its cookies.
pub const PATH: &str = "/console";

/// The value of cookie `name` in the request's `Cookie` headers, if any (parsed by the
/// `cookie` crate: a pair it cannot parse is skipped, never taken for another).
pub fn read<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|cookie| cookie.name() == name)
        .and_then(|cookie| cookie.value_raw())
}

/// `Set-Cookie` for a new session: `max_age` seconds, HttpOnly, SameSite=Strict, and Secure
/// when the console is served over TLS.
pub fn session(token: &str, max_age: u64, secure: bool) -> String {
    Cookie::build((SESSION_COOKIE, token))
        .path(PATH)
        .max_age(Duration::seconds(
            i64::try_from(max_age).unwrap_or(i64::MAX),
        ))
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(secure)
        .build()
        .to_string()
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
        let plain = Cookie::parse(session("t", 60, false)).expect("a cookie");
        assert_eq!((plain.name(), plain.value()), (SESSION_COOKIE, "t"));
        assert_eq!(plain.path(), Some(PATH));
        assert_eq!(plain.max_age(), Some(Duration::seconds(60)));
        assert_eq!(plain.http_only(), Some(true));
        assert_eq!(plain.same_site(), Some(SameSite::Strict));
        assert_eq!(plain.secure(), None);
        let secure = Cookie::parse(session("t", 60, true)).expect("a cookie");
        assert_eq!(secure.secure(), Some(true));
        let cleared = Cookie::parse(cleared(false)).expect("a cookie");
        assert_eq!(
            (cleared.value(), cleared.max_age()),
            ("", Some(Duration::ZERO))
        );
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
