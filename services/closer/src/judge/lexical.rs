//! The earlier judge, kept as the evaluation and benchmark baseline only (its verdicts carry no
//! evidence, so passes use [`crate::judge::evidence`]): deterministic word matching, tuned for precision — it resolves nothing it
//! is unsure of. Evidence is split into clauses (sentence ends, and "but", "however", "except",
//! "although", "though"), from the session's last message and from the memories it wrote.
//!
//! For each briefed commitment:
//! 1. **About it.** A clause is about the commitment when it holds every *identifying* term of
//!    the commitment's topic (topic words that are not generic software vocabulary: the
//!    table's name, the service, the library), or when it comes from a memory written under
//!    the same topic. The same work on a different table or service misses that name.
//! 2. **Vetoes.** Any clause about it that hedges (not, never, still, halfway, started, next,
//!    will, until, blocked, failing, reverted, ...) or that comes from a commitment or blocker
//!    memory (the work restated as still to do) vetoes the commitment: mixed evidence is unsure.
//! 3. **Completion.** Some clause about it carries a completion word (done, finished, shipped,
//!    merged, fixed, deployed, added, removed, migrated, ...) and shares at least two, and at
//!    least `COVERAGE` of, the commitment's terms (topic and content words, stemmed, without
//!    stop words).
//!
//! Words are lower-cased, "n't" reads as "not", and a light stemmer lets "migrated",
//! "migrating" and "migration" meet "migrate". Measured on the development corpus
//! (`make eval-closer`): see the closer's closing notes.

use std::collections::HashSet;
use std::sync::OnceLock;

use crate::judge::{Finding, Judge, JudgeError, JudgeFuture, JudgeInput, Verdict};

/// Share of a commitment's terms a completing clause must hold.
pub const COVERAGE: f64 = 0.4;

const STOP_WORDS: &str = "a an the to of for in on at by with from into onto and or as it its is \
    are was were be been this that these those we i you our my your all so any some then than there \
    here up out over via per about also just now new make sure get got do did does have has had can \
    could should would will must need needs let s t re ve ll d m when what which who how each every \
    both one two before after once";

const GENERIC: &str = "add update fix write remove delete migrate move rename replace implement \
    create build run set enable disable bump upgrade ship release deploy publish merge review test \
    tests document check clean refactor support handle use switch port convert wire hook split drop \
    finish complete land change table code file doc docs service api endpoint module function job \
    script config configuration pipeline step version page pr branch issue bug feature project repo \
    data schema query column index field type value error log flag option setting command tool \
    library crate package dependency dependencies ci key guide new old first last all ensure follow \
    up confirm make get";

const COMPLETION: &str = "done complete completed finished shipped merged landed fixed resolved \
    implemented released deployed published green live closed wrote written sent pushed installed \
    enabled added removed deleted upgraded bumped migrated renamed replaced archived passes passing \
    succeeded gone rolled addressed approved switched confirmed created";

const HEDGES: &str = "not never nothing still yet partial partly half halfway started began begin \
    draft wip almost most mostly except remain remaining left todo tomorrow later next plan planned \
    going will shall need needs should try tried attempt unable fail failed failing broke broken \
    revert reverted rollback skip skipped postpone deferred block blocked wait waiting pending stuck \
    couldn cannot won instead propose suggest maybe hopefully intend gonna outstanding unfinished \
    until held hold off would could might";

/// A word list, stemmed (built once).
struct Lexicon {
    stop: HashSet<String>,
    generic: HashSet<String>,
    completion: HashSet<String>,
    hedges: HashSet<String>,
}

fn lexicon() -> &'static Lexicon {
    static LEXICON: OnceLock<Lexicon> = OnceLock::new();
    LEXICON.get_or_init(|| {
        let stemmed = |text: &str| text.split_whitespace().map(stem).collect::<HashSet<_>>();
        Lexicon {
            stop: STOP_WORDS.split_whitespace().map(str::to_string).collect(),
            generic: stemmed(GENERIC),
            completion: stemmed(COMPLETION),
            hedges: stemmed(HEDGES),
        }
    })
}

