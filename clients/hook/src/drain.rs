//! Draining the spool: oldest first, each entry forgotten only after the server answered it.
//!
//! The drain holds `spool/.lock` (one drain at a time), rotates the journal into
//! `batch-<nanos>` when no older batch is left, and replays each batch line by line, recording
//! in `batch-<nanos>.done` how many lines were answered. A drain killed mid-way resumes from
//! that count and re-sends at most the entry it was on; every spooled call is idempotent on the
//! server (a repeated close answers `alreadyClosed`; a repeated heartbeat or pulse at the same
//! observation time changes nothing more), so a replay never takes effect twice. A batch is
//! deleted once every line is answered.
//!
//! Two kinds of entry are not plain calls: a run of consecutive hook deliveries is merged into
//! one usage upload ([`deliveries::merge`], acknowledged together), and a SessionEnd final
//! flush ([`crate::upload::session::FLUSH`]) reads the session's transcript at drain time and
//! uploads what the ledger has not seen.

use std::fs::OpenOptions;
use std::path::Path;

use crate::fsutil;
use crate::http::{Answer, Client, Failure};
use crate::sent::Sent;
use crate::spool::{BATCH_PREFIX, Entry, Spool};
use crate::upload::deliveries;
use crate::upload::ledger::Ledger;

/// What one drain did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drained {
    pub sent: usize,
    /// Answered with a definitive refusal (400, 404, 409, 422), or unreadable: dropped.
    pub refused: usize,
    /// Stopped early: the server could not take an entry now.
    pub stopped: bool,
    /// Another drain held the lock.
    pub busy: bool,
    /// When it stopped early: the wait the server asked for (`Retry-After`).
    pub retry_after: Option<std::time::Duration>,
}

/// 2xx is done; 400, 404, 409 and 422 will never succeed; anything else may succeed later.
pub fn verdict(answer: Result<Answer, Failure>) -> Sent {
    match answer {
        Ok(answer) if answer.ok() => Sent::Done,
        Ok(answer) if matches!(answer.status, 400 | 404 | 409 | 422) => {
            Sent::Refused(answer.status)
        }
        Ok(answer) => Sent::Later(answer.retry_after),
        Err(_) => Sent::Later(None),
    }
}

impl Spool {
    /// Drains to the server behind `client`; `on_refused` hears each refusal's status. With
    /// `wait`, a drain already running is waited for rather than left to finish alone (a
    /// drain by hand must send what is spooled now, not report "busy"). A final usage flush
    /// stops this drain (it reads a transcript, which a hook's or a sidecar's inline drain
    /// must not wait for): [`Spool::drain_all`] does it.
    pub fn drain(&self, client: &Client, wait: bool, on_refused: impl FnMut(u16)) -> Drained {
        self.drain_sending(client, wait, false, on_refused)
    }

    /// As [`Spool::drain`], running final usage flushes too (the detached drain, a drain by
    /// hand).
    pub fn drain_all(&self, client: &Client, wait: bool, on_refused: impl FnMut(u16)) -> Drained {
        self.drain_sending(client, wait, true, on_refused)
    }

    fn drain_sending(
        &self,
        client: &Client,
        wait: bool,
        flushes: bool,
        mut on_refused: impl FnMut(u16),
    ) -> Drained {
        let state_dir = self.state.clone();
        self.drain_locking(wait, |entry| {
            let sent = if entry.path == crate::upload::session::FLUSH {
                if !flushes {
                    return Sent::Later(None);
                }
                crate::upload::session::flush(&state_dir, client, &entry.body)
            } else {
                verdict(client.post_keyed(&entry.path, &entry.body, entry.key.as_deref()))
            };
            if let Sent::Refused(status) = sent {
                on_refused(status);
            }
            sent
        })
    }

    /// The drain with any sender (tests use an in-process one).
    #[cfg(test)]
    pub fn drain_with(&self, send: impl FnMut(&Entry) -> Sent) -> Drained {
        self.drain_locking(false, send)
    }

    fn drain_locking(&self, wait: bool, mut send: impl FnMut(&Entry) -> Sent) -> Drained {
        let mut drained = Drained::default();
        if fsutil::private_dir(&self.dir).is_err() {
            return drained;
        }
        let Ok(lock) = fsutil::private_append(&self.dir.join(".lock")) else {
            return drained;
        };
        let locked = if wait {
            lock.lock().is_ok()
        } else {
            lock.try_lock().is_ok()
        };
        if !locked {
            drained.busy = true;
            return drained;
        }
        loop {
            let batches = self.batches();
            let batch = match batches.first() {
                Some(batch) => batch.clone(),
                None => match self.rotate() {
                    Some(batch) => batch,
                    None => return drained,
                },
            };
            if !replay(&batch, &self.state, &mut send, &mut drained) {
                drained.stopped = true;
                return drained;
            }
            let _ = std::fs::remove_file(done_path(&batch));
            let _ = std::fs::remove_file(&batch);
        }
    }

