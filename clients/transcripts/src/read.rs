//! Opening and reading one discovered file: containment on the descriptor, then a full or a
//! tail read through the harness's parser.
//!
//! Containment (seed 002): the file is opened with `O_RDONLY | O_NOFOLLOW`, so a symlink
//! swapped in after the walk fails to open (`ELOOP`); the descriptor is then checked with
//! `fstat` (it must still be a regular file) and, on Linux, its real path (`/proc/self/fd/N`)
//! must lie inside the canonical root. Any of these failing is a [`ContainmentError`]: the
//! corpus is crafted rather than messy, and the whole run stops.
//!
//! Tail reads: files are append-only while a client writes them. A cached read remembers how
//! many bytes of complete lines it consumed and a digest of the last [`OVERLAP_BYTES`] before
//! that point; when the file has grown, the overlap is read again and compared before the
//! cached prefix is trusted. Any divergence falls back to a full read, so the cache can cost
//! speed when it is wrong but never change an answer.
//!
//! A file that ends without a newline: its last bytes are read on every run (they are never
//! `consumed`) and count when they are one complete JSON object ([`lines::final_line`]). The
//! facts with that line are kept beside the checkpointed ones ([`FileRead::with_final_line`]),
//! so the checkpoint holds only newline-terminated lines and a half-written line is read again
//! once it is complete.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::claude::{self, FileContext};
use crate::codex;
use crate::copilot;
use crate::facts::FileFacts;
use crate::gemini::{self, GeminiContext};
use crate::walk::{FileEntry, Role};

/// Bytes re-read and compared before a cached prefix is trusted.
pub const OVERLAP_BYTES: u64 = 4096;

/// Read buffer size; lines longer than this are carried over between reads.
const CHUNK_BYTES: usize = 1 << 20;

/// The longest unterminated last line read as a record. Claude Code's longest real lines
/// (pasted files, tool results) run to a few MiB; anything longer is left for its newline.
const MAX_FINAL_LINE_BYTES: u64 = 64 << 20;

/// A file escaped the corpus root: the run must stop.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("containment violation: {reason} ({path})")]
pub struct ContainmentError {
    pub path: PathBuf,
    pub reason: &'static str,
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Containment(#[from] ContainmentError),
    #[error("unreadable: {0}")]
    Unreadable(#[from] io::Error),
}

/// What a read of one file leaves for the next run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRead {
    pub size: u64,
    pub mtime_ns: i128,
    pub ino: u64,
    /// Bytes of complete lines consumed.
    pub consumed: u64,
    /// SHA-256 of the `OVERLAP_BYTES` (or fewer) just before `consumed`.
    pub overlap: [u8; 32],
    pub facts: FileFacts,
    /// The facts with the file's unterminated last line read in, when that line is one
    /// complete JSON object. Never checkpointed: it is read again each run until its newline
    /// arrives and it becomes part of `facts`.
    #[serde(skip)]
    pub with_final_line: Option<Box<FileFacts>>,
}

/// How a file was read this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    Cached,
    Tail,
    Full,
}

/// Opens `path` for reading without following a final symlink and checks the descriptor.
pub fn open_contained(root: &Path, path: &Path) -> Result<File, ReadError> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ContainmentError {
                path: path.to_path_buf(),
                reason: "symlink swapped in",
            }
            .into());
        }
        Err(error) => return Err(ReadError::Unreadable(error)),
    };
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(ContainmentError {
            path: path.to_path_buf(),
            reason: "not a regular file at open",
        }
        .into());
    }
    if let Some(real) = descriptor_path(&file)
        && !real.starts_with(root)
    {
        return Err(ContainmentError {
            path: path.to_path_buf(),
            reason: "opened outside the root",
        }
        .into());
    }
    Ok(file)
}

/// The path the kernel holds for an open descriptor (Linux); `None` elsewhere.
fn descriptor_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// Reads `entry`, reusing `cached` when it still describes the file.
pub fn read_file(
    root: &Path,
    entry: &FileEntry,
    cached: Option<FileRead>,
) -> Result<(FileRead, ReadKind), ReadError> {
    let mut file = open_contained(root, &entry.path)?;
    let meta = file.metadata()?;
    let (size, mtime_ns, ino) = (meta.len(), mtime_ns(&meta), meta.ino());
    if let Role::GeminiMain { document: true } = entry.role {
        return read_document(&mut file, cached, (size, mtime_ns, ino));
    }
    let (mut read, kind) = read_complete_lines(&mut file, entry, cached, (size, mtime_ns, ino))?;
    read.with_final_line = read_final_line(&mut file, entry, &read)?.map(Box::new);
    Ok((read, kind))
}

