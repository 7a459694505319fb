//! Figures: tokens by kind, cost, requests and the unpriced tokens beside every dollar figure
//! (pure). A dollar figure is never shown alone: the tokens no price row covered are counted
//! per model (normalised id; a row without a model reads `unknown`).

use std::collections::BTreeMap;

use baton_proto::usage::v1 as proto;

/// Sums of one slice of usage, by model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sums {
    pub tokens: [u64; 5],
    pub requests: u64,
    /// 10⁻¹⁵ USD.
    pub cost: u128,
    pub unpriced: BTreeMap<String, u64>,
}

impl Sums {
    /// Adds one aggregated row of `model` (`""` = no model).
    pub fn add(&mut self, model: &str, tokens: [i64; 5], requests: i64, cost: i128, unpriced: i64) {
        for (mine, theirs) in self.tokens.iter_mut().zip(tokens) {
            *mine += theirs.max(0) as u64;
        }
        self.requests += requests.max(0) as u64;
        self.cost += cost.max(0) as u128;
        if unpriced > 0 {
            let name = if model.is_empty() { "unknown" } else { model };
            *self.unpriced.entry(name.to_string()).or_default() += unpriced as u64;
        }
    }

    pub fn merge(&mut self, other: &Sums) {
        for (mine, theirs) in self.tokens.iter_mut().zip(other.tokens) {
            *mine += theirs;
        }
        self.requests += other.requests;
        self.cost += other.cost;
        for (model, tokens) in &other.unpriced {
            *self.unpriced.entry(model.clone()).or_default() += tokens;
        }
    }

    pub fn figures(&self) -> proto::Figures {
        let [input, output, cache_read, cache_write_5m, cache_write_1h] = self.tokens;
        proto::Figures {
            tokens: Some(proto::Tokens {
                input,
                output,
                cache_read,
                cache_write_5m,
                cache_write_1h,
                total: self.tokens.iter().sum(),
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

    #[test]
    fn unpriced_tokens_stand_beside_the_dollars_by_model() {
        let mut sums = Sums::default();
        sums.add(
            "claude-opus-4-5",
            [10, 20, 0, 0, 0],
            2,
            5_000_000_000_000,
            0,
        );
        sums.add("mystery-model", [1, 2, 3, 4, 5], 1, 0, 15);
        sums.add("", [0, 7, 0, 0, 0], 1, 0, 7);
        let mut other = Sums::default();
        other.add("mystery-model", [5, 0, 0, 0, 0], 1, 0, 5);
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
}