    /// Moves a non-empty journal aside as the next batch, once every appender that got into it
    /// has finished.
    fn rotate(&self) -> Option<std::path::PathBuf> {
        let journal = self.journal();
        if std::fs::metadata(&journal).map_or(true, |meta| meta.len() == 0) {
            return None;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let batch = self.dir.join(format!("{BATCH_PREFIX}{nanos:020}"));
        std::fs::rename(&journal, &batch).ok()?;
        let _ = std::fs::File::open(&self.dir).and_then(|dir| dir.sync_all());
        let file = OpenOptions::new().read(true).open(&batch).ok()?;
        file.lock().ok()?;
        Some(batch)
    }
}

fn done_path(batch: &Path) -> std::path::PathBuf {
    let mut name = batch.as_os_str().to_owned();
    name.push(".done");
    name.into()
}

/// Replays one batch from its recorded progress; false when the server could not take an
/// entry now.
fn replay(
    batch: &Path,
    state_dir: &Path,
    send: &mut impl FnMut(&Entry) -> Sent,
    drained: &mut Drained,
) -> bool {
    let Ok(bytes) = std::fs::read(batch) else {
        return true;
    };
    let done_file = done_path(batch);
    let done: usize = std::fs::read_to_string(&done_file)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0);
    let complete = complete_lines(&bytes);
    let lines: Vec<&[u8]> = complete.split(|byte| *byte == b'\n').collect();
    let mut index = done;
    let mut ledger: Option<Ledger> = None;
    while index < lines.len() {
        let line = lines[index];
        let mut next = index + 1;
        if !line.is_empty() {
            match serde_json::from_slice::<Entry>(line) {
                Ok(entry) if deliveries::is_delivery(&entry) => {
                    // A run of deliveries goes as one upload.
                    let mut run = vec![entry];
                    while next < lines.len() && run.len() < deliveries::MAX_MERGED {
                        match serde_json::from_slice::<Entry>(lines[next]) {
                            Ok(more) if deliveries::is_delivery(&more) => run.push(more),
                            _ => break,
                        }
                        next += 1;
                    }
                    let ledger =
                        ledger.get_or_insert_with(|| Ledger::load(&Ledger::path(state_dir)));
                    let known =
                        |key: &str| ledger.sessions.get(key).is_some_and(|s| s.facts.is_some());
                    let merged = deliveries::merge(&run, known);
                    match send(&merged) {
                        Sent::Done => drained.sent += run.len(),
                        // One delivery the server refuses (a session it does not know) must
                        // not cost the others: each goes alone, and only the refused are
                        // dropped. Not recorded as progress until all were answered.
                        Sent::Refused(_) if run.len() > 1 => {
                            for single in &run {
                                match send(&deliveries::merge(std::slice::from_ref(single), known))
                                {
                                    Sent::Done => drained.sent += 1,
                                    Sent::Refused(_) => drained.refused += 1,
                                    Sent::Later(after) => {
                                        drained.retry_after = after;
                                        return false;
                                    }
                                }
                            }
                        }
                        Sent::Refused(_) => drained.refused += 1,
                        Sent::Later(after) => {
                            drained.retry_after = after;
                            return false;
                        }
                    }
                }
                Ok(entry) => match send(&entry) {
                    Sent::Done => drained.sent += 1,
                    Sent::Refused(_) => drained.refused += 1,
                    Sent::Later(after) => {
                        drained.retry_after = after;
                        return false;
                    }
                },
                Err(_) => drained.refused += 1,
            }
        }
        // Replaced by a rename, never truncated in place: a drain killed while writing the
        // count must leave the previous count, not an empty file that reads as zero and
        // replays the whole batch. Not synced: a count lost to a power cut only re-sends
        // answered entries, which is idempotent.
        let _ = fsutil::replace_atomically(&done_file, next.to_string().as_bytes());
        index = next;
    }
    true
}

