//! Figures: tokens by kind, cost, requests, server-tool calls and what could not be priced
//! beside every dollar figure (pure). A dollar figure is never shown alone: the tokens no
//! price row covered are counted per model (normalised id; a row without a model reads
//! `unknown`), and the server-tool calls no row covered are counted beside them.

use std::collections::BTreeMap;

use baton_proto::usage::v1 as proto;

use crate::rollups::Delta;

/// Sums of one slice of usage, by model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sums {
    /// input, output, cache read, cache write 5m, cache write 1h.
    pub tokens: [u64; 5],
    /// Part of output.
    pub reasoning: u64,
    pub requests: u64,
    /// 10⁻¹⁵ USD, tokens and server-tool calls.
    pub cost: u128,
    pub unpriced: BTreeMap<String, u64>,
    /// Server-tool calls: web search, web fetch.
    pub server_tools: [u64; 2],
    /// The part of `cost` that is server-tool calls.
    pub server_tool_cost: u128,
    pub unpriced_calls: u64,
}

impl Sums {
    /// Adds one aggregated row of `model` (`""` = no model). Negative parts (rollup rows
    /// netted below zero, which stored data never gives) count as zero.
    pub fn add(&mut self, model: &str, delta: &Delta) {
        for (mine, theirs) in self.tokens.iter_mut().zip(delta.tokens) {
            *mine += theirs.max(0) as u64;
        }
        self.reasoning += delta.reasoning.max(0) as u64;
        self.requests += delta.requests.max(0) as u64;
        self.cost += delta.cost.max(0) as u128;
        if delta.unpriced_tokens > 0 {
            let name = if model.is_empty() { "unknown" } else { model };
            *self.unpriced.entry(name.to_string()).or_default() += delta.unpriced_tokens as u64;
        }
        for (mine, theirs) in self.server_tools.iter_mut().zip(delta.server_tools) {
            *mine += theirs.max(0) as u64;
        }
        self.server_tool_cost += delta.server_tool_cost.max(0) as u128;
        self.unpriced_calls += delta.unpriced_calls.max(0) as u64;
    }

    pub fn merge(&mut self, other: &Sums) {
        for (mine, theirs) in self.tokens.iter_mut().zip(other.tokens) {
            *mine += theirs;
        }
        self.reasoning += other.reasoning;
        self.requests += other.requests;
        self.cost += other.cost;
        for (model, tokens) in &other.unpriced {
            *self.unpriced.entry(model.clone()).or_default() += tokens;
        }
        for (mine, theirs) in self.server_tools.iter_mut().zip(other.server_tools) {
            *mine += theirs;
        }
        self.server_tool_cost += other.server_tool_cost;
        self.unpriced_calls += other.unpriced_calls;
    }

    pub fn figures(&self) -> proto::Figures {
        let [input, output, cache_read, cache_write_5m, cache_write_1h] = self.tokens;
        let [web_search_requests, web_fetch_requests] = self.server_tools;
        proto::Figures {
            tokens: Some(proto::Tokens {
                input,
                output,
                cache_read,
                cache_write_5m,
                cache_write_1h,
                total: self.tokens.iter().sum(),
                reasoning: self.reasoning,
            }),
            cost_usd: usd(self.cost),
            unpriced_tokens: self.unpriced.values().sum(),
            unpriced: self
                .unpriced
                .iter()
                .map(|(model, tokens)| proto::UnpricedModel {
                    model: model.clone(),
                    tokens: *tokens,
                })
                .collect(),
            requests: self.requests,
            server_tools: Some(proto::ServerToolFigures {
                web_search_requests,
                web_fetch_requests,
                cost_usd: usd(self.server_tool_cost),
                unpriced_calls: self.unpriced_calls,
            }),
        }
    }
}

/// 10⁻¹⁵ USD as dollars.
pub fn usd(cost: u128) -> f64 {
    cost as f64 / 1e15
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(tokens: [i64; 5], requests: i64, cost: i128, unpriced: i64) -> Delta {
        Delta {
            tokens,
            requests,
            cost,
            unpriced_tokens: unpriced,
            ..Delta::default()
        }
    }

    #[test]
    fn unpriced_tokens_stand_beside_the_dollars_by_model() {
        let mut sums = Sums::default();
        sums.add(
            "claude-opus-4-5",
            &delta([10, 20, 0, 0, 0], 2, 5_000_000_000_000, 0),
        );
        sums.add("mystery-model", &delta([1, 2, 3, 4, 5], 1, 0, 15));
        sums.add("", &delta([0, 7, 0, 0, 0], 1, 0, 7));
        let mut other = Sums::default();
        other.add("mystery-model", &delta([5, 0, 0, 0, 0], 1, 0, 5));
        sums.merge(&other);
        let figures = sums.figures();
        assert_eq!(figures.cost_usd, 0.005);
        assert_eq!(figures.unpriced_tokens, 27);
        assert_eq!(figures.requests, 5);
        let unpriced: Vec<(&str, u64)> = figures
            .unpriced
            .iter()
            .map(|m| (m.model.as_str(), m.tokens))
            .collect();
        assert_eq!(unpriced, [("mystery-model", 20), ("unknown", 7)]);
        assert_eq!(figures.tokens.expect("tokens").total, 57);
    }

    #[test]
    fn reasoning_stays_out_of_the_total_and_server_tool_calls_stand_beside_the_dollars() {
        let mut sums = Sums::default();
        // Three searches at $0.01 each inside a $0.05 request, one fetch without a row.
        sums.add(
            "claude-sonnet-4-5",
            &Delta {
                tokens: [10, 20, 0, 0, 0],
                reasoning: 15,
                requests: 1,
                cost: 50_000_000_000_000,
                server_tools: [3, 1],
                server_tool_cost: 30_000_000_000_000,
                unpriced_calls: 1,
                ..Delta::default()
            },
        );
        let figures = sums.figures();
        let tokens = figures.tokens.expect("tokens");
        assert_eq!(
            (tokens.total, tokens.output, tokens.reasoning),
            (30, 20, 15)
        );
        assert_eq!(figures.cost_usd, 0.05);
        let tools = figures.server_tools.expect("server tools");
        assert_eq!(
            (tools.web_search_requests, tools.web_fetch_requests),
            (3, 1)
        );
        assert_eq!((tools.cost_usd, tools.unpriced_calls), (0.03, 1));
    }
}
