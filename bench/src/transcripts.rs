//! The local usage report against ccusage on the same transcripts: `baton-hook usage daily` and
//! `ccusage daily`, both as JSON in UTC, over the shared fixtures and over a generated corpus of
//! at least 1 GiB (replicas of the fixtures). For each corpus: wall time and peak RSS of each
//! tool's cold run, the ratios, and whether every token total per (model, day) is identical.
//! On the generated corpus also Baton's second run (checkpoints kept) and its run after 1 MiB of
//! assistant lines is appended to one file (a tail read), each checked against a fresh cold run.
//! Bars (printed, never asserted): totals identical; wall <= ccusage's; peak RSS <= half of
//! ccusage's; the second run <= 5% of the cold run's wall time.

mod compare;
mod corpus;
mod measure;
mod tools;

use std::path::{Path, PathBuf};
use std::time::Instant;

use compare::Totals;
use corpus::Corpus;
use tools::{Report, Scratch};

pub use measure::{CHILD_COMMAND, child_main};

const GENERATED_BYTES: u64 = 1 << 30;
const APPENDED_BYTES: u64 = 1 << 20;
/// Where the generated corpus goes; it is removed at the end.
const SCRATCH_PARENT: &str = "/var/tmp";
/// Free space wanted before generating: the corpus and slack for whatever else runs.
const FREE_BYTES_NEEDED: u64 = 3 << 30;
/// Runs of each measured command, interleaved; the fastest is reported.
const ROUNDS: usize = 3;
/// Differences printed when totals disagree.
const DIFFERENCES_SHOWN: usize = 5;

fn mebibytes(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "missed" }
}

fn print_run(label: &str, report: &Report) {
    println!(
        "    {label:<48} wall {:>8.3} s   peak RSS {:>8.1} MiB",
        report.measured.wall.as_secs_f64(),
        mebibytes(report.measured.peak_rss_bytes)
    );
}

fn print_corpus(label: &str, corpus: &Corpus, note: &str) {
    println!(
        "  {label}: {} sessions, {} files, {:.1} MiB{note}",
        corpus.sessions,
        corpus.files,
        mebibytes(corpus.bytes)
    );
}

/// What a run of the tools needs besides the corpus.
struct Tools {
    ccusage: Option<PathBuf>,
    baton: PathBuf,
    scratch: Scratch,
}

/// The fastest of several runs of one command, with the largest peak RSS among them: wall
/// time is what other work on the machine inflates, peak RSS is not.
fn fastest(mut runs: Vec<Report>) -> Report {
    let peak = runs
        .iter()
        .map(|run| run.measured.peak_rss_bytes)
        .max()
        .unwrap_or(0);
    runs.sort_by_key(|run| run.measured.wall);
    let mut best = runs.swap_remove(0);
    best.measured.peak_rss_bytes = peak;
    best
}

/// ccusage (when present) and Baton cold on one corpus, `ROUNDS` of each interleaved, with
/// the ratios and the totals check. Each Baton round gets a fresh state folder under
/// `states`. Returns Baton's fastest cold run, its totals (the reference for later runs on the
/// same files) and the state folder of its last round, checkpoints written.
fn cold_comparison(
    tools: &Tools,
    corpus: &Corpus,
    states: &Path,
) -> anyhow::Result<(Report, Totals, PathBuf)> {
    let mut ccusage_runs = Vec::new();
    let mut baton_runs = Vec::new();
    let mut state = states.join("cold-0");
    for round in 0..ROUNDS {
        if let Some(binary) = &tools.ccusage {
            ccusage_runs.push(tools::ccusage_daily(binary, &corpus.root, &tools.scratch)?);
        }
        state = states.join(format!("cold-{round}"));
        baton_runs.push(tools::baton_daily(
            &tools.baton,
            &corpus.root,
            &state,
            &tools.scratch,
        )?);
    }
    let baton = fastest(baton_runs);
    let baton_totals = compare::baton_totals(&baton.json)?;
    if ccusage_runs.is_empty() {
        print_run("baton-hook usage daily (cold)", &baton);
        return Ok((baton, baton_totals, state));
    }
    let baseline = fastest(ccusage_runs);
    print_run("ccusage daily", &baseline);
    print_run("baton-hook usage daily (cold)", &baton);
    let ccusage_totals = compare::ccusage_totals(&baseline.json)?;
    let differences = compare::differences("ccusage", &ccusage_totals, "baton", &baton_totals);
    let wall_ratio =
        baton.measured.wall.as_secs_f64() / baseline.measured.wall.as_secs_f64().max(1e-9);
    let rss_ratio =
        baton.measured.peak_rss_bytes as f64 / baseline.measured.peak_rss_bytes.max(1) as f64;
    let totals = if differences.is_empty() {
        format!(
            "identical, {} (day, model) entries, {} tokens",
            baton_totals.len(),
            compare::grand_total(&baton_totals)
        )
    } else {
        format!("{} entries differ", differences.len())
    };
    println!(
        "    Baton/ccusage: wall {wall_ratio:.2}x (bar: <= 1.00x, {}); peak RSS {rss_ratio:.2}x \
         (bar: <= 0.50x, {}); totals per (model, day) {totals} (bar: identical, {})",
        met(wall_ratio <= 1.0),
        met(rss_ratio <= 0.5),
        met(differences.is_empty())
    );
    for difference in differences.iter().take(DIFFERENCES_SHOWN) {
        println!("      {difference}");
    }
    Ok((baton, baton_totals, state))
}

/// Whether a report's totals equal the reference; prints the first differences if not.
fn equals(reference: &Totals, report: &Report) -> anyhow::Result<bool> {
    let totals = compare::baton_totals(&report.json)?;
    let differences = compare::differences("cold", reference, "this run", &totals);
    for difference in differences.iter().take(DIFFERENCES_SHOWN) {
        println!("      {difference}");
    }
    Ok(differences.is_empty())
}

