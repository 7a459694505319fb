//! The local spools: calls an end hook could not (or must not) send now — the lifecycle
//! calls in `spool/`, the usage context's delivery records and final flushes in `usage/spool/`
//! (same format and rules, drained after the lifecycle calls).
//!
//! An end hook has about a second, shared with every other end hook, so it never waits on the
//! network: it appends the call here and returns. The spool is an append-only journal of JSON
//! lines (`spool/journal`): appending is one `write` and one `fdatasync`, with no directory
//! change after the journal exists, which is what keeps SessionEnd inside its budget. The drain
//! ([`Spool::drain`]) rotates the journal into a batch and replays it in order.
//!
//! Durable: the line is synced before the hook exits (and the folder too when the append
//! created the journal). Private: the folder is 0700 and the files 0600. Bounded: at most
//! [`MAX_JOURNAL_BYTES`] in the journal and one batch being drained, entries of at most
//! [`MAX_ENTRY_BYTES`]; past that a new entry is refused (the lease and the sweep still close
//! the session).
//!
//! Appenders and the drain meet on file locks: an appender holds a shared lock on the journal
//! while it writes and checks that the path still names the file it locked; the drain renames
//! the journal away and then takes an exclusive lock on it, so every append that made it into
//! the old file is complete before the drain reads it, and every later one lands in a new file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fsutil;

pub const MAX_ENTRY_BYTES: usize = 32 * 1024;
pub const MAX_JOURNAL_BYTES: u64 = 8 * 1024 * 1024;

/// One spooled call: a POST of `body` to `path`.
///
/// `key` is the call's idempotence key, given once when the line is appended and sent with
/// every attempt as `Idempotency-Key`: the server records the keys it has accepted, so a line
/// the drain sends twice (killed after the send, before it recorded its progress) is seen
/// there as a resend and counted. Lines spooled before keys existed have none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub path: String,
    pub body: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Entry {
    /// A call to spool; its key is given when it is appended.
    pub fn new(path: impl Into<String>, body: Value) -> Entry {
        Entry {
            path: path.into(),
            body,
            key: None,
        }
    }
}

/// Why an entry was not spooled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpoolError {
    Full,
    TooLarge,
    Io,
}

impl SpoolError {
    pub fn code(&self) -> &'static str {
        match self {
            SpoolError::Full => "spool_full",
            SpoolError::TooLarge => "spool_entry_too_large",
            SpoolError::Io => "spool_io",
        }
    }
}

/// The spool folder.
#[derive(Debug, Clone)]
pub struct Spool {
    pub(crate) dir: PathBuf,
    /// The state folder it belongs to.
    pub(crate) state: PathBuf,
}

/// The prefix of a rotated journal: `batch-<nanos>`, drained in name order.
pub const BATCH_PREFIX: &str = "batch-";

impl Spool {
    /// The lifecycle calls' spool (`spool/`).
    pub fn in_state(state_dir: &Path) -> Spool {
        Spool {
            dir: state_dir.join("spool"),
            state: state_dir.to_path_buf(),
        }
    }

    /// The usage context's spool (`usage/spool/`): delivery records and final flushes. Apart
    /// from the lifecycle calls, so a usage service that cannot take an upload never holds a
    /// close back, and SessionStart's inline drain never waits for one.
    pub fn usage_in_state(state_dir: &Path) -> Spool {
        Spool {
            dir: state_dir.join("usage").join("spool"),
            state: state_dir.to_path_buf(),
        }
    }

    pub(crate) fn journal(&self) -> PathBuf {
        self.dir.join("journal")
    }

    /// Appends one entry durably, giving it an idempotence key when it has none.
    pub fn append(&self, entry: &Entry) -> Result<(), SpoolError> {
        let keyed;
        let entry = if entry.key.is_some() {
            entry
        } else {
            keyed = Entry {
                key: Some(uuid::Uuid::new_v4().to_string()),
                ..entry.clone()
            };
            &keyed
        };
        let mut line = serde_json::to_vec(entry).map_err(|_| SpoolError::Io)?;
        line.push(b'\n');
        if line.len() > MAX_ENTRY_BYTES {
            return Err(SpoolError::TooLarge);
        }
        fsutil::private_dir(&self.dir).map_err(|_| SpoolError::Io)?;
        // A drain may rotate the journal between our open and our lock: then retry on the new.
        for _ in 0..3 {
            let mut file = OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .open(self.journal())
                .map_err(|_| SpoolError::Io)?;
            file.lock_shared().map_err(|_| SpoolError::Io)?;
            let locked = file.metadata().map_err(|_| SpoolError::Io)?;
            let current = std::fs::metadata(self.journal()).ok();
            if current.is_none_or(|current| current.ino() != locked.ino()) {
                continue;
            }
            if locked.len() + line.len() as u64 > MAX_JOURNAL_BYTES {
                return Err(SpoolError::Full);
            }
            file.write_all(&line).map_err(|_| SpoolError::Io)?;
            file.sync_data().map_err(|_| SpoolError::Io)?;
            if locked.len() == 0 {
                // This append may have created the journal: make its name durable too.
                File::open(&self.dir)
                    .and_then(|dir| dir.sync_all())
                    .map_err(|_| SpoolError::Io)?;
            }
            return Ok(());
        }
        Err(SpoolError::Io)
    }

