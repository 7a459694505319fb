//! The one error-code table shared by gRPC and REST.
//!
//! Each [`ErrorCode`] names the contract's `error` string, the HTTP status the gateway answers
//! with and the gRPC code a service returns. A service attaches the contract string to its
//! `Status` in metadata `x-baton-error`, so the gateway maps an RPC failure back to exactly the
//! HTTP answer the domain meant, and the two transports cannot drift.

use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

/// Metadata key carrying the contract error string on a failed RPC.
pub const ERROR_METADATA_KEY: &str = "x-baton-error";

/// Every error a Baton API can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// A body, query or path failed validation (including unknown keys and foreign run ids).
    InvalidInput,
    /// The body is not JSON at all.
    InvalidRequest,
    /// Missing, unknown or revoked credential.
    Unauthorized,
    /// The tenant's metered budget is spent.
    BudgetExceeded,
    /// An access policy denies the operation.
    AccessDenied,
    /// The addressed row does not exist in the caller's tenant.
    NotFound,
    /// The route exists but not for this method.
    MethodNotAllowed,
    /// A compare-and-set or idempotency check lost.
    Conflict,
    /// A live memory with the same content already exists.
    DuplicateMemory,
    /// A per-tenant size limit would be exceeded.
    ResourceLimitExceeded,
    /// The requested lifecycle transition is not allowed.
    InvalidTransition,
    /// The account was erased.
    AccountDeleted,
    /// The request body is larger than the gateway accepts.
    PayloadTooLarge,
    /// The request body's `Content-Encoding` is not one the route accepts.
    UnsupportedMediaType,
    /// The client took longer than the gateway allows to send the request body.
    RequestTimeout,
    /// The caller exceeded its rate limit.
    RateLimited,
    /// Anything unmapped.
    Internal,
    /// A dependency (database, another service) is unavailable or too slow.
    ServiceUnavailable,
}

impl ErrorCode {
    /// Every code, for table-driven tests and documentation.
    pub const ALL: [ErrorCode; 18] = [
        ErrorCode::InvalidInput,
        ErrorCode::InvalidRequest,
        ErrorCode::Unauthorized,
        ErrorCode::BudgetExceeded,
        ErrorCode::AccessDenied,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::Conflict,
        ErrorCode::DuplicateMemory,
        ErrorCode::ResourceLimitExceeded,
        ErrorCode::InvalidTransition,
        ErrorCode::AccountDeleted,
        ErrorCode::PayloadTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::RequestTimeout,
        ErrorCode::RateLimited,
        ErrorCode::Internal,
        ErrorCode::ServiceUnavailable,
    ];

