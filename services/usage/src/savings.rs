//! Delegation savings (pure): what the session would have cost with every agent's requests
//! priced at the counterfactual model (the main agent's), against what it did cost. Always an
//! estimate (`isEstimate: true`): the counterfactual model would not have produced the same
//! tokens.
//!
//! - An agent is left out (its id in `skippedAgentIds`) when any of its requests is unpriced
//!   (no model, or a model without a row) or the counterfactual model has no row for one of
//!   its requests' dates; with no priceable counterfactual model every agent is left out.
//! - The main agent is included like any other (at its own model the two figures agree); it
//!   has no id, so it never appears among the skipped.
//! - Server-tool calls cost the same whichever model made them: their priced cost is on both
//!   sides, so it never moves the savings.

use std::collections::BTreeMap;

use baton_proto::usage::v1 as proto;
use baton_usage_model::{PriceTable, UsageRecord};

use crate::figures::usd;
use crate::row_price::RowPrice;

/// One stored request: the record and its stored price.
#[derive(Debug, Clone)]
pub struct PricedRow {
    pub record: UsageRecord,
    pub price: RowPrice,
}

/// `rows` by agent id (`""` = main).
pub fn savings(
    rows: &BTreeMap<String, Vec<PricedRow>>,
    counterfactual_model: Option<&str>,
    table: &PriceTable,
) -> proto::DelegationSavings {
    let mut actual: u128 = 0;
    let mut counterfactual: u128 = 0;
    let mut skipped = Vec::new();
    for (agent_id, requests) in rows {
        let priced = counterfactual_model.and_then(|model| {
            let mut own: u128 = 0;
            let mut other: u128 = 0;
            for row in requests {
                if !row.price.priced {
                    return None;
                }
                let date =
                    chrono::DateTime::from_timestamp_millis(row.record.timestamp_ms)?.date_naive();
                let counter_row = table.row_for(model, date)?;
                let mut moved = row.record.clone();
                moved.model = Some(model.to_string());
                own += row.price.cost;
                other += PriceTable::price_with(Some(counter_row), &moved).cost.0
                    + row.price.server_tool_cost;
            }
            Some((own, other))
        });
        match priced {
            Some((own, other)) => {
                actual += own;
                counterfactual += other;
            }
            None if !agent_id.is_empty() => skipped.push(agent_id.clone()),
            None => {}
        }
    }
    let (actual_usd, counterfactual_usd) = (usd(actual), usd(counterfactual));
    proto::DelegationSavings {
        actual_usd,
        counterfactual_usd,
        savings_usd: usd(counterfactual.saturating_sub(actual))
            - usd(actual.saturating_sub(counterfactual)),
        is_estimate: true,
        skipped_agent_ids: skipped,
        counterfactual_model: counterfactual_model.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_usage_model::record::{Harness, Modifiers, Tokens};

    fn row(agent: Option<&str>, model: Option<&str>, output: u64, table: &PriceTable) -> PricedRow {
        let record = UsageRecord {
            message_id: "m".to_string(),
            request_id: None,
            harness: Harness::ClaudeCode,
            session_id: "s".to_string(),
            agent_id: agent.map(str::to_string),
            model: model.map(str::to_string),
            // 2026-03-01
            timestamp_ms: 1_772_323_200_000,
            tokens: Tokens {
                input: 1_000_000,
                output,
                ..Tokens::default()
            },
            server_tools: Default::default(),
            modifiers: Modifiers::default(),
            sidechain: agent.is_some(),
        };
        let price = crate::row_price::price(table, &record);
        PricedRow { record, price }
    }

    #[test]
    fn subagents_on_a_cheaper_model_save_what_the_main_model_would_have_cost() {
        let table = PriceTable::bundled();
        let main = "claude-opus-4-5";
        let mut rows = BTreeMap::new();
        rows.insert(String::new(), vec![row(None, Some(main), 1000, &table)]);
        rows.insert(
            "a1".to_string(),
            vec![row(Some("a1"), Some("claude-haiku-4-5"), 1000, &table)],
        );
        rows.insert(
            "a2".to_string(),
            vec![row(Some("a2"), Some("no-such-model"), 1000, &table)],
        );
        rows.insert("a3".to_string(), vec![row(Some("a3"), None, 1000, &table)]);
        let answer = savings(&rows, Some(main), &table);
        assert!(answer.is_estimate);
        assert_eq!(answer.skipped_agent_ids, ["a2", "a3"]);
        assert!(answer.counterfactual_usd > answer.actual_usd, "{answer:?}");
        let expected = answer.counterfactual_usd - answer.actual_usd;
        assert!((answer.savings_usd - expected).abs() < 1e-9);
        // Without a counterfactual model every subagent is left out, and nothing is claimed.
        let none = savings(&rows, None, &table);
        assert_eq!(none.skipped_agent_ids, ["a1", "a2", "a3"]);
        assert_eq!((none.actual_usd, none.savings_usd), (0.0, 0.0));
    }
}
