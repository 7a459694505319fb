//! The report memo of `baton-hook usage`: asked again about files that have not changed, it
//! prints the same report without reading them; any change of the files, the command line or
//! the extra price file is a new report.

use std::path::{Path, PathBuf};

use baton_tests::binary;
use serde_json::Value;

const SHORT: &str = ".claude/projects/-spotter/short.jsonl";

struct Home(PathBuf);

impl Home {
    fn new() -> Home {
        let home =
            std::env::temp_dir().join(format!("baton-memo-{}", uuid::Uuid::new_v4().simple()));
        crate::usage_hook::lay_out(&home);
        Home(home)
    }

    fn report(&self, words: &[&str], env: &[(&str, &Path)]) -> String {
        let output = std::process::Command::new(binary("baton-hook"))
            .arg("usage")
            .args(words)
            .env_clear()
            .env("HOME", &self.0)
            .env("BATON_HOOK_HOME", self.0.join(".baton"))
            .envs(env.iter().map(|(k, v)| (*k, *v)))
            .output()
            .expect("baton-hook runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).expect("utf-8")
    }

    fn json(&self, words: &[&str]) -> Value {
        serde_json::from_str(&self.report(words, &[])).expect("JSON")
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const DAILY: [&str; 4] = ["daily", "--json", "--timezone", "UTC"];

/// Rewrites a file in place with `text` of the same length, keeping its inode and mtime.
fn rewrite_keeping_identity(path: &Path, text: &str) {
    let before = std::fs::metadata(path).expect("metadata");
    assert_eq!(before.len() as usize, text.len(), "same length");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    use std::io::Write;
    (&file).write_all(text.as_bytes()).expect("write");
    file.set_modified(before.modified().expect("mtime"))
        .expect("set mtime");
}

#[test]
fn an_unchanged_corpus_gets_the_same_report_without_being_read() {
    let home = Home::new();
    let cold = home.json(&DAILY);
    assert!(cold["reads"]["full"].as_u64() > Some(0));
    let again = home.json(&DAILY);
    assert_eq!(again["rows"], cold["rows"]);
    assert_eq!(again["totals"], cold["totals"]);
    let files = cold["reads"]["full"].as_u64().unwrap() + cold["reads"]["cached"].as_u64().unwrap();
    assert_eq!(
        again["reads"],
        serde_json::json!({"cached": files, "tail": 0, "full": 0}),
        "a re-run says every file came from the checkpoints"
    );

    // The memo trusts a file's identity (size, mtime, inode) as the checkpoints do: a rewrite
    // that keeps all three is not seen, which shows the files were not read; --no-cache reads.
    let path = home.0.join(SHORT);
    let text = std::fs::read_to_string(&path).expect("fixture");
    let changed = text.replacen("\"output_tokens\":13", "\"output_tokens\":19", 1);
    assert_ne!(
        changed, text,
        "the fixture has a one-digit output count to change"
    );
    rewrite_keeping_identity(&path, &changed);
    assert_eq!(home.json(&DAILY)["totals"], cold["totals"]);
    let read = home.json(&["daily", "--json", "--timezone", "UTC", "--no-cache"]);
    assert_ne!(read["totals"], cold["totals"], "the rewrite is real");
}

#[test]
fn a_grown_file_another_question_or_other_prices_make_a_new_report() {
    let home = Home::new();
    let cold = home.json(&DAILY);
    // Another command line.
    let tokyo = home.json(&["daily", "--json", "--timezone", "Asia/Tokyo"]);
    assert_ne!(tokyo["rows"], cold["rows"]);
    assert_eq!(home.json(&DAILY)["rows"], cold["rows"], "and back");
    // Other prices: the same model priced at another rate.
    let prices = home.0.join("prices.json");
    std::fs::write(
        &prices,
        r#"{"schema":1,"rows":[{"model":"claude-opus-4-6","provider":"anthropic","effectiveFrom":"2026-02-09","input":1000,"output":1000,"cacheRead":1000,"cacheWrite5m":1000,"cacheWrite1h":1000,"longContext":null,"fast":null,"geo":{},"source":"test","sourceDate":"2026-12-01"}]}"#,
    )
    .expect("prices");
    let priced: Value =
        serde_json::from_str(&home.report(&DAILY, &[("BATON_PRICING_FILE", prices.as_path())]))
            .expect("JSON");
    assert_ne!(priced["totals"]["costUsd"], cold["totals"]["costUsd"]);
    // A grown file, right after the same question was memoised.
    assert_eq!(home.json(&DAILY)["totals"], cold["totals"]);
    let path = home.0.join(SHORT);
    let text = std::fs::read_to_string(&path).expect("fixture");
    let last = text
        .lines()
        .rev()
        .find(|l| l.contains("\"usage\""))
        .expect("a usage line");
    let grown = last
        .replace("\"id\":\"msg_", "\"id\":\"msg_again")
        .replace("\"requestId\":\"req_", "\"requestId\":\"req_again");
    std::fs::write(&path, format!("{text}{grown}\n")).expect("append");
    let after = home.json(&DAILY);
    assert!(
        after["totals"]["requests"].as_u64() > cold["totals"]["requests"].as_u64(),
        "{} then {}",
        cold["totals"],
        after["totals"]
    );
}