/// Reads the newline-terminated lines: from the cache, from where the cache stopped, or whole.
fn read_complete_lines(
    file: &mut File,
    entry: &FileEntry,
    cached: Option<FileRead>,
    (size, mtime_ns, ino): (u64, i128, u64),
) -> Result<(FileRead, ReadKind), ReadError> {
    if let Some(cached) = cached {
        if cached.size == size && cached.mtime_ns == mtime_ns && cached.ino == ino {
            return Ok((cached, ReadKind::Cached));
        }
        if cached.ino == ino && size > cached.size && overlap_matches(file, &cached)? {
            let mut read = cached;
            file.seek(SeekFrom::Start(read.consumed))?;
            let consumed = parse_stream(file, entry, &mut read.facts)?;
            collapse(&mut read.facts);
            read.consumed += consumed;
            read.overlap = overlap_digest(file, read.consumed)?;
            (read.size, read.mtime_ns) = (size, mtime_ns);
            return Ok((read, ReadKind::Tail));
        }
        file.seek(SeekFrom::Start(0))?;
    }
    let mut facts = FileFacts::default();
    let consumed = parse_stream(file, entry, &mut facts)?;
    full_read(file, facts, consumed, (size, mtime_ns, ino))
}

/// Reads a single-object chat file (older Gemini CLI releases) whole. The client rewrites such
/// a file in place on every update, so no prefix of it can be trusted: the cache is used only
/// when the file is unchanged, and otherwise the file is read again from the start.
fn read_document(
    file: &mut File,
    cached: Option<FileRead>,
    (size, mtime_ns, ino): (u64, i128, u64),
) -> Result<(FileRead, ReadKind), ReadError> {
    if let Some(cached) = cached
        && cached.size == size
        && cached.mtime_ns == mtime_ns
        && cached.ino == ino
    {
        return Ok((cached, ReadKind::Cached));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    let mut facts = FileFacts::default();
    gemini::read_document(&GeminiContext { agent_id: None }, &bytes, &mut facts);
    full_read(file, facts, bytes.len() as u64, (size, mtime_ns, ino))
}

/// A whole-file read of `facts` from the first `consumed` bytes of `file`: deduplicated, with
/// the overlap digest that lets the next read resume after them.
fn full_read(
    file: &mut File,
    mut facts: FileFacts,
    consumed: u64,
    (size, mtime_ns, ino): (u64, i128, u64),
) -> Result<(FileRead, ReadKind), ReadError> {
    collapse(&mut facts);
    let overlap = overlap_digest(file, consumed)?;
    Ok((
        FileRead {
            size,
            mtime_ns,
            ino,
            consumed,
            overlap,
            facts,
            with_final_line: None,
        },
        ReadKind::Full,
    ))
}

/// The facts with the unterminated last line read in, when there is one and it is a whole
/// JSON object; `None` otherwise (nothing after the last newline, or a half-written line).
fn read_final_line(
    file: &mut File,
    entry: &FileEntry,
    read: &FileRead,
) -> io::Result<Option<FileFacts>> {
    let length = read.size.saturating_sub(read.consumed);
    if length == 0 || length > MAX_FINAL_LINE_BYTES {
        return Ok(None);
    }
    let mut tail = vec![0u8; length as usize];
    file.seek(SeekFrom::Start(read.consumed))?;
    file.read_exact(&mut tail)?;
    let Some(line) = crate::lines::final_line(&tail) else {
        return Ok(None);
    };
    let mut terminated = Vec::with_capacity(line.len() + 1);
    terminated.extend_from_slice(line);
    terminated.push(b'\n');
    let mut facts = read.facts.clone();
    parse_chunk(&parser(entry), &terminated, &mut facts);
    collapse(&mut facts);
    Ok(Some(facts))
}

/// Collapses the copies of one request within the file (one line per content block) by the
/// same rule the global dedup applies, so the checkpoints and the global pass hold each
/// request of a file once.
fn collapse(facts: &mut FileFacts) {
    facts.records = crate::dedup::dedup(std::mem::take(&mut facts.records));
}

fn mtime_ns(meta: &std::fs::Metadata) -> i128 {
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

/// Parses complete lines from the file's current position to its end; returns the bytes
/// consumed (an unfinished last line is left for the next read).
fn parse_stream(file: &mut File, entry: &FileEntry, facts: &mut FileFacts) -> io::Result<u64> {
    let context = parser(entry);
    // One buffer per reading thread, reused across files: no allocator churn per file.
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|cell| {
        let mut buffer = cell.borrow_mut();
        buffer.clear();
        let result = parse_with(file, &context, facts, &mut buffer);
        buffer.clear();
        if buffer.capacity() > 4 * CHUNK_BYTES {
            buffer.shrink_to(CHUNK_BYTES);
        }
        result
    })
}

/// Which parser reads a file, with what the walk knows about it.
enum Parser {
    Claude(FileContext),
    Codex,
    Gemini(GeminiContext),
    Copilot,
}

fn parser(entry: &FileEntry) -> Parser {
    match &entry.role {
        Role::ClaudeMain => Parser::Claude(FileContext {
            session_id: entry.session_id.clone(),
            agent_id: None,
        }),
        Role::ClaudeSubagent { agent_id } => Parser::Claude(FileContext {
            session_id: entry.session_id.clone(),
            agent_id: Some(agent_id.clone()),
        }),
        Role::ClaudeLegacySibling { agent_id } => Parser::Claude(FileContext {
            session_id: None,
            agent_id: Some(agent_id.clone()),
        }),
        Role::GeminiMain { .. } => Parser::Gemini(GeminiContext { agent_id: None }),
        Role::GeminiSubagent { agent_id } => Parser::Gemini(GeminiContext {
            agent_id: Some(agent_id.clone()),
        }),
        Role::CopilotEvents => Parser::Copilot,
        Role::CodexRollout | Role::ClaudeMeta { .. } => Parser::Codex,
    }
}

/// Reads the complete lines of `bytes` with the file's parser; returns the bytes consumed.
fn parse_chunk(parser: &Parser, bytes: &[u8], facts: &mut FileFacts) -> usize {
    match parser {
        Parser::Claude(context) => claude::read_chunk(context, bytes, facts),
        Parser::Codex => codex::read_chunk(bytes, facts),
        Parser::Gemini(context) => gemini::read_chunk(context, bytes, facts),
        Parser::Copilot => copilot::read_chunk(bytes, facts),
    }
}

fn parse_with(
    file: &mut File,
    context: &Parser,
    facts: &mut FileFacts,
    buffer: &mut Vec<u8>,
) -> io::Result<u64> {
    let mut total: u64 = 0;
    loop {
        let start = buffer.len();
        buffer.resize(start + CHUNK_BYTES, 0);
        let got = file.read(&mut buffer[start..])?;
        buffer.truncate(start + got);
        if got == 0 {
            return Ok(total);
        }
        let used = parse_chunk(context, buffer, facts);
        total += used as u64;
        buffer.drain(..used);
    }
}

fn overlap_digest(file: &mut File, consumed: u64) -> io::Result<[u8; 32]> {
    let start = consumed.saturating_sub(OVERLAP_BYTES);
    let mut bytes = vec![0u8; (consumed - start) as usize];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut bytes)?;
    Ok(Sha256::digest(&bytes).into())
}

fn overlap_matches(file: &mut File, cached: &FileRead) -> io::Result<bool> {
    Ok(overlap_digest(file, cached.consumed)? == cached.overlap)
}

/// `agent-<id>.meta.json` (Claude Code 2.1.332): the spawn that started the agent and its type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMeta {
    #[serde(rename = "toolUseId", default)]
    pub tool_use_id: Option<String>,
    #[serde(rename = "agentType", default)]
    pub agent_type: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
}

/// Reads a meta file (small; a malformed one reads as empty and is counted by the caller).
pub fn read_meta(root: &Path, entry: &FileEntry) -> Result<Option<AgentMeta>, ReadError> {
    let mut file = open_contained(root, &entry.path)?;
    let mut text = String::new();
    (&mut file).take(1 << 20).read_to_string(&mut text)?;
    Ok(serde_json::from_str(&text).ok())
}
