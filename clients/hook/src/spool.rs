//! The local spool: calls an end hook could not (or must not) send now.
//!
//! An end hook has about a second, shared with every other end hook, so it never waits on the
//! network: it appends the call here and returns. A drain sends entries oldest first and
//! deletes each only after the server answered it; a drain killed mid-way re-sends at most the
//! entry it was on, and every spooled call is idempotent on the server (a repeated close
//! answers `alreadyClosed`; a repeated heartbeat or pulse at the same observation time changes
//! nothing more), so replay never takes effect twice.
//!
//! Durable: an entry is written to a temporary file, synced, renamed into place and the folder
//! synced before the hook exits. Private: the folder is 0700 and entries 0600. Bounded: at most
//! [`MAX_ENTRIES`] entries of at most [`MAX_ENTRY_BYTES`] each; past that a new entry is
//! refused (the lease and the sweep still close the session).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fsutil;
use crate::http::{Answer, Client, Failure};

pub const MAX_ENTRIES: usize = 4096;
pub const MAX_ENTRY_BYTES: usize = 32 * 1024;

static SEQUENCE: AtomicU32 = AtomicU32::new(0);

/// One spooled call: a POST of `body` to `path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub path: String,
    pub body: Value,
}

/// Why an entry was not spooled.
#[derive(Debug)]
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

/// What one drain did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drained {
    pub sent: usize,
    /// Answered with a definitive refusal (400, 404, 409): dropped, never retried.
    pub refused: usize,
    /// Left for a later drain (server down, overloaded, or the key refused).
    pub left: usize,
    /// Another drain held the lock.
    pub busy: bool,
}

/// The spool folder.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
}

impl Spool {
    pub fn in_state(state_dir: &Path) -> Spool {
        Spool {
            dir: state_dir.join("spool"),
        }
    }

    /// Appends one entry durably.
    pub fn append(&self, entry: &Entry) -> Result<(), SpoolError> {
        let bytes = serde_json::to_vec(entry).map_err(|_| SpoolError::Io)?;
        if bytes.len() > MAX_ENTRY_BYTES {
            return Err(SpoolError::TooLarge);
        }
        fsutil::private_dir(&self.dir).map_err(|_| SpoolError::Io)?;
        if self.names().map_err(|_| SpoolError::Io)?.len() >= MAX_ENTRIES {
            return Err(SpoolError::Full);
        }
        let name = format!(
            "{:020}-{:010}-{:06}.json",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos()),
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        );
        fsutil::write_durably(&self.dir.join(name), &bytes).map_err(|_| SpoolError::Io)
    }

    /// Entry file names, oldest first (temporary files start with a dot and are skipped).
    pub fn names(&self) -> std::io::Result<Vec<String>> {
        let mut names = Vec::new();
        let read = match std::fs::read_dir(&self.dir) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(error) => return Err(error),
        };
        for entry in read {
            let name = entry?.file_name();
            if let Some(name) = name.to_str()
                && !name.starts_with('.')
                && name.ends_with(".json")
            {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    pub fn is_empty(&self) -> bool {
        self.names().map_or(true, |names| names.is_empty())
    }

    /// Sends every entry in order under an exclusive lock; stops at the first entry the server
    /// could not take now.
    pub fn drain(&self, client: &Client, mut on_refused: impl FnMut(u16)) -> Drained {
        let mut drained = Drained::default();
        if fsutil::private_dir(&self.dir).is_err() {
            return drained;
        }
        let Ok(lock) = fsutil::private_append(&self.dir.join(".lock")) else {
            return drained;
        };
        if lock_exclusive(&lock).is_err() {
            drained.busy = true;
            return drained;
        }
        let names = self.names().unwrap_or_default();
        for (index, name) in names.iter().enumerate() {
            let path = self.dir.join(name);
            let entry = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Entry>(&bytes).ok());
            let Some(entry) = entry else {
                // Unreadable or corrupt (a torn write cannot be renamed into place, so this is
                // foreign or damaged): it can never be sent.
                let _ = std::fs::remove_file(&path);
                drained.refused += 1;
                continue;
            };
            match verdict(client.post(&entry.path, &entry.body)) {
                Verdict::Done => drained.sent += 1,
                Verdict::Refused(status) => {
                    on_refused(status);
                    drained.refused += 1;
                }
                Verdict::Later => {
                    drained.left = names.len() - index;
                    return drained;
                }
            }
            let _ = std::fs::remove_file(&path);
        }
        drained
    }
}

fn lock_exclusive(file: &File) -> Result<(), std::fs::TryLockError> {
    file.try_lock()
}

enum Verdict {
    Done,
    Refused(u16),
    Later,
}

/// 2xx is done; 400, 404, 409 and 422 will never succeed; anything else (no answer, 401, 403,
/// 429, 5xx) may succeed later.
fn verdict(answer: Result<Answer, Failure>) -> Verdict {
    match answer {
        Ok(answer) if answer.ok() => Verdict::Done,
        Ok(answer) if matches!(answer.status, 400 | 404 | 409 | 422) => {
            Verdict::Refused(answer.status)
        }
        _ => Verdict::Later,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn entries_are_private_ordered_and_bounded() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(&dir.path().join("state"));
        for n in 0..3 {
            spool
                .append(&Entry {
                    path: "/api/v1/agent-sessions/close".into(),
                    body: serde_json::json!({"n": n}),
                })
                .expect("append");
        }
        let names = spool.names().expect("names");
        assert_eq!(names.len(), 3);
        let bodies: Vec<Value> = names
            .iter()
            .map(|name| {
                let bytes = std::fs::read(dir.path().join("state/spool").join(name)).expect("read");
                serde_json::from_slice::<Entry>(&bytes).expect("entry").body
            })
            .collect();
        assert_eq!(
            bodies,
            (0..3)
                .map(|n| serde_json::json!({"n": n}))
                .collect::<Vec<_>>()
        );
        let mode =
            |path: &Path| std::fs::metadata(path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("state/spool")), 0o700);
        assert_eq!(mode(&dir.path().join("state/spool").join(&names[0])), 0o600);
        let huge = Entry {
            path: "/x".into(),
            body: Value::String("x".repeat(MAX_ENTRY_BYTES)),
        };
        assert!(matches!(spool.append(&huge), Err(SpoolError::TooLarge)));
    }
}
