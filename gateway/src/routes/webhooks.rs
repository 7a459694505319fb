//! `/api/v1/webhooks`: where a tenant's alerts go (issue 24). `POST` registers a webhook
//! (URL, events, optional `slack` format) and answers its signing secret once; `GET` lists the
//! webhooks (never a secret); `DELETE /webhooks/{id}` removes one; `GET /webhooks/deliveries`
//! is the delivery log, every attempt with its status or failure class. Each forwards one RPC
//! to the notify context, which signs and delivers (see the README for the signature check).

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

use baton_kit::error::ErrorCode;
use baton_proto::notify::v1 as proto;

use crate::path_ids::BudgetIdPath as IdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::{iso_of, optional_iso};
use crate::state::{AppState, Caller};
use crate::strict::{self, StrictJson};

/// `POST /webhooks` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookBody {
    pub url: String,
    pub events: Vec<String>,
    #[serde(default, deserialize_with = "strict::present")]
    pub format: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookAnswer {
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub format: String,
    pub created_at: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedAnswer {
    pub webhook: WebhookAnswer,
    /// Shown once: the receiver verifies each delivery's signature with it.
    pub secret: String,
}

#[derive(Debug, Serialize)]
pub struct WebhooksAnswer {
    pub webhooks: Vec<WebhookAnswer>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptAnswer {
    pub number: u32,
    pub at: String,
    pub duration_ms: u32,
    pub status_code: Option<u32>,
    pub error: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAnswer {
    pub id: String,
    pub webhook_id: String,
    pub event_id: String,
    pub event: String,
    pub state: String,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    pub attempts: Vec<AttemptAnswer>,
}

#[derive(Debug, Serialize)]
pub struct DeliveriesAnswer {
    pub deliveries: Vec<DeliveryAnswer>,
}

pub(crate) fn webhook_answer(webhook: proto::Webhook) -> WebhookAnswer {
    WebhookAnswer {
        id: webhook.id,
        url: webhook.url,
        events: webhook.events,
        format: webhook.format,
        created_at: optional_iso(webhook.created_at.as_ref()),
    }
}

pub(crate) fn delivery_answer(delivery: proto::Delivery) -> DeliveryAnswer {
    DeliveryAnswer {
        id: delivery.id,
        webhook_id: delivery.webhook_id,
        event_id: delivery.event_id,
        event: delivery.event,
        state: delivery.state,
        created_at: iso_of(delivery.created_at.as_ref()),
        next_attempt_at: optional_iso(delivery.next_attempt_at.as_ref()),
        attempts: delivery
            .attempts
            .into_iter()
            .map(|attempt| AttemptAnswer {
                number: attempt.number,
                at: iso_of(attempt.at.as_ref()),
                duration_ms: attempt.duration_ms,
                status_code: attempt.status_code,
                error: attempt.error,
            })
            .collect(),
    }
}

/// Registers a webhook; 201 with its secret (shown this once).
pub async fn create(
    State(state): State<AppState>,
    Caller(call): Caller,
    StrictJson(body): StrictJson<WebhookBody>,
) -> HttpResult<(StatusCode, Json<CreatedAnswer>)> {
    let request = proto::CreateWebhookRequest {
        url: body.url,
        events: body.events,
        format: body.format,
    };
    let created = state
        .notify
        .clone()
        .create_webhook(state.outbound.request(&call, request))
        .await?
        .into_inner();
    let webhook = created
        .webhook
        .ok_or_else(|| HttpError::new(ErrorCode::Internal, "notify answered no webhook"))?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedAnswer {
            webhook: webhook_answer(webhook),
            secret: created.secret,
        }),
    ))
}

/// The tenant's webhooks, without secrets.
pub async fn list(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<WebhooksAnswer>> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    let listed = state
        .notify
        .clone()
        .list_webhooks(state.outbound.request(&call, proto::ListWebhooksRequest {}))
        .await?
        .into_inner();
    Ok(Json(WebhooksAnswer {
        webhooks: listed.webhooks.into_iter().map(webhook_answer).collect(),
    }))
}

/// Removes a webhook; 204. Another tenant's or an unknown id is 404.
pub async fn delete(
    State(state): State<AppState>,
    Caller(call): Caller,
    IdPath(id): IdPath,
    RawQuery(query): RawQuery,
) -> HttpResult<StatusCode> {
    strict::only_keys(&strict::query_pairs(query.as_deref())?, &[])?;
    state
        .notify
        .clone()
        .delete_webhook(
            state
                .outbound
                .request(&call, proto::DeleteWebhookRequest { id }),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The delivery log, newest first (`webhookId`, `limit` 1..200).
pub async fn deliveries(
    State(state): State<AppState>,
    Caller(call): Caller,
    RawQuery(query): RawQuery,
) -> HttpResult<Json<DeliveriesAnswer>> {
    let pairs = strict::query_pairs(query.as_deref())?;
    strict::only_keys(&pairs, &["webhookId", "limit"])?;
    let get = |key: &str| strict::single(&pairs, key);
    let request = proto::ListDeliveriesRequest {
        webhook_id: get("webhookId").map(str::to_string),
        limit: get("limit")
            .map(|text| strict::strict_integer("limit", text))
            .transpose()?,
    };
    let listed = state
        .notify
        .clone()
        .list_deliveries(state.outbound.request(&call, request))
        .await?
        .into_inner();
    Ok(Json(DeliveriesAnswer {
        deliveries: listed.deliveries.into_iter().map(delivery_answer).collect(),
    }))
}
