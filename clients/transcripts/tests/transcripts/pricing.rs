//! Pricing over records from real files: the halt gate, re-pricing, and the modifiers.

use baton_transcripts::PriceTable;

use crate::corpus::{Layout, assistant};

const USAGE: &str = r#"{"input_tokens":1000000,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}"#;

fn row(model: &str, input: f64) -> String {
    format!(
        r#"{{"schema":1,"rows":[{{"model":"{model}","provider":"anthropic","effectiveFrom":"2026-01-01","input":{input},"output":1,"cacheRead":1,"cacheWrite5m":1,"cacheWrite1h":1,"longContext":null,"fast":null,"geo":{{}},"source":"test","sourceDate":"2026-12-01"}}]}}"#
    )
}

#[test]
fn a_model_without_a_price_row_is_unpriced_never_zero_and_a_later_row_prices_it() {
    let layout = Layout::new();
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant("msg_1", Some("r1"), false, "claude-nova-9", USAGE),
    );
    let corpus = layout.scan();
    let mut prices = PriceTable::bundled();
    let before = prices.price(&corpus.records[0]);
    assert_eq!(before.unpriced_tokens, 1_000_000);
    assert_eq!(before.cost.0, 0);
    prices.extend_json(&row("claude-nova-9", 7.0)).unwrap();
    let after = prices.price(&corpus.records[0]);
    assert_eq!(after.unpriced_tokens, 0);
    assert!((after.cost.usd() - 7.0).abs() < 1e-12);
}

/// A layout holding one Claude Code line from dated Haiku 4.5 with `usage`.
fn haiku_layout(usage: &str) -> Layout {
    let layout = Layout::new();
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant(
            "msg_1",
            Some("r1"),
            false,
            "claude-haiku-4-5-20251001",
            usage,
        ),
    );
    layout
}

#[test]
fn dated_model_ids_find_their_row() {
    let layout = haiku_layout(USAGE);
    let priced = PriceTable::bundled().price(&layout.scan().records[0]);
    assert_eq!(priced.unpriced_tokens, 0);
    assert!(
        (priced.cost.usd() - 1.0).abs() < 1e-12,
        "Haiku 4.5 input is $1 per million"
    );
}

#[test]
fn synthetic_lines_cost_zero_through_their_row() {
    let layout = Layout::new();
    let usage = r#"{"input_tokens":0,"output_tokens":0}"#;
    layout.claude_file(
        "-p/s1.jsonl",
        &assistant("5c0a4f3e-uuid", None, false, "<synthetic>", usage),
    );
    let corpus = layout.scan();
    let prices = PriceTable::bundled();
    assert!(
        prices
            .row_for(
                "<synthetic>",
                chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap()
            )
            .is_some()
    );
    assert_eq!(prices.price(&corpus.records[0]).unpriced_tokens, 0);
}

/// Haiku 4.5 input at $1 per million plus server tools, on the line's date (2026-03-01).
const WITH_SERVER_TOOLS: &str = r#"{"input_tokens":1000000,"output_tokens":0,"server_tool_use":{"web_search_requests":3,"web_fetch_requests":2}}"#;

#[test]
fn web_searches_are_counted_per_request_and_priced_per_call_beside_the_tokens() {
    let layout = haiku_layout(WITH_SERVER_TOOLS);
    let corpus = layout.scan();
    let record = &corpus.records[0];
    assert_eq!(
        (
            record.server_tools.web_search,
            record.server_tools.web_fetch
        ),
        (3, 2)
    );
    let priced = PriceTable::bundled().price(record);
    assert!(
        (priced.server_tool_cost.usd() - 0.03).abs() < 1e-12,
        "3 searches at $10 per 1,000; fetches are free: {}",
        priced.server_tool_cost.usd()
    );
    assert!(
        (priced.cost.usd() - 1.03).abs() < 1e-12,
        "tokens plus calls"
    );
    assert_eq!(priced.unpriced_calls, 0);
}

#[test]
fn server_tool_calls_before_any_dated_row_are_unpriced_never_free() {
    let table = PriceTable::bundled();
    let tools = baton_transcripts::ServerTools {
        web_search: 4,
        web_fetch: 0,
    };
    let before_launch = chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap();
    let priced = table.price_server_tools(
        baton_transcripts::Harness::ClaudeCode,
        &tools,
        before_launch,
    );
    assert_eq!((priced.cost.0, priced.unpriced_calls), (0, 4));
    // Codex rollouts state no server-tool calls, and no openai row exists: never a confident $0.
    let later = chrono::NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
    let codex = table.price_server_tools(baton_transcripts::Harness::Codex, &tools, later);
    assert_eq!(codex.unpriced_calls, 4);
}
