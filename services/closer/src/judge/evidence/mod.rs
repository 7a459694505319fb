//! The evidence judge (the default): for each briefed commitment, find the statements that
//! claim its deliverable done, and resolve only when they do — for every part, about the same
//! entity and project — and nothing in the material withdraws it. Deterministic, no
//! generation, nothing to meter.
//!
//! The material is the session's last message and the memories the run wrote, each cut into
//! statements by [`structure`] (Markdown blocks → sentences → clauses, with plan/done headings
//! and labels as context). Words, stems, synonyms and identifiers come from [`terms`]; cue words
//! from [`cues`]. The commitment is read the same way: its **object terms** are the content
//! stems of its wording without the leading imperative verb ("Fix", "Add": the verb is how the
//! work is asked for, a completion says it in its own words); its **parts** are the pieces of a
//! conjunction ("X and Y", "X, Y and Z", "X; Y", ", including Y"); only the first part drops
//! its leading verb.
//!
//! Rule by rule, for one commitment:
//!
//! 1. **Same project.** A memory written under another project than the commitment's is not
//!    evidence. When the session ran in another project than the commitment's, a statement of
//!    the last message counts only if it names the commitment's project.
//! 2. **Same entity.** When the commitment names identifiers (PR numbers, versions, code
//!    names, paths), a statement naming identifiers of the same kind but none of the
//!    commitment's is about another entity and is ignored; the supporting statements together
//!    must name every identifier of the commitment. Likewise entity names ("the *users*
//!    table"): a statement about the same kind of entity under another name is ignored, and
//!    the support must name each of the commitment's.
//! 3. **About it.** A statement supports when it shares at least half the object terms (and at
//!    least two, or all when there are fewer) — synonyms folded, and a memory written under the
//!    commitment's topic counts the topic's words as present.
//! 4. **A claim of completion.** A supporting statement must be declarative (not a question),
//!    outside any plan context ("Next steps", "TODO", "Follow-ups" headings or labels), carry a
//!    completion cue (a past form, a finished state, "now", or a "Done"/"Shipped" heading), and
//!    have no disqualifying cue: negation, hypothetical or conditional, partial, deferral,
//!    withdrawal, revert.
//! 5. **Every part.** Each part of the commitment must have at least half of its own terms in
//!    the supporting statements.
//! 6. **Nothing withdraws it.** Any statement that is about the commitment (a third of its
//!    object terms, one of its identifiers, a memory under its topic sharing a word, or a
//!    pronoun right after a statement that was about it) and is a plan or carries a
//!    disqualifying cue vetoes the commitment — "actually it still fails", "reverted", "the
//!    rest is left for tomorrow". So does a commitment or blocker memory restating it. Mixed
//!    evidence is unsure, and unsure is open. A short statement whose subject is a pronoun
//!    right after one about the work is about it ("I enabled gzip. It didn't work though").
//!    A withdrawal that names identifiers of its own, none the commitment's, has its own
//!    subject and does not refer back. A negation reaches only its own part of a statement
//!    ([`cues::Scan::negation_in_scope`]).
//! 7. **Disclaimed.** A statement calling its subject "unrelated" is about other work: it
//!    neither supports nor vetoes ("I reverted an unrelated typo fix").
//! 8. **Same environment.** When the commitment names an environment (production, staging,
//!    ...), a statement naming only other environments is about another scope (rule 2): "the
//!    WAF rules are applied in staging" does not complete "apply them in production".
//!
//! Reading order and cost: the material is analysed once per pass (statements, stems, cues,
//! identifiers, names); a per-pass stem index then gives each commitment the statements that
//! share one of its object terms, identifiers or (a memory) its topic, and a statement outside
//! those is read only right after one that was about the commitment (rule 6's references
//! back). So `other-entity` as a reason names a statement about the same work.
//!
//! The verdict for each commitment carries its evidence: the supporting quotes (verbatim) and
//! their source, or the statement that vetoed it and why.

mod commitment;
pub mod cues;
pub mod language;
pub mod marks;
mod reading;
mod rollup;
mod scope;
pub mod structure;
pub mod terms;

#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

use crate::judge::{
    BriefedCommitment, Evidence, EvidenceSource, Finding, Judge, JudgeError, JudgeFuture,
    JudgeInput, Verdict,
};
use commitment::{Commitment, commitment};
use cues::Cue;
use reading::{Previous, ident_present, other_entity, read, same_project};
use terms::{Ident, IdentKind};

