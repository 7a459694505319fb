//! `/api/v1/webhooks`: where a tenant's alerts go (issue 24). `POST` registers a webhook
//! (URL, events, optional `slack` format) and answers its signing secret once; `GET` lists the
//! webhooks (never a secret); `DELETE /webhooks/{id}` removes one; `GET /webhooks/deliveries`
//! is the delivery log, every attempt with its status or failure class. Each forwards one RPC
//! to the notify context, which signs and delivers (see the README for the signature check).

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{PartialSchema, ToSchema};

use baton_kit::error::ErrorCode;
use baton_proto::notify::v1 as proto;

use crate::api_schema::enums::{DeliveryError, DeliveryState, WebhookEvent, WebhookFormat};
use crate::api_schema::text::Timestamp;
use crate::api_schema::{List, Nullable, errors};
use crate::path_ids::BudgetIdPath as IdPath;
use crate::response::{HttpError, HttpResult};
use crate::routes::{iso_of, optional_iso};
use crate::rpc::rpc;
use crate::state::{AppState, Caller};
use crate::strict::{self, NoQuery, StrictJson};

/// The events a webhook receives: each once, at most both.
type WebhookEvents = List<WebhookEvent, 2>;

/// `POST /webhooks` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookBody {
    #[schema(max_length = 2048)]
    pub url: String,
    #[schema(schema_with = WebhookEvents::schema)]
    pub events: Vec<String>,
    #[serde(default, deserialize_with = "strict::present")]
    #[schema(schema_with = WebhookFormat::schema)]
    pub format: Option<String>,
}

/// A registered webhook (never its secret).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookAnswer {
    #[schema(format = Uuid)]
    pub id: String,
    pub url: String,
    #[schema(schema_with = WebhookEvents::schema)]
    pub events: Vec<String>,
    #[schema(schema_with = WebhookFormat::schema)]
    pub format: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub created_at: Option<String>,
}

/// `POST /webhooks` answer (201).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedAnswer {
    #[schema(inline)]
    pub webhook: WebhookAnswer,
    /// Shown once: the receiver verifies each delivery's signature with it.
    pub secret: String,
}

/// `GET /webhooks` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhooksAnswer {
    #[schema(inline)]
    pub webhooks: Vec<WebhookAnswer>,
}

/// One delivery attempt: its status code, or why it failed.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptAnswer {
    #[schema(minimum = 1, maximum = 1000)]
    pub number: u32,
    #[schema(schema_with = Timestamp::schema)]
    pub at: String,
    pub duration_ms: u32,
    #[schema(minimum = 100, maximum = 599, required = true)]
    pub status_code: Option<u32>,
    #[schema(schema_with = Nullable::<DeliveryError>::schema, required = true)]
    pub error: Option<String>,
}

/// One delivery of an alert to a webhook.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAnswer {
    #[schema(format = Uuid)]
    pub id: String,
    #[schema(format = Uuid)]
    pub webhook_id: String,
    #[schema(format = Uuid)]
    pub event_id: String,
    #[schema(schema_with = WebhookEvent::schema)]
    pub event: String,
    #[schema(schema_with = DeliveryState::schema)]
    pub state: String,
    #[schema(schema_with = Timestamp::schema)]
    pub created_at: String,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub next_attempt_at: Option<String>,
    #[schema(inline)]
    pub attempts: Vec<AttemptAnswer>,
}

/// `GET /webhooks/deliveries` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveriesAnswer {
    #[schema(inline, max_items = 200)]
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

/// Register a webhook for alerts (`budget.crossed`, `runaway.flagged`)
///
/// Each delivery is signed (`X-Baton-Signature: v1=<hex HMAC-SHA256(secret,
/// "{X-Baton-Timestamp}.{body}")>`) and retried with backoff until a 2xx; the secret is
/// answered once (201). A hosted deployment takes only `https` URLs that resolve to public
/// addresses.
#[utoipa::path(
    post,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    operation_id = "createWebhook",
    request_body(content = WebhookBody, example = json!({
        "url": "https://hooks.example.com/baton", "events": ["budget.crossed"]})),
    responses((status = 201, description = "success", body = CreatedAnswer), errors::Conflict),
)]
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
    let created = rpc!(state.notify.create_webhook(&call, request))?;
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

/// The tenant's webhooks, oldest first (never a secret)
#[utoipa::path(
    get,
    path = "/api/v1/webhooks",
    tag = "webhooks",
    operation_id = "listWebhooks",
    responses((status = 200, description = "success", body = WebhooksAnswer)),
)]
pub async fn list(
    State(state): State<AppState>,
    Caller(call): Caller,
    _: NoQuery,
) -> HttpResult<Json<WebhooksAnswer>> {
    let listed = rpc!(
        state
            .notify
            .list_webhooks(&call, proto::ListWebhooksRequest {})
    )?;
    Ok(Json(WebhooksAnswer {
        webhooks: listed.webhooks.into_iter().map(webhook_answer).collect(),
    }))
}

/// Remove a webhook: nothing more is delivered to it; its log stays
///
/// 204; another tenant's or an unknown id is 404.
#[utoipa::path(
    delete,
    path = "/api/v1/webhooks/{id}",
    tag = "webhooks",
    operation_id = "deleteWebhook",
    params(IdPath),
    responses((status = 204, description = "deleted"), errors::NotFound),
)]
pub async fn delete(
    State(state): State<AppState>,
    Caller(call): Caller,
    IdPath(id): IdPath,
    _: NoQuery,
) -> HttpResult<StatusCode> {
    rpc!(
        state
            .notify
            .delete_webhook(&call, proto::DeleteWebhookRequest { id })
    )?;
    Ok(StatusCode::NO_CONTENT)
}

/// The delivery log, newest first
///
/// Each delivery's state and every attempt with its status code or failure class.
#[utoipa::path(
    get,
    path = "/api/v1/webhooks/deliveries",
    tag = "webhooks",
    operation_id = "listWebhookDeliveries",
    params(
        ("webhookId" = Option<String>, Query, format = Uuid),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 200),
    ),
    responses(
        (status = 200, description = "success", body = DeliveriesAnswer),
        errors::InvalidInput,
    ),
)]
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
    let listed = rpc!(state.notify.list_deliveries(&call, request))?;
    Ok(Json(DeliveriesAnswer {
        deliveries: listed.deliveries.into_iter().map(delivery_answer).collect(),
    }))
}
