//! Evaluation of a judge over a labelled corpus (`make eval-closer`).
//!
//! Corpus: JSON lines `{"id", "kind", "why", "sessionProject"?, "briefed":
//! [{"id","topic","status","content","project"?}], "excerpt", "written":
//! [{"memoryType","topic","content","project"?}], "expected": [commitment ids]}`. `kind` is one
//! of [`KINDS`]; `why` says in a sentence why the label is right. A malformed line fails the
//! whole file with its line number and the reason.
//!
//! Figures are over briefed commitments, never over cases:
//! - recall = resolved ∩ expected / expected (truly completed commitments the judge resolved);
//! - precision = resolved ∩ expected / resolved;
//! - **spurious rate** = resolved ∖ expected / (briefed ∖ expected): of the open commitments
//!   that were NOT truly completed, the share the judge resolved anyway — the wrong resolves a
//!   user would have to undo. With nothing left to get wrong it is 0.

pub mod curve;

use std::collections::HashSet;

use serde::Deserialize;
use uuid::Uuid;

use crate::judge::{BriefedCommitment, Judge, JudgeInput, Verdict, WrittenMemory};
use crate::outcome;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseBriefed {
    id: Uuid,
    topic: String,
    status: String,
    content: String,
    #[serde(default)]
    project: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaseWritten {
    memory_type: String,
    topic: String,
    content: String,
    #[serde(default)]
    project: Option<String>,
}

/// The kinds of session a corpus covers (issue 10).
pub const KINDS: &[&str] = &[
    "paraphrase",
    "memory-only",
    "several-at-once",
    "partial",
    "deferral",
    "next-steps",
    "negation",
    "contradicted",
    "reverted",
    "noisy",
    "other-entity",
    "other-project",
    "unrelated",
    "empty",
];

/// One labelled case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    pub id: String,
    pub kind: String,
    pub why: String,
    #[serde(default)]
    session_project: Option<String>,
    briefed: Vec<CaseBriefed>,
    excerpt: String,
    written: Vec<CaseWritten>,
    expected: Vec<Uuid>,
}

impl Case {
    /// The judge input of this case.
    pub fn input(&self) -> JudgeInput {
        JudgeInput {
            briefed: self
                .briefed
                .iter()
                .map(|row| BriefedCommitment {
                    id: row.id,
                    topic: row.topic.clone(),
                    status: row.status.clone(),
                    content: row.content.clone(),
                    project: row.project.clone(),
                })
                .collect(),
            excerpt: (!self.excerpt.is_empty()).then(|| self.excerpt.clone()),
            written: self
                .written
                .iter()
                .enumerate()
                .map(|(index, row)| WrittenMemory {
                    id: Uuid::from_u128(0xfeed_0000 + index as u128),
                    memory_type: row.memory_type.clone(),
                    topic: row.topic.clone(),
                    content: row.content.clone(),
                    project: row.project.clone(),
                })
                .collect(),
            session_project: self.session_project.clone(),
        }
    }

    /// Why the case cannot be scored, if it cannot.
    fn invalid(&self) -> Option<String> {
        if self.id.trim().is_empty() {
            return Some("\"id\" is empty".to_string());
        }
        if !KINDS.contains(&self.kind.as_str()) {
            return Some(format!(
                "\"kind\" {:?} is not one of {}",
                self.kind,
                KINDS.join(", ")
            ));
        }
        if self.why.trim().is_empty() {
            return Some("\"why\" is empty".to_string());
        }
        if self.briefed.is_empty() {
            return Some("\"briefed\" is empty".to_string());
        }
        let briefed: HashSet<Uuid> = self.briefed.iter().map(|row| row.id).collect();
        if briefed.len() != self.briefed.len() {
            return Some("a briefed id appears twice".to_string());
        }
        self.expected
            .iter()
            .find(|id| !briefed.contains(id))
            .map(|id| format!("expected id {id} is not briefed"))
    }
}

/// Parses a corpus file; the error names the line and the reason.
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    let mut seen = HashSet::new();
    let mut cases = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Case =
            serde_json::from_str(line).map_err(|error| format!("line {}: {error}", index + 1))?;
        if let Some(reason) = case.invalid() {
            return Err(format!("line {}: {reason}", index + 1));
        }
        if !seen.insert(case.id.clone()) {
            return Err(format!(
                "line {}: case id {:?} appears twice",
                index + 1,
                case.id
            ));
        }
        cases.push(case);
    }
    Ok(cases)
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
    /// The judge's reason for each commitment it got wrong.
    pub reasons: Vec<(Uuid, String)>,
}

