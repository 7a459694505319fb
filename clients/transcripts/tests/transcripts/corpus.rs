//! Laying out corpora in temporary folders, and reading them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_transcripts::tree::{Agent, AgentKind};
use baton_transcripts::{Corpus, Options, Roots, Session, Tokens, scan};

/// The repository's fixtures folder (`fixtures/` at its root).
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// A corpus root: `<dir>/claude/projects/...`, `<dir>/codex/sessions/...`,
/// `<dir>/gemini/tmp/...` and `<dir>/copilot/session-state/...`.
pub struct Layout {
    pub dir: tempfile::TempDir,
}

impl Layout {
    pub fn new() -> Layout {
        Layout {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn projects(&self) -> PathBuf {
        self.dir.path().join("claude/projects")
    }

    pub fn sessions(&self) -> PathBuf {
        self.dir.path().join("codex/sessions")
    }

    pub fn roots(&self) -> Roots {
        Roots {
            claude: vec![self.projects()],
            codex: vec![self.sessions()],
            gemini: vec![self.gemini_tmp()],
            copilot: vec![self.copilot_state()],
        }
    }

    pub fn copilot_state(&self) -> PathBuf {
        self.dir.path().join("copilot/session-state")
    }

    /// Writes `text` at `relative` under the Copilot CLI `session-state/` folder.
    pub fn copilot_file(&self, relative: &str, text: &str) -> PathBuf {
        write(&self.copilot_state().join(relative), text.as_bytes())
    }

    pub fn gemini_tmp(&self) -> PathBuf {
        self.dir.path().join("gemini/tmp")
    }

    /// Writes `text` at `relative` under the Gemini CLI `tmp/` folder.
    pub fn gemini_file(&self, relative: &str, text: &str) -> PathBuf {
        write(&self.gemini_tmp().join(relative), text.as_bytes())
    }

    /// Writes `text` at `relative` under the Claude Code projects folder.
    pub fn claude_file(&self, relative: &str, text: &str) -> PathBuf {
        write(&self.projects().join(relative), text.as_bytes())
    }

    pub fn codex_file(&self, relative: &str, text: &str) -> PathBuf {
        write(&self.sessions().join(relative), text.as_bytes())
    }

    /// Copies a fixture file (path under `fixtures()`) to `relative` under the projects folder.
    pub fn copy_claude(&self, fixture: &str, relative: &str) -> PathBuf {
        let bytes = std::fs::read(fixtures().join(fixture)).expect("fixture");
        write(&self.projects().join(relative), &bytes)
    }

    pub fn copy_codex(&self, fixture: &str, relative: &str) -> PathBuf {
        let bytes = std::fs::read(fixtures().join(fixture)).expect("fixture");
        write(&self.sessions().join(relative), &bytes)
    }

    pub fn scan(&self) -> Corpus {
        scan(&self.roots(), &Options::default(), &|_| {}).expect("no containment violation")
    }

    /// A scan through checkpoints kept in `cache`.
    pub fn scan_cached(&self, cache: &Path) -> Corpus {
        let options = Options {
            checkpoint_dir: Some(cache.to_path_buf()),
            ..Options::default()
        };
        scan(&self.roots(), &options, &|_| {}).expect("no containment violation")
    }

    /// Appends `text` to `path` and scans again through `cache`, checking that the grown file
    /// was read as a tail and that the records equal a full read.
    pub fn append_and_rescan(&self, cache: &Path, path: &Path, text: &str) -> Corpus {
        append(path, text);
        let again = self.scan_cached(cache);
        assert_eq!(again.reads.tail, 1, "read as a tail");
        assert_eq!(again.records, self.scan().records, "tail read = full read");
        again
    }
}

/// Appends `text` to the file at `path`, as a harness growing its transcript does.
pub fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open");
    std::io::Write::write_all(&mut file, text.as_bytes()).expect("append");
}

/// The one subagent of `session`, checked to be `agent_id`, spawned by the main agent.
pub fn only_child<'a>(session: &'a Session, agent_id: &str) -> &'a Agent {
    let tree = &session.agents;
    assert_eq!(tree.len(), 2);
    assert_eq!(tree[0].kind, AgentKind::Main);
    let child = &tree[1];
    assert_eq!(child.agent_id.as_deref(), Some(agent_id));
    assert_eq!(child.parent_agent_id, None, "the main agent is its parent");
    child
}

pub fn write(path: &Path, bytes: &[u8]) -> PathBuf {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
    path.to_path_buf()
}

/// Tokens per model as `[input, output, cache read, cache write 5m, cache write 1h]`.
pub fn by_model(corpus: &Corpus) -> BTreeMap<String, [u64; 5]> {
    let mut out: BTreeMap<String, Tokens> = BTreeMap::new();
    for record in &corpus.records {
        *out.entry(record.model.clone().unwrap_or_default())
            .or_default() += record.tokens;
    }
    out.into_iter()
        .map(|(model, t)| (model, kinds(&t)))
        .collect()
}

/// Tokens per agent (`main` for the main agent).
pub fn by_agent(corpus: &Corpus) -> BTreeMap<String, [u64; 5]> {
    let mut out: BTreeMap<String, Tokens> = BTreeMap::new();
    for record in &corpus.records {
        *out.entry(record.agent_id.clone().unwrap_or_else(|| "main".into()))
            .or_default() += record.tokens;
    }
    out.into_iter()
        .map(|(agent, t)| (agent, kinds(&t)))
        .collect()
}

pub fn kinds(t: &Tokens) -> [u64; 5] {
    [
        t.input,
        t.output,
        t.cache_read,
        t.cache_write_5m,
        t.cache_write_1h,
    ]
}

/// An assistant line with the given ids and usage.
pub fn assistant(
    message: &str,
    request: Option<&str>,
    sidechain: bool,
    model: &str,
    usage: &str,
) -> String {
    let request = request
        .map(|r| format!(",\"requestId\":\"{r}\""))
        .unwrap_or_default();
    format!(
        "{{\"type\":\"assistant\",\"sessionId\":\"s1\",\"isSidechain\":{sidechain},\"version\":\"2.1.200\",\
\"timestamp\":\"2026-03-01T10:00:00.000Z\"{request},\"message\":{{\"id\":\"{message}\",\"model\":\"{model}\",\
\"content\":[{{\"type\":\"text\",\"text\":\"hi\"}}],\"usage\":{usage}}}}}\n"
    )
}
