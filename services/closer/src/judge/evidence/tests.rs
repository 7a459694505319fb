//! Table tests of the evidence judge, one per rule, each named after the behaviour.

use uuid::Uuid;

use super::decide;
use crate::judge::{BriefedCommitment, EvidenceSource, JudgeInput, WrittenMemory};

fn briefed(topic: &str, content: &str) -> BriefedCommitment {
    BriefedCommitment {
        id: Uuid::from_u128(1),
        topic: topic.to_string(),
        status: "open".to_string(),
        content: content.to_string(),
        project: None,
    }
}

fn memory(kind: &str, topic: &str, content: &str) -> WrittenMemory {
    WrittenMemory {
        id: Uuid::from_u128(99),
        memory_type: kind.to_string(),
        topic: topic.to_string(),
        content: content.to_string(),
        project: None,
    }
}

/// (done, reason) for one commitment against an excerpt and memories.
fn judged(
    commitment: BriefedCommitment,
    excerpt: &str,
    written: Vec<WrittenMemory>,
) -> (bool, String) {
    let input = JudgeInput {
        briefed: vec![commitment],
        excerpt: (!excerpt.is_empty()).then(|| excerpt.to_string()),
        written,
        session_project: None,
    };
    let finding = decide(&input).remove(0);
    (finding.done, finding.reason)
}

fn rows(topic: &str, content: &str, table: &[(&str, bool)]) {
    for (excerpt, expected) in table {
        let (done, reason) = judged(briefed(topic, content), excerpt, Vec::new());
        assert_eq!(done, *expected, "{excerpt:?} ({reason})");
    }
}

#[test]
fn completion_said_in_other_words_resolves() {
    rows(
        "webhook-retries",
        "Add exponential backoff to failed webhook deliveries",
        &[
            (
                "Failed webhook deliveries now back off exponentially.",
                true,
            ),
            (
                "Done: webhook deliveries that fail are retried with exponential backoff.",
                true,
            ),
            (
                "Exponential backoff for webhook deliveries is in place.",
                true,
            ),
            ("Webhook deliveries were slow today.", false),
        ],
    );
}

#[test]
fn a_statement_that_does_not_claim_completion_does_not_resolve() {
    rows(
        "orders-index",
        "Create an index on orders.customer_id",
        &[
            ("Should I create the index on orders.customer_id?", false),
            ("I haven't created the index on orders.customer_id.", false),
            (
                "If the lock is short, I will create the index on orders.customer_id.",
                false,
            ),
            ("I started creating the index on orders.customer_id.", false),
            (
                "Creating the index on orders.customer_id is postponed to next week.",
                false,
            ),
            (
                "Created the index on orders.customer_id concurrently.",
                true,
            ),
        ],
    );
}

#[test]
fn items_under_a_plan_heading_are_not_claims_and_veto() {
    rows(
        "rate-limit",
        "Add rate limiting to the upload endpoint",
        &[
            (
                "## Next steps\n- Add rate limiting to the upload endpoint",
                false,
            ),
            ("TODO:\n- rate limiting on the upload endpoint", false),
            (
                "## Done\n- Rate limiting on the upload endpoint (added)",
                true,
            ),
        ],
    );
}

#[test]
fn every_part_of_a_conjunction_needs_evidence() {
    rows(
        "ci-checks",
        "Run clippy and the rustfmt check in CI",
        &[
            ("CI now runs clippy and the rustfmt check.", true),
            ("CI now runs clippy on every pull request.", false),
        ],
    );
}

#[test]
fn a_different_identifier_or_entity_name_is_another_entity() {
    rows(
        "pr-88",
        "Review PR #88",
        &[("Reviewed PR #91.", false), ("Reviewed PR #88.", true)],
    );
    rows(
        "release",
        "Release version v2.4.0",
        &[
            ("Released v2.3.1 with the hotfix.", false),
            ("Released 2.4.0.", true),
        ],
    );
    rows(
        "soft-delete",
        "Add soft delete to the users table",
        &[
            ("Added soft delete to the accounts table.", false),
            ("Added soft delete to the users table.", true),
        ],
    );
}

#[test]
fn a_later_contradiction_or_revert_withdraws_the_claim() {
    rows(
        "memory-leak",
        "Fix the memory leak in the image worker",
        &[
            ("Fixed the memory leak in the image worker.", true),
            (
                "Fixed the memory leak in the image worker. Actually, it still leaks after an hour.",
                false,
            ),
            (
                "Fixed the memory leak in the image worker, then reverted it.",
                false,
            ),
            (
                "Fixed the memory leak in the image worker, but we rolled it back.",
                false,
            ),
        ],
    );
}

#[test]
fn a_memory_under_the_topic_is_evidence_and_a_restating_one_vetoes() {
    let commitment = || briefed("orders-index", "Create an index on orders.customer_id");
    let note = memory(
        "note",
        "orders-index",
        "Created the index on orders.customer_id; lookups take 4ms.",
    );
    let (done, _) = judged(commitment(), "", vec![note.clone()]);
    assert!(done);
    let blocker = memory(
        "blocker",
        "orders-index",
        "The index on orders.customer_id blocks writes too long.",
    );
    let (done, reason) = judged(commitment(), "", vec![note, blocker]);
    assert!(!done);
    assert_eq!(reason, "restated-open");
}

