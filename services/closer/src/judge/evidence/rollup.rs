//! Roll-ups: a statement that closes a whole list at once ("All 7 tasks for auto-summarise
//! have been implemented", "All 6 findings fixed", "All tasks are complete", "5/5 steps
//! done").
//!
//! A roll-up names no item, so it is linked to the items by count: it speaks for the briefed
//! commitments of the session's project when it gives no count or a count equal to theirs. A
//! roll-up whose count differs ("11/12 tasks completed") closes nothing by itself; the items
//! must then be read one by one. It never overrides a veto: a commitment that any statement
//! withdraws, defers or proposes stays open.

use super::cues;
use super::terms::{self, Word};

/// Nouns that name the items of a plan.
const ITEM_NOUNS: &str = "task tasks item items todo todos step steps finding findings phase \
    phases fix fixes issue issues subtask subtasks milestone milestones";

/// Words that close the items: a roll-up must say in one of them that they are finished
/// ("All the tasks are *listed* below" is not a roll-up).
const DONE_WORDS: &str = "complete completed done implemented fixed finished addressed resolved \
    landed shipped merged closed";

/// Words between "all" and the noun that keep the roll-up about the plan ("all 7 planned
/// tasks", "all of the review items").
const MAX_GAP: usize = 3;

/// How a roll-up counts the items it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rollup {
    /// "All tasks are complete": every item, however many.
    All,
    /// "All 7 tasks …", "7/7 tasks …": exactly this many.
    Count(usize),
}

fn item_noun(word: &Word) -> bool {
    ITEM_NOUNS.split_whitespace().any(|noun| noun == word.raw)
}

fn number(word: &Word) -> Option<usize> {
    word.raw.parse().ok()
}

/// The roll-up a statement makes, if it makes one: "all (N) <items> … <completion>" or
/// "N/N <items> <completion>", declarative, with no disqualifying cue.
pub fn rollup(statement: &str, question: bool, plan: bool) -> Option<Rollup> {
    if question || plan {
        return None;
    }
    let words = terms::words(statement);
    let scan = cues::scan(statement, &words);
    let closed = words
        .iter()
        .any(|word| DONE_WORDS.split_whitespace().any(|done| done == word.raw));
    if !closed || scan.disqualifier(&Default::default()).is_some() {
        return None;
    }
    for (at, word) in words.iter().enumerate() {
        if word.raw == "all" {
            let after = &words[at + 1..];
            let count = after.first().and_then(number);
            let noun = after.iter().take(MAX_GAP + 1).position(item_noun);
            if noun.is_some() {
                return Some(count.map_or(Rollup::All, Rollup::Count));
            }
        }
        // "7/7 tasks": the slash splits the words, so the two numbers are neighbours.
        if let (Some(done), Some(next), Some(noun)) = (
            number(word),
            words.get(at + 1).and_then(number),
            words.get(at + 2),
        ) && done == next
            && done > 0
            && item_noun(noun)
            && statement.contains(&format!("{done}/{next}"))
        {
            return Some(Rollup::Count(done));
        }
    }
    None
}

/// Whether a roll-up closes a plan of `items` commitments.
pub fn closes(rollup: Rollup, items: usize) -> bool {
    match rollup {
        Rollup::All => items > 0,
        Rollup::Count(count) => count == items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roll_ups_are_read_with_their_count() {
        let table = [
            (
                "All 7 tasks for auto-summarise at commit time have been implemented:",
                Some(Rollup::Count(7)),
            ),
            ("All 6 findings fixed.", Some(Rollup::Count(6))),
            ("All tasks are complete.", Some(Rollup::All)),
            ("5/5 steps done.", Some(Rollup::Count(5))),
            ("11/12 tasks completed, pushed.", None),
            ("All tests pass.", None),
            ("All tasks will be done tomorrow.", None),
            ("Not all tasks are complete.", None),
            ("All the tasks are listed below.", None),
        ];
        for (text, expected) in table {
            assert_eq!(rollup(text, false, false), expected, "{text}");
        }
        assert_eq!(rollup("All tasks complete?", true, false), None);
    }

    #[test]
    fn a_count_closes_only_a_plan_of_that_size() {
        assert!(closes(Rollup::Count(7), 7));
        assert!(!closes(Rollup::Count(7), 6));
        assert!(closes(Rollup::All, 3));
        assert!(!closes(Rollup::All, 0));
    }
}
