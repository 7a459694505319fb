//! Cue words: what turns a statement into a claim of completion, or takes it away.
//!
//! Word lists are unavoidable for these few closed classes of English (negation, modality,
//! deferral); they are kept small, written as plain words here, stemmed once with the same
//! Snowball stemmer as the text, and matched on stems, so every inflection of a listed word
//! counts ("postponed", "postponing"). A cue whose stem is part of the commitment's own wording
//! is content, not a cue ("Fix the *failing* login test" does not veto itself).
//!
//! - **Completion**: a past participle or past tense (a word ending in "-ed", or an irregular
//!   one in `IRREGULAR_PAST`), a finished state (`DONE_STATES`: "done", "live", "green", "in
//!   place", "is out"), or "now" describing the new state ("CI now runs clippy").
//! - **Negation**: "not", "n't", "no", "never", "nothing", ... — except "no more" and "no
//!   longer", which state that a problem is gone. A negation reaches only its own part of a
//!   statement (the pieces between ", ", ": " and " and "): in a statement of several parts
//!   it counts when its part names the commitment (one of its object terms) or starts with a
//!   subject pronoun ("it", "this", "they", "these") that stands for it. "…, the adapter is
//!   deleted, and I didn't hit any problems" does not deny the deletion.
//! - **Hypothetical**: modal verbs, "if", "unless", "going to", "need to", plans and
//!   proposals.
//! - **Partial**: "started", "began", "half", "most of", "part of", "except", "remaining",
//!   "draft", "in progress", "are left".
//! - **Deferral**: "postponed", "deferred", "later", "tomorrow", "next week", "until",
//!   "pending", "blocked", "yet", "follow-up", "ran out of time".
//! - **Withdrawal**: "still", "fails", "broken", "regressed" — the work does not hold.
//! - **Revert**: "reverted", "rolled back", "backed out", "undid".

use std::collections::HashSet;
use std::sync::OnceLock;

use super::language;
use super::scope;
use super::terms::{self, Word};

const IRREGULAR_PAST: &str = "built wrote written rewrote rewritten made ran sent put shrank \
    shrunk cut split got did went kept drew drawn hid found took taken brought led won tore torn \
    undertook set";
const DONE_STATES: &str = "done complete finish live green gone stable";
const DONE_PHRASES: &[&str] = &["in place", "is out", "are out", "now out", "all set"];
const NOT_PARTICIPLES: &str = "speed indeed exceed proceed succeed embed feed seed need bed red \
    shed breed bred";

const NEGATION: &str = "not no never nothing none neither nor cannot unable";
const NEGATION_EXCEPTIONS: &[&str] = &["no more", "no longer"];
const HYPOTHETICAL: &str = "will would should could might may shall gonna if unless \
    assuming suppose hopefully plan intend propose suggest consider ought want wish need let";
const HYPOTHETICAL_PHRASES: &[&str] = &["going to", "have to", "has to"];
const PARTIAL: &str = "start began begun begin half halfway most mostly part partly partial \
    partially except remain remaining draft wip progress skeleton sketch almost nearly initial \
    prototype scaffold stub";
const PARTIAL_PHRASES: &[&str] = &["are left", "is left", "left to", "first pass"];
const DEFERRAL: &str = "postpone defer later tomorrow wait until backlog punt park skip pending \
    blocked hold yet todo eventually someday await outstanding unfinished incomplete";
const DEFERRAL_PHRASES: &[&str] = &[
    "next week",
    "next session",
    "next time",
    "next sprint",
    "follow-up",
    "follow up",
    "ran out",
];
const WITHDRAWAL: &str = "still fail broken broke break regressed";
const REVERT: &str = "revert rollback undo undid";
const REVERT_PHRASES: &[&str] = &["roll back", "rolled back", "back out", "backed out"];

const PLAN_LABELS: &str = "next step todo follow followup plan remain remaining outstanding open \
    pending later future backlog question idea left blocker blocked wait need option suggest \
    suggested recommend recommended proposal proposed";
const DONE_LABELS: &str = "done complete completed finish finished ship shipped summary change \
    changes result fixed landed merged delivered accomplished modified new created added \
    implemented updated verified validation did";

/// Why a statement cannot claim completion (or withdraws one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cue {
    Negation,
    Hypothetical,
    Partial,
    Deferral,
    Withdrawal,
    Revert,
}

