//! Span status decisions, per the OpenTelemetry semantic conventions.
//!
//! - gRPC client spans: every non-OK status is an error (the call failed for the caller).
//! - gRPC server spans: only the codes that mean the server failed — UNKNOWN, DEADLINE_EXCEEDED,
//!   UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS. A NOT_FOUND or INVALID_ARGUMENT answer is
//!   the server doing its job; its client span still shows the error.
//! - HTTP server spans: 5xx only (a 4xx is the client's mistake). HTTP client spans: 4xx and 5xx.
//!
//! The value goes into the span's `otel.status_code` field, which the tracing bridge maps to
//! the span status.

/// Which side of a call a span describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// Whether a gRPC status code (numeric, as in `grpc-status`) marks the span as an error.
pub fn grpc_is_error(side: Side, code: i32) -> bool {
    match side {
        Side::Client => code != 0,
        // UNKNOWN 2, DEADLINE_EXCEEDED 4, UNIMPLEMENTED 12, INTERNAL 13, UNAVAILABLE 14,
        // DATA_LOSS 15.
        Side::Server => matches!(code, 2 | 4 | 12 | 13 | 14 | 15),
    }
}

/// Whether an HTTP status marks the span as an error.
pub fn http_is_error(side: Side, status: u16) -> bool {
    match side {
        Side::Client => status >= 400,
        Side::Server => status >= 500,
    }
}

/// The `otel.status_code` value for an outcome: `ERROR`, or nothing (leave it unset).
pub fn status_code(error: bool) -> Option<&'static str> {
    error.then_some("ERROR")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_client_spans_fail_on_every_non_ok_code_and_server_spans_on_server_faults() {
        let table = [
            // (code, client error, server error)
            (0, false, false),
            (1, true, false),  // CANCELLED
            (2, true, true),   // UNKNOWN
            (3, true, false),  // INVALID_ARGUMENT
            (4, true, true),   // DEADLINE_EXCEEDED
            (5, true, false),  // NOT_FOUND
            (7, true, false),  // PERMISSION_DENIED
            (8, true, false),  // RESOURCE_EXHAUSTED
            (9, true, false),  // FAILED_PRECONDITION
            (12, true, true),  // UNIMPLEMENTED
            (13, true, true),  // INTERNAL
            (14, true, true),  // UNAVAILABLE
            (15, true, true),  // DATA_LOSS
            (16, true, false), // UNAUTHENTICATED
        ];
        for (code, client, server) in table {
            assert_eq!(grpc_is_error(Side::Client, code), client, "client {code}");
            assert_eq!(grpc_is_error(Side::Server, code), server, "server {code}");
        }
    }

    #[test]
    fn http_server_spans_fail_on_5xx_and_client_spans_on_4xx_too() {
        for (status, client, server) in [
            (200, false, false),
            (304, false, false),
            (400, true, false),
            (404, true, false),
            (429, true, false),
            (500, true, true),
            (503, true, true),
        ] {
            assert_eq!(
                http_is_error(Side::Client, status),
                client,
                "client {status}"
            );
            assert_eq!(
                http_is_error(Side::Server, status),
                server,
                "server {status}"
            );
        }
        assert_eq!(status_code(true), Some("ERROR"));
        assert_eq!(status_code(false), None);
    }
}
