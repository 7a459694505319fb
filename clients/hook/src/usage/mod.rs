//! `baton-hook usage`: tokens and cost from this machine's transcripts, read locally (nothing
//! is sent anywhere). Reports: `daily`, `session`, `blocks`, `models`, `tree <session-id>`.

mod aggregate;
pub mod args;
mod json;
mod memo;
mod table;
mod tree;

use std::io::{IsTerminal, Write};

use baton_transcripts::{Options, PriceTable, Progress};

use crate::config::Env;
use args::Report;

/// Runs the command; returns the process exit code.
pub fn run(words: &[String]) -> i32 {
    let env = Env::capture();
    let args = match args::parse(words, &env) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("baton-hook usage: {message}\n{}", args::USAGE);
            return 2;
        }
    };
    let mut prices = PriceTable::bundled();
    let mut extra_prices = String::new();
    if let Some(extra) = env.get("BATON_PRICING_FILE") {
        let loaded = std::fs::read_to_string(extra)
            .map_err(|e| e.to_string())
            .and_then(|text| {
                prices.extend_json(&text).map_err(|e| e.to_string())?;
                extra_prices = text;
                Ok(())
            });
        if let Err(message) = loaded {
            eprintln!("baton-hook usage: BATON_PRICING_FILE {extra}: {message}");
            return 2;
        }
    }
    let cache = env.state_dir().join("cache");
    let options = Options {
        checkpoint_dir: (!args.no_cache).then(|| cache.join("transcripts")),
        ..Options::default()
    };
    let roots = args::roots(&env);
    let discovery = baton_transcripts::walk::discover(&roots, options.limits);
    let memo = (!args.no_cache).then(|| {
        memo::Memo::new(
            &cache.join("reports"),
            &discovery,
            &args,
            extra_prices.as_bytes(),
        )
    });
    if let Some(output) = memo.as_ref().and_then(memo::Memo::load) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{output}");
        return 0;
    }
    let bar = progress_bar();
    let on_progress = |progress: Progress| {
        if let Some(bar) = &bar {
            bar.set_length(progress.total_bytes);
            bar.set_position(progress.done_bytes);
        }
    };
    let corpus = match baton_transcripts::read_discovered(discovery, &options, &on_progress) {
        Ok(corpus) => corpus,
        Err(violation) => {
            eprintln!("baton-hook usage: stopped: {violation}");
            return 1;
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    if corpus.sessions.is_empty() {
        let searched: Vec<String> = roots
            .claude
            .iter()
            .chain(&roots.codex)
            .chain(&roots.gemini)
            .chain(&roots.copilot)
            .map(|root| root.display().to_string())
            .collect();
        eprintln!(
            "baton-hook usage: no transcripts found in {}",
            searched.join(", ")
        );
    }
    let selection = aggregate::Selection::new(&corpus, &prices, &args);
    let output = match &args.report {
        Report::Tree(id) => {
            let session = match tree::find(&corpus.sessions, id) {
                Ok(session) => session,
                Err(message) => {
                    eprintln!("baton-hook usage: {message}");
                    return 1;
                }
            };
            let nodes = tree::nodes(session, &selection);
            if args.json {
                json::tree(session, &nodes, &selection, &corpus).to_string()
            } else {
                table::tree(session, &nodes, &selection, &corpus)
            }
        }
        Report::Daily if args.json => json::daily(&selection, &corpus).to_string(),
        Report::Daily => table::daily(&selection, &corpus),
        Report::Session if args.json => json::sessions(&selection, &corpus).to_string(),
        Report::Session => table::sessions(&selection, &corpus),
        Report::Blocks if args.json => json::blocks(&selection, &corpus).to_string(),
        Report::Blocks => table::blocks(&selection, &corpus),
        Report::Models if args.json => json::models_report(&selection, &corpus).to_string(),
        Report::Models => table::models(&selection, &corpus),
    };
    let output = output.trim_end();
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{output}");
    let clean = corpus.quarantined.is_empty()
        && corpus.skips.get(baton_transcripts::SkipReason::Unreadable) == 0;
    if let (Some(memo), true) = (&memo, clean) {
        let files = corpus.reads.cached + corpus.reads.tail + corpus.reads.full;
        memo.save(output, args.json, files);
    }
    // The process ends here: freeing every record one by one would only cost time.
    std::mem::forget(selection);
    std::mem::forget(corpus);
    0
}

/// A progress bar on a terminal (stderr), hidden otherwise; a warm run finishes before it
/// draws. `baton-hook ingest` reads transcripts with the same bar.
pub(crate) fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "reading transcripts {bar:40} {bytes}/{total_bytes} ({eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    Some(bar)
}
