//! `baton eval-closer`: a judge over the labelled corpora, figures per kind and overall, and
//! the precision/recall/spurious curve over abstention thresholds with 95% Wilson intervals.
//!
//! Four corpora, each reported on its own: the project's development corpus
//! (`eval/closer/*.jsonl`) and held-out corpus (`eval/closer/holdout/`), and the real-session
//! corpus split by repository (`eval/closer/real/dev/`, `eval/closer/real/heldout/`). The judge
//! is tuned on the two development halves only; the held-out figures are the honest estimate
//! (`--holdout` adds them). The default margin is the lowest threshold at which the
//! development corpora together stay at or under 1% spurious. Spurious rate = wrong resolves /
//! briefed commitments that were not truly completed (see `baton_closer::eval`). The evidence
//! judge always runs; the `openai` judge runs as well when `BATON_CLOSER__JUDGE_URL` is set. A
//! malformed file fails with one line naming the file, the line and the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use baton_closer::config::{CloserConfig, CloserSettings, JudgeConfig};
use baton_closer::eval::curve::{self, Point, Rate};
use baton_closer::eval::{self, Case, Tally};
use baton_closer::judge::{self, Judge, Verdict};
use baton_kit::config::Env;

/// The spurious rate the default margin must keep the development corpora under.
const DEV_SPURIOUS_BOUND: f64 = 0.01;

/// A corpus: its title and folder.
struct Corpus {
    title: &'static str,
    dir: &'static str,
    dev: bool,
}

const CORPORA: &[Corpus] = &[
    Corpus {
        title: "project dev (eval/closer; tuned on)",
        dir: "eval/closer",
        dev: true,
    },
    Corpus {
        title: "real dev (eval/closer/real/dev; tuned on)",
        dir: "eval/closer/real/dev",
        dev: true,
    },
    Corpus {
        title: "project held-out (eval/closer/holdout; never tuned on)",
        dir: "eval/closer/holdout",
        dev: false,
    },
    Corpus {
        title: "real held-out (eval/closer/real/heldout; never tuned on)",
        dir: "eval/closer/real/heldout",
        dev: false,
    },
];

fn corpus_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
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

fn load(files: &[PathBuf]) -> anyhow::Result<Vec<Case>> {
    let mut cases = Vec::new();
    for path in files {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        cases.extend(
            eval::parse(&text).map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))?,
        );
    }
    Ok(cases)
}

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

fn interval(rate: &Rate) -> String {
    format!(
        "{} [{}, {}] ({}/{})",
        percent(rate.value()),
        percent(rate.low),
        percent(rate.high),
        rate.successes,
        rate.trials
    )
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

/// Judges every case once.
async fn judge_all<'a>(
    judge: &dyn Judge,
    cases: &'a [Case],
) -> anyhow::Result<Vec<(&'a Case, Verdict)>> {
    let mut judged = Vec::with_capacity(cases.len());
    for case in cases {
        let verdict = eval::judged(judge, case)
            .await
            .map_err(|error| anyhow::anyhow!("case {}: {error}", case.id))?;
        judged.push((case, verdict));
    }
    Ok(judged)
}

/// The per-kind table at `margin`, and with `verbose` every miss and wrong resolve.
fn kinds_table(title: &str, judged: &[(&Case, Verdict)], margin: f64, verbose: bool) {
    let mut kinds: BTreeMap<String, (usize, Tally)> = BTreeMap::new();
    for (case, verdict) in judged {
        let scored = eval::tally(case, verdict, margin);
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
    println!("{title} — at margin {margin:.2}\n{table}");
}

fn curve_table(title: &str, points: &[Point], margin: f64) {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
        "threshold",
        "recall [95% Wilson]",
        "precision [95% Wilson]",
        "spurious [95% Wilson]",
    ]);
    for point in points {
        let mark = if (point.threshold - margin).abs() < 1e-9 {
            " ◀ margin"
        } else {
            ""
        };
        table.add_row(vec![
            format!("{:.2}{mark}", point.threshold),
            interval(&point.recall),
            interval(&point.precision),
            interval(&point.spurious),
        ]);
    }
    println!("{title} — curve over thresholds\n{table}");
}

/// The thresholds of the curve, with the configured margin among them.
fn thresholds(margin: f64) -> Vec<f64> {
    let mut all: Vec<f64> = curve::THRESHOLDS.to_vec();
    if !all.iter().any(|t| (t - margin).abs() < 1e-9) {
        all.push(margin);
        all.sort_by(f64::total_cmp);
    }
    all
}

/// Reports one judge on every corpus.
async fn report_judge(
    judge: &dyn Judge,
    margin: f64,
    holdout: bool,
    verbose: bool,
) -> anyhow::Result<()> {
    println!(
        "\n=== judge: {} (margin BATON_CLOSER__MIN_CONFIDENCE = {margin:.2}; spurious = wrong resolves / briefed commitments not truly completed)",
        judge.name()
    );
    let steps = thresholds(margin);
    let mut dev_judged: Vec<(Case, Verdict)> = Vec::new();
    for corpus in CORPORA.iter().filter(|corpus| corpus.dev || holdout) {
        let cases = load(&corpus_files(Path::new(corpus.dir))?)?;
        let judged = judge_all(judge, &cases).await?;
        kinds_table(corpus.title, &judged, margin, verbose);
        curve_table(corpus.title, &curve::curve(&judged, &steps), margin);
        if corpus.dev {
            dev_judged.extend(
                judged
                    .into_iter()
                    .map(|(case, verdict)| (case.clone(), verdict)),
            );
        }
    }
    let dev: Vec<(&Case, Verdict)> = dev_judged
        .iter()
        .map(|(case, verdict)| (case, verdict.clone()))
        .collect();
    let points = curve::curve(&dev, &steps);
    curve_table("both development corpora together", &points, margin);
    match curve::lowest_within(&points, DEV_SPURIOUS_BOUND) {
        Some(threshold) => println!(
            "lowest threshold with development spurious ≤ {}: {threshold:.2}",
            percent(DEV_SPURIOUS_BOUND)
        ),
        None => println!(
            "no threshold keeps development spurious ≤ {}",
            percent(DEV_SPURIOUS_BOUND)
        ),
    }
    Ok(())
}

/// The judges to evaluate: the evidence judge, and the configured endpoint's when there is one.
fn judges(env: &Env) -> anyhow::Result<(Vec<std::sync::Arc<dyn Judge>>, f64)> {
    let env = env
        .clone()
        .with("BATON_SERVICE_TOKEN", "eval-needs-no-service-token");
    let config = CloserConfig::from_env(&env)?;
    let settings: CloserSettings = baton_kit::config::load(&env)?;
    let mut found = vec![judge::from_config(&JudgeConfig::Evidence)?];
    if let Some(openai) = settings.openai_judge() {
        found.push(judge::from_config(&openai)?);
    }
    Ok((found, config.min_confidence))
}

pub async fn run(
    env: &Env,
    files: Vec<PathBuf>,
    holdout: bool,
    verbose: bool,
) -> anyhow::Result<()> {
    let (judges, margin) = judges(env)?;
    for judge in &judges {
        if files.is_empty() {
            report_judge(judge.as_ref(), margin, holdout, verbose).await?;
            continue;
        }
        let cases = load(&files)?;
        let judged = judge_all(judge.as_ref(), &cases).await?;
        println!("\n=== judge: {}", judge.name());
        kinds_table("given files", &judged, margin, verbose);
        curve_table(
            "given files",
            &curve::curve(&judged, &thresholds(margin)),
            margin,
        );
    }
    Ok(())
}
