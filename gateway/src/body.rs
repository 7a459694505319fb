//! Reading a request body within the router's limits.
//!
//! A body is read whole, at most `limit` bytes, within `timeout` for all of it. Past the limit
//! the answer is 413 `payload_too_large` and the connection closes, but not at once: a
//! connection closed while the client is still sending is reset by the kernel, and a reset
//! that reaches the client before it reads the answer throws the answer away (the client then
//! sees "connection reset", not the 413). So the rest of an oversized body is read and
//! discarded first — a lingering close, as web servers do — at most `limit` bytes more (never
//! less than 1 MiB) and only within the same deadline. Two oversized bodies are refused at
//! once, unread: one whose client waits for `100 Continue` before sending it (`Expect:
//! 100-continue`, as curl does for large bodies: it then sends nothing), and one declared
//! larger than any drain would read (no drain could save its answer).

use axum::body::{Body, Bytes, HttpBody as _};
use axum::extract::Request;
use http::HeaderMap;
use http_body_util::BodyExt;

use baton_kit::error::ErrorCode;

use crate::response::HttpError;

/// Largest body accepted when no limit is configured on the router state.
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

/// Longest a body may take to arrive when no limit is configured.
pub const DEFAULT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The body limits the router was built with, stored as a request extension: most bytes, and
/// most time for the whole body to arrive (a client dripping its body is cut off).
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit {
    pub bytes: usize,
    pub timeout: std::time::Duration,
}

impl BodyLimit {
    /// The limits the router stored on `request` (the defaults when it stored none).
    pub fn of<B>(request: &Request<B>) -> BodyLimit {
        request
            .extensions()
            .get::<BodyLimit>()
            .copied()
            .unwrap_or(BodyLimit {
                bytes: DEFAULT_BODY_LIMIT,
                timeout: DEFAULT_BODY_TIMEOUT,
            })
    }
}

/// Fewest bytes of an oversized body read and discarded before the connection closes.
const MIN_DRAIN: u64 = 1 << 20;

/// How a read of a body within a limit ended, short of the whole body.
enum Cut {
    /// More than the limit arrived; the rest of the body is still unread.
    TooLarge(Body),
    /// The body broke off (the client went away or sent less than it declared).
    Broken,
}

/// What to do with a body before reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// Read it, refusing it once more than the limit arrived.
    Read,
    /// Declared over the limit: read and discard it all, then refuse it.
    DrainThenRefuse,
    /// Declared over the limit and not worth reading: refuse it unread.
    RefuseAtOnce,
}

/// The plan for a body of `declared` length (when it states one) under `limit` (pure).
fn plan(declared: Option<u64>, expects_continue: bool, limit: usize) -> Plan {
    match declared {
        Some(length) if length > limit as u64 => {
            if !expects_continue && worth_draining(declared, limit, drain_allowance(limit)) {
                Plan::DrainThenRefuse
            } else {
                Plan::RefuseAtOnce
            }
        }
        _ => Plan::Read,
    }
}

/// Whether the client waits for `100 Continue` before it sends the body (pure).
fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(http::header::EXPECT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim().eq_ignore_ascii_case("100-continue"))
}

/// The request's whole body within `limit`: 413 beyond its bytes, 408 beyond its time, both
/// closing.
pub async fn read_within(request: Request<Body>, limit: BodyLimit) -> Result<Bytes, HttpError> {
    let deadline = tokio::time::Instant::now() + limit.timeout;
    let waits = expects_continue(request.headers());
    let body = request.into_body();
    let declared = body.size_hint().exact();
    match plan(declared, waits, limit.bytes) {
        Plan::RefuseAtOnce => return Err(too_large().closing()),
        Plan::DrainThenRefuse => {
            let whole = declared.unwrap_or(0);
            let _ = tokio::time::timeout_at(deadline, drain(body, whole)).await;
            return Err(too_large().closing());
        }
        Plan::Read => {}
    }
    let read = tokio::time::timeout_at(deadline, collect(body, limit.bytes)).await;
    match read {
        Err(_) => Err(too_slow()),
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(Cut::Broken)) => Err(HttpError::new(
            ErrorCode::InvalidRequest,
            "the request body ended before it was complete",
        )
        .closing()),
        Ok(Err(Cut::TooLarge(rest))) => {
            let _ =
                tokio::time::timeout_at(deadline, drain(rest, drain_allowance(limit.bytes))).await;
            Err(too_large().closing())
        }
    }
}

/// 413 `payload_too_large` (an oversized body read off the wire also closes the connection:
/// the rest of it may be unread, so the connection cannot carry another request).
pub fn too_large() -> HttpError {
    HttpError::new(ErrorCode::PayloadTooLarge, "request body too large")
}

