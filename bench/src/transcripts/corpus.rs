//! The two corpora the report runs over. The fixtures are laid out as Claude Code lays them out
//! (`projects/<slug>/<session>.jsonl`, the session's `subagents/` folder beside it). The generated
//! corpus replicates those sessions under fresh ids: each replica's sessions get new uuids, its
//! dates move by whole days and its `message.id`/`requestId` values get a suffix, so replicas add
//! up instead of deduplicating into each other.
//!
//! Each fixture file is scanned once into a template (literal text and the spots to rewrite);
//! writing a replica is then string copies into buffered files, fast enough for a gigabyte.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::Context;
use chrono::{Datelike, Days, NaiveDate};
use serde_json::Value;
use uuid::Uuid;

/// Project folders the generated sessions are spread over.
pub const PROJECTS: usize = 20;

/// What a corpus holds, for the report line.
pub struct Corpus {
    pub root: PathBuf,
    pub sessions: usize,
    pub files: usize,
    pub bytes: u64,
}

/// The new identity of one session copy.
pub struct Replica {
    pub session_id: String,
    pub day_shift: u64,
    pub id_suffix: String,
}

/// A main file of the generated corpus that can grow by appended assistant lines.
pub struct TailTarget {
    pub path: PathBuf,
    pub replica: Replica,
    session: usize,
}

/// One fixture session: where it came from and its files as templates.
pub struct Session {
    id: String,
    slug: String,
    main_path: PathBuf,
    main: Template,
    /// Subagent files: name inside `subagents/`, source path, template.
    subagents: Vec<(String, PathBuf, Template)>,
    /// The main file's usage-bearing assistant lines, one template each, for appending.
    assistant_lines: Vec<Template>,
}

enum Piece {
    Text(Range<usize>),
    SessionId,
    Date(NaiveDate),
    IdSuffix,
}

struct Template {
    text: String,
    pieces: Vec<Piece>,
}

impl Template {
    fn parse(text: String, session_id: &str) -> Template {
        // (start, end, piece): the bytes start..end are replaced by the piece.
        let mut marks: Vec<(usize, usize, Piece)> = Vec::new();
        let timestamp = "\"timestamp\":\"";
        for (position, _) in text.match_indices(timestamp) {
            let start = position + timestamp.len();
            let date = text
                .get(start..start + 10)
                .and_then(|value| NaiveDate::parse_from_str(value, "%Y-%m-%d").ok());
            if let Some(date) = date {
                marks.push((start, start + 10, Piece::Date(date)));
            }
        }
        for (position, _) in text.match_indices(session_id) {
            marks.push((position, position + session_id.len(), Piece::SessionId));
        }
        for key in ["\"id\":\"msg_", "\"requestId\":\""] {
            for (position, _) in text.match_indices(key) {
                let value_start = position + key.len();
                let Some(length) = text[value_start..].find('"') else {
                    continue;
                };
                // An empty requestId stays empty: a suffix would invent one.
                if length > 0 {
                    let end = value_start + length;
                    marks.push((end, end, Piece::IdSuffix));
                }
            }
        }
        marks.sort_by_key(|(start, _, _)| *start);
        let mut pieces = Vec::with_capacity(marks.len() * 2 + 1);
        let mut cursor = 0;
        for (start, end, piece) in marks {
            if start < cursor {
                continue;
            }
            pieces.push(Piece::Text(cursor..start));
            pieces.push(piece);
            cursor = end;
        }
        pieces.push(Piece::Text(cursor..text.len()));
        Template { text, pieces }
    }

    fn render(&self, out: &mut impl Write, replica: &Replica) -> io::Result<()> {
        for piece in &self.pieces {
            match piece {
                Piece::Text(range) => out.write_all(&self.text.as_bytes()[range.clone()])?,
                Piece::SessionId => out.write_all(replica.session_id.as_bytes())?,
                Piece::IdSuffix => out.write_all(replica.id_suffix.as_bytes())?,
                Piece::Date(date) => {
                    let shifted = *date + Days::new(replica.day_shift);
                    write!(
                        out,
                        "{:04}-{:02}-{:02}",
                        shifted.year(),
                        shifted.month(),
                        shifted.day()
                    )?;
                }
            }
        }
        Ok(())
    }

    fn render_to(&self, path: &Path, replica: &Replica) -> io::Result<u64> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        self.render(&mut out, replica)?;
        out.flush()?;
        Ok(out.get_ref().metadata()?.len())
    }
}

/// The first string value of `"key":"…"` in the text.
fn first_value<'text>(text: &'text str, key: &str) -> Option<&'text str> {
    let pattern = format!("\"{key}\":\"");
    let start = text.find(&pattern)? + pattern.len();
    let length = text[start..].find('"')?;
    Some(&text[start..start + length])
}

/// Claude Code's project folder name: the cwd with every non-alphanumeric character as `-`.
fn slug(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn is_usage_line(line: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return false;
    };
    value["type"] == "assistant"
        && value["message"]["usage"].is_object()
        && value["message"]["model"] != "<synthetic>"
}

