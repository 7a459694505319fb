//! Alerts: the tenant's webhooks (URL, events, format; never a secret) and the delivery log,
//! newest first, every attempt with its status code or failure class. Webhooks are registered
//! through the API (`POST /api/v1/webhooks`), which answers the signing secret once.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use baton_kit::clock::from_timestamp;
use baton_proto::notify::v1 as notify;

use crate::console::page::{self, Chrome};
use crate::console::view;
use crate::console::viewer::Viewer;
use crate::state::AppState;

pub struct WebhookRow {
    pub id: String,
    pub url: String,
    pub events: String,
    pub format: String,
}

pub struct DeliveryRow {
    pub event: String,
    pub state: String,
    pub webhook: String,
    pub created: String,
    /// One line per attempt: when, and the status or failure class.
    pub attempts: Vec<String>,
}

#[derive(Template)]
#[template(path = "console/alerts.html")]
pub struct AlertsPage {
    pub chrome: Chrome,
    pub webhooks: Vec<WebhookRow>,
    pub deliveries: Vec<DeliveryRow>,
    pub error: Option<String>,
}

fn when(viewer: &Viewer, timestamp: Option<&baton_proto::Timestamp>) -> String {
    timestamp
        .and_then(from_timestamp)
        .map(|at| view::moment(at, viewer.zone).text)
        .unwrap_or_default()
}

/// `GET /console/alerts`.
pub async fn page(State(state): State<AppState>, viewer: Viewer) -> Response {
    let (mut hooks, mut log) = (state.notify.clone(), state.notify.clone());
    let (webhooks, deliveries) = tokio::join!(
        hooks.list_webhooks(
            state
                .outbound
                .request(&viewer.call, notify::ListWebhooksRequest {})
        ),
        log.list_deliveries(state.outbound.request(
            &viewer.call,
            notify::ListDeliveriesRequest {
                webhook_id: None,
                limit: Some(100),
            }
        )),
    );
    let (webhooks, deliveries) = match (webhooks, deliveries) {
        (Ok(webhooks), Ok(deliveries)) => (webhooks.into_inner(), deliveries.into_inner()),
        (Err(status), _) | (_, Err(status)) => {
            return page::from_status(&viewer, "notify", &status);
        }
    };
    let page = AlertsPage {
        chrome: Chrome::new(&viewer, "alerts", "Alerts"),
        webhooks: webhooks
            .webhooks
            .into_iter()
            .map(|webhook| WebhookRow {
                id: webhook.id,
                url: webhook.url,
                events: webhook.events.join(", "),
                format: webhook.format,
            })
            .collect(),
        deliveries: deliveries
            .deliveries
            .into_iter()
            .map(|delivery| DeliveryRow {
                created: when(&viewer, delivery.created_at.as_ref()),
                attempts: delivery
                    .attempts
                    .iter()
                    .map(|attempt| {
                        let outcome = match (&attempt.status_code, &attempt.error) {
                            (Some(code), _) => format!("HTTP {code}"),
                            (None, Some(error)) => error.clone(),
                            (None, None) => "—".to_string(),
                        };
                        format!(
                            "#{} {} · {} · {} ms",
                            attempt.number,
                            when(&viewer, attempt.at.as_ref()),
                            outcome,
                            attempt.duration_ms
                        )
                    })
                    .collect(),
                event: delivery.event,
                state: delivery.state,
                webhook: delivery.webhook_id,
            })
            .collect(),
        error: None,
    };
    page::render(StatusCode::OK, &page)
}