/// A light stemmer: enough that "migrated", "migrating" and "migration" meet "migrate".
pub fn stem(word: &str) -> String {
    let word = word.strip_suffix("'s").unwrap_or(word);
    for suffix in [
        "ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ion", "s", "e",
    ] {
        if let Some(root) = word
            .strip_suffix(suffix)
            .filter(|root| root.chars().count() >= 3 && !(suffix == "s" && root.ends_with('s')))
        {
            return root.to_string();
        }
    }
    word.to_string()
}

/// Lower-cased words, "n't" read as "not".
pub fn words(text: &str) -> Vec<String> {
    let lowered = text
        .to_lowercase()
        .replace("n't", " not")
        .replace('\u{2019}', "'");
    lowered
        .split(|character: char| !(character.is_ascii_alphanumeric() || character == '\''))
        .map(|word| word.trim_matches('\''))
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

fn stems_of(text: &str) -> HashSet<String> {
    words(text).iter().map(|word| stem(word)).collect()
}

/// Splits evidence into clauses.
pub fn clauses(text: &str) -> Vec<String> {
    let mut parts = vec![text.to_lowercase()];
    for separator in [
        ". ",
        "! ",
        "? ",
        "; ",
        "\n",
        " but ",
        " however",
        " except",
        " although",
        " though ",
    ] {
        parts = parts
            .iter()
            .flat_map(|part| {
                part.split(separator)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    parts
        .into_iter()
        .map(|part| part.trim().trim_end_matches('.').to_string())
        .filter(|part| !part.is_empty())
        .collect()
}

/// A commitment's terms: topic and content, stemmed, without stop words.
fn key_terms(topic: &str, content: &str) -> HashSet<String> {
    let lexicon = lexicon();
    stems_of(&format!("{} {content}", topic.replace(['-', '_'], " ")))
        .into_iter()
        .filter(|term| !lexicon.stop.contains(term) && term.chars().count() > 1)
        .collect()
}

/// A topic's identifying terms: not stop words, not generic vocabulary.
fn topic_terms(topic: &str) -> HashSet<String> {
    let lexicon = lexicon();
    stems_of(&topic.replace(['-', '_'], " "))
        .into_iter()
        .filter(|term| {
            !lexicon.stop.contains(term)
                && !lexicon.generic.contains(term)
                && term.chars().count() > 1
        })
        .collect()
}

/// One clause of evidence, with what it came from.
struct Unit {
    words: Vec<String>,
    terms: HashSet<String>,
    /// The identifying terms of the memory it came from (`None`: the last message).
    source_topic: Option<HashSet<String>>,
    /// Whether it restates work as still to do (a commitment or blocker memory).
    restates: bool,
}

fn units(input: &JudgeInput) -> Vec<Unit> {
    let unit = |clause: &str, source_topic: Option<HashSet<String>>, restates: bool| Unit {
        words: words(clause),
        terms: stems_of(clause),
        source_topic,
        restates,
    };
    let mut all: Vec<Unit> = input
        .excerpt
        .as_deref()
        .map(clauses)
        .unwrap_or_default()
        .iter()
        .map(|clause| unit(clause, None, false))
        .collect();
    for memory in &input.written {
        let restates = matches!(memory.memory_type.as_str(), "commitment" | "blocker");
        for clause in clauses(&memory.content) {
            all.push(unit(&clause, Some(topic_terms(&memory.topic)), restates));
        }
    }
    all
}

/// Whether the evidence shows the commitment done, by the rules in the module doc.
fn completed(topic: &str, content: &str, evidence: &[Unit]) -> bool {
    let lexicon = lexicon();
    let key = key_terms(topic, content);
    let identifying = topic_terms(topic);
    if key.is_empty() || identifying.is_empty() {
        return false;
    }
    let mut supported = false;
    for unit in evidence {
        let same_topic = unit.source_topic.as_ref() == Some(&identifying);
        if !(identifying.is_subset(&unit.terms) || same_topic) {
            continue;
        }
        let hedged = unit
            .words
            .iter()
            .any(|word| lexicon.hedges.contains(word) || lexicon.hedges.contains(&stem(word)));
        if unit.restates || hedged {
            return false;
        }
        let mut seen = unit.terms.clone();
        if same_topic {
            seen.extend(identifying.iter().cloned());
        }
        let shared = key.intersection(&seen).count();
        let cue = unit
            .words
            .iter()
            .any(|word| lexicon.completion.contains(&stem(word)));
        if cue && shared >= 2 && shared as f64 >= COVERAGE * key.len() as f64 {
            supported = true;
        }
    }
    supported
}

/// Which briefed commitments the evidence shows completed.
pub fn decide(input: &JudgeInput) -> Vec<String> {
    let evidence = units(input);
    input
        .briefed
        .iter()
        .filter(|commitment| completed(&commitment.topic, &commitment.content, &evidence))
        .map(|commitment| commitment.id.to_string())
        .collect()
}

/// The lexical judge (no generation: nothing to meter).
#[derive(Debug, Clone, Copy, Default)]
pub struct LexicalJudge;

impl Judge for LexicalJudge {
    fn name(&self) -> &'static str {
        "lexical"
    }

    fn reservation(&self, _input: &JudgeInput) -> i64 {
        0
    }

    fn judge<'a>(&'a self, input: &'a JudgeInput) -> JudgeFuture<'a> {
        Box::pin(async move {
            Ok::<Verdict, JudgeError>(Verdict {
                findings: decide(input)
                    .into_iter()
                    .map(|id| Finding {
                        id,
                        done: true,
                        reason: "completed".to_string(),
                        evidence: Vec::new(),
                        confidence: 1.0,
                    })
                    .collect(),
                tokens_used: 0,
                dropped: 0,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{BriefedCommitment, WrittenMemory};
    use uuid::Uuid;

    fn commitment(topic: &str, content: &str) -> BriefedCommitment {
        BriefedCommitment {
            id: Uuid::from_u128(7),
            topic: topic.to_string(),
            status: "open".to_string(),
            content: content.to_string(),
            project: None,
        }
    }

    fn judged(topic: &str, content: &str, excerpt: &str, written: Vec<WrittenMemory>) -> bool {
        let input = JudgeInput {
            briefed: vec![commitment(topic, content)],
            excerpt: Some(excerpt.to_string()),
            written,
            session_project: None,
        };
        !decide(&input).is_empty()
    }

    #[test]
    fn stems_meet_across_forms() {
        assert_eq!(stem("migrated"), stem("migrate"));
        assert_eq!(stem("migrating"), stem("migrate"));
        assert_eq!(stem("tables"), stem("table"));
    }

    #[test]
    fn rows() {
        let topic = "orders-uuid";
        let content = "Migrate the orders table to uuid keys";
        let table = [
            ("Done: migrated the orders table to uuid keys.", true),
            ("Migrated the users table to uuid keys.", false),
            (
                "I have not migrated the orders table to uuid keys yet.",
                false,
            ),
            ("Started migrating the orders table to uuid keys.", false),
            (
                "I will migrate the orders table to uuid keys tomorrow.",
                false,
            ),
            (
                "Migrated the orders table to uuid keys. The orders uuid backfill still fails.",
                false,
            ),
            ("The orders table and uuid keys are interesting.", false),
            ("", false),
        ];
        for (excerpt, expected) in table {
            assert_eq!(
                judged(topic, content, excerpt, vec![]),
                expected,
                "{excerpt}"
            );
        }
    }

    #[test]
    fn a_memory_under_the_same_topic_counts_and_a_restating_one_vetoes() {
        let note = WrittenMemory {
            id: Uuid::from_u128(8),
            project: None,
            memory_type: "note".to_string(),
            topic: "ci-cache".to_string(),
            content: "Added actions/cache for the cargo registry; warm builds take 3m40s"
                .to_string(),
        };
        assert!(judged(
            "ci-cache",
            "Add dependency caching to the CI workflow",
            "",
            vec![note.clone()]
        ));
        let blocker = WrittenMemory {
            memory_type: "blocker".to_string(),
            ..note.clone()
        };
        assert!(!judged(
            "ci-cache",
            "Add dependency caching to the CI workflow",
            "",
            vec![note, blocker]
        ));
    }

    #[test]
    fn contrast_splits_credit_the_done_half_only() {
        let excerpt = "The changelog entry for the retry change is done, but the release notes are not written yet.";
        assert!(judged(
            "changelog-entry",
            "Add a changelog entry for the retry change",
            excerpt,
            vec![]
        ));
        assert!(!judged(
            "release-notes",
            "Write the release notes",
            excerpt,
            vec![]
        ));
    }
}
