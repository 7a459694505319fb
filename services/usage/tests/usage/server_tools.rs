//! Reasoning tokens and server-tool calls (issue 22): stored, priced from the dated
//! `serverTools` rows ($10 per 1000 Anthropic web searches from 2025-05-07, web fetch free from
//! 2025-09-10), summed into the rollups and shown beside the tokens in every read; a call
//! before any row is an unpriced call, never $0, until an import prices it.

use uuid::Uuid;

use baton_proto::usage::v1 as proto;

use crate::*;

/// A row with reasoning inside its output and server-tool calls.
fn with_calls(
    mut fact: proto::UsageFact,
    reasoning: u64,
    searches: u64,
    fetches: u64,
) -> proto::UsageFact {
    fact.reasoning = reasoning;
    fact.web_search_requests = searches;
    fact.web_fetch_requests = fetches;
    fact
}

/// `s-1`: the main agent's request made 3 searches and 1 fetch with 40 reasoning tokens, its
/// subagent `a1`'s made 2 searches. `calls = false` sends the same tokens without any of it.
fn searching_batch(calls: bool) -> proto::UploadBatchRequest {
    let keep = |count: u64| if calls { count } else { 0 };
    let mut request = batch("h");
    request.sessions = vec![session("s-1")];
    request.agents = vec![subagent("s-1", "a1", "claude-haiku-4-5")];
    let main = lead("m1", "claude-sonnet-4-5", "2026-03-01T10:01:00Z", 100);
    let sub = sidechain("a1", "m2", "claude-haiku-4-5", "2026-03-01T10:06:00Z", 20);
    request.usage = vec![
        with_calls(main, keep(40), keep(3), keep(1)),
        with_calls(sub, 0, keep(2), 0),
    ];
    request
}

async fn query(harness: &Harness, tenant: Uuid, group_by: &str) -> proto::QueryUsageResponse {
    harness
        .query(
            tenant,
            proto::QueryUsageRequest {
                split_by_model: true,
                ..usage_query("2025-05-01T00:00:00Z", "2026-03-02T00:00:00Z", group_by)
            },
        )
        .await
        .expect("query")
}

async fn upload(harness: &Harness, tenant: Uuid, request: proto::UploadBatchRequest) {
    harness.upload(tenant, NOW, request).await;
}

fn tools(figures: Option<&proto::Figures>) -> proto::ServerToolFigures {
    figures
        .and_then(|figures| figures.server_tools)
        .expect("server tools")
}

fn close(left: f64, right: f64) -> bool {
    (left - right).abs() < 1e-12
}

#[tokio::test]
async fn reasoning_and_web_searches_are_stored_priced_and_shown_in_every_read() {
    let harness = Harness::new().await;
    let (tenant, control) = (Uuid::new_v4(), Uuid::new_v4());
    upload(&harness, tenant, searching_batch(true)).await;
    upload(&harness, control, searching_batch(false)).await;
    assert_rollups_consistent(&harness.admin, tenant).await;

    // QueryUsage from the rollups (whole days) and from the rows (sessions) agree.
    let by_day = query(&harness, tenant, "day").await;
    let by_session = query(&harness, tenant, "session").await;
    let total = by_day.total.clone().expect("total");
    assert_eq!(by_session.total, by_day.total);
    let tokens = total.tokens.expect("tokens");
    assert_eq!((tokens.output, tokens.reasoning), (120, 40));
    assert_eq!(tokens.total, 2 * 1234 + 120, "reasoning is inside output");
    let searched = tools(Some(&total));
    assert_eq!(
        (searched.web_search_requests, searched.web_fetch_requests),
        (5, 1)
    );
    // Five searches at $10 per thousand; the fetch is priced, at $0.
    assert!(close(searched.cost_usd, 0.05), "{searched:?}");
    assert_eq!(searched.unpriced_calls, 0);
    let without = query(&harness, control, "day").await.total.expect("total");
    assert!(
        close(total.cost_usd, without.cost_usd + 0.05),
        "the calls' cost is part of the dollars: {} vs {}",
        total.cost_usd,
        without.cost_usd
    );
    assert_eq!(total.unpriced_tokens, 0);
    let day = &by_day.groups[0];
    assert_eq!(day.key, "2026-03-01");
    let sonnet = day
        .by_model
        .iter()
        .find(|model| model.model == "claude-sonnet-4-5")
        .expect("sonnet");
    assert_eq!(tools(sonnet.figures.as_ref()).web_search_requests, 3);

    // SessionFigures: the session's summary carries the same figures.
    let summaries = harness
        .figures(tenant, vec![reference(AGENT, "s-1")])
        .await
        .expect("session figures");
    assert_eq!(summaries[0].figures.as_ref(), Some(&total));

    // GetTree: each agent's own calls, rolled up into the main agent's.
    let tree = harness.tree(tenant, NOW).await.expect("tree");
    let searches = |agent: &proto::TreeAgent| {
        (
            tools(agent.own.as_ref()).web_search_requests,
            tools(agent.rolled_up.as_ref()).web_search_requests,
            agent
                .own
                .as_ref()
                .and_then(|own| own.tokens)
                .map(|t| t.reasoning),
        )
    };
    let per_agent: Vec<_> = tree
        .agents
        .iter()
        .map(|agent| (agent.agent_id.clone(), searches(agent)))
        .collect();
    assert_eq!(
        per_agent,
        [
            (None, (3, 5, Some(40))),
            (Some("a1".to_string()), (2, 2, Some(0)))
        ]
    );
    assert_eq!(
        tree.session.and_then(|session| session.figures).as_ref(),
        Some(&total)
    );
    let savings = tree.delegation_savings.expect("savings");
    assert!(close(savings.actual_usd, total.cost_usd), "{savings:?}");

    // The same batch again changes nothing.
    let before = snapshot(&harness.admin, tenant).await;
    let again = harness.upload(tenant, NOW, searching_batch(true)).await;
    assert_eq!((again.usage_inserted, again.usage_unchanged), (0, 2));
    assert_eq!(snapshot(&harness.admin, tenant).await, before);
}

