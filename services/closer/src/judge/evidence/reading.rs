//! What one statement says about one commitment: whether it supports it, is about it, or
//! vetoes it and why (rules 1 to 4, 6 and 7 of the module doc in [`super`]).

use super::commitment::Commitment;
use super::*;

/// The longest word of a code identifier ("handlers" of `handlers.rs`).
pub(super) fn core(ident: &Ident) -> Option<&str> {
    (ident.kind == IdentKind::Code)
        .then(|| {
            ident
                .text
                .split(|c: char| !c.is_alphanumeric())
                .max_by_key(|part| part.len())
        })
        .flatten()
        .filter(|part| part.len() >= 4)
}

pub(super) fn ident_present(ident: &Ident, unit: &Unit) -> bool {
    unit.lowered.contains(&ident.text)
        || core(ident).is_some_and(|core| unit.lowered.contains(core))
        || unit
            .idents
            .iter()
            .any(|other| other.kind == ident.kind && other.text.contains(&ident.text))
}

/// Rule 2: the statement names another entity of a kind the commitment names.
pub(super) fn other_entity(commitment: &Commitment, unit: &Unit) -> bool {
    // Numbers and versions are discrete: another one is another entity. Code names are not
    // (a statement names many files), so they are only required of the support (below).
    for kind in [IdentKind::Number, IdentKind::Version] {
        let mut wanted = commitment
            .idents
            .iter()
            .filter(|i| i.kind == kind)
            .peekable();
        if wanted.peek().is_none() || !unit.idents.iter().any(|ident| ident.kind == kind) {
            continue;
        }
        if !wanted.any(|ident| ident_present(ident, unit)) {
            return true;
        }
    }
    // Another environment than the commitment's, and not the commitment's: another scope.
    let (wanted, named) = (&commitment.environments, &unit.environments);
    if !wanted.is_empty() && !named.is_empty() && wanted.is_disjoint(named) {
        return true;
    }
    let names = &unit.entity_names;
    commitment.entities.iter().any(|(name, noun)| {
        !unit.stems.contains(name)
            && names
                .iter()
                .any(|(other, other_noun)| other_noun == noun && other != name)
    })
}

/// Rule 1: whether the statement may speak for the commitment's project.
pub(super) fn same_project(commitment: &Commitment, unit: &Unit, session: Option<&str>) -> bool {
    let Some(project) = &commitment.project else {
        return true;
    };
    match &unit.memory {
        Some(meta) => meta
            .project
            .as_deref()
            .is_none_or(|other| other.eq_ignore_ascii_case(project)),
        None => {
            session.is_none_or(|other| other.eq_ignore_ascii_case(project))
                || unit.lowered.contains(project.as_str())
        }
    }
}

/// What one statement says about one commitment.
pub(super) struct Reading {
    pub(super) supports: bool,
    pub(super) about: bool,
    pub(super) overlap: usize,
    pub(super) veto: Option<&'static str>,
    /// Share of the object terms the statement holds.
    pub(super) coverage: f64,
}

/// What came just before a statement in the same source.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Previous {
    /// The statement before was about the commitment.
    pub(super) about: bool,
    /// How many object terms it held.
    pub(super) overlap: usize,
}

pub(super) fn read(commitment: &Commitment, unit: &Unit, previous: Previous) -> Reading {
    let topic_match = unit
        .memory
        .as_ref()
        .is_some_and(|meta| meta.topic == commitment.topic);
    let own_overlap = commitment.object.intersection(&unit.stems).count();
    let overlap = if topic_match {
        commitment
            .object
            .iter()
            .filter(|stem| unit.stems.contains(*stem) || commitment.topic_stems.contains(*stem))
            .count()
    } else {
        own_overlap
    };
    let size = commitment.object.len().max(1);
    let shares_ident = commitment
        .idents
        .iter()
        .any(|ident| ident_present(ident, unit));
    // Nothing in common and nothing to refer back to: not about it, and no claim of it (the
    // common case, decided before the cue work).
    if own_overlap == 0 && !topic_match && !shares_ident && !previous.about {
        return Reading {
            supports: false,
            about: false,
            overlap: 0,
            veto: None,
            coverage: 0.0,
        };
    }
    let pronoun = unit.pronoun;
    // A bare "That's fixed" right after a statement about the work claims that work.
    let inherited = pronoun && previous.about && unit.stems.len() <= 4;
    let overlap = if inherited {
        overlap.max(previous.overlap)
    } else {
        overlap
    };
    let coverage = overlap as f64 / size as f64;
    let disqualifier = unit
        .cues
        .disqualifier(&commitment.own)
        .filter(|cue| *cue != Cue::Negation || unit.cues.negation_in_scope(&commitment.object));
    // A later clause that names nothing new continues its sentence's subject ("PR #77 is
    // approved, but not merged yet").
    let continues = unit
        .non_cue_stems
        .iter()
        .all(|stem| commitment.own.contains(stem));
    // A withdrawal or revert right after a statement about the work refers to it ("We rolled
    // back to v4 after the queue backed up").
    let strong = matches!(disqualifier, Some(Cue::Withdrawal | Cue::Revert));
    // A statement naming identifiers, none of them the commitment's, has its own subject: it
    // does not refer back ("On SHA pinning: `actions/cache` is pinned, the rest still ...").
    let own_subject = !unit.idents.is_empty() && !shares_ident;
    // "An unrelated fix", "a separate bug": the statement says itself it is about other work.
    let disclaimed = unit.disclaimed;
    let about = !disclaimed
        && !unit.question
        && (own_overlap as f64 >= (VETO_SHARE * size as f64).ceil().max(1.0)
            || shares_ident
            || (topic_match && own_overlap >= 1)
            || (topic_match && unit.memory.as_ref().is_some_and(|m| m.restates))
            || inherited
            || (previous.about && !own_subject && (continues || strong)));
    let restated = unit
        .memory
        .as_ref()
        .is_some_and(|meta| meta.restates && (topic_match || coverage >= SUPPORT_SHARE));
    // A question or offer about the work ("Should I add the NVIDIA configs?", "Want me to
    // commit this?") proposes it: whatever else was said, it is not done yet.
    let proposes = unit.question
        && !disclaimed
        && coverage >= SUPPORT_SHARE
        && overlap >= commitment.object.len().min(2);
    let veto = if proposes {
        Some("proposed")
    } else if !about {
        None
    } else if restated {
        Some("restated-open")
    } else if unit.plan {
        Some("plan")
    } else {
        disqualifier.map(Cue::as_str)
    };
    let claim = !disclaimed
        && !unit.question
        && !unit.plan
        && disqualifier.is_none()
        && (unit.done_label || unit.cues.completion(&commitment.own_raw));
    let supports = claim
        && !restated
        && coverage >= SUPPORT_SHARE
        && overlap >= commitment.object.len().min(2);
    Reading {
        supports,
        about: about || supports || proposes,
        overlap,
        veto,
        coverage,
    }
}