fn too_slow() -> HttpError {
    HttpError::new(ErrorCode::RequestTimeout, "request body too slow").closing()
}

/// Bytes of an oversized body read and discarded at most (pure).
fn drain_allowance(limit: usize) -> u64 {
    (limit as u64).max(MIN_DRAIN)
}

/// Whether draining can let the client read the answer: the body's declared length, when it
/// has one, ends within the allowance past the limit (pure).
fn worth_draining(declared: Option<u64>, limit: usize, allowance: u64) -> bool {
    declared.is_none_or(|length| length <= limit as u64 + allowance)
}

/// Reads frames until the end of the body or until more than `limit` bytes arrived.
async fn collect(mut body: Body, limit: usize) -> Result<Bytes, Cut> {
    let expected = body.size_hint().lower().min(limit as u64) as usize;
    let mut bytes = Vec::with_capacity(expected);
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return Err(Cut::Broken);
        };
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > limit {
                return Err(Cut::TooLarge(body));
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(bytes))
}

/// Reads and discards the rest of `body`, `allowance` bytes at most.
async fn drain(mut body: Body, allowance: u64) {
    let mut discarded = 0u64;
    while discarded <= allowance {
        match body.frame().await {
            Some(Ok(frame)) => {
                discarded += frame.data_ref().map_or(0, |data| data.len() as u64);
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn limit(bytes: usize) -> BodyLimit {
        BodyLimit {
            bytes,
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn an_oversized_body_is_drained_only_when_its_end_is_within_the_allowance() {
        let table = [
            // (declared length, limit, drained)
            (None, 2048, true),
            (Some(3000), 2048, true),
            (Some(2048 + (1 << 20)), 2048, true),
            (Some(2049 + (1 << 20)), 2048, false),
            (Some(9 << 20), 8 << 20, true),
            (Some((16 << 20) + 1), 8 << 20, false),
        ];
        for (declared, bytes, drained) in table {
            let allowance = drain_allowance(bytes);
            assert_eq!(
                worth_draining(declared, bytes, allowance),
                drained,
                "{declared:?} against {bytes}"
            );
        }
    }

    #[test]
    fn a_body_declared_too_large_is_drained_refused_at_once_or_read_as_it_comes() {
        const LIMIT: usize = 2048;
        let over = LIMIT as u64 + 1;
        let table = [
            // (declared length, waits for 100 Continue, plan)
            (None, false, Plan::Read),
            (None, true, Plan::Read),
            (Some(LIMIT as u64), false, Plan::Read),
            (Some(LIMIT as u64), true, Plan::Read),
            (Some(over), false, Plan::DrainThenRefuse),
            (Some(over), true, Plan::RefuseAtOnce),
            (Some(LIMIT as u64 + (1 << 20)), false, Plan::DrainThenRefuse),
            (
                Some(LIMIT as u64 + (1 << 20) + 1),
                false,
                Plan::RefuseAtOnce,
            ),
        ];
        for (declared, waits, expected) in table {
            assert_eq!(
                plan(declared, waits, LIMIT),
                expected,
                "{declared:?} {waits}"
            );
        }
    }

    #[test]
    fn only_an_expect_of_100_continue_waits() {
        for (value, waits) in [
            (Some("100-continue"), true),
            (Some(" 100-Continue "), true),
            (Some("something-else"), false),
            (None, false),
        ] {
            let mut headers = HeaderMap::new();
            if let Some(value) = value {
                headers.insert(http::header::EXPECT, value.parse().expect("header"));
            }
            assert_eq!(expects_continue(&headers), waits, "{value:?}");
        }
    }

    fn request(body: Body) -> Request<Body> {
        Request::new(body)
    }

    #[tokio::test]
    async fn a_body_is_read_whole_within_the_limit_and_refused_past_it() {
        let read = read_within(request(Body::from("a".repeat(10))), limit(10)).await;
        assert_eq!(read.expect("within").len(), 10);
        let refused = read_within(request(Body::from("a".repeat(11))), limit(10))
            .await
            .expect_err("past the limit");
        assert_eq!(refused.code, ErrorCode::PayloadTooLarge);
    }

    #[tokio::test]
    async fn a_body_that_breaks_off_is_a_bad_request() {
        let frames = futures::stream::iter([
            Ok(Bytes::from_static(b"{\"a\":")),
            Err(std::io::Error::other("gone")),
        ]);
        let refused = read_within(request(Body::from_stream(frames)), limit(64))
            .await
            .expect_err("broken");
        assert_eq!(refused.code, ErrorCode::InvalidRequest);
    }
}