#[tokio::test]
async fn a_replaced_row_carries_the_survivors_calls_and_reasoning() {
    let (harness, tenant) = Harness::with_tenant().await;
    let first = lead("m1", "claude-sonnet-4-5", "2026-03-01T10:01:00Z", 10);
    let request = session_usage(vec![with_calls(first.clone(), 5, 1, 0)]);
    upload(&harness, tenant, request).await;
    // A streamed copy with a larger total survives, with its own counts.
    let mut request = batch("h");
    request.usage = vec![with_calls(
        lead("m1", "claude-sonnet-4-5", "2026-03-01T10:01:00Z", 90),
        60,
        4,
        2,
    )];
    let replaced = harness.upload(tenant, NOW, request).await;
    assert_eq!(replaced.usage_replaced, 1);
    // The smaller copy again yields.
    let mut request = batch("h");
    request.usage = vec![with_calls(first, 5, 1, 0)];
    upload(&harness, tenant, request).await;
    assert_rollups_consistent(&harness.admin, tenant).await;
    let total = query(&harness, tenant, "day").await.total.expect("total");
    let tokens = total.tokens.expect("tokens");
    assert_eq!(
        (tokens.output, tokens.reasoning, total.requests),
        (90, 60, 1)
    );
    let calls = tools(Some(&total));
    assert_eq!(
        (calls.web_search_requests, calls.web_fetch_requests),
        (4, 2)
    );
    assert!(close(calls.cost_usd, 0.04), "{calls:?}");
}

/// A web search price from before the bundled table's first row.
const EARLY_SEARCH_PRICE: &str = r#"{"schema": 1, "rows": [], "serverTools": [{
  "provider": "anthropic", "tool": "web_search", "effectiveFrom": "2025-05-01",
  "usdPerThousand": 10, "source": "test", "sourceDate": "2026-03-01", "note": ""}]}"#;

#[tokio::test]
async fn a_search_before_any_price_row_is_an_unpriced_call_until_an_import_prices_it() {
    let (harness, tenant) = Harness::with_tenant().await;
    let request = session_usage(vec![with_calls(
        lead("m1", "claude-3-7-sonnet", "2025-05-06T12:00:00Z", 10),
        0,
        4,
        0,
    )]);
    upload(&harness, tenant, request).await;
    let before = query(&harness, tenant, "day").await.total.expect("total");
    let calls = tools(Some(&before));
    assert_eq!((calls.web_search_requests, calls.unpriced_calls), (4, 4));
    assert_eq!(
        calls.cost_usd, 0.0,
        "no row: unpriced calls, never $0 shown alone"
    );
    assert_eq!(before.unpriced_tokens, 0, "the tokens are priced");

    let imported = baton_usage::pricing::import(&harness.admin, EARLY_SEARCH_PRICE)
        .await
        .expect("import");
    assert_eq!((imported.rows_changed, imported.usage_repriced), (1, 1));
    assert_rollups_consistent(&harness.admin, tenant).await;
    let after = query(&harness, tenant, "day").await.total.expect("total");
    let calls = tools(Some(&after));
    assert_eq!(calls.unpriced_calls, 0);
    assert!(close(calls.cost_usd, 0.04), "{calls:?}");
    assert!(close(after.cost_usd, before.cost_usd + 0.04), "{after:?}");
    // The same file again changes nothing; the service's cached table sees the new row.
    let again = baton_usage::pricing::import(&harness.admin, EARLY_SEARCH_PRICE)
        .await
        .expect("again");
    assert_eq!((again.rows_changed, again.usage_repriced), (0, 0));
    let mut request = batch("h");
    request.usage = vec![with_calls(
        lead("m2", "claude-3-7-sonnet", "2025-05-06T12:05:00Z", 10),
        0,
        1,
        0,
    )];
    upload(&harness, tenant, request).await;
    let later = query(&harness, tenant, "day").await.total.expect("total");
    assert_eq!(tools(Some(&later)).unpriced_calls, 0);
}