/// Share of the object terms a supporting statement must hold.
pub const SUPPORT_SHARE: f64 = 0.5;
/// Share of the object terms that makes a statement about the commitment for a veto.
pub const VETO_SHARE: f64 = 0.34;
/// Most quotes kept as one verdict's evidence.
pub const MAX_QUOTES: usize = 3;

/// Words by which a statement says it is about other work than the commitment.
const DISCLAIMERS: &[&str] = &["unrelated", "unconnected"];

const PRONOUNS: &[&str] = &["it", "this", "that", "they", "them", "these", "those"];

/// One statement of the material, analysed.
struct Unit {
    quote: String,
    source: EvidenceSource,
    stems: HashSet<String>,
    idents: HashSet<Ident>,
    lowered: String,
    /// Cue words, found once for every commitment.
    cues: cues::Scan,
    /// Entity names, environments and names, found once.
    entity_names: HashSet<(String, String)>,
    environments: HashSet<&'static str>,
    names: HashSet<String>,
    /// Content stems that are not cue words; whether it calls its subject unrelated.
    non_cue_stems: Vec<String>,
    disclaimed: bool,
    /// Whether it holds a pronoun that may stand for earlier work.
    pronoun: bool,
    plan: bool,
    done_label: bool,
    question: bool,
    sentence: usize,
    item: bool,
    memory: Option<MemoryMeta>,
}

struct MemoryMeta {
    restates: bool,
    topic: String,
    project: Option<String>,
}

fn normal_topic(topic: &str) -> String {
    topic.trim().to_lowercase().replace('_', "-")
}

fn analyse(text: &str, source: EvidenceSource, memory: Option<MemoryMeta>, out: &mut Vec<Unit>) {
    let offset = out.last().map_or(0, |unit| unit.sentence + 1);
    for statement in structure::statements(text) {
        let words = terms::words(&statement.quote);
        let language = language::detect(&statement.quote);
        let foreign = language::cues(&statement.quote, language);
        out.push(Unit {
            cues: cues::scan(&statement.quote, &words).with_foreign(&foreign),
            entity_names: terms::entity_names(&words),
            environments: terms::environments(&words),
            names: terms::names(&statement.quote),
            non_cue_stems: terms::content_stems(&words)
                .into_iter()
                .filter(|stem| !cues::is_cue(stem))
                .collect(),
            disclaimed: words
                .iter()
                .any(|word| DISCLAIMERS.contains(&word.raw.as_str())),
            pronoun: words
                .iter()
                .any(|word| PRONOUNS.contains(&word.raw.as_str())),
            stems: terms::content_stems(&words)
                .into_iter()
                .chain(terms::identifier_parts(&statement.quote))
                .chain(language::stems(&statement.quote, language))
                .collect(),
            idents: terms::identifiers(&statement.quote),
            lowered: statement.quote.to_lowercase(),
            quote: statement.quote,
            source,
            plan: statement.plan,
            done_label: statement.done_label,
            question: statement.question,
            sentence: offset + statement.sentence,
            item: statement.item,
            memory: memory.as_ref().map(|meta| MemoryMeta {
                restates: meta.restates,
                topic: meta.topic.clone(),
                project: meta.project.clone(),
            }),
        });
    }
}

fn material(input: &JudgeInput) -> Vec<Unit> {
    let mut units = Vec::new();
    if let Some(excerpt) = &input.excerpt {
        analyse(excerpt, EvidenceSource::Excerpt, None, &mut units);
    }
    for memory in &input.written {
        let meta = MemoryMeta {
            restates: matches!(memory.memory_type.as_str(), "commitment" | "blocker"),
            topic: normal_topic(&memory.topic),
            project: memory.project.clone(),
        };
        analyse(
            &memory.content,
            EvidenceSource::Memory(memory.id),
            Some(meta),
            &mut units,
        );
    }
    units
}

/// Which statements of the material each stem occurs in: built once per pass.
type StemIndex<'a> = HashMap<&'a str, Vec<usize>>;

fn stem_index(units: &[Unit]) -> StemIndex<'_> {
    let mut index: StemIndex<'_> = HashMap::new();
    for (at, unit) in units.iter().enumerate() {
        for stem in &unit.stems {
            index.entry(stem.as_str()).or_default().push(at);
        }
    }
    index
}

/// The statements that may be about the commitment on their own: sharing an object term, one
/// of its identifiers, or (a memory) its topic. Any other statement can only be about it by
/// referring back to the one before, so it is read only right after a statement about it.
fn candidates(commitment: &Commitment, units: &[Unit], index: &StemIndex<'_>) -> Vec<bool> {
    let mut marked = vec![false; units.len()];
    for stem in &commitment.object {
        for at in index.get(stem.as_str()).into_iter().flatten() {
            marked[*at] = true;
        }
    }
    for (at, unit) in units.iter().enumerate() {
        if !marked[at]
            && (unit
                .memory
                .as_ref()
                .is_some_and(|meta| meta.topic == commitment.topic)
                || commitment
                    .idents
                    .iter()
                    .any(|ident| ident_present(ident, unit)))
        {
            marked[at] = true;
        }
    }
    marked
}

