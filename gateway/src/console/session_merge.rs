//! The console's one list of sessions: the sessions a hook reported (registry, newest opened
//! first) and the sessions known only from uploaded transcripts (usage, newest first activity
//! first) merged into one newest-first list, each session once.
//!
//! A session both know is listed from registry, at its opening, with its liveness; usage's
//! copy is skipped (the caller says which usage rows registry knows). Both sources are keyset
//! paged, so the merged page's cursor holds one position per source: where each stands after
//! the last row this page took from it. Every source row carries the position after itself,
//! so a page that stops part-way through a source's rows resumes exactly there.
//!
//! A page takes rows while both sources can say which is newer; when one source's fetched
//! rows run out but it has more, the page ends early (shorter, with a next link) rather than
//! guessing. Pure: fetching is the page handler's.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};

/// Where one source stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stream {
    /// Nothing taken yet.
    Start,
    /// Continue after this source cursor.
    After(String),
    /// Nothing left.
    Done,
}

/// The merged list's cursor: one position per source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    pub hooks: Stream,
    pub transcripts: Stream,
}

impl Default for Resume {
    fn default() -> Self {
        Resume {
            hooks: Stream::Start,
            transcripts: Stream::Start,
        }
    }
}

/// Separates the two positions; neither source's cursor alphabet holds it.
const SEPARATOR: char = '~';
/// A finished source.
const DONE: &str = "*";

fn stream_text(stream: &Stream) -> &str {
    match stream {
        Stream::Start => "",
        Stream::After(cursor) => cursor,
        Stream::Done => DONE,
    }
}

fn stream_of(text: &str) -> Stream {
    match text {
        "" => Stream::Start,
        DONE => Stream::Done,
        cursor => Stream::After(cursor.to_string()),
    }
}

impl Resume {
    /// `<hooks>~<transcripts>`, each a source cursor, empty (start) or `*` (done).
    pub fn encode(&self) -> String {
        format!(
            "{}{SEPARATOR}{}",
            stream_text(&self.hooks),
            stream_text(&self.transcripts)
        )
    }

    /// A cursor this list issued; `None` for anything else (each source still validates its
    /// own part).
    pub fn decode(text: &str) -> Option<Resume> {
        let (hooks, transcripts) = text.split_once(SEPARATOR)?;
        if transcripts.contains(SEPARATOR) {
            return None;
        }
        let resume = Resume {
            hooks: stream_of(hooks),
            transcripts: stream_of(transcripts),
        };
        (resume.hooks != Stream::Done || resume.transcripts != Stream::Done).then_some(resume)
    }
}

/// The order both sources share: newest instant first, then agent, then session id, both
/// descending (as each source's keyset runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub at: DateTime<Utc>,
    pub agent: String,
    pub session_id: String,
}

impl SortKey {
    /// `Greater` when `self` is listed before `other`.
    fn precedes(&self, other: &SortKey) -> Ordering {
        (self.at, &self.agent, &self.session_id).cmp(&(other.at, &other.agent, &other.session_id))
    }
}

/// One row a source returned.
#[derive(Debug, Clone)]
pub struct Listed<T> {
    pub key: SortKey,
    /// The source cursor that continues after this row.
    pub position: String,
    pub item: T,
}

/// One fetched page of a source: its rows and its own next cursor (`None`: nothing after).
#[derive(Debug, Clone)]
pub struct Fetched<T> {
    pub rows: Vec<Listed<T>>,
    pub next: Option<String>,
}

impl<T> Fetched<T> {
    /// A source that is finished (or not asked, e.g. transcripts under a liveness filter).
    pub fn done() -> Fetched<T> {
        Fetched {
            rows: Vec::new(),
            next: None,
        }
    }
}

/// One row of the merged list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry<H, T> {
    Hook(H),
    Transcript(T),
}

