//! Words, stems, synonyms and identifiers: what a statement and a commitment are made of.
//!
//! - **Words** are Unicode words (`unicode-segmentation`), lower-cased; a word ending in "n't"
//!   is read as the word plus a negation ("haven't" → "have", "not").
//! - **Stems** come from the Snowball English stemmer (`rust-stemmers`), so "migrated",
//!   "migrating" and "migration" meet.
//! - **Synonyms** fold a stem onto one canonical stem per group (`SYNONYMS`): the handful of
//!   software words a completion is routinely said in other words with ("docs" for
//!   "documentation", "db" for "database", "repair" for "fix").
//! - **Identifiers** are the names that pin a statement to one entity: backticked code, PR and
//!   issue numbers (`#123`), versions (`v1.2.3`, `1.38.0`), paths and code names (anything with
//!   `/`, `_`, `::`, a dot between letters, or a leading `--`). Each has a kind; two identifiers
//!   of one kind that differ name different entities.
//! - **Entity names** are the word before an entity noun (`ENTITY_NOUNS`: "the *users* table",
//!   "the *search* service", "the *EU* region"): the same work on another table is another
//!   entity.
//! - **Environments** (`ENVIRONMENTS`: production, staging, development, QA, sandbox, preview,
//!   canary, each under its usual short forms) are a scope: work done in staging is not work
//!   done in production.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// Function words: never evidence of anything.
const STOP_WORDS: &str = "a an the to of for in on at by with from into onto and or as it its is \
    are was were be been being this that these those we i you our my your me us they them their \
    so any some then than there here up out over via per about also just very too each every \
    both one all which who whom what how when where while do did does doing have has had having \
    can s t re ve ll d m am ok okay now it's i've i'm we've we're that's there's after before \
    during since between across through against within again already but though although \
    however";

/// Words too general to identify a deliverable ("the *version*", "the *change*").
const GENERIC: &str = "version thing stuff item change bit way work";

/// Acronyms too common to name an entity.
const COMMON_ACRONYMS: &str = "pr ci api url id ui cli db sql http https json yaml";

/// Nouns that name a kind of entity; the word before one is the entity's name.
const ENTITY_NOUNS: &str = "table service repo repository region cluster endpoint route page \
    screen job queue bucket branch module crate package database environment tenant worker app \
    workflow pipeline column index image bot client server topic";

/// Words that cannot be an entity's name (descriptions, not names).
const NOT_NAMES: &str = "new old public private main primary current whole entire same other \
    legacy first last every each this that the a an our their its";

/// Deployment environments, each group under its first word.
const ENVIRONMENTS: &[&[&str]] = &[
    &["production", "prod"],
    &["staging", "stage", "stg"],
    &["development", "dev"],
    &["qa", "uat"],
    &["sandbox"],
    &["preview"],
    &["canary"],
];

/// Synonym groups: every stem of a group reads as the group's first word.
const SYNONYMS: &[&[&str]] = &[
    &["document", "doc", "docs", "documentation"],
    &["database", "db", "postgres", "postgresql"],
    &[
        "configuration",
        "config",
        "configure",
        "setting",
        "settings",
    ],
    &["repository", "repo"],
    &["authentication", "auth", "login", "signin"],
    &[
        "fix", "repair", "resolve", "sort", "correct", "patch", "address",
    ],
    &["add", "introduce", "implement", "create", "build"],
    &["remove", "delete", "drop", "eliminate", "strip"],
    &["upgrade", "bump", "update"],
    &["deploy", "rollout", "ship", "launch", "release", "publish"],
    &["migrate", "move", "port", "switch", "convert"],
    &["test", "tests", "spec", "specs"],
    &["enable", "activate"],
    &["error", "errors", "failure"],
    &["timezone", "tz"],
    &["kubernetes", "k8s"],
    &["pr", "pull"],
    &["e2e", "end-to-end"],
];

struct Tables {
    stemmer: Stemmer,
    stop: HashSet<&'static str>,
    generic: HashSet<&'static str>,
    acronyms: HashSet<&'static str>,
    entity_nouns: HashSet<String>,
    not_names: HashSet<&'static str>,
    synonyms: HashMap<String, String>,
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut synonyms = HashMap::new();
        for group in SYNONYMS {
            let canonical = stemmer.stem(group[0]).into_owned();
            for word in *group {
                synonyms.insert(stemmer.stem(word).into_owned(), canonical.clone());
            }
        }
        let entity_nouns = ENTITY_NOUNS
            .split_whitespace()
            .map(|word| stemmer.stem(word).into_owned())
            .collect();
        Tables {
            stop: STOP_WORDS.split_whitespace().collect(),
            generic: GENERIC.split_whitespace().collect(),
            acronyms: COMMON_ACRONYMS.split_whitespace().collect(),
            entity_nouns,
            not_names: NOT_NAMES.split_whitespace().collect(),
            synonyms,
            stemmer,
        }
    })
}