    /// The contract's `error` string.
    pub fn as_str(self) -> &'static str {
        self.row().0
    }

    /// The HTTP status the gateway answers with.
    pub fn http_status(self) -> u16 {
        self.row().1
    }

    /// The gRPC code a service answers with.
    pub fn grpc_code(self) -> Code {
        self.row().2
    }

    fn row(self) -> (&'static str, u16, Code) {
        match self {
            ErrorCode::InvalidInput => ("invalid_input", 400, Code::InvalidArgument),
            ErrorCode::InvalidRequest => ("invalid_request", 400, Code::InvalidArgument),
            ErrorCode::Unauthorized => ("unauthorized", 401, Code::Unauthenticated),
            ErrorCode::BudgetExceeded => ("budget_exceeded", 402, Code::ResourceExhausted),
            ErrorCode::AccessDenied => ("access_denied", 403, Code::PermissionDenied),
            ErrorCode::NotFound => ("not_found", 404, Code::NotFound),
            ErrorCode::MethodNotAllowed => ("method_not_allowed", 405, Code::Unimplemented),
            ErrorCode::Conflict => ("conflict", 409, Code::Aborted),
            ErrorCode::DuplicateMemory => ("duplicate_memory", 409, Code::AlreadyExists),
            ErrorCode::ResourceLimitExceeded => {
                ("resource_limit_exceeded", 409, Code::ResourceExhausted)
            }
            ErrorCode::InvalidTransition => ("invalid_transition", 409, Code::FailedPrecondition),
            ErrorCode::AccountDeleted => ("account_deleted", 410, Code::FailedPrecondition),
            ErrorCode::PayloadTooLarge => ("payload_too_large", 413, Code::InvalidArgument),
            ErrorCode::UnsupportedMediaType => {
                ("unsupported_media_type", 415, Code::InvalidArgument)
            }
            ErrorCode::RequestTimeout => ("request_timeout", 408, Code::DeadlineExceeded),
            ErrorCode::RateLimited => ("rate_limited", 429, Code::ResourceExhausted),
            ErrorCode::Internal => ("internal_error", 500, Code::Internal),
            ErrorCode::ServiceUnavailable => ("service_unavailable", 503, Code::Unavailable),
        }
    }

    /// Parses the contract string back into a code.
    pub fn from_contract_str(text: &str) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
    }

    /// The code a failed RPC stands for: the `x-baton-error` metadata when present, else the
    /// closest code for the gRPC status (transport failures become `service_unavailable`).
    pub fn from_status(status: &Status) -> ErrorCode {
        let tagged = status
            .metadata()
            .get(ERROR_METADATA_KEY)
            .and_then(|value| value.to_str().ok())
            .and_then(ErrorCode::from_contract_str);
        if let Some(code) = tagged {
            return code;
        }
        match status.code() {
            Code::InvalidArgument | Code::OutOfRange => ErrorCode::InvalidInput,
            Code::NotFound => ErrorCode::NotFound,
            Code::AlreadyExists | Code::Aborted => ErrorCode::Conflict,
            Code::Unauthenticated => ErrorCode::Unauthorized,
            Code::PermissionDenied => ErrorCode::AccessDenied,
            Code::FailedPrecondition => ErrorCode::InvalidTransition,
            Code::ResourceExhausted => ErrorCode::RateLimited,
            Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled => {
                ErrorCode::ServiceUnavailable
            }
            _ => ErrorCode::Internal,
        }
    }

    /// A `Status` carrying this code, with `detail` as its message (bounded, never user content).
    pub fn to_status(self, detail: impl Into<String>) -> Status {
        let mut status = Status::new(self.grpc_code(), detail);
        status.metadata_mut().insert(
            ERROR_METADATA_KEY,
            MetadataValue::from_static(self.as_str()),
        );
        status
    }
}

/// A domain error: a code plus an optional detail that is safe to show the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {detail}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub detail: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> ApiError {
        ApiError {
            code,
            detail: detail.into(),
        }
    }

    pub fn invalid_input(detail: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::InvalidInput, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, detail)
    }

    pub fn conflict(detail: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Conflict, detail)
    }

    pub fn internal(detail: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::Internal, detail)
    }

    pub fn unavailable(detail: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::ServiceUnavailable, detail)
    }
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        error.code.to_status(error.detail)
    }
}

impl From<Status> for ApiError {
    /// A peer's answer, read on the calling side. UNAUTHENTICATED or PERMISSION_DENIED from a
    /// Baton service means it refused this process's own credentials (the service token or the
    /// client certificate): the end user's key was checked at the edge, so passing a 401 or 403
    /// on would tell a hook its API key is bad when the deployment is misconfigured (a token
    /// rotated on one side only). It is the deployment's fault and retryable: 503, logged.
    fn from(status: Status) -> ApiError {
        match status.code() {
            Code::Unauthenticated | Code::PermissionDenied => {
                tracing::error!(
                    code = ?status.code(),
                    "a baton service refused this process's credentials (service token or client certificate)"
                );
                ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    "a Baton service refused this deployment's internal credentials",
                )
            }
            _ => ApiError::new(ErrorCode::from_status(&status), status.message()),
        }
    }
}

/// Whether a SQLSTATE means the database connection was lost or refused, not that the
/// statement was wrong: class 08 (connection exception), `57P01` (admin shutdown, as in a
/// restart), `57P02` (crash shutdown), `57P03` (cannot connect now: starting or stopping),
/// `53300` (too many connections). Such a failure is retryable: 503, never 500.
pub fn sqlstate_is_unavailable(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

/// Whether a database error is a lost or refused connection (retryable) rather than a bug.
pub fn sqlx_is_unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed
        // A connection cut mid-message reads as a protocol error.
        | sqlx::Error::Protocol(_) => true,
        sqlx::Error::Database(database_error) => database_error
            .code()
            .is_some_and(|code| sqlstate_is_unavailable(&code)),
        _ => false,
    }
}