#[test]
fn a_memory_of_another_project_is_not_evidence() {
    let mut commitment = briefed("readme-badges", "Add CI badges to the README");
    commitment.project = Some("baton".to_string());
    let mut note = memory("note", "readme-badges", "Added CI badges to the README.");
    note.project = Some("ledger".to_string());
    assert!(!judged(commitment.clone(), "", vec![note.clone()]).0);
    note.project = Some("baton".to_string());
    assert!(judged(commitment, "", vec![note]).0);
}

#[test]
fn the_evidence_is_a_verbatim_quote_with_its_source() {
    let note = memory(
        "note",
        "orders-index",
        "Created the index on orders.customer_id. Nothing else.",
    );
    let input = JudgeInput {
        briefed: vec![briefed(
            "orders-index",
            "Create an index on orders.customer_id",
        )],
        excerpt: Some("All good.".to_string()),
        written: vec![note.clone()],
        session_project: None,
    };
    let finding = decide(&input).remove(0);
    assert!(finding.done);
    assert_eq!(finding.evidence[0].source, EvidenceSource::Memory(note.id));
    assert_eq!(
        finding.evidence[0].quote,
        "Created the index on orders.customer_id."
    );
}

#[test]
fn an_empty_or_trivial_session_resolves_nothing() {
    rows(
        "metrics",
        "Expose a Prometheus metrics endpoint",
        &[("", false), ("ok", false), ("Done.", false)],
    );
}

#[test]
fn the_end_to_end_closer_sentence_resolves_its_commitment_only() {
    let excerpt = "Done: migrated the orders table to uuid keys and the suite passes.";
    assert!(
        judged(
            briefed("orders-uuid", "Migrate the orders table to uuid keys"),
            excerpt,
            Vec::new()
        )
        .0
    );
    assert!(
        !judged(
            briefed("billing-retries", "Add retries to the billing webhook"),
            excerpt,
            Vec::new()
        )
        .0
    );
}

#[test]
fn a_plan_item_about_the_work_vetoes_an_earlier_claim() {
    rows(
        "rate-limit",
        "Add rate limiting to the upload endpoint",
        &[
            (
                "Rate limiting on the upload endpoint is in place.\n\n## Next steps\n- Tune rate limiting on the upload endpoint",
                false,
            ),
            (
                "Rate limiting on the upload endpoint is in place.\n\n## Next steps\n- Write the release notes",
                true,
            ),
        ],
    );
}

#[test]
fn a_short_pronoun_statement_right_after_the_claim_speaks_of_it() {
    rows(
        "brotli",
        "Compress API responses with brotli",
        &[
            (
                "I switched the API responses to brotli compression. It doesn't work behind the proxy.",
                false,
            ),
            (
                "I switched the API responses to brotli compression. The proxy passes it through.",
                true,
            ),
        ],
    );
}

#[test]
fn a_negation_reaches_only_its_own_part_of_the_statement() {
    rows(
        "queue-streams",
        "Move the job queue to Redis streams",
        &[
            (
                "Moved the job queue to Redis streams, the old worker is deleted, and I didn't see any errors.",
                true,
            ),
            (
                "Moved the job queue to Redis streams, and the queue isn't draining.",
                false,
            ),
        ],
    );
}

#[test]
fn work_in_another_environment_is_another_scope() {
    rows(
        "prod-migrations",
        "Apply the database migrations in production",
        &[
            ("Applied the database migrations in staging.", false),
            ("Applied the database migrations in prod.", true),
            (
                "Applied the database migrations in staging and production.",
                true,
            ),
        ],
    );
}

#[test]
fn a_statement_calling_its_subject_unrelated_neither_supports_nor_vetoes() {
    rows(
        "search-redesign",
        "Ship the search page redesign",
        &[
            (
                "Shipped the search page redesign. I reverted an unrelated lint fix that broke the build.",
                true,
            ),
            ("I shipped an unrelated search page redesign tweak.", false),
        ],
    );
}

#[test]
fn a_withdrawal_naming_its_own_identifiers_does_not_refer_back() {
    rows(
        "renovate",
        "Enable Renovate for the Cargo and npm ecosystems",
        &[
            (
                "Enabled Renovate for the Cargo and npm ecosystems. On pinning: `actions/setup-node` is pinned, the rest still use tags.",
                true,
            ),
            (
                "Enabled Renovate for the Cargo and npm ecosystems. It still fails on every run.",
                false,
            ),
        ],
    );
}

#[test]
fn a_quote_that_asks_plans_or_withdraws_does_not_show_the_work_done() {
    let table = [
        ("The retry backoff is in place.", None),
        ("Should I add the retry backoff?", Some("question")),
        ("The retry backoff is not merged yet.", Some("deferral")),
        ("Next steps: add the retry backoff", Some("plan")),
        ("The failing retry test is fixed.", None),
    ];
    for (quote, expected) in table {
        assert_eq!(
            super::quote_withdrawn(quote, "Fix the failing retry test and add backoff"),
            expected,
            "{quote}"
        );
    }
}
