//! Token totals per (day, model) from either report, and their differences. Compared: input,
//! output, cache read, and cache creation (Baton's 5m + 1h writes against ccusage's one figure).
//! A model whose four figures are all zero (`<synthetic>`) may be on one side only, so such
//! entries are dropped before comparing.

use std::collections::BTreeMap;

use serde_json::Value;

/// input, output, cache read, cache creation.
pub type Tokens = [u64; 4];
/// Keyed by (day, model).
pub type Totals = BTreeMap<(String, String), Tokens>;

fn number(value: &Value, key: &str) -> anyhow::Result<u64> {
    value[key]
        .as_u64()
        .ok_or_else(|| anyhow::anyhow!("no number {key:?} in {value}"))
}

fn add(totals: &mut Totals, day: &str, model: &str, tokens: Tokens) {
    if tokens == [0; 4] {
        return;
    }
    let entry = totals
        .entry((day.to_string(), model.to_string()))
        .or_default();
    for (sum, part) in entry.iter_mut().zip(tokens) {
        *sum += part;
    }
}

fn array<'json>(value: &'json Value, key: &str) -> anyhow::Result<&'json Vec<Value>> {
    value[key]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("no array {key:?} in the report"))
}

/// Baton: `rows[].date`, `rows[].models[].{model, tokens{…}}`.
pub fn baton_totals(report: &Value) -> anyhow::Result<Totals> {
    let mut totals = Totals::new();
    for row in array(report, "rows")? {
        let day = row["date"].as_str().unwrap_or_default();
        for model in array(row, "models")? {
            let tokens = &model["tokens"];
            add(
                &mut totals,
                day,
                model["model"].as_str().unwrap_or_default(),
                [
                    number(tokens, "input")?,
                    number(tokens, "output")?,
                    number(tokens, "cacheRead")?,
                    number(tokens, "cacheWrite5m")? + number(tokens, "cacheWrite1h")?,
                ],
            );
        }
    }
    Ok(totals)
}

/// ccusage: `daily[].period`, `daily[].modelBreakdowns[].{modelName, …Tokens}`.
pub fn ccusage_totals(report: &Value) -> anyhow::Result<Totals> {
    let mut totals = Totals::new();
    for row in array(report, "daily")? {
        let day = row["period"].as_str().unwrap_or_default();
        for model in array(row, "modelBreakdowns")? {
            add(
                &mut totals,
                day,
                model["modelName"].as_str().unwrap_or_default(),
                [
                    number(model, "inputTokens")?,
                    number(model, "outputTokens")?,
                    number(model, "cacheReadTokens")?,
                    number(model, "cacheCreationTokens")?,
                ],
            );
        }
    }
    Ok(totals)
}

/// One line per (day, model) whose figures differ or that one side lacks.
pub fn differences(
    left_name: &str,
    left: &Totals,
    right_name: &str,
    right: &Totals,
) -> Vec<String> {
    let mut keys: Vec<_> = left.keys().chain(right.keys()).collect();
    keys.sort();
    keys.dedup();
    let show = |tokens: Option<&Tokens>| match tokens {
        Some([input, output, read, write]) => {
            format!("in {input} out {output} cacheRead {read} cacheCreation {write}")
        }
        None => "absent".to_string(),
    };
    keys.into_iter()
        .filter(|key| left.get(key) != right.get(key))
        .map(|key| {
            format!(
                "{} {}: {left_name} {}; {right_name} {}",
                key.0,
                key.1,
                show(left.get(key)),
                show(right.get(key))
            )
        })
        .collect()
}

/// Sum of all four figures over every entry, for the report line.
pub fn grand_total(totals: &Totals) -> u64 {
    totals.values().flatten().sum()
}