impl From<sqlx::Error> for ApiError {
    /// Database failures are logged once where they surface and answered as unavailable (a
    /// lost or refused connection: 503, retryable) or internal; the SQL text and bound values
    /// never reach the caller.
    fn from(error: sqlx::Error) -> ApiError {
        if sqlx_is_unavailable(&error) {
            tracing::warn!(error = %error, "database unavailable");
            return ApiError::unavailable("database unavailable");
        }
        tracing::error!(error = %error, "database error");
        ApiError::internal("database error")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_rows_match_the_reference_table() {
        let table = [
            (ErrorCode::InvalidInput, "invalid_input", 400),
            (ErrorCode::InvalidRequest, "invalid_request", 400),
            (ErrorCode::Unauthorized, "unauthorized", 401),
            (ErrorCode::BudgetExceeded, "budget_exceeded", 402),
            (ErrorCode::AccessDenied, "access_denied", 403),
            (ErrorCode::NotFound, "not_found", 404),
            (ErrorCode::Conflict, "conflict", 409),
            (ErrorCode::DuplicateMemory, "duplicate_memory", 409),
            (
                ErrorCode::ResourceLimitExceeded,
                "resource_limit_exceeded",
                409,
            ),
            (ErrorCode::InvalidTransition, "invalid_transition", 409),
            (ErrorCode::AccountDeleted, "account_deleted", 410),
            (ErrorCode::RateLimited, "rate_limited", 429),
            (ErrorCode::Internal, "internal_error", 500),
            (ErrorCode::ServiceUnavailable, "service_unavailable", 503),
        ];
        for (code, text, status) in table {
            assert_eq!(code.as_str(), text);
            assert_eq!(code.http_status(), status, "{text}");
        }
    }

    #[test]
    fn every_code_survives_a_round_trip_through_a_status() {
        for code in ErrorCode::ALL {
            let status = code.to_status("detail");
            assert_eq!(ErrorCode::from_status(&status), code);
            assert_eq!(ErrorCode::from_contract_str(code.as_str()), Some(code));
        }
    }

    #[test]
    fn lost_database_connections_are_unavailable_and_bugs_internal() {
        let table = [
            ("08006", true),
            ("08001", true),
            ("57P01", true),
            ("57P02", true),
            ("57P03", true),
            ("53300", true),
            ("23505", false),
            ("22P05", false),
            ("42P01", false),
            ("40001", false),
        ];
        for (code, unavailable) in table {
            assert_eq!(sqlstate_is_unavailable(code), unavailable, "{code}");
        }
        let io = sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        for (error, unavailable) in [
            (sqlx::Error::PoolTimedOut, true),
            (sqlx::Error::PoolClosed, true),
            (io, true),
            (sqlx::Error::Protocol("unexpected eof".to_string()), true),
            (sqlx::Error::RowNotFound, false),
            (sqlx::Error::ColumnNotFound("x".to_string()), false),
        ] {
            let code = ApiError::from(error).code;
            let expected = if unavailable {
                ErrorCode::ServiceUnavailable
            } else {
                ErrorCode::Internal
            };
            assert_eq!(code, expected);
        }
    }

    #[test]
    fn a_peer_refusing_our_credentials_is_unavailable_not_the_callers_fault() {
        let table = [
            (
                ErrorCode::Unauthorized.to_status("bad token"),
                ErrorCode::ServiceUnavailable,
            ),
            (
                Status::unauthenticated("no token"),
                ErrorCode::ServiceUnavailable,
            ),
            (
                Status::permission_denied("scope"),
                ErrorCode::ServiceUnavailable,
            ),
            (ErrorCode::NotFound.to_status("x"), ErrorCode::NotFound),
            (
                ErrorCode::InvalidInput.to_status("x"),
                ErrorCode::InvalidInput,
            ),
        ];
        for (status, expected) in table {
            assert_eq!(ApiError::from(status.clone()).code, expected, "{status:?}");
        }
    }

    #[test]
    fn untagged_transport_failures_read_as_unavailable() {
        let status = Status::unavailable("connection refused");
        assert_eq!(
            ErrorCode::from_status(&status),
            ErrorCode::ServiceUnavailable
        );
        assert_eq!(
            ErrorCode::from_status(&Status::unknown("x")),
            ErrorCode::Internal
        );
    }
}
