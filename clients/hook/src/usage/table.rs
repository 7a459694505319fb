//! The terminal form of the reports: aligned tables (comfy-table), then the skip counts and
//! the unpriced tokens, which a report always ends with.

use std::collections::BTreeMap;

use baton_transcripts::{Corpus, Session, SkipReason};
use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{CellAlignment, Table};

use super::aggregate::{Group, Selection, Sum, local_time};
use super::tree::TreeNode;

const FIGURE_HEADERS: [&str; 8] = [
    "Input",
    "Output",
    "Cache read",
    "Cache write 5m",
    "Cache write 1h",
    "Total tokens",
    "Cost (USD)",
    "Unpriced tokens",
];

fn table(first: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    let headers: Vec<&str> = first.iter().copied().chain(FIGURE_HEADERS).collect();
    table.set_header(headers);
    for index in first.len()..first.len() + FIGURE_HEADERS.len() {
        if let Some(column) = table.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    table
}

/// Thousands separated with commas.
pub fn count(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn figures(sum: &Sum) -> Vec<String> {
    let t = sum.tokens;
    vec![
        count(t.input),
        count(t.output),
        count(t.cache_read),
        count(t.cache_write_5m),
        count(t.cache_write_1h),
        count(t.total()),
        format!("{:.4}", sum.priced.cost.usd()),
        count(sum.priced.unpriced_tokens),
    ]
}

fn row(first: Vec<String>, sum: &Sum) -> Vec<String> {
    first.into_iter().chain(figures(sum)).collect()
}

fn model_names(group: &Group) -> String {
    group.models.keys().cloned().collect::<Vec<_>>().join("\n")
}

fn footer(selection: &Selection<'_>, corpus: &Corpus) -> String {
    let mut out = String::new();
    let skips: Vec<String> = SkipReason::ALL
        .iter()
        .map(|reason| format!("{} {}", reason.as_str(), corpus.skips.get(*reason)))
        .collect();
    out.push_str(&format!(
        "Skipped files: {} ({})\n",
        corpus.skips.total(),
        skips.join(", ")
    ));
    out.push_str(&format!(
        "Malformed lines skipped: {}\n",
        count(corpus.malformed_lines)
    ));
    if !corpus.quarantined.is_empty() {
        out.push_str(&format!(
            "Quarantined sessions (3 failures, unchanged): {}\n",
            corpus.quarantined.join(", ")
        ));
    }
    let unpriced: BTreeMap<String, u64> = selection.unpriced();
    if unpriced.is_empty() {
        out.push_str("Unpriced tokens: 0\n");
    } else {
        let list: Vec<String> = unpriced
            .iter()
            .map(|(m, n)| format!("{m} {}", count(*n)))
            .collect();
        out.push_str(&format!(
            "Unpriced tokens: {} (no price row: {}); they are not in the cost\n",
            count(unpriced.values().sum()),
            list.join(", ")
        ));
    }
    out
}

fn finish(
    mut table: Table,
    selection: &Selection<'_>,
    corpus: &Corpus,
    label_columns: usize,
) -> String {
    let total = selection.total();
    let mut first = vec!["Total".to_string()];
    first.resize(label_columns, String::new());
    table.add_row(row(first, &total.total));
    format!("{table}\n{}", footer(selection, corpus))
}

pub fn daily(selection: &Selection<'_>, corpus: &Corpus) -> String {
    let mut t = table(&["Date", "Models"]);
    for (day, group) in selection.daily() {
        t.add_row(row(
            vec![day.to_string(), model_names(&group)],
            &group.total,
        ));
    }
    finish(t, selection, corpus, 2)
}

pub fn models(selection: &Selection<'_>, corpus: &Corpus) -> String {
    let mut t = table(&["Model"]);
    for (model, sum) in selection.models() {
        t.add_row(row(vec![model], &sum));
    }
    finish(t, selection, corpus, 1)
}

pub fn blocks(selection: &Selection<'_>, corpus: &Corpus) -> String {
    let mut t = table(&["Block start", "Models"]);
    for (start, group) in selection.blocks() {
        t.add_row(row(
            vec![local_time(start, selection.timezone), model_names(&group)],
            &group.total,
        ));
    }
    finish(t, selection, corpus, 2)
}

pub fn sessions(selection: &Selection<'_>, corpus: &Corpus) -> String {
    let mut t = table(&["Session", "Project", "Last activity", "Models"]);
    let mut notes = Vec::new();
    for ((harness, id), group) in selection.sessions() {
        let session = selection.sessions.get(&(harness, id.as_str()));
        let project = session.map(|s| s.project_slug.clone()).unwrap_or_default();
        let last = group
            .last_ms
            .map(|ms| local_time(ms, selection.timezone))
            .unwrap_or_default();
        let mut label = format!("{id}\n({})", harness.as_str());
        if session.is_some_and(|s| s.output_under_reported) {
            label.push_str(" *");
        }
        if let Some(client) = session.and_then(|s| s.client_cost_usd) {
            notes.push(format!(
                "{id}: client's own cost {client:.4} USD, Baton {:.4} USD, difference {:+.4}",
                group.total.priced.cost.usd(),
                client - group.total.priced.cost.usd()
            ));
        }
        t.add_row(row(
            vec![label, project, last, model_names(&group)],
            &group.total,
        ));
    }
    let mut out = finish(t, selection, corpus, 4);
    out.push_str(
        "* Claude Code before 2.1.97: output tokens are under-reported in the transcript\n",
    );
    for note in notes {
        out.push_str(&note);
        out.push('\n');
    }
    out
}

pub fn tree(
    session: &Session,
    nodes: &[TreeNode],
    selection: &Selection<'_>,
    corpus: &Corpus,
) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "Agent",
        "Kind",
        "Type",
        "Joined by",
        "Model",
        "Tokens",
        "Cost (USD)",
        "Unpriced",
        "Subtree tokens",
        "Subtree cost",
    ]);
    for index in 5..10 {
        if let Some(column) = t.column_mut(index) {
            column.set_cell_alignment(CellAlignment::Right);
        }
    }
    for node in nodes {
        let name = node
            .agent
            .agent_id
            .clone()
            .unwrap_or_else(|| "main".to_string());
        t.add_row(vec![
            format!("{}{name}", "  ".repeat(node.depth)),
            format!("{:?}", node.agent.kind).to_lowercase(),
            node.agent.subagent_type.clone().unwrap_or_default(),
            node.agent
                .join_path
                .map(|p| p.as_str().to_string())
                .unwrap_or_default(),
            node.model.clone().unwrap_or_default(),
            count(node.own.tokens.total()),
            format!("{:.4}", node.own.priced.cost.usd()),
            count(node.own.priced.unpriced_tokens),
            count(node.rolled_up.tokens.total()),
            format!("{:.4}", node.rolled_up.priced.cost.usd()),
        ]);
    }
    format!(
        "Session {} ({}, project {})\n{t}\n{}",
        session.session_id,
        session.harness.as_str(),
        session.project_slug,
        footer(selection, corpus)
    )
}
