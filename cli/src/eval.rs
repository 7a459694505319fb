//! `baton eval-closer`: a judge over a labelled corpus, figures per kind and overall.
//!
//! The development corpus is `eval/closer/*.jsonl` (the judge is tuned on it); the held-out
//! corpus is `eval/closer/holdout/*.jsonl` (`--holdout`), written before the judge and never
//! used to tune it, so its figures are the honest estimate. Spurious rate = wrong resolves /
//! briefed commitments that were not truly completed (see `baton_closer::eval`). A malformed
//! file fails with one line naming the file, the line and the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use baton_closer::config::CloserConfig;
use baton_closer::eval::{self, Tally};
use baton_closer::judge;
use baton_kit::config::Env;

fn corpus(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {} (run from the repository root)", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .collect();
    found.sort();
    Ok(found)
}

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

fn row(table: &mut Table, label: &str, cases: usize, tally: &Tally) {
    let briefed =
        tally.true_positives + tally.false_positives + tally.false_negatives + tally.true_negatives;
    table.add_row(vec![
        label.to_string(),
        cases.to_string(),
        briefed.to_string(),
        (tally.true_positives + tally.false_negatives).to_string(),
        (tally.true_positives + tally.false_positives).to_string(),
        percent(tally.recall()),
        percent(tally.precision()),
        percent(tally.spurious_rate()),
    ]);
}

/// Runs the judge over `files`, prints a table per kind, returns the overall tally.
async fn report(
    judge: &dyn judge::Judge,
    title: &str,
    files: &[PathBuf],
    verbose: bool,
) -> anyhow::Result<Tally> {
    let mut kinds: BTreeMap<String, (usize, Tally)> = BTreeMap::new();
    for path in files {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let cases =
            eval::parse(&text).map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
        for case in &cases {
            let scored = eval::score(judge, case)
                .await
                .map_err(|error| anyhow::anyhow!("case {}: {error}", case.id))?;
            if verbose && (!scored.spurious.is_empty() || !scored.missed.is_empty()) {
                println!(
                    "  {} [{}]: spurious {:?} missed {:?}",
                    case.id, case.kind, scored.spurious, scored.missed
                );
                for (id, reason) in &scored.reasons {
                    println!("    {id}: {reason}");
                }
            }
            let entry = kinds.entry(case.kind.clone()).or_default();
            entry.0 += 1;
            entry.1.add(scored.tally);
        }
    }
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "kind",
        "cases",
        "briefed",
        "completed",
        "resolved",
        "recall",
        "precision",
        "spurious",
    ]);
    let mut total = Tally::default();
    let mut total_cases = 0;
    for (kind, (cases, tally)) in &kinds {
        row(&mut table, kind, *cases, tally);
        total.add(*tally);
        total_cases += cases;
    }
    row(&mut table, "overall", total_cases, &total);
    println!("{title}\n{table}");
    Ok(total)
}

pub async fn run(
    env: &Env,
    files: Vec<PathBuf>,
    holdout: bool,
    verbose: bool,
) -> anyhow::Result<()> {
    let judge_config = CloserConfig::from_env(
        &env.clone()
            .with("BATON_SERVICE_TOKEN", "eval-needs-no-service-token"),
    )?
    .judge;
    let judge = judge::from_config(&judge_config)?;
    println!(
        "judge: {} (spurious = wrong resolves / briefed commitments not truly completed)",
        judge.name()
    );
    if !files.is_empty() {
        report(judge.as_ref(), "given files", &files, verbose).await?;
        return Ok(());
    }
    let dev = corpus(Path::new("eval/closer"))?;
    report(
        judge.as_ref(),
        "development corpus (eval/closer)",
        &dev,
        verbose,
    )
    .await?;
    if holdout {
        let held = corpus(Path::new("eval/closer/holdout"))?;
        report(
            judge.as_ref(),
            "held-out corpus (eval/closer/holdout; never tuned on)",
            &held,
            verbose,
        )
        .await?;
    }
    Ok(())
}
