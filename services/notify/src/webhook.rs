//! A webhook as the tenant registers it, validated strictly: each refusal names the field and
//! the rule, never the submitted value.

use baton_kit::error::ApiError;
use baton_proto::messages::{BUDGET_CROSSED, RUNAWAY_FLAGGED};

use crate::address::{self, AddressPolicy};

/// Longest URL accepted, in characters.
pub const MAX_URL_LEN: usize = 2048;
/// Live webhooks a tenant may have at once.
pub const MAX_WEBHOOKS_PER_TENANT: i64 = 25;

/// An event a webhook may subscribe to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    BudgetCrossed,
    RunawayFlagged,
}

impl EventType {
    pub const ALL: [EventType; 2] = [EventType::BudgetCrossed, EventType::RunawayFlagged];

    /// The name tenants use (and `X-Baton-Event` carries).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::BudgetCrossed => "budget.crossed",
            EventType::RunawayFlagged => "runaway.flagged",
        }
    }

    pub fn parse(text: &str) -> Option<EventType> {
        EventType::ALL
            .into_iter()
            .find(|event| event.as_str() == text)
    }

    /// The bus message it stands for.
    pub fn routing_key(self) -> &'static str {
        match self {
            EventType::BudgetCrossed => BUDGET_CROSSED,
            EventType::RunawayFlagged => RUNAWAY_FLAGGED,
        }
    }

    pub fn from_routing_key(key: &str) -> Option<EventType> {
        EventType::ALL
            .into_iter()
            .find(|event| event.routing_key() == key)
    }
}

/// How a delivery's body is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Baton's JSON: the event type, ids, instant and the payload.
    Baton,
    /// `{"text": ...}`, which Slack's incoming webhooks (and Mattermost, Rocket.Chat, ...)
    /// post as a message.
    Slack,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Baton => "baton",
            Format::Slack => "slack",
        }
    }

    pub fn parse(text: &str) -> Option<Format> {
        [Format::Baton, Format::Slack]
            .into_iter()
            .find(|format| format.as_str() == text)
    }
}

/// A validated registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWebhook {
    /// The URL as parsed and serialised again (normalised).
    pub url: String,
    /// Distinct, in the order given.
    pub events: Vec<EventType>,
    pub format: Format,
}

/// Checks a URL a delivery may be sent to under `policy` (also what the worker re-checks
/// before each attempt, should the policy have changed since the webhook was created).
pub fn validate_url(raw: &str, policy: AddressPolicy) -> Result<url::Url, ApiError> {
    if raw.is_empty() {
        return Err(ApiError::invalid_input("url is required"));
    }
    if raw.chars().count() > MAX_URL_LEN {
        return Err(ApiError::invalid_input(format!(
            "url must be at most {MAX_URL_LEN} characters"
        )));
    }
    let url = url::Url::parse(raw)
        .map_err(|_| ApiError::invalid_input("url must be an absolute http(s) URL"))?;
    match (url.scheme(), policy) {
        ("https", _) | ("http", AddressPolicy::AllowPrivate) => {}
        ("http", AddressPolicy::PublicOnly) => {
            return Err(ApiError::invalid_input("url must use https"));
        }
        _ => {
            return Err(ApiError::invalid_input(
                "url must be an absolute http(s) URL",
            ));
        }
    }
    let Some(host) = url.host() else {
        return Err(ApiError::invalid_input("url must name a host"));
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ApiError::invalid_input(
            "url must not carry a user name or password",
        ));
    }
    if url.fragment().is_some() {
        return Err(ApiError::invalid_input("url must not carry a fragment"));
    }
    if address::vet_literal(policy, &host).is_err() {
        return Err(ApiError::invalid_input(
            "url must not name a private, loopback or otherwise non-public address",
        ));
    }
    if url.as_str().chars().count() > MAX_URL_LEN {
        return Err(ApiError::invalid_input(format!(
            "url must be at most {MAX_URL_LEN} characters"
        )));
    }
    Ok(url)
}

/// Validates a registration.
pub fn validate(
    url: &str,
    events: &[String],
    format: Option<&str>,
    policy: AddressPolicy,
) -> Result<NewWebhook, ApiError> {
    let url = validate_url(url, policy)?;
    if events.is_empty() {
        return Err(ApiError::invalid_input(
            "events must name at least one of budget.crossed, runaway.flagged",
        ));
    }
    let mut parsed = Vec::with_capacity(events.len());
    for event in events {
        let Some(event) = EventType::parse(event) else {
            return Err(ApiError::invalid_input(
                "events may only contain budget.crossed and runaway.flagged",
            ));
        };
        if parsed.contains(&event) {
            return Err(ApiError::invalid_input("events must not repeat an event"));
        }
        parsed.push(event);
    }
    let format = match format {
        None => Format::Baton,
        Some(text) => Format::parse(text)
            .ok_or_else(|| ApiError::invalid_input("format must be baton or slack"))?,
    };
    Ok(NewWebhook {
        url: url.to_string(),
        events: parsed,
        format,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_kit::error::ErrorCode;

    fn detail(url: &str, events: &[&str], format: Option<&str>, policy: AddressPolicy) -> String {
        let events: Vec<String> = events.iter().map(|event| event.to_string()).collect();
        let error = validate(url, &events, format, policy).expect_err("refused");
        assert_eq!(error.code, ErrorCode::InvalidInput);
        error.detail
    }

    #[test]
    fn urls_are_absolute_bounded_and_https_when_hosted() {
        let hosted = AddressPolicy::PublicOnly;
        let events = ["budget.crossed"];
        assert_eq!(detail("", &events, None, hosted), "url is required");
        assert!(detail("/hook", &events, None, hosted).contains("absolute"));
        assert!(detail("ftp://example.com/", &events, None, hosted).contains("absolute"));
        assert_eq!(
            detail("http://example.com/", &events, None, hosted),
            "url must use https"
        );
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(detail(&long, &events, None, hosted).contains("2048"));
        assert!(detail("https://u:p@example.com/", &events, None, hosted).contains("password"));
        assert!(detail("https://10.0.0.1/", &events, None, hosted).contains("non-public"));
        assert!(detail("https://[::1]/", &events, None, hosted).contains("non-public"));
        let self_hosted = AddressPolicy::AllowPrivate;
        let allowed = validate(
            "http://10.0.0.1:8080/hook",
            &["runaway.flagged".to_string()],
            None,
            self_hosted,
        )
        .expect("self-hosted allows http and private addresses");
        assert_eq!(allowed.url, "http://10.0.0.1:8080/hook");
    }

    #[test]
    fn events_are_known_distinct_and_at_least_one_and_formats_are_known() {
        let hosted = AddressPolicy::PublicOnly;
        let url = "https://hooks.example.com/baton";
        assert!(detail(url, &[], None, hosted).contains("at least one"));
        assert!(detail(url, &["budget.exceeded"], None, hosted).contains("only contain"));
        assert!(
            detail(url, &["budget.crossed", "budget.crossed"], None, hosted).contains("repeat")
        );
        assert!(detail(url, &["budget.crossed"], Some("teams"), hosted).contains("baton or slack"));
        let webhook = validate(
            url,
            &["runaway.flagged".to_string(), "budget.crossed".to_string()],
            Some("slack"),
            hosted,
        )
        .expect("valid");
        assert_eq!(
            webhook.events,
            vec![EventType::RunawayFlagged, EventType::BudgetCrossed]
        );
        assert_eq!(webhook.format, Format::Slack);
    }
}