/// One word of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// Lower-cased, as written (without a trailing "n't").
    pub raw: String,
    /// Snowball stem, folded onto its synonym group.
    pub stem: String,
    /// Whether the word is a function word.
    pub stop: bool,
}

/// Most words the per-thread stem cache holds before it starts over.
const STEM_CACHE_LIMIT: usize = 20_000;

thread_local! {
    /// Stemming is the judge's main cost and a pass stems the same words many times (every
    /// commitment's wording, every statement): each thread remembers the words it stemmed.
    /// A pure cache — the same word always has the same stem.
    static STEM_CACHE: std::cell::RefCell<HashMap<String, String>> =
        std::cell::RefCell::new(HashMap::new());
}

/// The stem of one lower-cased word, folded onto its synonym group.
pub fn stem(word: &str) -> String {
    if let Some(found) = STEM_CACHE.with(|cache| cache.borrow().get(word).cloned()) {
        return found;
    }
    let tables = tables();
    let stemmed = tables.stemmer.stem(word);
    let folded = tables
        .synonyms
        .get(stemmed.as_ref())
        .cloned()
        .unwrap_or_else(|| stemmed.into_owned());
    STEM_CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= STEM_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(word.to_string(), folded.clone());
    });
    folded
}

/// Backticked code collapsed into one word each, so `baton status --json` is one term, not
/// three.
fn collapse_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (index, span) in text.split('`').enumerate() {
        if index % 2 == 1 && !span.contains('\n') {
            out.push(' ');
            out.extend(span.chars().map(|c| {
                if c.is_alphanumeric() || c == '.' || c == '_' {
                    c
                } else {
                    '_'
                }
            }));
            out.push(' ');
        } else {
            out.push_str(span);
        }
    }
    out
}

/// The words of a text, "n't" read as a separate "not", "'ll" as "will", "'d" as "would".
pub fn words(text: &str) -> Vec<Word> {
    let tables = tables();
    let lowered = collapse_code(&text.to_lowercase().replace('\u{2019}', "'"));
    let mut out = Vec::new();
    for word in lowered.unicode_words() {
        let (base, extra) = if let Some(base) = word.strip_suffix("n't") {
            (base, Some("not"))
        } else if let Some(base) = word.strip_suffix("'ll") {
            (base, Some("will"))
        } else if let Some(base) = word.strip_suffix("'d") {
            (base, Some("would"))
        } else {
            let base = ["'s", "'re", "'ve", "'m"]
                .iter()
                .find_map(|suffix| word.strip_suffix(suffix))
                .unwrap_or(word);
            (base, None)
        };
        let negated = extra.is_some();
        if !base.is_empty() {
            // A version reads the same with or without its "v" ("v2.4.0" = "2.4.0").
            let base = version(base).map_or(base.to_string(), |bare| bare);
            let base = base.as_str();
            out.push(Word {
                raw: base.to_string(),
                stem: stem(base),
                stop: tables.stop.contains(base),
            });
        }
        if let (true, Some(extra)) = (negated, extra) {
            out.push(Word {
                raw: extra.to_string(),
                stem: stem(extra),
                stop: true,
            });
        }
    }
    out
}

/// Content stems: words that are not function words, not too general to identify anything,
/// and not bare single letters.
pub fn content_stems(words: &[Word]) -> HashSet<String> {
    let tables = tables();
    words
        .iter()
        .filter(|word| {
            !word.stop
                && !tables.generic.contains(word.raw.as_str())
                && word.raw.chars().count() > 1
        })
        .map(|word| word.stem.clone())
        .collect()
}

/// Names in a commitment's wording: words after the first written with a capital letter or
/// mixing letters and digits ("S3", "GCS", "EU", "Redis", "k8s"), except the commonest
/// acronyms. Each must be named by the evidence.
pub fn names(text: &str) -> HashSet<String> {
    let tables = tables();
    let collapsed = collapse_code(&without_old_state(text));
    collapsed
        .unicode_words()
        .skip(1)
        .filter(|word| {
            let capital = word.chars().any(char::is_uppercase);
            let mixed = word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(char::is_alphabetic)
                && version(&word.to_lowercase()).is_none();
            (capital || mixed) && !tables.acronyms.contains(word.to_lowercase().as_str())
        })
        .map(|word| stem(&word.to_lowercase()))
        .collect()
}