impl Cue {
    pub fn as_str(self) -> &'static str {
        match self {
            Cue::Negation => "negation",
            Cue::Hypothetical => "hypothetical",
            Cue::Partial => "partial",
            Cue::Deferral => "deferral",
            Cue::Withdrawal => "withdrawal",
            Cue::Revert => "revert",
        }
    }
}

struct Lists {
    irregular: HashSet<String>,
    done: HashSet<String>,
    done_phrases: Vec<Vec<String>>,
    not_participles: HashSet<String>,
    negation: HashSet<String>,
    negation_exceptions: Vec<Vec<String>>,
    classes: Vec<(Cue, HashSet<String>, Vec<Vec<String>>)>,
    plan_labels: HashSet<String>,
    done_labels: HashSet<String>,
}

fn stems(list: &str) -> HashSet<String> {
    list.split_whitespace().map(terms::stem).collect()
}

fn phrases(list: &[&str]) -> Vec<Vec<String>> {
    list.iter()
        .map(|phrase| terms::words(phrase).into_iter().map(|w| w.stem).collect())
        .collect()
}

fn lists() -> &'static Lists {
    static LISTS: OnceLock<Lists> = OnceLock::new();
    LISTS.get_or_init(|| Lists {
        irregular: IRREGULAR_PAST
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        done: stems(DONE_STATES),
        done_phrases: phrases(DONE_PHRASES),
        not_participles: NOT_PARTICIPLES
            .split_whitespace()
            .map(str::to_string)
            .collect(),
        negation: stems(NEGATION),
        negation_exceptions: phrases(NEGATION_EXCEPTIONS),
        classes: vec![
            (Cue::Revert, stems(REVERT), phrases(REVERT_PHRASES)),
            (Cue::Withdrawal, stems(WITHDRAWAL), Vec::new()),
            (Cue::Deferral, stems(DEFERRAL), phrases(DEFERRAL_PHRASES)),
            (Cue::Partial, stems(PARTIAL), phrases(PARTIAL_PHRASES)),
            (
                Cue::Hypothetical,
                stems(HYPOTHETICAL),
                phrases(HYPOTHETICAL_PHRASES),
            ),
        ],
        plan_labels: stems(PLAN_LABELS),
        done_labels: stems(DONE_LABELS),
    })
}

/// Whether `phrase` occurs with at most `gap` words between its words ("rolled it back").
fn gapped(words: &[Word], phrase: &[String], gap: usize) -> bool {
    let Some((first, rest)) = phrase.split_first() else {
        return false;
    };
    words.iter().enumerate().any(|(at, word)| {
        if &word.stem != first {
            return false;
        }
        let mut position = at;
        rest.iter().all(|stem| {
            let window = words.iter().enumerate().skip(position + 1).take(gap + 1);
            match window.clone().find(|(_, word)| &word.stem == stem) {
                Some((found, _)) => {
                    position = found;
                    true
                }
                None => false,
            }
        })
    })
}

/// Positions of `phrase` (a stem sequence) in `words`.
fn phrase_at(words: &[Word], phrase: &[String]) -> Vec<usize> {
    if phrase.is_empty() || words.len() < phrase.len() {
        return Vec::new();
    }
    (0..=words.len() - phrase.len())
        .filter(|&at| {
            words[at..at + phrase.len()]
                .iter()
                .zip(phrase)
                .all(|(word, stem)| &word.stem == stem)
        })
        .collect()
}

/// Whether a stem is one of the disqualifying cue words.
pub fn is_cue(stem: &str) -> bool {
    let lists = lists();
    lists.negation.contains(stem)
        || lists.classes.iter().any(|(_, single, multi)| {
            single.contains(stem)
                || multi
                    .iter()
                    .any(|phrase| phrase.iter().any(|word| word == stem))
        })
}

/// Whether a label ("Next steps", "TODO", "Follow-ups") introduces plans.
pub fn is_plan_label(words: &[Word]) -> bool {
    let lists = lists();
    words
        .iter()
        .enumerate()
        .any(|(at, word)| lists.plan_labels.contains(&word.stem) && !scope::inert(words, at))
        || !phrase_at(words, &["to".to_string(), "do".to_string()]).is_empty()
}

/// Whether a label ("Done", "Shipped", "Summary of changes") introduces completed work.
pub fn is_done_label(words: &[Word]) -> bool {
    let lists = lists();
    !is_plan_label(words)
        && words
            .iter()
            .any(|word| lists.done_labels.contains(&word.stem))
}

