//! The report memo: the last report `baton-hook usage` printed, kept with a digest of
//! everything it was made from, so that asking again about files that have not changed prints
//! it again without reading them.
//!
//! The digest covers every input a report depends on: the discovered files (path, role, size,
//! modification time and inode, the identity the checkpoints already trust for an unchanged
//! file) and the walk's skip counts, the canonical roots, the command line (report, dates, zone,
//! project, form), the extra price file's bytes, the parser revision, and the running
//! executable's own identity (a rebuilt binary, whose bundled price table or report format may
//! differ, never reuses an older one's memo). A report depends on nothing else: no clock, no
//! network. Any difference is a miss, and the run reads through the checkpoints as before.
//!
//! Only clean runs are kept (no unreadable file, no parked session), and the `--json` form is
//! kept as a re-run would print it: `reads` says every file came from the checkpoints. One memo
//! per corpus scope, replaced by the next clean run; `--no-cache` neither reads nor writes it.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use baton_transcripts::checkpoint::PARSER_REVISION;
use baton_transcripts::walk::Discovery;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::args::UsageArgs;

/// The memo of one report request.
pub struct Memo {
    path: PathBuf,
    key: String,
}

impl Memo {
    /// The memo slot for this request over `discovery`, in `dir`.
    pub fn new(dir: &Path, discovery: &Discovery, args: &UsageArgs, prices: &[u8]) -> Memo {
        let mut roots = Sha256::new();
        hash_roots(&mut roots, discovery);
        let scope = hex::encode(&roots.finalize()[..16]);
        Memo {
            path: dir.join(format!("report-{scope}.json")),
            key: key(discovery, args, prices),
        }
    }

    /// The memoised report, when the inputs are exactly the ones it was made from.
    pub fn load(&self) -> Option<String> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        let stored: Value = serde_json::from_str(&text).ok()?;
        if stored["key"].as_str() != Some(self.key.as_str()) {
            return None;
        }
        stored["output"].as_str().map(str::to_string)
    }

    /// Keeps `output` (what this run printed). A JSON report's `reads` is rewritten to what a
    /// re-run prints: `files` files, all from the checkpoints. Failing to write changes nothing.
    pub fn save(&self, output: &str, json: bool, files: u64) {
        let output = if json {
            let Ok(mut value) = serde_json::from_str::<Value>(output) else {
                return;
            };
            if let Some(reads) = value.get_mut("reads") {
                *reads = serde_json::json!({"cached": files, "tail": 0, "full": 0});
            }
            value.to_string()
        } else {
            output.to_string()
        };
        let stored = serde_json::json!({"key": self.key, "output": output});
        let _ = write_private(&self.path, stored.to_string().as_bytes());
    }
}

/// Feeds every canonical root of `discovery` into `hasher`, each followed by a zero byte.
fn hash_roots(hasher: &mut Sha256, discovery: &Discovery) {
    for root in discovery
        .claude_roots
        .iter()
        .chain(&discovery.codex_roots)
        .chain(&discovery.gemini_roots)
        .chain(&discovery.copilot_roots)
    {
        hasher.update(root.as_os_str().as_encoded_bytes());
        hasher.update([0]);
    }
}

/// The digest of a report's inputs.
fn key(discovery: &Discovery, args: &UsageArgs, prices: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(PARSER_REVISION.to_le_bytes());
    if let Some(exe) = std::env::current_exe()
        .ok()
        .and_then(|exe| std::fs::metadata(exe).ok())
    {
        hasher.update(exe.size().to_le_bytes());
        hasher.update(exe.mtime().to_le_bytes());
        hasher.update(exe.mtime_nsec().to_le_bytes());
        hasher.update(exe.ino().to_le_bytes());
    }
    hasher.update(format!("{args:?}").as_bytes());
    hasher.update((prices.len() as u64).to_le_bytes());
    hasher.update(prices);
    hash_roots(&mut hasher, discovery);
    for file in &discovery.files {
        hasher.update(file.path.as_os_str().as_encoded_bytes());
        hasher.update([0]);
        hasher.update(format!("{:?}", file.role).as_bytes());
        hasher.update(file.size.to_le_bytes());
        hasher.update(file.mtime_ns.to_le_bytes());
        hasher.update(file.ino.to_le_bytes());
    }
    hasher.update(format!("{:?}", discovery.skips).as_bytes());
    hex::encode(hasher.finalize())
}

/// Writes atomically (a temporary file renamed over the old one), readable by the user only.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(bytes)?;
    }
    std::fs::rename(&temporary, path)
}
