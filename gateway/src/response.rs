//! How the gateway answers: JSON bodies, and errors as `{"error": code, "detail": why}` with the
//! status from the shared code table.

use axum::Json;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::openapi::schema::{ObjectBuilder, Type};

use baton_kit::error::{ApiError, ErrorCode};

/// `Retry-After` of a 503: a restarted database or service is back within seconds.
pub const UNAVAILABLE_RETRY_AFTER_SECONDS: u64 = 1;

/// An error answer: `{"error": code, "detail": why}`. A 4xx says why in `detail` — the field
/// and the rule broken, as the service or the gateway's parser wrote it; details are written
/// from field names, bounds and choices, never from the submitted value (issue 28; see
/// [`baton_kit::shape_error`] for serde's messages). A 5xx sends no detail: the cause is ours, is
/// logged, and may name internals. [`HttpError::with_public_detail`] replaces the detail sent
/// (policy refusals that explain what to do).
#[derive(Debug, Clone)]
pub struct HttpError {
    pub code: ErrorCode,
    detail: String,
    public_detail: Option<String>,
    retry_after_seconds: Option<u64>,
    /// Answer with `Connection: close`: a refusal before the body was read.
    close_connection: bool,
}

impl HttpError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> HttpError {
        HttpError {
            code,
            detail: detail.into(),
            public_detail: None,
            retry_after_seconds: None,
            close_connection: false,
        }
    }

    /// Sends `detail` in the body's `detail` key instead of the logged one (bounded, never user
    /// content; sent on a 5xx too).
    pub fn with_public_detail(mut self, detail: impl Into<String>) -> HttpError {
        self.public_detail = Some(detail.into());
        self
    }

    /// Closes the connection after this answer (`Connection: close`): the request's body was
    /// not read, so the connection cannot carry another request.
    pub fn closing(mut self) -> HttpError {
        self.close_connection = true;
        self
    }

    /// Adds `Retry-After` (rate limiting).
    pub fn with_retry_after(mut self, seconds: u64) -> HttpError {
        self.retry_after_seconds = Some(seconds);
        self
    }
}

impl From<ApiError> for HttpError {
    fn from(error: ApiError) -> HttpError {
        HttpError::new(error.code, error.detail)
    }
}

impl From<tonic::Status> for HttpError {
    fn from(status: tonic::Status) -> HttpError {
        HttpError::from(ApiError::from(status))
    }
}

/// The body of every error answer.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub struct ErrorBody<'a> {
    #[schema(schema_with = error_codes)]
    error: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = error_detail)]
    detail: Option<&'a str>,
}

/// `error`'s schema: the contract's codes.
fn error_codes() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(ErrorCode::ALL.iter().map(|code| code.as_str())))
}

/// `detail`'s schema: bounded as [`baton_kit::shape_error::bounded`] bounds it.
fn error_detail() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(baton_kit::shape_error::MAX_DETAIL_CHARS))
        .description(Some(
            "Why, on every 4xx: the field (its path in the body, or the query parameter) and \
             the rule it broke; never the value sent. Absent on a 5xx.",
        ))
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(error = self.code.as_str(), detail = %self.detail, "request failed");
        } else {
            tracing::debug!(error = self.code.as_str(), detail = %self.detail, "request refused");
        }
        let sent = match self.public_detail {
            Some(detail) => Some(detail),
            None if status.is_client_error() && !self.detail.is_empty() => Some(self.detail),
            None => None,
        };
        let sent = sent.map(|detail| baton_kit::shape_error::bounded(&detail));
        let body = ErrorBody {
            error: self.code.as_str(),
            detail: sent.as_deref(),
        };
        let mut response = (status, Json(body)).into_response();
        // Every 503 is retryable (a dependency is down or the gateway is shedding load), so it
        // always says when to come back.
        let retry_after = self
            .retry_after_seconds
            .or((self.code == ErrorCode::ServiceUnavailable)
                .then_some(UNAVAILABLE_RETRY_AFTER_SECONDS));
        if let Some(value) =
            retry_after.and_then(|seconds| HeaderValue::from_str(&seconds.to_string()).ok())
        {
            response.headers_mut().insert("retry-after", value);
        }
        if self.close_connection {
            response
                .headers_mut()
                .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// The result type of every handler.
pub type HttpResult<T> = Result<T, HttpError>;

/// 404 for routes that do not exist.
pub async fn not_found() -> HttpError {
    HttpError::new(ErrorCode::NotFound, "no such route")
}

/// 405 for a known path with the wrong method.
pub async fn method_not_allowed() -> HttpError {
    HttpError::new(ErrorCode::MethodNotAllowed, "method not allowed")
}