/// A statement's cues, found once: which of them count depends on the commitment (a cue in
/// its own wording is content), so that filter is applied per commitment, cheaply.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Per class, in priority order: whether a phrase matched, and the single-word stems that did.
    classes: Vec<(Cue, bool, Vec<String>)>,
    negated: bool,
    /// Raw words that read as completion, and whether a completion phrase matched.
    completion_words: Vec<String>,
    completion_phrase: bool,
    /// For a negated statement: its parts as (stems, starts with a subject pronoun, negated).
    parts: Vec<(HashSet<String>, bool, bool)>,
}

const SUBJECT_PRONOUNS: &[&str] = &["it", "this", "they", "these"];

fn negated(words: &[Word]) -> bool {
    let lists = lists();
    let excepted: HashSet<usize> = lists
        .negation_exceptions
        .iter()
        .flat_map(|phrase| phrase_at(words, phrase))
        .collect();
    words.iter().enumerate().any(|(at, word)| {
        lists.negation.contains(&word.stem) && !excepted.contains(&at) && !scope::inert(words, at)
    })
}

/// The parts of a statement a negation's reach is bounded by.
fn parts(text: &str) -> Vec<(HashSet<String>, bool, bool)> {
    let lowered = text.to_lowercase();
    let mut pieces = vec![lowered.as_str()];
    for separator in [": ", ", ", " and "] {
        pieces = pieces
            .iter()
            .flat_map(|piece| piece.split(separator))
            .collect();
    }
    pieces
        .into_iter()
        .map(terms::words)
        .filter(|words| !words.is_empty())
        .map(|words| {
            (
                words.iter().map(|word| word.stem.clone()).collect(),
                SUBJECT_PRONOUNS.contains(&words[0].raw.as_str()),
                negated(&words),
            )
        })
        .collect()
}

/// Finds a statement's cues (`text` is the statement, `words` its words).
pub fn scan(text: &str, words: &[Word]) -> Scan {
    let lists = lists();
    let classes = lists
        .classes
        .iter()
        .map(|(cue, single, multi)| {
            let gap = if *cue == Cue::Revert { 2 } else { 0 };
            let phrase = multi.iter().any(|phrase| gapped(words, phrase, gap));
            let hits = words
                .iter()
                .enumerate()
                .filter(|(at, word)| single.contains(&word.stem) && !scope::inert(words, *at))
                .map(|(_, word)| word.stem.clone())
                .collect();
            (*cue, phrase, hits)
        })
        .collect();
    let completion_words = words
        .iter()
        .filter(|word| {
            lists.done.contains(&word.stem)
                || lists.irregular.contains(&word.raw)
                || word.raw == "now"
                || (word.raw.ends_with("ed")
                    && word.raw.chars().count() >= 5
                    && !lists.not_participles.contains(&word.raw))
        })
        .map(|word| word.raw.clone())
        .collect();
    let is_negated = negated(words);
    Scan {
        classes,
        negated: is_negated,
        completion_words,
        completion_phrase: lists
            .done_phrases
            .iter()
            .any(|phrase| !phrase_at(words, phrase).is_empty()),
        parts: if is_negated { parts(text) } else { Vec::new() },
    }
}

impl Scan {
    /// The scan with a non-English statement's own cue words added ([`language::cues`]).
    pub fn with_foreign(mut self, foreign: &language::Cues) -> Scan {
        self.completion_phrase |= foreign.completion;
        self.negated |= foreign.negation;
        for (cue, phrase, _) in &mut self.classes {
            *phrase |= match cue {
                Cue::Hypothetical => foreign.hypothetical,
                Cue::Deferral => foreign.deferral,
                _ => false,
            };
        }
        self
    }

    /// Whether the statement claims something finished, ignoring words written exactly as in
    /// the commitment ("failed" in "retry failed deliveries" is content; "fixed" for "fix" is
    /// a claim).
    pub fn completion(&self, own_raw: &HashSet<String>) -> bool {
        self.completion_phrase
            || self
                .completion_words
                .iter()
                .any(|raw| !own_raw.contains(raw))
    }

    /// The first disqualifying cue (revert before withdrawal before deferral before partial
    /// before hypothetical before negation: the most specific reason).
    pub fn disqualifier(&self, own: &HashSet<String>) -> Option<Cue> {
        self.classes
            .iter()
            .find(|(_, phrase, hits)| *phrase || hits.iter().any(|stem| !own.contains(stem)))
            .map(|(cue, _, _)| *cue)
            .or(self.negated.then_some(Cue::Negation))
    }