/// The bytes before the last newline: a line without one was cut short by a crash and never
/// acknowledged to its hook.
fn complete_lines(bytes: &[u8]) -> &[u8] {
    match bytes.iter().rposition(|byte| *byte == b'\n') {
        Some(end) => &bytes[..end],
        None => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(n: u64) -> Entry {
        Entry::new("/api/v1/agent-sessions/close", json!({"n": n}))
    }

    fn n_of(entry: &Entry) -> u64 {
        entry.body["n"].as_u64().expect("n")
    }

    #[test]
    fn drains_in_order_and_resumes_where_it_stopped() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(dir.path());
        for n in 0..10 {
            spool.append(&entry(n)).expect("append");
        }
        let mut seen = Vec::new();
        // The server takes five, then goes away.
        let first = spool.drain_with(|entry| {
            if seen.len() == 5 {
                return Sent::Later(None);
            }
            seen.push(n_of(entry));
            Sent::Done
        });
        assert!(first.stopped);
        assert_eq!(first.sent, 5);
        // Appends while a batch is pending go to a new journal, after the batch.
        spool.append(&entry(10)).expect("append");
        let second = spool.drain_with(|entry| {
            seen.push(n_of(entry));
            Sent::Done
        });
        assert_eq!(second.sent, 6);
        assert_eq!(seen, (0..=10).collect::<Vec<_>>(), "in order, none twice");
        assert!(spool.is_empty());
    }

    #[test]
    fn refusals_and_damaged_lines_are_dropped_not_retried() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(dir.path());
        spool.append(&entry(0)).expect("append");
        let mut journal = OpenOptions::new()
            .append(true)
            .open(spool.journal())
            .expect("journal");
        std::io::Write::write_all(&mut journal, b"not json\n{\"path\":\"/x\",\"bo")
            .expect("damage");
        let drained = spool.drain_with(|_| Sent::Refused(404));
        assert_eq!(
            drained.refused, 2,
            "the refused entry and the unreadable line"
        );
        assert_eq!(drained.sent, 0);
        assert!(
            spool.is_empty(),
            "the torn tail was never acknowledged and goes with its batch"
        );
    }

    #[test]
    fn a_second_drain_waits_its_turn() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(dir.path());
        spool.append(&entry(0)).expect("append");
        let other = spool.clone();
        let inner = spool.drain_with(|_| {
            let busy = other.drain_with(|_| Sent::Done);
            assert!(busy.busy);
            Sent::Done
        });
        assert_eq!(inner.sent, 1);
    }

    fn delivery(session: &str) -> Entry {
        let fact = crate::upload::deliveries::delivery("claude-code", session, "Stop", 0)
            .expect("delivery");
        crate::upload::deliveries::entry("h", &fact, None)
    }

    #[test]
    fn a_run_of_deliveries_goes_as_one_upload_and_a_refused_run_goes_one_by_one() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::in_state(dir.path());
        spool.append(&entry(0)).expect("append");
        for session in ["a", "b", "c"] {
            spool.append(&delivery(session)).expect("append");
        }
        spool.append(&entry(1)).expect("append");
        let mut bodies = Vec::new();
        let drained = spool.drain_with(|entry| {
            bodies.push(entry.body.clone());
            Sent::Done
        });
        assert_eq!(drained.sent, 5, "counted per spooled entry");
        assert_eq!(
            bodies.len(),
            3,
            "close, one upload of three deliveries, close"
        );
        assert_eq!(bodies[1]["deliveries"].as_array().expect("d").len(), 3);

        for session in ["a", "unknown", "c"] {
            spool.append(&delivery(session)).expect("append");
        }
        let mut singles = Vec::new();
        let drained = spool.drain_with(|entry| {
            let deliveries = entry.body["deliveries"].as_array().expect("d");
            if deliveries.len() > 1 {
                return Sent::Refused(404);
            }
            let session = deliveries[0]["sessionId"].as_str().expect("s").to_string();
            singles.push(session.clone());
            if session == "unknown" {
                Sent::Refused(404)
            } else {
                Sent::Done
            }
        });
        assert_eq!(singles, ["a", "unknown", "c"]);
        assert_eq!(
            (drained.sent, drained.refused),
            (2, 1),
            "only the refused one is lost"
        );
        assert!(spool.is_empty());
    }

    #[test]
    fn an_inline_drain_leaves_a_final_flush_to_the_detached_one() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = Spool::usage_in_state(dir.path());
        let flush = Entry::new(
            crate::upload::session::FLUSH,
            json!({"agent": "claude-code", "sessionId": "s", "transcriptPath": "/nowhere/s.jsonl"}),
        );
        spool.append(&flush).expect("append");
        let server = crate::config::Server {
            url: "http://127.0.0.1:9".into(),
            api_key: "k".into(),
        };
        let client = Client::new(
            server,
            std::time::Instant::now() + std::time::Duration::from_secs(1),
        );
        let inline = spool.drain(&client, false, |_| {});
        assert!(inline.stopped, "the flush waits for the detached drain");
        assert!(!spool.is_empty());
        // The detached drain runs it: a path that is no transcript location reads nothing,
        // which leaves nothing to send.
        let detached = spool.drain_all(&client, false, |_| {});
        assert_eq!(detached.sent, 1);
        assert!(spool.is_empty());
    }

    #[test]
    fn verdicts() {
        let answer = |status| {
            Ok(Answer {
                status,
                body: serde_json::Value::Null,
                retry_after: (status == 429).then_some(std::time::Duration::from_secs(3)),
            })
        };
        assert_eq!(verdict(answer(200)), Sent::Done);
        assert_eq!(verdict(answer(404)), Sent::Refused(404));
        assert_eq!(verdict(answer(409)), Sent::Refused(409));
        assert_eq!(
            verdict(answer(429)),
            Sent::Later(Some(std::time::Duration::from_secs(3)))
        );
        assert_eq!(verdict(answer(401)), Sent::Later(None));
        assert_eq!(verdict(answer(503)), Sent::Later(None));
        assert_eq!(verdict(Err(Failure::Transport)), Sent::Later(None));
    }
}