fn finding(
    row: &BriefedCommitment,
    units: &[Unit],
    index: &StemIndex<'_>,
    session: Option<&str>,
) -> Finding {
    let commitment = commitment(row);
    let candidate = candidates(&commitment, units, index);
    let mut support: Vec<&Unit> = Vec::new();
    let mut best_coverage: f64 = 0.0;
    let mut excluded_entity = false;
    let mut previous: Option<(EvidenceSource, usize, bool, usize)> = None;
    for (at, unit) in units.iter().enumerate() {
        // Not about it on its own, and nothing about it just before: it cannot be about it
        // (exactly what reading it would find, without the work).
        if !candidate[at] && !previous.is_some_and(|(_, _, about, _)| about) {
            continue;
        }
        if !same_project(&commitment, unit, session) {
            continue;
        }
        if other_entity(&commitment, unit) {
            excluded_entity = true;
            previous = Some((unit.source, unit.sentence, false, 0));
            continue;
        }
        let before = previous
            .filter(|(source, sentence, _, _)| {
                *source == unit.source && unit.sentence <= sentence + 1 && !unit.item
            })
            .map_or(Previous::default(), |(_, _, about, overlap)| Previous {
                about,
                overlap,
            });
        let reading = read(&commitment, unit, before);
        if let Some(reason) = reading.veto {
            return Finding::open(row.id, reason, vec![evidence(unit)]);
        }
        if reading.supports {
            support.push(unit);
            best_coverage = best_coverage.max(reading.coverage.min(1.0));
        }
        // The last statement about the work, for the next one to refer back to.
        if reading.about
            || previous.is_some_and(|(source, sentence, _, _)| {
                source != unit.source || unit.sentence > sentence + 1
            })
        {
            previous = Some((unit.source, unit.sentence, reading.about, reading.overlap));
        }
    }
    if support.is_empty() {
        let reason = if excluded_entity {
            "other-entity"
        } else {
            "no-claim"
        };
        return Finding::open(row.id, reason, Vec::new());
    }
    let seen: HashSet<&String> = support.iter().flat_map(|unit| unit.stems.iter()).collect();
    let topic_backed = support.iter().any(|unit| {
        unit.memory
            .as_ref()
            .is_some_and(|meta| meta.topic == commitment.topic)
    });
    let part_met = |part: &HashSet<String>| {
        let met = part
            .iter()
            .filter(|stem| {
                seen.contains(stem) || (topic_backed && commitment.topic_stems.contains(*stem))
            })
            .count();
        met as f64 >= (part.len() as f64 * 0.5).max(1.0)
    };
    let quotes: Vec<Evidence> = support
        .iter()
        .take(MAX_QUOTES)
        .map(|unit| evidence(unit))
        .collect();
    if !commitment.parts.iter().all(part_met) {
        return Finding::open(row.id, "part-missing", quotes);
    }
    let idents_named = commitment
        .idents
        .iter()
        .all(|ident| support.iter().any(|unit| ident_present(ident, unit)));
    let entities_named = commitment.entities.iter().all(|(name, _)| {
        seen.contains(name) || (topic_backed && commitment.topic_stems.contains(name))
    }) && (commitment.names.iter().all(|name| {
        seen.contains(name)
            || support
                .iter()
                .any(|unit| unit.lowered.contains(name.as_str()))
    }) || !support
        .iter()
        .any(|unit| unit.names.iter().any(|name| !commitment.own.contains(name))))
        && commitment.verbs.iter().all(|verb| seen.contains(verb));
    if !idents_named || !entities_named {
        return Finding::open(row.id, "other-entity", quotes);
    }
    let said = support
        .iter()
        .any(|unit| unit.cues.completion(&commitment.own_raw));
    Finding {
        id: row.id.to_string(),
        done: true,
        reason: "completed".to_string(),
        evidence: quotes,
        confidence: confidence(
            best_coverage,
            said,
            support.len(),
            !commitment.idents.is_empty(),
        ),
    }
}

