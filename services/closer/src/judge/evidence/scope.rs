//! Cue words read in their place: a word of a cue class that, where it stands, does not
//! govern the claim at all.
//!
//! Real reports use the cue words constantly in ways that say nothing against the work:
//! "accepted with **no** errors" (a clean result), "41 passed, 1 **skipped**" and "0 **failed**"
//! (a test tally), "the suite is **still** passing" (a state that holds), "it **will now**
//! retry" (the new behaviour), "checks **if** the checkpoint exists" (a complement clause, not a
//! condition), "**non**-blocking". Each rule looks at the word and its neighbours only, so the
//! cue keeps its force everywhere else ("the tests **still** fail", "**if** CI passes").

use super::terms::Word;

/// Nouns after which "no", "zero" or "0" state a clean result.
const PROBLEMS: &[&str] = &[
    "error",
    "errors",
    "issue",
    "issues",
    "warning",
    "warnings",
    "problem",
    "problems",
    "regression",
    "regressions",
    "conflict",
    "conflicts",
    "failure",
    "failures",
    "match",
    "matches",
    "lint",
    "diff",
    "diffs",
    "leftover",
    "leftovers",
    "reference",
    "references",
];

/// Words after "still" that say the good state holds.
const HOLDING: &[&str] = &[
    "pass", "passes", "passing", "green", "works", "working", "clean", "succeeds", "valid",
    "compiles", "builds",
];

/// Verbs whose "if"/"whether" introduces what they test, not a condition.
const TESTING_VERBS: &[&str] = &[
    "check",
    "checks",
    "checked",
    "checking",
    "see",
    "sees",
    "determine",
    "determines",
    "detect",
    "detects",
    "verify",
    "verifies",
    "test",
    "tests",
    "know",
    "knows",
    "ask",
    "asks",
    "decide",
    "decides",
];

fn raw(words: &[Word], at: usize) -> &str {
    words.get(at).map_or("", |word| word.raw.as_str())
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_digit())
}

/// Whether the cue word at `at` does not govern the statement where it stands.
pub fn inert(words: &[Word], at: usize) -> bool {
    let word = raw(words, at);
    let next = raw(words, at + 1);
    let previous = at.checked_sub(1).map_or("", |before| raw(words, before));
    match word {
        "no" | "zero" | "0" => {
            PROBLEMS.contains(&next) || (next == "new" && PROBLEMS.contains(&raw(words, at + 2)))
        }
        "never" | "not" | "nothing" => false,
        "skipped" | "skip" | "pending" => is_number(previous),
        "failed" | "failing" | "failures" | "fail" => previous == "0" || previous == "zero",
        "still" => HOLDING.contains(&next),
        "will" | "would" => next == "now",
        "if" | "whether" => TESTING_VERBS.contains(&previous),
        _ => previous == "non",
    }
}

#[cfg(test)]
mod tests {
    use super::super::terms;
    use super::*;

    /// Whether the first occurrence of `cue` in `text` is inert.
    fn reads(text: &str, cue: &str) -> bool {
        let words = terms::words(text);
        let at = words
            .iter()
            .position(|word| word.raw == cue)
            .expect("cue in text");
        inert(&words, at)
    }

    #[test]
    fn cue_words_that_do_not_govern_the_claim_are_inert() {
        let table = [
            ("The schema was accepted with no errors", "no", true),
            ("41 passed, 1 skipped", "skipped", true),
            ("120 passed, 0 failed", "failed", true),
            ("The full suite is still passing", "still", true),
            ("Failed deliveries will now retry", "will", true),
            ("It now checks if the checkpoint exists", "if", true),
            (
                "Non-blocking: summary failures are logged",
                "blocking",
                true,
            ),
            ("No new warnings from clippy", "no", true),
            ("No handoff yet", "no", false),
            ("The tests still fail", "still", false),
            ("I will deploy it tomorrow", "will", false),
            ("If CI passes, it ships", "if", false),
            ("3 failed", "failed", false),
            ("The upload was skipped", "skipped", false),
            ("It was never written up", "never", false),
        ];
        for (text, cue, expected) in table {
            assert_eq!(reads(text, cue), expected, "{text}");
        }
    }
}
