//! `baton-hook usage` over a corpus the test lays out from the shared fixtures: the JSON report
//! equals the library's own totals per model and day, and the table form is pinned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_tests::binary;
use baton_transcripts::{Options, Roots};
use serde_json::Value;

const SESSION: &str = "fa812bfe-b295-4cca-9c2f-fdf01028cb46";

/// A scratch home whose `~/.claude/projects` and `~/.codex/sessions` hold the fixtures.
struct Corpus {
    home: PathBuf,
}

impl Corpus {
    fn lay_out() -> Corpus {
        let home =
            std::env::temp_dir().join(format!("baton-usage-{}", uuid::Uuid::new_v4().simple()));
        crate::usage_hook::lay_out(&home);
        Corpus { home }
    }

    fn run(&self, words: &[&str]) -> std::process::Output {
        std::process::Command::new(binary("baton-hook"))
            .arg("usage")
            .args(words)
            .env_clear()
            .env("HOME", &self.home)
            .env("BATON_HOOK_HOME", self.home.join(".baton"))
            .output()
            .expect("baton-hook runs")
    }

    fn json(&self, words: &[&str]) -> Value {
        let output = self.run(words);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("one JSON object")
    }
}

impl Drop for Corpus {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

type Totals = BTreeMap<(String, String), [u64; 5]>;

fn from_report(report: &Value) -> Totals {
    let mut totals = Totals::new();
    for row in report["rows"].as_array().unwrap() {
        for model in row["models"].as_array().unwrap() {
            let t = &model["tokens"];
            let kinds = [
                "input",
                "output",
                "cacheRead",
                "cacheWrite5m",
                "cacheWrite1h",
            ]
            .map(|k| t[k].as_u64().unwrap());
            totals.insert(
                (
                    row["date"].as_str().unwrap().to_string(),
                    model["model"].as_str().unwrap().to_string(),
                ),
                kinds,
            );
        }
    }
    totals
}

fn from_library(home: &Path) -> Totals {
    let roots = Roots {
        claude: vec![home.join(".claude/projects")],
        codex: vec![home.join(".codex/sessions")],
        gemini: Vec::new(),
        copilot: Vec::new(),
    };
    let corpus = baton_transcripts::scan(&roots, &Options::default(), &|_| {}).unwrap();
    let mut totals = Totals::new();
    for record in corpus
        .records
        .iter()
        .filter(|r| !(r.is_synthetic() && r.tokens.total() == 0))
    {
        let day = chrono::DateTime::from_timestamp_millis(record.timestamp_ms)
            .unwrap()
            .date_naive()
            .to_string();
        let entry = totals
            .entry((day, record.model.clone().unwrap()))
            .or_default();
        let t = record.tokens;
        for (slot, value) in entry.iter_mut().zip([
            t.input,
            t.output,
            t.cache_read,
            t.cache_write_5m,
            t.cache_write_1h,
        ]) {
            *slot += value;
        }
    }
    totals
}

#[test]
fn daily_json_equals_the_library_per_model_and_day_cold_and_from_checkpoints() {
    let corpus = Corpus::lay_out();
    let expected = from_library(&corpus.home);
    assert!(
        expected.contains_key(&("2026-02-23".to_string(), "gpt-5.3-codex".to_string())),
        "Codex is read too"
    );
    let cold = corpus.json(&["daily", "--json", "--timezone", "UTC"]);
    assert_eq!(from_report(&cold), expected);
    assert!(cold["reads"]["full"].as_u64().unwrap() >= 6);
    let warm = corpus.json(&["daily", "--json", "--timezone", "UTC"]);
    assert_eq!(
        warm["reads"]["full"], 0,
        "the second run reads from checkpoints"
    );
    assert_eq!(from_report(&warm), expected);
    assert_eq!(warm["totals"], cold["totals"]);
}

#[test]
fn filters_and_timezone_move_requests_between_days() {
    let corpus = Corpus::lay_out();
    let only = corpus.json(&[
        "daily",
        "--json",
        "--timezone",
        "UTC",
        "--since",
        "2026-02-12",
        "--until",
        "2026-02-12",
    ]);
    let days = dates(&only);
    assert_eq!(days, ["2026-02-12"]);
    // short.jsonl ran at 21:11 UTC on 2026-02-10: in Tokyo that is the 11th.
    let tokyo = corpus.json(&[
        "daily",
        "--json",
        "--timezone",
        "Asia/Tokyo",
        "--project",
        "-spotter",
    ]);
    let days = dates(&tokyo);
    assert_eq!(days, ["2026-02-11", "2026-02-13"]);
}

/// The dates of a daily report's rows, in order.
fn dates(report: &Value) -> Vec<&str> {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["date"].as_str().unwrap())
        .collect()
}

#[test]
fn tree_report_names_each_agent_with_its_join_path() {
    let corpus = Corpus::lay_out();
    let tree = corpus.json(&["tree", SESSION, "--json"]);
    let agents = tree["agents"].as_array().unwrap();
    let ids: Vec<&str> = agents
        .iter()
        .map(|a| a["agentId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["main", "a93ccab", "aa84377", "acompact-70d8e7"]);
    assert_eq!(agents[1]["joinPath"], "tool_result");
    assert_eq!(agents[1]["subagentType"], "Explore");
    assert_eq!(agents[3]["kind"], "compaction");
    let main_rolled = agents[0]["rolledUp"]["tokens"]["total"].as_u64().unwrap();
    let sum: u64 = agents
        .iter()
        .map(|a| a["tokens"]["total"].as_u64().unwrap())
        .sum();
    assert_eq!(
        main_rolled, sum,
        "the main agent's subtree is the whole session"
    );
}

#[test]
fn models_table_is_pinned() {
    let corpus = Corpus::lay_out();
    let output = corpus.run(&["models", "--timezone", "UTC", "--project", "-spotter"]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let expected = "\
┌───────────────────────────┬───────┬────────┬────────────┬────────────────┬────────────────┬──────────────┬────────────┬─────────────────┐
│ Model                     ┆ Input ┆ Output ┆ Cache read ┆ Cache write 5m ┆ Cache write 1h ┆ Total tokens ┆ Cost (USD) ┆ Unpriced tokens │
╞═══════════════════════════╪═══════╪════════╪════════════╪════════════════╪════════════════╪══════════════╪════════════╪═════════════════╡
│ claude-haiku-4-5-20251001 ┆   122 ┆     45 ┆    635,125 ┆         98,183 ┆              0 ┆      733,475 ┆     0.1866 ┆               0 │
│ claude-opus-4-6           ┆ 1,508 ┆ 36,275 ┆ 15,552,063 ┆        262,626 ┆         13,835 ┆   15,866,307 ┆    10.4702 ┆               0 │
│ Total                     ┆ 1,630 ┆ 36,320 ┆ 16,187,188 ┆        360,809 ┆         13,835 ┆   16,599,782 ┆    10.6568 ┆               0 │
└───────────────────────────┴───────┴────────┴────────────┴────────────────┴────────────────┴──────────────┴────────────┴─────────────────┘
Skipped files: 0 (oversize 0, symlink 0, not-regular-file 0, unreadable 0, empty-agent 0, empty-main 0, non-artifact 0, duplicate-session 0, too-deep 0)
Malformed lines skipped: 0
Unpriced tokens: 0
";
    assert_eq!(text, expected);
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let corpus = Corpus::lay_out();
    let output = corpus.run(&["daily", "--timezone", "Mars/Base"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("baton-hook usage: unknown timezone"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}
