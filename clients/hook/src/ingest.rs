//! `baton-hook ingest`: backfills every local transcript to the usage context.
//!
//! The same roots and options as `baton-hook usage` (reading through the transcript
//! checkpoints), then [`crate::upload::run`]: only what the ledger has not seen acknowledged is
//! sent, so a second run on unchanged files sends nothing and says "nothing new". A progress bar
//! on stderr while reading (hidden when stderr is not a terminal); a summary at the end (sessions,
//! rows sent, skipped as unchanged, failures), or `--json` for a machine summary. Every server
//! refusal is reported with its status and error code. Exit 0 when everything new was
//! acknowledged, 1 when a batch was refused or could not be sent, 2 on a usage or
//! configuration error.

use std::io::Write;
use std::time::{Duration, Instant};

use baton_transcripts::{Options, Progress};
use serde_json::json;

use crate::config::Env;
use crate::upload::{self, Summary, ledger::Ledger, send};

pub const USAGE: &str = "usage: baton-hook ingest [--json] [--no-cache] [--resend]";

/// The parsed command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Args {
    pub json: bool,
    pub no_cache: bool,
    /// Send everything again, whatever the ledger says.
    pub resend: bool,
}

pub fn parse(words: &[String]) -> Result<Args, String> {
    let mut args = Args::default();
    for word in words {
        match word.as_str() {
            "--json" => args.json = true,
            "--no-cache" => args.no_cache = true,
            "--resend" => args.resend = true,
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(args)
}

/// Runs the command; returns the exit code.
pub fn run(words: &[String]) -> i32 {
    let env = Env::capture();
    let args = match parse(words) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("baton-hook ingest: {message}\n{USAGE}");
            return 2;
        }
    };
    // Ingest waits for the server as long as a backfill needs; each call keeps its own bound.
    let client = match crate::context::client(&env, Instant::now() + Duration::from_secs(86_400)) {
        Ok(client) => client,
        Err(code) => {
            eprintln!(
                "baton-hook ingest: no server configured ({code}): set BATON_URL and BATON_API_KEY or write ~/.config/baton/hook.json"
            );
            return 2;
        }
    };
    let state_dir = env.state_dir();
    let options = Options {
        checkpoint_dir: (!args.no_cache).then(|| state_dir.join("cache").join("transcripts")),
        ..Options::default()
    };
    let Some(_lock) = upload::lock(&state_dir, true) else {
        eprintln!("baton-hook ingest: the state folder is not writable");
        return 2;
    };
    let bar = crate::usage::progress_bar();
    let on_progress = |progress: Progress| {
        if let Some(bar) = &bar {
            bar.set_length(progress.total_bytes);
            bar.set_position(progress.done_bytes);
        }
    };
    let roots = crate::usage::args::roots(&env);
    let corpus = match baton_transcripts::scan(&roots, &options, &on_progress) {
        Ok(corpus) => corpus,
        Err(violation) => {
            eprintln!("baton-hook ingest: stopped: {violation}");
            return 1;
        }
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let summary = upload::run(
        &corpus,
        Vec::new(),
        &Ledger::path(&state_dir),
        &crate::process::host_id(),
        args.resend,
        send::through(&client),
    );
    let mut stdout = std::io::stdout().lock();
    let text = if args.json {
        json_summary(&summary).to_string()
    } else {
        text_summary(&summary)
    };
    let _ = writeln!(stdout, "{text}");
    if summary.failures.is_empty() { 0 } else { 1 }
}

/// The machine summary.
pub fn json_summary(summary: &Summary) -> serde_json::Value {
    json!({
        "sessions": summary.sessions,
        "sessionsUnchanged": summary.sessions_unchanged,
        "rowsSent": summary.rows_sent,
        "rowsUnchanged": summary.rows_unchanged,
        "batchesSent": summary.batches_sent,
        "deliveriesSent": summary.deliveries_sent,
        "invalid": summary.invalid,
        "nothingNew": nothing_new(summary),
        "stopped": summary.stopped,
        "failures": summary.failures.iter().map(|(status, code)| json!({
            "status": status, "error": code,
        })).collect::<Vec<_>>(),
    })
}

fn nothing_new(summary: &Summary) -> bool {
    summary.batches_sent == 0 && summary.failures.is_empty()
}

/// The summary for a person.
pub fn text_summary(summary: &Summary) -> String {
    let mut lines = Vec::new();
    if nothing_new(summary) {
        lines.push(format!(
            "nothing new: {} sessions, {} rows already sent",
            summary.sessions, summary.rows_unchanged
        ));
    } else {
        lines.push(format!(
            "{} sessions: {} rows sent in {} batches, {} rows skipped as unchanged ({} sessions unchanged), {} failures",
            summary.sessions,
            summary.rows_sent,
            summary.batches_sent,
            summary.rows_unchanged,
            summary.sessions_unchanged,
            summary.failures.len()
        ));
    }
    if summary.invalid > 0 {
        lines.push(format!(
            "{} facts outside the upload contract's bounds were left out",
            summary.invalid
        ));
    }
    for (status, code) in &summary.failures {
        let status = if *status == 0 {
            "no answer".to_string()
        } else {
            status.to_string()
        };
        lines.push(format!("refused: {status} {code}"));
    }
    if summary.stopped {
        lines.push("stopped: the rest is sent by the next run".to_string());
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse(&words(&[])), Ok(Args::default()));
        assert_eq!(
            parse(&words(&["--json", "--resend"])),
            Ok(Args {
                json: true,
                no_cache: false,
                resend: true
            })
        );
        assert!(parse(&words(&["--bogus"])).is_err());
    }

    #[test]
    fn summaries() {
        let quiet = Summary {
            sessions: 3,
            sessions_unchanged: 3,
            rows_unchanged: 40,
            ..Summary::default()
        };
        assert_eq!(
            text_summary(&quiet),
            "nothing new: 3 sessions, 40 rows already sent"
        );
        assert_eq!(json_summary(&quiet)["nothingNew"], true);
        let refused = Summary {
            sessions: 1,
            batches_sent: 1,
            rows_sent: 5,
            failures: vec![(400, "invalid_request".into())],
            ..Summary::default()
        };
        let text = text_summary(&refused);
        assert!(text.contains("refused: 400 invalid_request"), "{text}");
        assert_eq!(
            json_summary(&refused)["failures"][0]["error"],
            "invalid_request"
        );
        assert_eq!(json_summary(&refused)["nothingNew"], false);
    }
}
