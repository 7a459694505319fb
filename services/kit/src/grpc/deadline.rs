//! Cancelling a call past its deadline, the way tonic's own server and endpoint timeouts do,
//! as a layer the in-process transport can use on both sides.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tower::{Layer, Service};

use super::call_service::BoxError;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Cancels a call that outlives `limit`, or the caller's `grpc-timeout` when that is shorter,
/// failing it with [`tonic::TimeoutExpired`] (which tonic answers as CANCELLED). This is what
/// tonic's own server and endpoint timeouts do; the in-process transport needs it as a layer of
/// its own, on both the callee's side and the caller's.
#[derive(Debug, Clone, Copy)]
pub struct DeadlineLayer {
    limit: Duration,
}

impl DeadlineLayer {
    pub fn new(limit: Duration) -> DeadlineLayer {
        DeadlineLayer { limit }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Deadline<S> {
        Deadline {
            inner,
            limit: self.limit,
        }
    }
}

/// See [`DeadlineLayer`].
#[derive(Debug, Clone)]
pub struct Deadline<S> {
    inner: S,
    limit: Duration,
}

impl<S, B> Service<http::Request<B>> for Deadline<S>
where
    S: Service<http::Request<B>>,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = BoxFuture<Result<S::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let budget =
            caller_budget(request.headers()).map_or(self.limit, |asked| asked.min(self.limit));
        let answer = self.inner.call(request);
        Box::pin(async move {
            match tokio::time::timeout(budget, answer).await {
                Ok(result) => result.map_err(Into::into),
                Err(_) => Err(Box::new(tonic::TimeoutExpired(())) as BoxError),
            }
        })
    }
}

/// The caller's `grpc-timeout` (at most eight digits and a unit, `H` `M` `S` `m` `u` `n`); a
/// malformed one is ignored, as tonic ignores it.
fn caller_budget(headers: &http::HeaderMap) -> Option<Duration> {
    let text = headers.get("grpc-timeout")?.to_str().ok()?;
    if !(2..=9).contains(&text.len()) {
        return None;
    }
    let (digits, unit) = text.split_at(text.len() - 1);
    let amount: u64 = digits.parse().ok()?;
    match unit {
        "H" => Some(Duration::from_secs(amount * 3600)),
        "M" => Some(Duration::from_secs(amount * 60)),
        "S" => Some(Duration::from_secs(amount)),
        "m" => Some(Duration::from_millis(amount)),
        "u" => Some(Duration::from_micros(amount)),
        "n" => Some(Duration::from_nanos(amount)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use tonic::body::Body;
    use tower::ServiceExt;

    use super::*;

    #[test]
    fn a_caller_budget_is_read_in_every_unit_and_a_malformed_one_ignored() {
        for (header, expected) in [
            ("3S", Some(Duration::from_secs(3))),
            ("250m", Some(Duration::from_millis(250))),
            ("2M", Some(Duration::from_secs(120))),
            ("1H", Some(Duration::from_secs(3600))),
            ("7u", Some(Duration::from_micros(7))),
            ("9n", Some(Duration::from_nanos(9))),
            ("123456789S", None),
            ("S", None),
            ("12x", None),
            ("-1S", None),
        ] {
            let mut headers = http::HeaderMap::new();
            headers.insert("grpc-timeout", header.parse().expect("header"));
            assert_eq!(caller_budget(&headers), expected, "{header}");
        }
        assert_eq!(caller_budget(&http::HeaderMap::new()), None);
    }

    #[tokio::test]
    async fn a_call_past_its_deadline_fails_as_tonic_times_it_out() {
        let slow = tower::service_fn(|_request: http::Request<Body>| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, Infallible>(http::Response::new(Body::empty()))
        });
        let error = DeadlineLayer::new(Duration::from_millis(50))
            .layer(slow)
            .oneshot(http::Request::new(Body::empty()))
            .await
            .expect_err("timed out");
        let status = tonic::Status::from_error(error);
        assert_eq!(status.code(), tonic::Code::Cancelled, "{status:?}");
    }
}
