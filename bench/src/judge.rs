//! The closer's judge: milliseconds of judge time per pass on the largest pass the contract
//! allows — a 4000-character excerpt, 100 briefed commitments, 50 written memories — for the
//! evidence judge (the default) against the old lexical judge as the same-run baseline.
//!
//! The material is the development corpus's own text (excerpts joined until the bound,
//! its commitments and memories), so the statements are the kind the judge meets. The issue's
//! bar is "well under 10 ms of judge time" per pass; nothing here asserts it.

use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::resource::{UsageWho, getrusage};
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

/// CPU time this thread has used (user + system): unlike wall time, not inflated by other
/// processes competing for the cores.
fn thread_cpu() -> Duration {
    getrusage(UsageWho::RUSAGE_THREAD).map_or(Duration::ZERO, |usage| {
        let time = |value: nix::sys::time::TimeVal| {
            Duration::from_secs(value.tv_sec().max(0) as u64)
                + Duration::from_micros(value.tv_usec().max(0) as u64)
        };
        time(usage.user_time()) + time(usage.system_time())
    })
}

/// Wall-clock latencies of `ROUNDS` passes, and the mean CPU time per pass.
fn measure(label: &str, mut pass: impl FnMut() -> usize) -> (RunStats, Duration) {
    for _ in 0..10 {
        std::hint::black_box(pass());
    }
    let mut latencies = Vec::with_capacity(ROUNDS);
    let cpu_before = thread_cpu();
    let started = Instant::now();
    for _ in 0..ROUNDS {
        let at = Instant::now();
        std::hint::black_box(pass());
        latencies.push(at.elapsed());
    }
    let cpu = thread_cpu().saturating_sub(cpu_before) / ROUNDS as u32;
    (
        RunStats::from_latencies(label, latencies, started.elapsed()),
        cpu,
    )
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
    let (evidence_run, evidence_cpu) = measure("evidence judge (default)", || {
        evidence::decide(&input).len()
    });
    let (lexical_run, lexical_cpu) =
        measure("lexical judge (baseline)", || lexical::decide(&input).len());
    let bare = JudgeInput {
        briefed: input.briefed[..1].to_vec(),
        ..input.clone()
    };
    let (_, one_cpu) = measure("evidence judge, one briefed", || {
        evidence::decide(&bare).len()
    });
    evidence_run.print();
    lexical_run.print();
    println!(
        "  CPU per pass with one briefed commitment (reading the material): {:.3} ms",
        millis(one_cpu)
    );
    println!(
        "  CPU per pass: evidence {:.3} ms, lexical {:.3} ms ({:.1}x); wall p50 ratio {:.1}x (bar: well under 10 ms)",
        millis(evidence_cpu),
        millis(lexical_cpu),
        millis(evidence_cpu) / millis(lexical_cpu).max(f64::EPSILON),
        millis(evidence_run.p50) / millis(lexical_run.p50).max(f64::EPSILON),
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
