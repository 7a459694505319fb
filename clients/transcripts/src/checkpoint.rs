//! Checkpoints: what the last run read, so the next one reads only what changed (seed 002).
//!
//! Four rules keep them from turning speed into trust: they are scoped (a SHA-256 of the
//! canonical roots, so another corpus never reuses them); revisioned ([`PARSER_REVISION`],
//! bumped whenever the parser's output changes meaning, which drops every stored entry at
//! once); per file they hold the file's identity (size, mtime, inode) and the overlap digest
//! the tail read checks; and they degrade rather than crash (a missing, unreadable or
//! undecodable checkpoint file is an empty one). A checkpoint may change how much work a run
//! does, never what it reports.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::read::FileRead;

/// Bump when the facts a file yields change meaning.
pub const PARSER_REVISION: u32 = 5;

/// Consecutive failures on an unchanged fingerprint after which a session is parked.
pub const MAX_ATTEMPTS: u32 = 3;

/// The persisted state of one corpus.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checkpoints {
    pub revision: u32,
    pub scope: String,
    /// By absolute path.
    pub files: HashMap<PathBuf, FileRead>,
    /// Sessions that failed, by session key.
    pub failures: BTreeMap<String, Failures>,
}

/// The on-disk form, written from borrowed reads so a run never copies what it read.
#[derive(Serialize)]
pub struct View<'a> {
    pub revision: u32,
    pub scope: &'a str,
    pub files: Vec<(&'a Path, &'a FileRead)>,
    pub failures: &'a BTreeMap<String, Failures>,
}

#[derive(Deserialize)]
struct Stored {
    revision: u32,
    scope: String,
    files: Vec<(PathBuf, FileRead)>,
    failures: BTreeMap<String, Failures>,
}

/// Failed reads of one session against one fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failures {
    pub fingerprint: String,
    pub count: u32,
}

impl Failures {
    /// Parked: it failed [`MAX_ATTEMPTS`] times and nothing has changed since.
    pub fn quarantines(&self, fingerprint: &str) -> bool {
        self.count >= MAX_ATTEMPTS && self.fingerprint == fingerprint
    }
}

/// The scope of a set of canonical roots at the current revision.
pub fn scope(roots: &[PathBuf]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(PARSER_REVISION.to_le_bytes());
    for root in roots {
        hasher.update(root.as_os_str().as_encoded_bytes());
        hasher.update([0]);
    }
    hex::encode(&hasher.finalize()[..16])
}

fn file_of(dir: &Path, scope: &str) -> PathBuf {
    dir.join(format!("checkpoints-{scope}.bin"))
}

/// Loads the checkpoints of `scope`; anything wrong with them reads as none.
pub fn load(dir: &Path, scope: &str) -> Checkpoints {
    let fresh = Checkpoints {
        revision: PARSER_REVISION,
        scope: scope.to_string(),
        ..Checkpoints::default()
    };
    let Ok(bytes) = fs::read(file_of(dir, scope)) else {
        return fresh;
    };
    match postcard::from_bytes::<Stored>(&bytes) {
        Ok(stored) if stored.revision == PARSER_REVISION && stored.scope == scope => Checkpoints {
            revision: stored.revision,
            scope: stored.scope,
            files: stored.files.into_iter().collect(),
            failures: stored.failures,
        },
        _ => fresh,
    }
}

/// Writes the checkpoints atomically (a temporary file renamed over the old one), private to
/// the user.
pub fn save(dir: &Path, checkpoints: &Checkpoints) -> io::Result<()> {
    let view = View {
        revision: checkpoints.revision,
        scope: &checkpoints.scope,
        files: checkpoints
            .files
            .iter()
            .map(|(path, read)| (path.as_path(), read))
            .collect(),
        failures: &checkpoints.failures,
    };
    save_view(dir, &view)
}

/// Writes a view of the checkpoints (see [`save`]).
pub fn save_view(dir: &Path, checkpoints: &View<'_>) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let target = file_of(dir, checkpoints.scope);
    let temporary = target.with_extension(format!("tmp-{}", std::process::id()));
    {
        use std::io::Write;
        let file = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        // Streamed: the encoded checkpoints are never held in memory whole.
        let mut writer = io::BufWriter::with_capacity(1 << 16, file);
        postcard::to_io(checkpoints, &mut writer).map_err(io::Error::other)?;
        writer.flush()?;
    }
    fs::rename(&temporary, &target)
}

/// A session's fingerprint: `size:mtime` of each of its files, sorted (seed 002).
pub fn fingerprint<'a>(files: impl IntoIterator<Item = (&'a Path, u64, i128)>) -> String {
    let mut lines: Vec<String> = files
        .into_iter()
        .map(|(path, size, mtime)| format!("{}:{size}:{mtime}", path.display()))
        .collect();
    lines.sort();
    lines.join("\n")
}