fn yes_no(value: bool) -> &'static str {
    if value { "yes" } else { "no" }
}

fn free_bytes(path: &str) -> anyhow::Result<u64> {
    let stats = nix::sys::statvfs::statvfs(path)?;
    Ok(stats.blocks_available() as u64 * stats.fragment_size() as u64)
}

pub async fn run() -> anyhow::Result<()> {
    tokio::task::spawn_blocking(run_blocking).await?
}

fn run_blocking() -> anyhow::Result<()> {
    println!(
        "transcripts: `usage daily --json --timezone UTC`, baton-hook vs ccusage {}; each process \
         measured alone, page cache warm, fastest of {ROUNDS} interleaved runs",
        tools::CCUSAGE_VERSION
    );
    // The repository's own fixtures (fixtures/, with their provenance).
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/claude-code/transcripts");
    let sessions = corpus::load_fixtures(&fixtures)?;
    let scratch_dir = tempfile::Builder::new()
        .prefix("baton-bench-transcripts-")
        .tempdir_in(SCRATCH_PARENT)?;
    let scratch_path = scratch_dir.path();
    let home = scratch_path.join("home");
    std::fs::create_dir_all(&home)?;
    let ccusage = match tools::ccusage(scratch_path)? {
        Ok(binary) => {
            println!("  baseline: {}", binary.display());
            Some(binary)
        }
        Err(reason) => {
            println!("  baseline skipped: {reason}; Baton's figures alone");
            None
        }
    };
    let tools = Tools {
        ccusage,
        baton: baton_tests::binary("baton-hook"),
        scratch: Scratch {
            home,
            report: scratch_path.join("measured.txt"),
        },
    };

    let fixture_corpus = corpus::lay_out_fixtures(&sessions, &scratch_path.join("fixtures"))?;
    print_corpus("fixtures", &fixture_corpus, "");
    cold_comparison(
        &tools,
        &fixture_corpus,
        &scratch_path.join("states-fixtures"),
    )?;

    let free = free_bytes(SCRATCH_PARENT)?;
    if free < FREE_BYTES_NEEDED {
        println!(
            "  generated corpus skipped: {:.1} GiB free in {SCRATCH_PARENT}, {:.1} GiB wanted",
            free as f64 / (1u64 << 30) as f64,
            FREE_BYTES_NEEDED as f64 / (1u64 << 30) as f64
        );
        return Ok(());
    }
    let started = Instant::now();
    let (generated, tail) =
        corpus::generate(&sessions, &scratch_path.join("generated"), GENERATED_BYTES)?;
    let generation = started.elapsed();
    // Written pages flushed and every file read once, so that neither tool pays for writeback
    // or a cold disk the other did not.
    nix::unistd::sync();
    corpus::warm_page_cache(&generated.root)?;
    print_corpus(
        "generated",
        &generated,
        &format!(
            ", {} projects (written in {:.1} s)",
            corpus::PROJECTS,
            generation.as_secs_f64()
        ),
    );
    let (cold, cold_totals, state) =
        cold_comparison(&tools, &generated, &scratch_path.join("states-generated"))?;
    let cold_wall = cold.measured.wall.as_secs_f64().max(1e-9);

    // The first run on a fresh state wrote the checkpoints; every run after it finds them.
    let mut second_runs = Vec::new();
    for _ in 0..ROUNDS {
        second_runs.push(tools::baton_daily(
            &tools.baton,
            &generated.root,
            &state,
            &tools.scratch,
        )?);
    }
    let second = fastest(second_runs);
    print_run("baton-hook usage daily (checkpoints, unchanged)", &second);
    let second_share = second.measured.wall.as_secs_f64() / cold_wall;
    println!(
        "    second run: {:.1}% of the cold run's wall (bar: <= 5%, {}); totals equal the cold \
         run's: {}",
        second_share * 100.0,
        met(second_share <= 0.05),
        yes_no(equals(&cold_totals, &second)?)
    );

    // Only the first run after the append reads the new tail, so it is measured once.
    let appended = corpus::append_assistant_lines(&sessions, &tail, APPENDED_BYTES)?;
    let tail_run = tools::baton_daily(&tools.baton, &generated.root, &state, &tools.scratch)?;
    print_run(
        &format!(
            "baton-hook usage daily ({:.1} MiB appended)",
            mebibytes(appended)
        ),
        &tail_run,
    );
    let fresh_state = scratch_path.join("states-generated").join("after-append");
    let fresh = tools::baton_daily(&tools.baton, &generated.root, &fresh_state, &tools.scratch)?;
    print_run("baton-hook usage daily (cold, same files)", &fresh);
    let fresh_totals = compare::baton_totals(&fresh.json)?;
    // The appended lines must count, or an equal pair of reports proves nothing.
    let added =
        compare::grand_total(&fresh_totals).saturating_sub(compare::grand_total(&cold_totals));
    println!(
        "    after the append: {:.1}% of the cold run's wall; totals equal a fresh cold run's: \
         {}; {added} tokens added",
        tail_run.measured.wall.as_secs_f64() / cold_wall * 100.0,
        yes_no(equals(&fresh_totals, &tail_run)?)
    );
    // BATON_BENCH_KEEP=1 keeps the generated corpus and its checkpoints, for profiling.
    if std::env::var_os("BATON_BENCH_KEEP").is_some() {
        let kept = scratch_dir.keep();
        println!("  scratch folder kept: {}", kept.display());
    } else {
        scratch_dir.close()?;
        println!("  scratch folder removed");
    }
    Ok(())
}
