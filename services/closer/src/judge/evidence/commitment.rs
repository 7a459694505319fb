//! A briefed commitment read for judging: its object terms (the content stems without the
//! leading imperative verb), its parts (the pieces of a conjunction), its identifiers, entity
//! names, environments and project (rules 2, 3, 5 and 8 of the module doc in [`super`]).

use super::*;

/// A commitment, read for judging.
pub(super) struct Commitment {
    pub(super) object: HashSet<String>,
    pub(super) own: HashSet<String>,
    pub(super) own_raw: HashSet<String>,
    pub(super) topic: String,
    pub(super) topic_stems: HashSet<String>,
    pub(super) parts: Vec<HashSet<String>>,
    pub(super) idents: HashSet<Ident>,
    pub(super) entities: HashSet<(String, String)>,
    pub(super) names: HashSet<String>,
    /// Parts that are a bare verb sharing the next part's object ("Sign and verify X").
    pub(super) verbs: HashSet<String>,
    pub(super) project: Option<String>,
    /// The environments the deliverable names.
    pub(super) environments: HashSet<&'static str>,
}

/// Content stems without the leading imperative verb.
pub(super) fn object_terms(text: &str) -> HashSet<String> {
    let words = terms::words(text);
    let skip = usize::from(words.len() > 1 && !words[0].stop);
    let rest = &words[skip..];
    let mut found = terms::content_stems(rest);
    if found.is_empty() {
        found = terms::content_stems(&words);
    }
    found
}

/// The pieces of a conjunction ("X and Y", "X, Y and Z", "X; Y", ", including Y").
pub(super) fn parts(content: &str) -> Vec<String> {
    let serial = content.contains(" and ") || content.contains(", and ");
    let mut pieces = vec![content.to_string()];
    let mut separators = vec![
        ", and ",
        " and ",
        "; ",
        " as well as ",
        " plus ",
        ", including ",
    ];
    if serial {
        separators.push(", ");
    }
    for separator in separators {
        pieces = pieces
            .iter()
            .flat_map(|piece| {
                piece
                    .split(separator)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
    }
    pieces
        .into_iter()
        .map(|piece| piece.trim().to_string())
        .filter(|piece| !piece.is_empty())
        .collect()
}

/// The commitment without its rationale or condition (", which fails 1 in 10 runs",
/// "because ...", "once CI is green"): what must be delivered, not why or when.
pub(super) fn deliverable(content: &str) -> &str {
    let lowered = content.to_ascii_lowercase();
    let cut = [
        ", which ",
        " because ",
        ", since ",
        " since ",
        " so that ",
        ", so ",
        " once ",
        " when ",
        " whenever ",
        " to cut ",
    ]
    .iter()
    .filter_map(|marker| lowered.find(marker))
    .min();
    match cut {
        Some(at) if content.is_char_boundary(at) && at > 0 => &content[..at],
        _ => content,
    }
}

pub(super) fn commitment(row: &BriefedCommitment) -> Commitment {
    let deliverable = &terms::without_old_state(deliverable(&row.content));
    let words = terms::words(deliverable);
    let topic_words = terms::words(&row.topic.replace(['-', '_'], " "));
    let all_words = terms::words(&row.content);
    let mut own = terms::content_stems(&all_words);
    own.extend(all_words.iter().map(|word| word.stem.clone()));
    let pieces = parts(deliverable);
    let bare_verbs = pieces.iter().any(|part| terms::words(part).len() == 1);
    let mut object = object_terms(deliverable);
    object.extend(terms::identifier_parts(deliverable));
    Commitment {
        object,
        own_raw: all_words.iter().map(|word| word.raw.clone()).collect(),
        own,
        topic: normal_topic(&row.topic),
        topic_stems: terms::content_stems(&topic_words)
            .into_iter()
            .filter(|stem| !stem.chars().all(|c| c.is_ascii_digit()))
            .collect(),
        // Only the first part leads with the imperative verb; a later one usually continues
        // the object ("for the Cargo and *npm* ecosystems"), so its first word is kept.
        parts: pieces
            .iter()
            .enumerate()
            .map(|(at, part)| {
                if at == 0 {
                    object_terms(part)
                } else {
                    terms::content_stems(&terms::words(part))
                }
            })
            .filter(|terms| !terms.is_empty())
            .collect(),
        idents: terms::identifiers(deliverable),
        entities: terms::entity_names(&words),
        names: terms::names(deliverable),
        verbs: pieces
            .iter()
            .filter(|_| bare_verbs)
            .filter_map(|part| terms::words(part).first().map(|word| word.stem.clone()))
            .collect(),
        project: row.project.as_deref().map(str::to_lowercase),
        environments: terms::environments(&words),
    }
}