fn reason(verdict: &Verdict, id: Uuid) -> String {
    verdict
        .findings
        .iter()
        .find(|finding| Uuid::parse_str(finding.id.trim()).is_ok_and(|parsed| parsed == id))
        .map_or_else(
            || "no-claim".to_string(),
            |finding| {
                let quote = finding
                    .evidence
                    .first()
                    .map_or("", |evidence| evidence.quote.as_str());
                format!("{} ({:.2}): {quote:?}", finding.reason, finding.confidence)
            },
        )
}

/// The judge's raw verdict on one case (before any abstention margin).
pub async fn judged(judge: &dyn Judge, case: &Case) -> Result<Verdict, String> {
    judge
        .judge(&case.input())
        .await
        .map_err(|error| error.to_string())
}

/// Scores a verdict exactly as a pass would apply it: the abstention margin, then the ids
/// filtered to the briefed set.
pub fn tally(case: &Case, verdict: &Verdict, min_confidence: f64) -> Scored {
    let verdict = crate::judge::abstain(verdict.clone(), min_confidence);
    let briefed: Vec<Uuid> = case.briefed.iter().map(|row| row.id).collect();
    let (resolved, _rejected) = outcome::candidates(&briefed, &verdict.completed());
    let resolved: HashSet<Uuid> = resolved.into_iter().collect();
    let expected: HashSet<Uuid> = case.expected.iter().copied().collect();
    let mut scored = Scored {
        tally: Tally::default(),
        spurious: Vec::new(),
        missed: Vec::new(),
        reasons: Vec::new(),
    };
    for id in briefed {
        match (resolved.contains(&id), expected.contains(&id)) {
            (true, true) => scored.tally.true_positives += 1,
            (true, false) => {
                scored.tally.false_positives += 1;
                scored.spurious.push(id);
                scored.reasons.push((id, reason(&verdict, id)));
            }
            (false, true) => {
                scored.tally.false_negatives += 1;
                scored.missed.push(id);
                scored.reasons.push((id, reason(&verdict, id)));
            }
            (false, false) => scored.tally.true_negatives += 1,
        }
    }
    scored
}

/// Judges one case and scores it at `min_confidence`.
pub async fn score(judge: &dyn Judge, case: &Case, min_confidence: f64) -> Result<Scored, String> {
    Ok(tally(case, &judged(judge, case).await?, min_confidence))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::evidence::EvidenceJudge;

    #[tokio::test]
    async fn the_tally_counts_briefed_commitments() {
        let line = r#"{"id":"c","kind":"several-at-once","why":"one done, one not","briefed":[{"id":"00000000-0000-4000-8000-000000000001","topic":"changelog-entry","status":"open","content":"Add a changelog entry for the retry change"},{"id":"00000000-0000-4000-8000-000000000002","topic":"notes","status":"open","content":"Write the release notes"}],"excerpt":"The changelog entry for the retry change is done. The release notes are not written yet.","written":[],"expected":["00000000-0000-4000-8000-000000000001"]}"#;
        let cases = parse(line).expect("valid");
        let scored = score(&EvidenceJudge, &cases[0], 0.0).await.expect("scored");
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
    }

    #[test]
    fn a_malformed_line_is_refused_with_its_number_and_reason() {
        let good = r#"{"id":"a","kind":"empty","why":"nothing said","briefed":[{"id":"00000000-0000-4000-8000-000000000001","topic":"t","status":"open","content":"Do it"}],"excerpt":"","written":[],"expected":[]}"#;
        let table = [
            ("{not json".to_string(), "line 1: "),
            (
                good.replace("\"empty\"", "\"weird\""),
                "line 1: \"kind\" \"weird\" is not one of",
            ),
            (
                good.replace("nothing said", " "),
                "line 1: \"why\" is empty",
            ),
            (
                good.replace(
                    "\"expected\":[]",
                    "\"expected\":[\"00000000-0000-4000-8000-000000000009\"]",
                ),
                "line 1: expected id",
            ),
            (
                good.replace(",\"why\":\"nothing said\"", ""),
                "line 1: missing field `why`",
            ),
            (
                format!("{good}\n\n{good}"),
                "line 3: case id \"a\" appears twice",
            ),
        ];
        for (text, expected) in table {
            let error = parse(&text).expect_err(expected);
            assert!(error.starts_with(expected), "{error}");
            assert!(!error.contains('\n'), "one line: {error}");
        }
        assert_eq!(parse(good).expect("valid").len(), 1);
    }
}
