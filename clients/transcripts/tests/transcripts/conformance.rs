//! The conformance corpus: real public transcripts (`fixtures/conformance/`, provenance and
//! licences beside them) read by Baton must give exactly what an independent tally
//! (`eval/usage/*_tally.py`, written from the format's facts and never from this crate) gives,
//! per (UTC day, model), per session and per agent. The tally's figures are committed in
//! `eval/usage/expected/<harness>/<source>.json`; `eval/usage/README.md` says how to make them
//! again.
//!
//! The corpus was split by source repository into dev and held-out (`split.json`) before
//! Baton read any of it. Both halves are asserted here; a failure names the half.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_transcripts::{Corpus, Options, Roots, UsageRecord, scan};
use serde_json::Value;

/// The figures one group adds up to, in the tally's field names.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Figures {
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write_5m: u64,
    cache_write_1h: u64,
    reasoning: u64,
    web_search_requests: u64,
    web_fetch_requests: u64,
    requests: u64,
}

impl Figures {
    fn add(&mut self, record: &UsageRecord) {
        let t = &record.tokens;
        self.input += t.input;
        self.output += t.output;
        self.cache_read += t.cache_read;
        self.cache_write_5m += t.cache_write_5m;
        self.cache_write_1h += t.cache_write_1h;
        self.reasoning += t.reasoning;
        self.web_search_requests += record.server_tools.web_search;
        self.web_fetch_requests += record.server_tools.web_fetch;
        self.requests += 1;
    }

    fn from_json(value: &Value) -> Figures {
        let field = |name: &str| {
            value[name]
                .as_u64()
                .unwrap_or_else(|| panic!("expected figure {name} in {value}"))
        };
        Figures {
            input: field("input"),
            output: field("output"),
            cache_read: field("cache_read"),
            cache_write_5m: field("cache_write_5m"),
            cache_write_1h: field("cache_write_1h"),
            reasoning: field("reasoning"),
            web_search_requests: field("web_search_requests"),
            web_fetch_requests: field("web_fetch_requests"),
            requests: field("requests"),
        }
    }
}

/// What one source's tally (or Baton) says: by (day, model), by session, by (session, agent).
#[derive(Debug, Default, PartialEq, Eq)]
struct Report {
    daily: BTreeMap<(String, String), Figures>,
    sessions: BTreeMap<String, Figures>,
    agents: BTreeMap<(String, String), Figures>,
}

const MAIN: &str = "(main)";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Baton's figures for one source folder. `<synthetic>` records are the client's own messages,
/// not requests; the tally leaves them out, and so does this comparison (they carry no tokens).
fn baton(harness: &str, folder: &Path) -> Report {
    let roots = match harness {
        "claude-code" => Roots {
            claude: vec![folder.join("projects")],
            ..Roots::default()
        },
        "gemini" => Roots {
            gemini: vec![folder.join("tmp")],
            ..Roots::default()
        },
        "copilot" => Roots {
            copilot: vec![folder.join("session-state")],
            ..Roots::default()
        },
        _ => Roots {
            codex: vec![folder.join("sessions")],
            ..Roots::default()
        },
    };
    let corpus: Corpus =
        scan(&roots, &Options::default(), &|_| {}).expect("no containment violation");
    let mut report = Report::default();
    for record in corpus.records.iter().filter(|r| !r.is_synthetic()) {
        let day = chrono::DateTime::from_timestamp_millis(record.timestamp_ms)
            .expect("time")
            .date_naive()
            .to_string();
        // A rollout that states no model (0.34 writes no `turn_context`): the tally's word.
        let model = record
            .model
            .clone()
            .unwrap_or_else(|| "unknown".to_string());
        report.daily.entry((day, model)).or_default().add(record);
        report
            .sessions
            .entry(record.session_id.clone())
            .or_default()
            .add(record);
        let agent = record.agent_id.clone().unwrap_or_else(|| MAIN.to_string());
        report
            .agents
            .entry((record.session_id.clone(), agent))
            .or_default()
            .add(record);
    }
    report
}

