//! Stems, contractions, identifiers, code-name parts and entity names as read from real wording.

use super::*;

fn stems(text: &str) -> Vec<String> {
    words(text).into_iter().map(|word| word.stem).collect()
}

#[test]
fn forms_of_a_word_meet_on_one_stem() {
    assert_eq!(
        stems("migrated migrating migration"),
        stems("migrate migrate migrate")
    );
    assert_eq!(stems("docs"), stems("documentation"));
    assert_eq!(stems("repaired"), stems("fix"));
}

#[test]
fn a_contraction_reads_as_a_negation() {
    let raw: Vec<String> = words("I haven't merged it")
        .into_iter()
        .map(|w| w.raw)
        .collect();
    assert_eq!(raw, ["i", "have", "not", "merged", "it"]);
}

#[test]
fn identifiers_of_each_kind_are_found_and_normalised() {
    let found = identifiers(
        "Merged PR #412, released v2.4.0, touched `jobs/retention.rs` and orders.customer_id with --dry-run.",
    );
    let has = |kind, text: &str| {
        found.contains(&Ident {
            kind,
            text: text.to_string(),
        })
    };
    assert!(has(IdentKind::Number, "412"));
    assert!(has(IdentKind::Version, "2.4.0"));
    assert!(has(IdentKind::Code, "jobs/retention.rs"));
    assert!(has(IdentKind::Code, "orders.customer_id"));
    assert!(has(IdentKind::Code, "--dry-run"));
    assert!(identifiers("Fixed it. Done.").is_empty());
}

#[test]
fn code_names_are_read_as_their_words() {
    let table = [
        (
            "Added `findCommitMessageByCheckpointID()`",
            vec!["find", "commit", "messag", "checkpoint"],
        ),
        (
            "ComputeTranscriptPath",
            vec!["comput", "transcript", "path"],
        ),
        ("orders.customer_id", vec!["customer"]),
        ("plain words only", vec![]),
    ];
    for (text, expected) in table {
        let found = identifier_parts(text);
        for part in &expected {
            assert!(found.contains(&stem(part)), "{text}: {part} in {found:?}");
        }
        assert_eq!(expected.is_empty(), found.is_empty(), "{text}: {found:?}");
    }
}

#[test]
fn the_word_before_an_entity_noun_names_the_entity() {
    let names = entity_names(&words(
        "Add soft delete to the users table and the public page",
    ));
    assert!(names.contains(&(stem("users"), stem("table"))));
    assert_eq!(names.len(), 1, "{names:?}");
}
