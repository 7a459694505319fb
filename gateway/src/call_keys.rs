//! `Idempotency-Key` on hook-facing writes (issue 26, R11): the hook gives every line it
//! spools a key and sends it with each attempt. A call answered with success has its key
//! recorded for its tenant; the same key answered with success again is a **resend** — the
//! drain was killed after a send and before it recorded its progress, or the answer was lost
//! on the way back — and is counted (`gateway.call_keys.resends`, the
//! `baton.gateway.resends` counter by route) and said in the answer (`Idempotent-Replayed:
//! true`). The call itself runs again: every hook-facing write is idempotent (a repeated close
//! reads "already closed", a repeated heartbeat "superseded"), so the key makes a resend
//! visible, it does not change what it does.
//!
//! Only successful answers are recorded: a call refused or failed was not delivered, and its
//! retry is the delivery. A failure to record is logged and never fails the call (the write is
//! done). Calls without the header (the reference hook, direct clients) are untouched; a
//! header that is not a UUID is refused before the call runs, naming the header.

use axum::extract::{MatchedPath, Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use opentelemetry::KeyValue;
use opentelemetry::metrics::Counter;
use sqlx::PgPool;
use uuid::Uuid;

use baton_kit::error::ErrorCode;
use baton_kit::telemetry::Component;
use baton_kit::telemetry::component::PerComponent;

use crate::auth::Principal;
use crate::response::HttpError;
use crate::state::AppState;

pub const HEADER: &str = "idempotency-key";
/// Set on the answer to a resend.
pub const REPLAYED: &str = "idempotent-replayed";

/// The header's value as a key: a UUID in its hyphenated form (what the hook sends).
pub fn parse(value: &HeaderValue) -> Result<Uuid, &'static str> {
    let text = value
        .to_str()
        .map_err(|_| "Idempotency-Key must be a UUID (visible ASCII)")?;
    if text.len() != 36 {
        return Err("Idempotency-Key must be a UUID in hyphenated form (36 characters)");
    }
    Uuid::parse_str(text).map_err(|_| "Idempotency-Key must be a UUID in hyphenated form")
}

fn resends() -> &'static Counter<u64> {
    static COUNTER: PerComponent<Counter<u64>> = PerComponent::new();
    COUNTER.get_or_init(Component::Gateway, |meter| {
        meter
            .u64_counter("baton.gateway.resends")
            .with_unit("{call}")
            .with_description("Hook calls received again with a key already answered with success")
            .build()
    })
}

/// The layer: records the key of a successful POST that carries one.
pub async fn record(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(value) = request.headers().get(HEADER) else {
        return next.run(request).await;
    };
    let key = match parse(value) {
        Ok(key) => key,
        Err(detail) => {
            return HttpError::new(ErrorCode::InvalidInput, detail)
                .with_public_detail(detail)
                .into_response();
        }
    };
    let principal = request.extensions().get::<Principal>().cloned();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| format!("/api/v1{}", path.as_str()));
    let is_post = request.method() == axum::http::Method::POST;
    let mut response = next.run(request).await;
    let (Some(principal), Some(route), true) = (principal, route, is_post) else {
        return response;
    };
    if !response.status().is_success() {
        return response;
    }
    match remember(&state.pool, principal.tenant_id, key, &route).await {
        Ok(0) => {}
        Ok(_) => {
            resends().add(1, &[KeyValue::new("http.route", route)]);
            response
                .headers_mut()
                .insert(REPLAYED, HeaderValue::from_static("true"));
        }
        Err(error) => {
            tracing::warn!(error = %error, "idempotency key not recorded");
        }
    }
    response
}

/// Records `key` for `tenant`; returns how many resends it has now had (0: the first).
/// Also deletes up to 100 of the tenant's keys older than the 14 days kept.
async fn remember(pool: &PgPool, tenant: Uuid, key: Uuid, route: &str) -> Result<i32, sqlx::Error> {
    let mut transaction = baton_kit::db::begin_tenant(pool, tenant).await?;
    let resends = sqlx::query_scalar!(
        "INSERT INTO gateway.call_keys AS seen (tenant_id, key, route) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, key) DO UPDATE SET resends = seen.resends + 1, last_at = now() \
         RETURNING resends",
        tenant,
        key,
        route,
    )
    .fetch_one(&mut *transaction)
    .await?;
    sqlx::query!(
        "DELETE FROM gateway.call_keys WHERE (tenant_id, key) IN (SELECT tenant_id, key \
         FROM gateway.call_keys WHERE tenant_id = $1 AND first_at < now() - interval '14 days' \
         LIMIT 100)",
        tenant,
    )
    .execute(&mut *transaction)
    .await?;
    transaction.commit().await?;
    Ok(resends)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_a_hyphenated_uuid() {
        let table: [(&[u8], bool); 7] = [
            (b"5f0c9a52-7d5e-4c8e-9a0b-2f1d3c4b5a69", true),
            (b"5F0C9A52-7D5E-4C8E-9A0B-2F1D3C4B5A69", true),
            (b"5f0c9a527d5e4c8e9a0b2f1d3c4b5a69", false),
            (b"{5f0c9a52-7d5e-4c8e-9a0b-2f1d3c4b5a69}", false),
            (b"5f0c9a52-7d5e-4c8e-9a0b-2f1d3c4b5a6z", false),
            (b"", false),
            (b"retry-1", false),
        ];
        for (value, valid) in table {
            let header = HeaderValue::from_bytes(value).expect("header");
            assert_eq!(parse(&header).is_ok(), valid, "{value:?}");
        }
    }
}