/// How sure a resolve is, from its evidence: how much of the commitment the best statement
/// names, whether a statement says it in words (a completion verb or state, not only a
/// heading, tick or table cell), and whether more than one statement or one of the
/// commitment's own identifiers backs it. In [0.5, 1] for a resolve the rules allow.
pub fn confidence(coverage: f64, said: bool, statements: usize, identified: bool) -> f64 {
    let mut score = 0.5 + 0.3 * coverage.clamp(0.0, 1.0);
    if said {
        score += 0.1;
    }
    if statements >= 2 || identified {
        score += 0.1;
    }
    score.min(1.0)
}

/// Confidence of a resolve by a roll-up alone: lower than any statement naming the item, and
/// lower still without a count to match the plan against.
pub const ROLLUP_COUNTED_CONFIDENCE: f64 = 0.7;
pub const ROLLUP_UNCOUNTED_CONFIDENCE: f64 = 0.55;

/// Reasons a roll-up may override: nothing about the item was said, or not every part.
const ROLLUP_FILLS: &[&str] = &["no-claim", "part-missing"];

/// Roll-ups ([`rollup`]) close the session project's commitments that nothing vetoed.
fn apply_rollups(input: &JudgeInput, units: &[Unit], findings: &mut [Finding]) {
    let session = input.session_project.as_deref();
    let in_project: Vec<usize> = input
        .briefed
        .iter()
        .enumerate()
        .filter(|(_, row)| match (&row.project, session) {
            (None, _) | (Some(_), None) => true,
            (Some(project), Some(session)) => project.eq_ignore_ascii_case(session),
        })
        .map(|(at, _)| at)
        .collect();
    let Some((unit, kind)) = units
        .iter()
        .filter(|unit| unit.source == EvidenceSource::Excerpt)
        .find_map(|unit| {
            rollup::rollup(&unit.quote, unit.question, unit.plan)
                .filter(|kind| rollup::closes(*kind, in_project.len()))
                .map(|kind| (unit, kind))
        })
    else {
        return;
    };
    let confidence = match kind {
        rollup::Rollup::All => ROLLUP_UNCOUNTED_CONFIDENCE,
        rollup::Rollup::Count(_) => ROLLUP_COUNTED_CONFIDENCE,
    };
    for at in in_project {
        let finding = &mut findings[at];
        if !finding.done && ROLLUP_FILLS.contains(&finding.reason.as_str()) {
            finding.done = true;
            finding.reason = "completed".to_string();
            finding.evidence = vec![evidence(unit)];
            finding.confidence = confidence;
        }
    }
}

fn evidence(unit: &Unit) -> Evidence {
    Evidence {
        quote: unit.quote.clone(),
        source: unit.source,
    }
}

/// One finding per briefed commitment, by the rules in the module doc.
pub fn decide(input: &JudgeInput) -> Vec<Finding> {
    let units = material(input);
    let index = stem_index(&units);
    let mut findings: Vec<Finding> = input
        .briefed
        .iter()
        .map(|row| finding(row, &units, &index, input.session_project.as_deref()))
        .collect();
    apply_rollups(input, &units, &mut findings);
    findings
}

/// The ids the evidence shows completed.
pub fn completed_ids(input: &JudgeInput) -> Vec<Uuid> {
    decide(input)
        .into_iter()
        .filter(|finding| finding.done)
        .filter_map(|finding| Uuid::parse_str(&finding.id).ok())
        .collect()
}

/// The evidence judge.
#[derive(Debug, Clone, Copy, Default)]
pub struct EvidenceJudge;

impl Judge for EvidenceJudge {
    fn name(&self) -> &'static str {
        "evidence"
    }

    fn reservation(&self, _input: &JudgeInput) -> i64 {
        0
    }

    fn judge<'a>(&'a self, input: &'a JudgeInput) -> JudgeFuture<'a> {
        Box::pin(async move {
            Ok::<Verdict, JudgeError>(Verdict {
                findings: decide(input),
                tokens_used: 0,
                dropped: 0,
            })
        })
    }
}

/// Why a quoted statement cannot show `commitment` done, if it cannot: a question, a plan, or
/// a disqualifying cue outside the commitment's own wording (for judges that quote, see
/// the `openai` judge).
pub fn quote_withdrawn(quote: &str, commitment: &str) -> Option<&'static str> {
    let own: HashSet<String> = terms::words(commitment)
        .into_iter()
        .map(|word| word.stem)
        .collect();
    structure::statements(quote).iter().find_map(|statement| {
        if statement.question {
            return Some("question");
        }
        if statement.plan {
            return Some("plan");
        }
        let words = terms::words(&statement.quote);
        let language = language::detect(&statement.quote);
        cues::scan(&statement.quote, &words)
            .with_foreign(&language::cues(&statement.quote, language))
            .disqualifier(&own)
            .map(Cue::as_str)
    })
}