    /// Rotated batches, oldest first.
    pub(crate) fn batches(&self) -> Vec<PathBuf> {
        let mut batches: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| {
                        path.file_name()
                            .and_then(|name| name.to_str())
                            .is_some_and(|name| {
                                name.starts_with(BATCH_PREFIX) && !name.ends_with(".done")
                            })
                    })
                    .collect()
            })
            .unwrap_or_default();
        batches.sort();
        batches
    }

    /// How long ago the journal was created (its oldest entry was appended): `None` when the
    /// journal is empty or absent, `Some(None)` when the file system keeps no creation time.
    pub fn journal_age(&self, now: std::time::SystemTime) -> Option<Option<std::time::Duration>> {
        let meta = std::fs::metadata(self.journal())
            .ok()
            .filter(|meta| meta.len() > 0)?;
        Some(
            meta.created()
                .ok()
                .map(|created| now.duration_since(created).unwrap_or_default()),
        )
    }

    /// True when nothing waits to be sent.
    pub fn is_empty(&self) -> bool {
        let journal_empty = std::fs::metadata(self.journal()).map_or(true, |meta| meta.len() == 0);
        journal_empty && self.batches().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    pub(crate) fn entry(n: u64) -> Entry {
        Entry::new("/api/v1/agent-sessions/close", serde_json::json!({"n": n}))
    }

    #[test]
    fn each_appended_line_gets_its_own_key_and_keeps_a_given_one() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(&dir.path().join("state"));
        spool.append(&entry(1)).expect("one");
        spool.append(&entry(1)).expect("two");
        let mut given = entry(2);
        given.key = Some("k-given".into());
        spool.append(&given).expect("three");
        let lines: Vec<Entry> = std::fs::read_to_string(spool.journal())
            .expect("journal")
            .lines()
            .map(|line| serde_json::from_str(line).expect("line"))
            .collect();
        assert_eq!(lines.len(), 3);
        let first = lines[0].key.clone().expect("keyed");
        let second = lines[1].key.clone().expect("keyed");
        assert_ne!(
            first, second,
            "the same call appended twice: two lines, two keys"
        );
        assert!(uuid::Uuid::parse_str(&first).is_ok(), "{first}");
        assert_eq!(lines[2].key.as_deref(), Some("k-given"));
        let before_keys: Entry =
            serde_json::from_str(r#"{"path":"/p","body":{}}"#).expect("a line without a key");
        assert_eq!(before_keys.key, None);
    }

    #[test]
    fn appends_are_private_ordered_lines_and_bounded() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(&dir.path().join("state"));
        assert!(spool.is_empty());
        for n in 0..3 {
            spool.append(&entry(n)).expect("append");
        }
        assert!(!spool.is_empty());
        let text = std::fs::read_to_string(spool.journal()).expect("journal");
        let bodies: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str::<Entry>(line).expect("entry").body)
            .collect();
        assert_eq!(
            bodies,
            (0..3)
                .map(|n| serde_json::json!({"n": n}))
                .collect::<Vec<_>>()
        );
        let mode =
            |path: &Path| std::fs::metadata(path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&spool.dir), 0o700);
        assert_eq!(mode(&spool.journal()), 0o600);
        let huge = Entry::new("/x", Value::String("x".repeat(MAX_ENTRY_BYTES)));
        assert_eq!(spool.append(&huge), Err(SpoolError::TooLarge));
    }

    #[test]
    fn a_full_journal_refuses_and_keeps_what_it_has() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(dir.path());
        spool.append(&entry(0)).expect("append");
        let file = OpenOptions::new()
            .append(true)
            .open(spool.journal())
            .expect("open");
        file.set_len(MAX_JOURNAL_BYTES).expect("fill");
        assert_eq!(spool.append(&entry(1)), Err(SpoolError::Full));
        assert_eq!(
            std::fs::metadata(spool.journal()).expect("meta").len(),
            MAX_JOURNAL_BYTES
        );
    }
}