    /// Whether the negation reaches the commitment whose object terms are `object`: in a
    /// statement of one part, always; of several, when a negated part names the commitment
    /// or starts with a subject pronoun that stands for it.
    pub fn negation_in_scope(&self, object: &HashSet<String>) -> bool {
        if self.parts.len() <= 1 {
            return self.negated;
        }
        self.parts
            .iter()
            .any(|(stems, pronoun, negated)| *negated && (*pronoun || !stems.is_disjoint(object)))
    }
}

/// Whether the words claim something finished (see [`Scan::completion`]).
pub fn completion(words: &[Word], own_raw: &HashSet<String>) -> bool {
    scan("", words).completion(own_raw)
}

/// The first disqualifying cue of a statement, if any (see [`Scan::disqualifier`]).
pub fn disqualifier(words: &[Word], own: &HashSet<String>) -> Option<Cue> {
    scan("", words).disqualifier(own)
}

/// Whether a negation in `text` reaches the commitment whose object terms are `object`.
pub fn negation_in_scope(text: &str, object: &HashSet<String>) -> bool {
    scan(text, &terms::words(text)).negation_in_scope(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negation_reaches_only_its_own_part_of_a_statement() {
        let object: HashSet<String> = terms::words("session store postgres")
            .into_iter()
            .map(|w| w.stem)
            .collect();
        let table = [
            (
                "The store lives in Postgres now, the adapter is deleted, and I didn't hit any problems",
                false,
            ),
            ("The session store is not in Postgres yet", true),
            (
                "Moved the store, and the session store isn't used anymore",
                true,
            ),
            ("Moved it to Postgres, it doesn't start", true),
            ("I didn't hit any problems", true),
        ];
        for (text, expected) in table {
            assert_eq!(negation_in_scope(text, &object), expected, "{text}");
        }
    }

    fn cue(text: &str) -> Option<Cue> {
        disqualifier(&terms::words(text), &HashSet::new())
    }

    #[test]
    fn each_class_of_cue_is_recognised_in_any_inflection() {
        let table = [
            ("I haven't configured the backups", Some(Cue::Negation)),
            ("No more leak in the shipper", None),
            ("We will deploy it tomorrow", Some(Cue::Deferral)),
            ("We are going to deploy it", Some(Cue::Hypothetical)),
            ("If the tests pass, it ships", Some(Cue::Hypothetical)),
            ("Started porting the service", Some(Cue::Partial)),
            ("Two screens are left", Some(Cue::Partial)),
            ("It is postponed until Monday", Some(Cue::Deferral)),
            ("It still leaks", Some(Cue::Withdrawal)),
            (
                "The deploy failed on the health check",
                Some(Cue::Withdrawal),
            ),
            ("We rolled it back", Some(Cue::Revert)),
            ("Reverted the change", Some(Cue::Revert)),
            ("Migrated the orders table", None),
        ];
        for (text, expected) in table {
            assert_eq!(cue(text), expected, "{text}");
        }
    }

    #[test]
    fn a_cue_in_the_commitments_own_words_is_content() {
        let own: HashSet<String> = terms::words("Fix the failing login test")
            .into_iter()
            .map(|w| w.stem)
            .collect();
        assert_eq!(
            disqualifier(&terms::words("The failing login test is fixed"), &own),
            None
        );
    }

    #[test]
    fn completion_is_a_past_form_a_finished_state_or_now() {
        let none = HashSet::new();
        for text in [
            "Migrated the table",
            "The docs are done",
            "CI now runs clippy",
            "Wrote the runbook",
            "The guard is in place",
        ] {
            assert!(completion(&terms::words(text), &none), "{text}");
        }
        for text in ["Migrate the table", "Run the load test", "the index"] {
            assert!(!completion(&terms::words(text), &none), "{text}");
        }
    }

    #[test]
    fn labels_read_as_plans_or_as_done() {
        assert!(is_plan_label(&terms::words("Next steps")));
        assert!(is_plan_label(&terms::words("TODO")));
        assert!(is_plan_label(&terms::words("Follow-ups")));
        assert!(is_done_label(&terms::words("Done today")));
        assert!(!is_done_label(&terms::words("Changes still to do")));
    }
}