/// Every session under the fixtures folder: each `*.jsonl` one level down is a main file, and a
/// sibling folder of the same stem holds its `subagents/`.
pub fn load_fixtures(fixtures: &Path) -> anyhow::Result<Vec<Session>> {
    let mut main_paths = Vec::new();
    for group in fs::read_dir(fixtures).with_context(|| format!("{}", fixtures.display()))? {
        let group = group?.path();
        if !group.is_dir() {
            continue;
        }
        for entry in fs::read_dir(&group)? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "jsonl") {
                main_paths.push(path);
            }
        }
    }
    main_paths.sort();
    let mut sessions = Vec::new();
    for main_path in main_paths {
        let text = fs::read_to_string(&main_path)?;
        let id = first_value(&text, "sessionId")
            .with_context(|| format!("no sessionId in {}", main_path.display()))?
            .to_string();
        let slug = slug(first_value(&text, "cwd").unwrap_or("/fixtures"));
        let assistant_lines = text
            .lines()
            .filter(|line| is_usage_line(line))
            .map(|line| Template::parse(format!("{line}\n"), &id))
            .collect();
        let mut subagents = Vec::new();
        let subagent_dir = main_path.with_extension("").join("subagents");
        if subagent_dir.is_dir() {
            for entry in fs::read_dir(&subagent_dir)? {
                let path = entry?.path();
                if path.extension().is_some_and(|ext| ext == "jsonl") {
                    let name = path.file_name().unwrap_or_default();
                    let name = name.to_string_lossy().into_owned();
                    let template = Template::parse(fs::read_to_string(&path)?, &id);
                    subagents.push((name, path, template));
                }
            }
        }
        subagents.sort_by(|a, b| a.0.cmp(&b.0));
        sessions.push(Session {
            main: Template::parse(text, &id),
            assistant_lines,
            id,
            slug,
            main_path,
            subagents,
        });
    }
    anyhow::ensure!(!sessions.is_empty(), "no fixture sessions");
    Ok(sessions)
}

/// The fixtures as they are, under `root/projects/<slug>/<session id>.jsonl`.
pub fn lay_out_fixtures(sessions: &[Session], root: &Path) -> io::Result<Corpus> {
    let mut corpus = Corpus {
        root: root.to_path_buf(),
        sessions: sessions.len(),
        files: 0,
        bytes: 0,
    };
    for session in sessions {
        let project = root.join("projects").join(&session.slug);
        fs::create_dir_all(&project)?;
        corpus.bytes += fs::copy(
            &session.main_path,
            project.join(format!("{}.jsonl", session.id)),
        )?;
        corpus.files += 1;
        if !session.subagents.is_empty() {
            let folder = project.join(&session.id).join("subagents");
            fs::create_dir_all(&folder)?;
            for (name, source, _) in &session.subagents {
                corpus.bytes += fs::copy(source, folder.join(name))?;
                corpus.files += 1;
            }
        }
    }
    Ok(corpus)
}

/// Replicas of every fixture session until the corpus holds `target_bytes`; replica `n` is
/// shifted by `n` days and lands in project folder `n % PROJECTS`.
pub fn generate(
    sessions: &[Session],
    root: &Path,
    target_bytes: u64,
) -> io::Result<(Corpus, TailTarget)> {
    let mut corpus = Corpus {
        root: root.to_path_buf(),
        sessions: 0,
        files: 0,
        bytes: 0,
    };
    // The largest main file grows in the tail-read run.
    let tail_session = (0..sessions.len())
        .max_by_key(|&index| sessions[index].main.text.len())
        .unwrap_or(0);
    let mut tail = None;
    let mut replica_number: u64 = 0;
    while corpus.bytes < target_bytes {
        let project = root.join("projects").join(format!(
            "-bench-project-{:02}",
            replica_number as usize % PROJECTS
        ));
        fs::create_dir_all(&project)?;
        for (index, session) in sessions.iter().enumerate() {
            let replica = Replica {
                session_id: Uuid::new_v4().to_string(),
                day_shift: replica_number,
                id_suffix: format!("_r{replica_number}"),
            };
            let main_path = project.join(format!("{}.jsonl", replica.session_id));
            corpus.bytes += session.main.render_to(&main_path, &replica)?;
            corpus.files += 1;
            corpus.sessions += 1;
            if !session.subagents.is_empty() {
                let folder = project.join(&replica.session_id).join("subagents");
                fs::create_dir_all(&folder)?;
                for (name, _, template) in &session.subagents {
                    corpus.bytes += template.render_to(&folder.join(name), &replica)?;
                    corpus.files += 1;
                }
            }
            if index == tail_session {
                tail = Some(TailTarget {
                    path: main_path,
                    replica,
                    session: index,
                });
            }
        }
        replica_number += 1;
    }
    let tail = tail.ok_or_else(|| io::Error::other("the corpus target is zero bytes"))?;
    Ok((corpus, tail))
}

/// Appends at least `bytes` of assistant lines to the tail target: copies of its session's own
/// usage lines, in the same session and days, each pass over them under ids no other line has.
/// Returns the bytes written.
pub fn append_assistant_lines(
    sessions: &[Session],
    target: &TailTarget,
    bytes: u64,
) -> anyhow::Result<u64> {
    let lines = &sessions[target.session].assistant_lines;
    anyhow::ensure!(!lines.is_empty(), "the tail session has no usage lines");
    let file = fs::OpenOptions::new().append(true).open(&target.path)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    let mut written = 0;
    for (index, template) in lines.iter().cycle().enumerate() {
        if written >= bytes {
            break;
        }
        let replica = Replica {
            session_id: target.replica.session_id.clone(),
            day_shift: target.replica.day_shift,
            id_suffix: format!("{}_tail{}", target.replica.id_suffix, index / lines.len()),
        };
        line.clear();
        template.render(&mut line, &replica)?;
        out.write_all(&line)?;
        written += line.len() as u64;
    }
    out.flush()?;
    Ok(written)
}

/// Reads every file once so that both tools start on a warm page cache.
pub fn warm_page_cache(root: &Path) -> io::Result<()> {
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                io::copy(&mut File::open(&path)?, &mut io::sink())?;
            }
        }
    }
    Ok(())
}
