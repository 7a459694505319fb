//! One `session.usage_record` receipt: Baton's token kinds and its usage record.

use serde::Deserialize;

use crate::record::{Harness, Modifiers, Tokens, UsageRecord};

/// `data.usage` of a receipt (the fields Baton reads; `AssistantUsageData` in the package's
/// `copilot-sdk/generated/session-events.d.ts`).
#[derive(Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptUsage {
    #[serde(default)]
    pub model: Option<String>,
    /// The whole prompt: cache reads and cache writes included (see [`tokens`]).
    #[serde(default)]
    pub input_tokens: u64,
    /// Reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// `false` for a request served by GitHub's own Copilot service (billed in premium
    /// requests), `true` for a bring-your-own-key provider.
    #[serde(default)]
    pub is_byok: Option<bool>,
    #[serde(default)]
    pub accounting: Option<Accounting>,
}

/// The receipt's accounting identity, "assigned under the source session's emission lock"
/// (`UsageAccountingIdentity`): a subagent's receipts have a source session of their own.
#[derive(Deserialize, Debug, Clone, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Accounting {
    pub source_session_id: String,
    pub sequence: u64,
}

/// The service tier written on a request GitHub's Copilot service served: it is billed in
/// premium requests, so the dollar figure Baton prices it at is the model's API list price,
/// labelled by this tier.
pub const COPILOT_SERVICE_TIER: &str = "copilot";

/// Baton's kinds from a receipt. Copilot CLI normalises every provider to one shape:
/// `inputTokens` is the whole prompt with cache reads **and cache writes** inside it (an
/// Anthropic response of `input_tokens` 300, `cache_creation_input_tokens` 200,
/// `cache_read_input_tokens` 500 was recorded as `inputTokens` 1000, `cacheWriteTokens` 200,
/// `cacheReadTokens` 500; an OpenAI `prompt_tokens` 1000 with 100 cached as `inputTokens`
/// 1000), and `outputTokens` has reasoning inside it (`completion_tokens` 50 with
/// `reasoning_tokens` 30 was recorded as `outputTokens` 50, `reasoningTokens` 30). So input =
/// input − cache read − cache write (clamped at zero), output as written, reasoning kept apart
/// as a figure already inside output. Cache writes are counted as 5-minute writes: the
/// receipt states no duration, and 5 minutes is the default of every provider that prices it.
pub fn tokens(usage: &ReceiptUsage) -> Tokens {
    Tokens {
        input: usage
            .input_tokens
            .saturating_sub(usage.cache_read_tokens)
            .saturating_sub(usage.cache_write_tokens),
        output: usage.output_tokens,
        cache_read: usage.cache_read_tokens,
        cache_write_5m: usage.cache_write_tokens,
        cache_write_1h: 0,
        reasoning: usage.reasoning_tokens,
    }
}

/// The record of one receipt. `event_id` (the line's own id) names a receipt without an
/// accounting identity; `agent_id` is the line's top-level `agentId` (a subagent's request).
pub fn record(
    usage: ReceiptUsage,
    event_id: &str,
    agent_id: Option<String>,
    timestamp_ms: i64,
) -> UsageRecord {
    let message_id = match &usage.accounting {
        Some(accounting) => format!("{}:{}", accounting.source_session_id, accounting.sequence),
        None => event_id.to_string(),
    };
    let served_by_copilot = usage.is_byok == Some(false);
    UsageRecord {
        message_id,
        request_id: None,
        harness: Harness::Copilot,
        // The session is the folder's; the corpus sets it.
        session_id: String::new(),
        agent_id,
        tokens: tokens(&usage),
        model: usage.model,
        timestamp_ms,
        server_tools: Default::default(),
        modifiers: Modifiers {
            service_tier: served_by_copilot.then(|| COPILOT_SERVICE_TIER.to_string()),
            ..Modifiers::default()
        },
        sidechain: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_a_receipt() {
        let usage = |input, output, read, write, reasoning| ReceiptUsage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
            reasoning_tokens: reasoning,
            ..ReceiptUsage::default()
        };
        // (receipt, input, output, cache read, cache write, reasoning)
        let cases = [
            // OpenAI chat completions as the real client recorded them.
            (usage(1001, 7, 100, 0, 0), 901, 7, 100, 0, 0),
            (usage(1000, 50, 100, 200, 30), 700, 50, 100, 200, 30),
            // Anthropic: 300 uncached + 200 written + 500 read.
            (usage(1000, 40, 500, 200, 0), 300, 40, 500, 200, 0),
            (usage(10, 5, 0, 0, 0), 10, 5, 0, 0, 0),
            // Cache counts above the prompt's never make input negative.
            (usage(10, 0, 8, 8, 0), 0, 0, 8, 8, 0),
        ];
        for (receipt, input, output, read, write, reasoning) in cases {
            let got = tokens(&receipt);
            assert_eq!(
                (
                    got.input,
                    got.output,
                    got.cache_read,
                    got.cache_write_5m,
                    got.reasoning
                ),
                (input, output, read, write, reasoning),
                "{receipt:?}"
            );
            assert_eq!(got.cache_write_1h, 0);
        }
    }

    #[test]
    fn identity_and_tier_of_a_record() {
        let accounting = Some(Accounting {
            source_session_id: "s-1".to_string(),
            sequence: 3,
        });
        // (is_byok, accounting, message id, service tier)
        let cases = [
            (Some(true), accounting.clone(), "s-1:3", None),
            (Some(false), accounting.clone(), "s-1:3", Some("copilot")),
            (None, accounting, "s-1:3", None),
            (Some(true), None, "event-9", None),
        ];
        for (is_byok, accounting, message_id, tier) in cases {
            let usage = ReceiptUsage {
                is_byok,
                accounting,
                ..ReceiptUsage::default()
            };
            let record = record(usage, "event-9", None, 0);
            assert_eq!(record.message_id, message_id, "{is_byok:?}");
            assert_eq!(
                record.modifiers.service_tier.as_deref(),
                tier,
                "{is_byok:?}"
            );
            assert_eq!(record.harness, Harness::Copilot);
        }
    }
}