fn expected(path: &Path) -> Report {
    let text = std::fs::read_to_string(path).unwrap_or_else(|_| panic!("{}", path.display()));
    let json: Value = serde_json::from_str(&text).expect("tally output is JSON");
    let mut report = Report::default();
    for row in json["daily"].as_array().expect("daily") {
        let key = (
            row["day"].as_str().expect("day").to_string(),
            row["model"].as_str().unwrap_or_default().to_string(),
        );
        report.daily.insert(key, Figures::from_json(row));
    }
    for session in json["sessions"].as_array().expect("sessions") {
        let id = session["session_id"]
            .as_str()
            .expect("session_id")
            .to_string();
        report
            .sessions
            .insert(id.clone(), Figures::from_json(&session["total"]));
        for agent in session["agents"].as_array().expect("agents") {
            let agent_id = agent["agent_id"].as_str().unwrap_or(MAIN).to_string();
            report
                .agents
                .insert((id.clone(), agent_id), Figures::from_json(agent));
        }
    }
    // The tally lists sessions whose every request was synthetic with zero figures; Baton
    // has no record for them after leaving synthetic ones out.
    report.sessions.retain(|_, f| f.requests > 0);
    report.agents.retain(|_, f| f.requests > 0);
    report
}

/// Lines describing where two reports differ.
fn differences(baton: &Report, tally: &Report) -> Vec<String> {
    fn compare<K: std::fmt::Debug + Ord>(
        what: &str,
        ours: &BTreeMap<K, Figures>,
        theirs: &BTreeMap<K, Figures>,
        out: &mut Vec<String>,
    ) {
        for (key, figures) in theirs {
            match ours.get(key) {
                Some(found) if found == figures => {}
                Some(found) => out.push(format!(
                    "{what} {key:?}: Baton {found:?}, tally {figures:?}"
                )),
                None => out.push(format!("{what} {key:?}: missing in Baton")),
            }
        }
        for key in ours.keys().filter(|key| !theirs.contains_key(key)) {
            out.push(format!("{what} {key:?}: only in Baton"));
        }
    }
    let mut out = Vec::new();
    compare("day/model", &baton.daily, &tally.daily, &mut out);
    compare("session", &baton.sessions, &tally.sessions, &mut out);
    compare("agent", &baton.agents, &tally.agents, &mut out);
    out
}

fn check(harness: &str) {
    let corpus = root().join("fixtures/conformance").join(harness);
    let split: Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("split.json")).expect("split.json"),
    )
    .expect("split is JSON");
    let mut failures = Vec::new();
    let mut sources = 0;
    for half in ["dev", "heldout"] {
        for source in split[half].as_array().expect("half") {
            let source = source.as_str().expect("source name");
            sources += 1;
            let ours = baton(harness, &corpus.join(source));
            let tally = expected(
                &root()
                    .join("eval/usage/expected")
                    .join(harness)
                    .join(format!("{source}.json")),
            );
            assert!(
                !tally.daily.is_empty(),
                "{source}: the tally found no usage"
            );
            for line in differences(&ours, &tally) {
                failures.push(format!("[{half}] {source}: {line}"));
            }
        }
    }
    assert!(sources > 0, "no source in {harness}'s split");
    assert!(
        failures.is_empty(),
        "Baton differs from the independent tally:\n{}",
        failures.join("\n")
    );
}

#[test]
fn claude_code_corpus_equals_the_independent_tally() {
    check("claude-code");
}

#[test]
fn codex_corpus_equals_the_independent_tally() {
    check("codex");
}

#[test]
fn gemini_corpus_equals_the_independent_tally() {
    check("gemini");
}

/// Copilot CLI: no public session log with usage receipts exists (PROVENANCE.md); these are the
/// real 1.0.102 binary's own logs from local runs, reduced to the events both readers use.
#[test]
fn copilot_logs_equal_the_independent_tally() {
    check("copilot");
}