/// The words inside code names ("ComputeTranscriptPath", `find_commit_message`,
/// `sessionStateToStrategy()` → compute, transcript, path, ...), stemmed: a report names the
/// function it added where the plan named the work in words.
pub fn identifier_parts(text: &str) -> HashSet<String> {
    let tables = tables();
    let mut found = HashSet::new();
    for token in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let camel = token
            .chars()
            .zip(token.chars().skip(1))
            .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        if !camel && !token.contains('_') {
            continue;
        }
        let mut piece = String::new();
        let mut pieces = Vec::new();
        let mut previous_lower = false;
        for c in token.chars() {
            if c == '_' || (c.is_uppercase() && previous_lower) {
                pieces.push(std::mem::take(&mut piece));
            }
            if c != '_' {
                piece.push(c);
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
        pieces.push(piece);
        for piece in pieces {
            let lowered = piece.to_lowercase();
            if lowered.chars().count() >= 3
                && lowered.chars().all(char::is_alphabetic)
                && !tables.stop.contains(lowered.as_str())
                && !tables.generic.contains(lowered.as_str())
            {
                found.insert(stem(&lowered));
            }
        }
    }
    found
}

/// What kind of name an identifier is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdentKind {
    /// `#123`
    Number,
    /// `v1.2.3`, `1.38.0` (stored without the `v`)
    Version,
    /// Backticked code, paths, snake_case and dotted names, `--flags`
    Code,
}

/// An identifier, normalised (lower-case, `v` dropped from versions).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ident {
    pub kind: IdentKind,
    pub text: String,
}

fn version(token: &str) -> Option<String> {
    let bare = token.strip_prefix('v').unwrap_or(token);
    let parts: Vec<&str> = bare.split('.').collect();
    (parts.len() >= 2
        && parts
            .iter()
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit())))
    .then(|| bare.to_string())
}

fn code_like(token: &str) -> bool {
    let letters = token.chars().filter(|c| c.is_alphabetic()).count();
    if letters == 0 {
        return false;
    }
    if token.starts_with("--") && token.len() > 3 {
        return true;
    }
    let dotted = token
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_alphanumeric() && w[1] == b'.' && w[2].is_ascii_alphabetic());
    token.contains('/') || token.contains('_') || token.contains("::") || dotted
}

/// The text without an old state ("from `serde_yaml` to `serde_yml`" → "to `serde_yml`"):
/// what the work moves away from need not be named by its completion.
pub fn without_old_state(text: &str) -> String {
    let lowered = text.to_ascii_lowercase();
    if let Some(from) = lowered.find(" from ")
        && let Some(to) = lowered[from + 6..].find(" to ")
        && text.is_char_boundary(from)
        && text.is_char_boundary(from + 6 + to)
    {
        return format!("{}{}", &text[..from], &text[from + 6 + to..]);
    }
    text.to_string()
}

/// The identifiers a text names.
pub fn identifiers(text: &str) -> HashSet<Ident> {
    let text = &without_old_state(text);
    let mut found = HashSet::new();
    let lowered = text.to_lowercase();
    for (index, span) in lowered.split('`').enumerate() {
        if index % 2 == 1 && !span.trim().is_empty() && !span.contains('\n') {
            found.insert(classify(span.trim()));
        }
    }
    for raw in lowered.split(|c: char| c.is_whitespace() || c == '`' || c == '(' || c == ')') {
        let token = raw.trim_matches(|c: char| {
            matches!(
                c,
                ',' | ';' | ':' | '.' | '"' | '\'' | '!' | '?' | '[' | ']'
            )
        });
        if token.len() < 2 {
            continue;
        }
        if let Some(number) = token.strip_prefix('#')
            && !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit())
        {
            found.insert(Ident {
                kind: IdentKind::Number,
                text: number.to_string(),
            });
        } else if let Some(version) = version(token) {
            found.insert(Ident {
                kind: IdentKind::Version,
                text: version,
            });
        } else if code_like(token) {
            found.insert(Ident {
                kind: IdentKind::Code,
                text: token.to_string(),
            });
        }
    }
    found
}

fn classify(span: &str) -> Ident {
    if let Some(version) = version(span) {
        return Ident {
            kind: IdentKind::Version,
            text: version,
        };
    }
    Ident {
        kind: IdentKind::Code,
        text: span.to_string(),
    }
}

/// The environments the words name (by each group's first word).
pub fn environments(words: &[Word]) -> HashSet<&'static str> {
    words
        .iter()
        .filter_map(|word| {
            ENVIRONMENTS
                .iter()
                .find(|group| group.contains(&word.raw.as_str()))
                .map(|group| group[0])
        })
        .collect()
}

/// Entity names: the stem of the word before an entity noun ("users" in "the users table").
pub fn entity_names(words: &[Word]) -> HashSet<(String, String)> {
    let tables = tables();
    words
        .windows(2)
        .filter(|pair| {
            tables.entity_nouns.contains(&pair[1].stem)
                && !pair[0].stop
                && !tables.not_names.contains(pair[0].raw.as_str())
                && !tables.entity_nouns.contains(&pair[0].stem)
                && pair[0].raw.chars().any(char::is_alphanumeric)
        })
        .map(|pair| (pair[0].stem.clone(), pair[1].stem.clone()))
        .collect()
}

#[cfg(test)]
#[path = "terms_tests.rs"]
mod tests;
