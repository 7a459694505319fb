use super::*;
use crate::record::{Harness, Modifiers};

fn table() -> PriceTable {
    PriceTable::from_json(
        r#"{"schema":1,"rows":[
        {"model":"m","provider":"anthropic","effectiveFrom":"2026-01-01","input":2,"output":10,"cacheRead":0.2,"cacheWrite5m":2.5,"cacheWrite1h":4,
         "longContext":{"thresholdTokens":200000,"input":4,"output":20,"cacheRead":0.4,"cacheWrite5m":5,"cacheWrite1h":8},
         "fast":{"input":12,"output":60,"cacheRead":1.2,"cacheWrite5m":15,"cacheWrite1h":24},"geo":{"us":1.1},"source":"t","sourceDate":"2026-12-01"},
        {"model":"m","provider":"anthropic","effectiveFrom":"2026-06-01","input":1,"output":5,"cacheRead":0.1,"cacheWrite5m":1.25,"cacheWrite1h":2,
         "longContext":null,"fast":null,"geo":{},"source":"t","sourceDate":"2026-12-01"}]}"#,
    )
    .unwrap()
}

fn record(day: &str, tokens: Tokens, modifiers: Modifiers) -> UsageRecord {
    let at = chrono::DateTime::parse_from_rfc3339(&format!("{day}T12:00:00Z")).unwrap();
    UsageRecord {
        message_id: "x".into(),
        request_id: None,
        harness: Harness::ClaudeCode,
        session_id: "s".into(),
        agent_id: None,
        model: Some("m-20260101".into()),
        timestamp_ms: at.timestamp_millis(),
        tokens,
        server_tools: Default::default(),
        modifiers,
        sidechain: false,
    }
}

fn usd(priced: Priced) -> f64 {
    priced.cost.usd()
}

/// 100,000 input tokens: below the long-context threshold.
const SOME_IN: Tokens = Tokens {
    input: 100_000,
    output: 0,
    cache_read: 0,
    cache_write_5m: 0,
    cache_write_1h: 0,
    reasoning: 0,
};

#[test]
fn each_kind_has_its_own_rate() {
    let tokens = Tokens {
        input: 10_000,
        output: 10_000,
        cache_read: 10_000,
        cache_write_5m: 10_000,
        cache_write_1h: 10_000,
        reasoning: 0,
    };
    let cost = usd(table().price(&record("2026-03-01", tokens, Modifiers::default())));
    assert!(
        (cost - (2.0 + 10.0 + 0.2 + 2.5 + 4.0) / 100.0).abs() < 1e-12,
        "{cost}"
    );
}

#[test]
fn the_row_in_force_on_the_record_date_applies() {
    assert!(
        (usd(table().price(&record("2026-05-31", SOME_IN, Modifiers::default()))) - 0.2).abs()
            < 1e-12
    );
    assert!(
        (usd(table().price(&record("2026-06-01", SOME_IN, Modifiers::default()))) - 0.1).abs()
            < 1e-12
    );
    let before = table().price(&record("2025-12-31", SOME_IN, Modifiers::default()));
    assert_eq!(
        before.unpriced_tokens, 100_000,
        "no row covers a date before the first"
    );
}

#[test]
fn long_context_prices_every_token_of_a_large_request() {
    let large = Tokens {
        input: 100_000,
        output: 1_000,
        cache_read: 150_000,
        ..Tokens::default()
    };
    let cost = usd(table().price(&record("2026-03-01", large, Modifiers::default())));
    let expected = (100_000.0 * 4.0 + 1_000.0 * 20.0 + 150_000.0 * 0.4) / 1e6;
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    let small = Tokens {
        input: 100_000,
        output: 1_000,
        ..Tokens::default()
    };
    let cost = usd(table().price(&record("2026-03-01", small, Modifiers::default())));
    assert!((cost - (100_000.0 * 2.0 + 1_000.0 * 10.0) / 1e6).abs() < 1e-12);
}

#[test]
fn fast_mode_and_geo_change_the_rate() {
    let fast = Modifiers {
        speed: Some("fast".into()),
        ..Modifiers::default()
    };
    assert!((usd(table().price(&record("2026-03-01", SOME_IN, fast))) - 1.2).abs() < 1e-12);
    let us = Modifiers {
        inference_geo: Some("us".into()),
        ..Modifiers::default()
    };
    assert!((usd(table().price(&record("2026-03-01", SOME_IN, us))) - 0.22).abs() < 1e-12);
    let none = Modifiers {
        inference_geo: Some("not_available".into()),
        ..Modifiers::default()
    };
    assert!((usd(table().price(&record("2026-03-01", SOME_IN, none))) - 0.2).abs() < 1e-12);
}

#[test]
fn model_ids_normalise_without_guessing_families() {
    for (raw, expected) in [
        ("claude-opus-4-5-20251101", "claude-opus-4-5"),
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-opus-4-6[1m]", "claude-opus-4-6"),
        (
            "anthropic.claude-haiku-4-5-20251001-v1:0",
            "claude-haiku-4-5",
        ),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("gpt-5.3-codex", "gpt-5.3-codex"),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),
        // Copilot CLI's spellings.
        ("claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("claude-opus-4.6", "claude-opus-4-6"),
        ("gpt-5.2", "gpt-5.2"),
        ("gemini-3-pro-preview", "gemini-3-pro-preview"),
    ] {
        assert_eq!(normalize_model(raw), expected, "{raw}");
    }
}

#[test]
fn the_bundled_table_prices_the_fixture_models() {
    let bundled = PriceTable::bundled();
    let day = NaiveDate::from_ymd_opt(2026, 2, 12).unwrap();
    for model in [
        "claude-opus-4-6",
        "claude-haiku-4-5-20251001",
        "claude-opus-4-5-20251101",
        "gpt-5.3-codex",
    ] {
        assert!(bundled.row_for(model, day).is_some(), "{model}");
    }
}

#[test]
fn a_malformed_table_is_refused() {
    assert!(PriceTable::from_json("{}").is_err());
    assert!(PriceTable::from_json(r#"{"schema":2,"rows":[]}"#).is_err());
}
