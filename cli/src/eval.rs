//! `baton eval-closer`: a judge over the labelled corpus, figures per file and overall.

use std::path::PathBuf;

use anyhow::Context;

use baton_closer::config::CloserConfig;
use baton_closer::eval::{self, Tally};
use baton_closer::judge;
use baton_kit::config::Env;

fn corpus(files: Vec<PathBuf>) -> anyhow::Result<Vec<PathBuf>> {
    if !files.is_empty() {
        return Ok(files);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("eval/closer")
        .context("reading eval/closer (run from the repository root)")?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "jsonl")
        })
        .collect();
    found.sort();
    Ok(found)
}

fn line(label: &str, cases: usize, tally: &Tally) {
    println!(
        "{label:<44} cases {cases:>3}  briefed {:>3}  recall {:>5.1}%  precision {:>5.1}%  spurious {:>5.1}%",
        tally.true_positives + tally.false_positives + tally.false_negatives + tally.true_negatives,
        100.0 * tally.recall(),
        100.0 * tally.precision(),
        100.0 * tally.spurious_rate(),
    );
}

pub async fn run(env: &Env, files: Vec<PathBuf>, verbose: bool) -> anyhow::Result<()> {
    let judge_config = CloserConfig::from_env(
        &env.clone()
            .with("BATON_SERVICE_TOKEN", "eval-needs-no-service-token"),
    )?
    .judge;
    let judge = judge::from_config(&judge_config)?;
    println!("judge: {}", judge.name());
    let mut total = Tally::default();
    let mut total_cases = 0;
    for path in corpus(files)? {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let cases =
            eval::parse(&text).map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?;
        let mut tally = Tally::default();
        for case in &cases {
            let scored = eval::score(judge.as_ref(), case)
                .await
                .map_err(|error| anyhow::anyhow!("case {}: {error}", case.id))?;
            if verbose && (!scored.spurious.is_empty() || !scored.missed.is_empty()) {
                println!(
                    "  {}: spurious {:?} missed {:?}",
                    case.id, scored.spurious, scored.missed
                );
            }
            tally.add(scored.tally);
        }
        line(&path.display().to_string(), cases.len(), &tally);
        total.add(tally);
        total_cases += cases.len();
    }
    line("all", total_cases, &total);
    Ok(())
}
