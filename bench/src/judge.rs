//! The closer's judge: milliseconds of judge time per pass on the largest pass the contract
//! allows — a 4000-character excerpt, 100 briefed commitments, 50 written memories — for the
//! evidence judge (the default) against the old lexical judge as the same-run baseline.
//!
//! The material is the development corpus's own text (excerpts joined until the bound,
//! its commitments and memories), so the statements are the kind the judge meets. The issue's
//! bar is "well under 10 ms of judge time" per pass; nothing here asserts it.

use std::time::{Duration, Instant};

use anyhow::Context;
use uuid::Uuid;

use baton_closer::eval;
use baton_closer::judge::{JudgeInput, WrittenMemory, evidence, lexical};

use crate::stats::{RunStats, millis};

const MAX_EXCERPT_CHARS: usize = 4000;
const MAX_BRIEFED: usize = 100;
const MAX_WRITTEN: usize = 50;
const MAX_MEMORY_CHARS: usize = 2000;
const ROUNDS: usize = 200;

fn corpus() -> anyhow::Result<Vec<eval::Case>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../eval/closer");
    let mut cases = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {dir}"))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        cases.extend(eval::parse(&text).map_err(|error| anyhow::anyhow!("{error}"))?);
    }
    Ok(cases)
}

/// The largest pass: the corpus's text up to every bound.
fn largest(cases: &[eval::Case]) -> JudgeInput {
    let inputs: Vec<JudgeInput> = cases.iter().map(eval::Case::input).collect();
    let mut excerpt = String::new();
    for text in inputs.iter().filter_map(|input| input.excerpt.as_deref()) {
        let room = MAX_EXCERPT_CHARS.saturating_sub(excerpt.chars().count() + 2);
        if room == 0 {
            break;
        }
        if !excerpt.is_empty() {
            excerpt.push_str("\n\n");
        }
        excerpt.extend(text.chars().take(room));
    }
    let briefed = inputs
        .iter()
        .flat_map(|input| input.briefed.iter().cloned())
        .take(MAX_BRIEFED)
        .collect();
    let written = inputs
        .iter()
        .flat_map(|input| input.written.iter())
        .take(MAX_WRITTEN)
        .enumerate()
        .map(|(index, memory)| WrittenMemory {
            id: Uuid::from_u128(index as u128 + 1),
            content: memory.content.chars().take(MAX_MEMORY_CHARS).collect(),
            ..memory.clone()
        })
        .collect();
    JudgeInput {
        briefed,
        excerpt: Some(excerpt),
        written,
        session_project: None,
    }
}

fn measure(label: &str, mut pass: impl FnMut() -> usize) -> RunStats {
    for _ in 0..10 {
        std::hint::black_box(pass());
    }
    let mut latencies = Vec::with_capacity(ROUNDS);
    let started = Instant::now();
    for _ in 0..ROUNDS {
        let at = Instant::now();
        std::hint::black_box(pass());
        latencies.push(at.elapsed());
    }
    RunStats::from_latencies(label, latencies, started.elapsed())
}

pub fn run() -> anyhow::Result<()> {
    let cases = corpus()?;
    let input = largest(&cases);
    println!(
        "judge: one pass over the largest input ({} excerpt chars, {} briefed, {} memories)",
        input
            .excerpt
            .as_deref()
            .map_or(0, |text| text.chars().count()),
        input.briefed.len(),
        input.written.len()
    );
    let evidence_run = measure("evidence judge (default)", || {
        evidence::decide(&input).len()
    });
    let lexical_run = measure("lexical judge (baseline)", || lexical::decide(&input).len());
    evidence_run.print();
    lexical_run.print();
    let ratio = millis(evidence_run.p50) / millis(lexical_run.p50).max(f64::EPSILON);
    println!(
        "  evidence / lexical p50: {ratio:.1}x; evidence p99 {:.3} ms per pass (bar: well under 10 ms)",
        millis(evidence_run.p99)
    );
    let inputs: Vec<JudgeInput> = cases.iter().map(eval::Case::input).collect();
    let started = Instant::now();
    for input in &inputs {
        std::hint::black_box(evidence::decide(input));
    }
    let per_case: Duration = started.elapsed() / inputs.len().max(1) as u32;
    println!(
        "  evidence judge over the {} dev cases: {:.3} ms per case on average",
        inputs.len(),
        millis(per_case)
    );
    Ok(())
}