/// Where a source stands after taking its first `taken` fetched rows.
fn after<T>(fetched: &Fetched<T>, taken: usize, before: &Stream) -> Stream {
    if taken == fetched.rows.len() {
        match &fetched.next {
            Some(next) => Stream::After(next.clone()),
            None => Stream::Done,
        }
    } else if taken == 0 {
        before.clone()
    } else {
        Stream::After(fetched.rows[taken - 1].position.clone())
    }
}

/// Up to `limit` rows of both sources, newest first, and the cursor of the rest (`None` when
/// both are finished). `known(row)` says a transcript row is also a hook row: it is skipped
/// (taken, not shown).
pub fn merge<H, T>(
    limit: usize,
    resume: &Resume,
    hooks: Fetched<H>,
    transcripts: Fetched<T>,
    known: impl Fn(&T) -> bool,
) -> (Vec<Entry<H, T>>, Option<Resume>) {
    let mut out = Vec::new();
    let (mut h, mut t) = (0, 0);
    while out.len() < limit {
        while t < transcripts.rows.len() && known(&transcripts.rows[t].item) {
            t += 1;
        }
        let hook = hooks.rows.get(h);
        let transcript = transcripts.rows.get(t);
        // A source whose fetched rows ran out but has more cannot say what comes next.
        let hooks_blocked = hook.is_none() && hooks.next.is_some();
        let transcripts_blocked = transcript.is_none() && transcripts.next.is_some();
        if hooks_blocked || transcripts_blocked {
            break;
        }
        let take_hook = match (hook, transcript) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(hook), Some(transcript)) => hook.key.precedes(&transcript.key) != Ordering::Less,
        };
        if take_hook {
            out.push(Entry::Hook(h));
            h += 1;
        } else {
            out.push(Entry::Transcript(t));
            t += 1;
        }
    }
    let next = Resume {
        hooks: after(&hooks, h, &resume.hooks),
        transcripts: after(&transcripts, t, &resume.transcripts),
    };
    let finished = next.hooks == Stream::Done && next.transcripts == Stream::Done;
    let mut hook_items = hooks
        .rows
        .into_iter()
        .map(|row| Some(row.item))
        .collect::<Vec<_>>();
    let mut transcript_items = transcripts
        .rows
        .into_iter()
        .map(|row| Some(row.item))
        .collect::<Vec<_>>();
    let entries = out
        .into_iter()
        .filter_map(|entry| match entry {
            Entry::Hook(index) => hook_items[index].take().map(Entry::Hook),
            Entry::Transcript(index) => transcript_items[index].take().map(Entry::Transcript),
        })
        .collect();
    (entries, (!finished).then_some(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(minute: i64, session: &str) -> SortKey {
        SortKey {
            at: DateTime::from_timestamp(1_772_352_000 + minute * 60, 0).expect("valid"),
            agent: "claude-code".to_string(),
            session_id: session.to_string(),
        }
    }

    /// A source page of `(minute, session)` rows, each positioned at `<source>@<session>`.
    fn fetched(source: &str, rows: &[(i64, &str)], next: Option<&str>) -> Fetched<String> {
        Fetched {
            rows: rows
                .iter()
                .map(|(minute, session)| Listed {
                    key: key(*minute, session),
                    position: format!("{source}@{session}"),
                    item: (*session).to_string(),
                })
                .collect(),
            next: next.map(str::to_string),
        }
    }

    fn names(entries: &[Entry<String, String>]) -> Vec<String> {
        entries
            .iter()
            .map(|entry| match entry {
                Entry::Hook(name) => format!("h:{name}"),
                Entry::Transcript(name) => format!("t:{name}"),
            })
            .collect()
    }

    struct Case {
        name: &'static str,
        limit: usize,
        hooks: Fetched<String>,
        transcripts: Fetched<String>,
        known: &'static [&'static str],
        listed: &'static [&'static str],
        next: Option<(Stream, Stream)>,
    }

    fn after(text: &str) -> Stream {
        Stream::After(text.to_string())
    }

    #[test]
    fn merges_newest_first_each_session_once_and_resumes_where_each_source_stopped() {
        let cases = vec![
            Case {
                name: "interleaved by instant, both finished",
                limit: 10,
                hooks: fetched("r", &[(9, "a"), (5, "c")], None),
                transcripts: fetched("u", &[(7, "b"), (1, "d")], None),
                known: &[],
                listed: &["h:a", "t:b", "h:c", "t:d"],
                next: None,
            },
            Case {
                name: "a transcript session registry knows is listed once, from registry",
                limit: 10,
                hooks: fetched("r", &[(9, "a"), (5, "b")], None),
                transcripts: fetched("u", &[(6, "b"), (2, "c")], None),
                known: &["b"],
                listed: &["h:a", "h:b", "t:c"],
                next: None,
            },
            Case {
                name: "a full page stops part-way through both sources",
                limit: 2,
                hooks: fetched("r", &[(9, "a"), (5, "c")], Some("r-next")),
                transcripts: fetched("u", &[(7, "b"), (1, "d")], None),
                known: &[],
                listed: &["h:a", "t:b"],
                next: Some((after("r@a"), after("u@b"))),
            },
            Case {
                name: "a source whose fetched rows ran out but has more ends the page early",
                limit: 10,
                hooks: fetched("r", &[(9, "a")], Some("r-next")),
                transcripts: fetched("u", &[(7, "b"), (1, "d")], None),
                known: &[],
                listed: &["h:a"],
                next: Some((after("r-next"), Stream::Start)),
            },
            Case {
                name: "skipped known rows count as taken",
                limit: 10,
                hooks: fetched("r", &[], None),
                transcripts: fetched("u", &[(7, "b"), (6, "c")], Some("u-next")),
                known: &["b", "c"],
                listed: &[],
                next: Some((Stream::Done, after("u-next"))),
            },
            Case {
                name: "an empty page of a source that has more still moves on",
                limit: 10,
                hooks: fetched("r", &[], Some("r-next")),
                transcripts: fetched("u", &[(7, "b")], None),
                known: &[],
                listed: &[],
                next: Some((after("r-next"), Stream::Start)),
            },
            Case {
                name: "equal instants order by session id, descending, as both keysets do",
                limit: 10,
                hooks: fetched("r", &[(5, "a")], None),
                transcripts: fetched("u", &[(5, "b")], None),
                known: &[],
                listed: &["t:b", "h:a"],
                next: None,
            },
            Case {
                name: "only transcripts (no hook ever reported)",
                limit: 1,
                hooks: Fetched::done(),
                transcripts: fetched("u", &[(7, "b"), (3, "c")], None),
                known: &[],
                listed: &["t:b"],
                next: Some((Stream::Done, after("u@b"))),
            },
        ];
        for case in cases {
            let known = case.known;
            let (entries, next) = merge(
                case.limit,
                &Resume::default(),
                case.hooks,
                case.transcripts,
                |item: &String| known.contains(&item.as_str()),
            );
            assert_eq!(names(&entries), case.listed, "{}", case.name);
            let expected = case
                .next
                .map(|(hooks, transcripts)| Resume { hooks, transcripts });
            assert_eq!(next, expected, "{}", case.name);
        }
    }

    #[test]
    fn cursors_round_trip_and_a_finished_list_has_none() {
        let resumes = [
            Resume::default(),
            Resume {
                hooks: after("1772352000000000.0123456789abcdef0123456789abcdef"),
                transcripts: Stream::Done,
            },
            Resume {
                hooks: Stream::Done,
                transcripts: after("eyJ0IjoiMjAyNiJ9"),
            },
        ];
        for resume in resumes {
            assert_eq!(Resume::decode(&resume.encode()), Some(resume.clone()));
        }
        for damaged in ["", "abc", "*~*", "a~b~c"] {
            assert_eq!(Resume::decode(damaged), None, "{damaged}");
        }
    }
}
