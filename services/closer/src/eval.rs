//! Evaluation of a judge over a labelled corpus (`make eval-closer`).
//!
//! Corpus: JSON lines `{"id", "briefed": [{"id","topic","status","content"}], "excerpt",
//! "written": [{"memoryType","topic","content"}], "expected": [commitment ids]}`.
//! Figures are over briefed commitments: recall = resolved ∩ expected / expected; precision =
//! resolved ∩ expected / resolved; spurious-resolve rate = resolved outside expected / briefed
//! commitments not expected.

use std::collections::HashSet;

use serde::Deserialize;
use uuid::Uuid;

use crate::judge::{BriefedCommitment, Judge, JudgeInput, WrittenMemory};
use crate::outcome;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseBriefed {
    id: Uuid,
    topic: String,
    status: String,
    content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaseWritten {
    memory_type: String,
    topic: String,
    content: String,
}

/// One labelled case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    briefed: Vec<CaseBriefed>,
    excerpt: String,
    written: Vec<CaseWritten>,
    expected: Vec<Uuid>,
}

impl Case {
    fn input(&self) -> JudgeInput {
        JudgeInput {
            briefed: self
                .briefed
                .iter()
                .map(|row| BriefedCommitment {
                    id: row.id,
                    topic: row.topic.clone(),
                    status: row.status.clone(),
                    content: row.content.clone(),
                })
                .collect(),
            excerpt: (!self.excerpt.is_empty()).then(|| self.excerpt.clone()),
            written: self
                .written
                .iter()
                .map(|row| WrittenMemory {
                    memory_type: row.memory_type.clone(),
                    topic: row.topic.clone(),
                    content: row.content.clone(),
                })
                .collect(),
        }
    }
}

/// Parses a corpus file; the error names the line.
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|error| format!("line {}: {error}", index + 1))
        })
        .collect()
}

/// Counts over briefed commitments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub true_positives: usize,
    pub false_positives: usize,
    pub false_negatives: usize,
    pub true_negatives: usize,
}

impl Tally {
    pub fn add(&mut self, other: Tally) {
        self.true_positives += other.true_positives;
        self.false_positives += other.false_positives;
        self.false_negatives += other.false_negatives;
        self.true_negatives += other.true_negatives;
    }

    fn ratio(numerator: usize, denominator: usize) -> f64 {
        if denominator == 0 {
            1.0
        } else {
            numerator as f64 / denominator as f64
        }
    }

    pub fn recall(&self) -> f64 {
        Tally::ratio(
            self.true_positives,
            self.true_positives + self.false_negatives,
        )
    }

    pub fn precision(&self) -> f64 {
        Tally::ratio(
            self.true_positives,
            self.true_positives + self.false_positives,
        )
    }

    pub fn spurious_rate(&self) -> f64 {
        if self.false_positives + self.true_negatives == 0 {
            return 0.0;
        }
        self.false_positives as f64 / (self.false_positives + self.true_negatives) as f64
    }
}

/// One case judged: its tally and the ids it got wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scored {
    pub tally: Tally,
    pub spurious: Vec<Uuid>,
    pub missed: Vec<Uuid>,
}

/// Judges one case exactly as a pass would (ids filtered to the briefed set).
pub async fn score(judge: &dyn Judge, case: &Case) -> Result<Scored, String> {
    let input = case.input();
    let verdict = judge
        .judge(&input)
        .await
        .map_err(|error| error.to_string())?;
    let briefed: Vec<Uuid> = input.briefed.iter().map(|row| row.id).collect();
    let (resolved, _rejected) = outcome::candidates(&briefed, &verdict.completed);
    let resolved: HashSet<Uuid> = resolved.into_iter().collect();
    let expected: HashSet<Uuid> = case.expected.iter().copied().collect();
    let mut scored = Scored {
        tally: Tally::default(),
        spurious: Vec::new(),
        missed: Vec::new(),
    };
    for id in briefed {
        match (resolved.contains(&id), expected.contains(&id)) {
            (true, true) => scored.tally.true_positives += 1,
            (true, false) => {
                scored.tally.false_positives += 1;
                scored.spurious.push(id);
            }
            (false, true) => {
                scored.tally.false_negatives += 1;
                scored.missed.push(id);
            }
            (false, false) => scored.tally.true_negatives += 1,
        }
    }
    Ok(scored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::lexical::LexicalJudge;

    #[tokio::test]
    async fn the_tally_counts_briefed_commitments() {
        let line = r#"{"id":"c","briefed":[{"id":"00000000-0000-4000-8000-000000000001","topic":"changelog-entry","status":"open","content":"Add a changelog entry for the retry change"},{"id":"00000000-0000-4000-8000-000000000002","topic":"notes","status":"open","content":"Write the release notes"}],"excerpt":"The changelog entry for the retry change is done. The release notes are not written yet.","written":[],"expected":["00000000-0000-4000-8000-000000000001"]}"#;
        let cases = parse(line).expect("valid");
        let scored = score(&LexicalJudge, &cases[0]).await.expect("scored");
        assert_eq!(
            scored.tally,
            Tally {
                true_positives: 1,
                false_positives: 0,
                false_negatives: 0,
                true_negatives: 1
            }
        );
        assert_eq!(scored.tally.precision(), 1.0);
        assert_eq!(scored.tally.spurious_rate(), 0.0);
        assert!(parse("{not json").is_err());
    }
}
