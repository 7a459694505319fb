//! A delivery's body, rendered once when the delivery is created so every attempt sends (and
//! signs) the same bytes.
//!
//! `baton`: `{"type", "eventId", "tenantId", "occurredAt", "data"}` where `data` is the bus
//! payload as published (camelCase). `slack`: `{"text": ...}`, one line a person reads, with
//! Slack's three control characters (`&`, `<`, `>`) escaped in every value that came from a
//! user (a project slug, a member name, a session id).

use serde_json::json;

use baton_proto::messages::{BudgetCrossed, Envelope, RunawayFlagged};

use crate::webhook::{EventType, Format};

/// The message's payload did not match its type.
#[derive(Debug, thiserror::Error)]
#[error("unreadable {event} payload: {reason}")]
pub struct RenderError {
    event: &'static str,
    reason: String,
}

/// The payload of an alert, parsed once for every webhook it goes to.
#[derive(Debug, Clone, PartialEq)]
pub enum Alert {
    BudgetCrossed(BudgetCrossed),
    RunawayFlagged(RunawayFlagged),
}

impl Alert {
    /// Reads the envelope's payload as `event` expects it.
    pub fn parse(event: EventType, envelope: &Envelope) -> Result<Alert, RenderError> {
        let failed = |reason| RenderError {
            event: event.as_str(),
            reason,
        };
        match event {
            EventType::BudgetCrossed => envelope
                .payload(event.routing_key())
                .map(Alert::BudgetCrossed)
                .map_err(failed),
            EventType::RunawayFlagged => envelope
                .payload(event.routing_key())
                .map(Alert::RunawayFlagged)
                .map_err(failed),
        }
    }
}

/// The body sent to a webhook of `format`.
pub fn body(format: Format, event: EventType, envelope: &Envelope, alert: &Alert) -> String {
    let value = match format {
        Format::Baton => json!({
            "type": event.as_str(),
            "eventId": envelope.id,
            "tenantId": envelope.tenant_id,
            "occurredAt": baton_kit::clock::iso(envelope.occurred_at),
            "data": envelope.data,
        }),
        Format::Slack => json!({ "text": slack_text(alert) }),
    };
    value.to_string()
}

/// Escapes the characters Slack's message formatting gives a meaning to.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn usd(amount: f64) -> String {
    format!("${amount:.2}")
}

fn slack_text(alert: &Alert) -> String {
    match alert {
        Alert::BudgetCrossed(crossed) => {
            let watched = match (crossed.scope.as_str(), &crossed.subject) {
                ("tenant", _) | (_, None) => "The tenant's".to_string(),
                (scope, Some(subject)) => format!("The {scope} {}'s", slack_escape(subject)),
            };
            format!(
                ":warning: Baton: {watched} {} budget reached {}% of {}: {} spent in the period \
                 starting {} ({}).",
                slack_escape(&crossed.period),
                crossed.threshold_percent,
                usd(crossed.limit_usd),
                usd(crossed.spent_usd),
                slack_escape(&crossed.period_start),
                slack_escape(&crossed.timezone),
            )
        }
        Alert::RunawayFlagged(flagged) => {
            let session = format!(
                "{} session {}",
                slack_escape(&flagged.agent),
                slack_escape(&flagged.session_id)
            );
            if flagged.reason == "unattended" {
                format!(
                    ":rotating_light: Baton: {session} has worked for over {} minutes without a \
                     prompt ({} spent since the last one).",
                    flagged.minutes,
                    usd(flagged.spent_usd),
                )
            } else {
                format!(
                    ":rotating_light: Baton: {session} is running away: {} spent in {} minutes, \
                     over the {} limit.",
                    usd(flagged.spent_usd),
                    flagged.minutes,
                    usd(flagged.limit_usd),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use uuid::Uuid;

    fn budget(subject: Option<&str>) -> BudgetCrossed {
        BudgetCrossed {
            budget_id: Uuid::nil(),
            scope: if subject.is_some() {
                "project"
            } else {
                "tenant"
            }
            .to_string(),
            subject: subject.map(str::to_string),
            period: "month".to_string(),
            period_start: "2025-06-01".to_string(),
            timezone: "Europe/Paris".to_string(),
            threshold_percent: 80,
            limit_usd: 100.0,
            spent_usd: 81.234,
            crossed_at: Utc.with_ymd_and_hms(2025, 6, 20, 12, 0, 0).unwrap(),
        }
    }

    #[test]
    fn slack_text_names_the_budget_and_escapes_user_values() {
        let text = slack_text(&Alert::BudgetCrossed(budget(Some("<!channel>&co"))));
        assert_eq!(
            text,
            ":warning: Baton: The project &lt;!channel&gt;&amp;co's month budget reached 80% of \
             $100.00: $81.23 spent in the period starting 2025-06-01 (Europe/Paris)."
        );
        let tenant = slack_text(&Alert::BudgetCrossed(budget(None)));
        assert!(tenant.starts_with(":warning: Baton: The tenant's month budget"));
    }

    #[test]
    fn the_baton_body_carries_the_payload_as_published() {
        let crossed = budget(None);
        let envelope = Envelope::new(
            baton_proto::messages::BUDGET_CROSSED,
            Uuid::nil(),
            crossed.crossed_at,
            &crossed,
        )
        .expect("envelope");
        let alert = Alert::parse(EventType::BudgetCrossed, &envelope).expect("payload");
        let body: serde_json::Value = serde_json::from_str(&body(
            Format::Baton,
            EventType::BudgetCrossed,
            &envelope,
            &alert,
        ))
        .expect("json");
        assert_eq!(body["type"], "budget.crossed");
        assert_eq!(body["eventId"], envelope.id.to_string());
        assert_eq!(body["data"]["thresholdPercent"], 80);
        let slack: serde_json::Value = serde_json::from_str(&super::body(
            Format::Slack,
            EventType::BudgetCrossed,
            &envelope,
            &alert,
        ))
        .expect("json");
        assert_eq!(slack.as_object().map(|object| object.len()), Some(1));
        assert!(slack["text"].as_str().is_some());
    }
}
