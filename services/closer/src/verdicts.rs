//! Persistence of `closer.verdicts`: every commitment's verdict in a pass, with its evidence.
//!
//! A pass records all verdicts right after the judge answers (`judged-done` or `not-done`),
//! then marks each resolve (`resolved`, or `skipped` when the live re-read found it no longer
//! open). A re-run after a crash never downgrades a `resolved` row.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use baton_kit::error::ApiError;

use crate::judge::{Evidence, EvidenceSource, Finding};
use crate::metering::PassKey;

/// Longest quote stored (characters).
pub const MAX_STORED_QUOTE: usize = 1000;

/// A verdict as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictRow {
    pub activation_epoch: i64,
    pub memory_id: Uuid,
    pub verdict: String,
    pub reason: String,
    pub judge: String,
    pub evidence: Value,
    pub resolved_at: Option<DateTime<Utc>>,
}

/// The JSON shape of a finding's evidence.
pub fn evidence_json(evidence: &[Evidence]) -> Value {
    Value::Array(
        evidence
            .iter()
            .map(|item| {
                let quote: String = item.quote.chars().take(MAX_STORED_QUOTE).collect();
                match item.source {
                    EvidenceSource::Excerpt => json!({"quote": quote, "source": "excerpt"}),
                    EvidenceSource::Memory(id) => {
                        json!({"quote": quote, "source": "memory", "memoryId": id.to_string()})
                    }
                }
            })
            .collect(),
    )
}

/// One commitment's verdict, to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub memory_id: Uuid,
    pub done: bool,
    pub reason: String,
    pub evidence: Value,
}

/// The verdict of every briefed commitment: the judge's finding for it, or `no-claim` when the
/// judge said nothing about it. Only ids in `candidates` may be `done`.
pub fn recorded(briefed: &[Uuid], candidates: &[Uuid], findings: &[Finding]) -> Vec<Recorded> {
    briefed
        .iter()
        .map(|id| {
            let finding = findings.iter().find(|finding| {
                Uuid::parse_str(finding.id.trim()).is_ok_and(|parsed| parsed == *id)
            });
            let done = candidates.contains(id);
            Recorded {
                memory_id: *id,
                done,
                reason: finding
                    .map_or("no-claim", |f| f.reason.as_str())
                    .chars()
                    .take(40)
                    .collect(),
                evidence: evidence_json(finding.map_or(&[][..], |f| f.evidence.as_slice())),
            }
        })
        .collect()
}

/// Records a pass's verdicts (a re-run keeps a row already `resolved`).
pub async fn record(
    connection: &mut PgConnection,
    key: PassKey,
    judge: &str,
    rows: &[Recorded],
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    for row in rows {
        sqlx::query!(
            "INSERT INTO closer.verdicts (tenant_id, session_run_id, activation_epoch, memory_id, \
               verdict, reason, judge, evidence, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
             ON CONFLICT ON CONSTRAINT verdicts_pkey DO UPDATE SET verdict = EXCLUDED.verdict, \
               reason = EXCLUDED.reason, judge = EXCLUDED.judge, evidence = EXCLUDED.evidence \
             WHERE closer.verdicts.verdict <> 'resolved'",
            key.tenant_id,
            key.run_id,
            key.epoch,
            row.memory_id,
            if row.done { "judged-done" } else { "not-done" },
            row.reason,
            judge,
            row.evidence,
            now,
        )
        .execute(&mut *connection)
        .await?;
    }
    Ok(())
}

/// Marks one commitment's resolve: `resolved` (with the instant) or `skipped`.
pub async fn mark(
    connection: &mut PgConnection,
    key: PassKey,
    memory_id: Uuid,
    resolved: bool,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    sqlx::query!(
        "UPDATE closer.verdicts SET verdict = $5, \
           resolved_at = CASE WHEN $6::boolean THEN $7::timestamptz END \
         WHERE tenant_id = $1 AND session_run_id = $2 AND activation_epoch = $3 \
           AND memory_id = $4 AND verdict <> 'resolved'",
        key.tenant_id,
        key.run_id,
        key.epoch,
        memory_id,
        if resolved { "resolved" } else { "skipped" },
        resolved,
        now,
    )
    .execute(connection)
    .await?;
    Ok(())
}

/// How many commitments this pass resolved, from its verdicts: what a re-run after a crash
/// between the resolves and the settle reports (the pass row's own count is written only at
/// the settle the crash cut).
pub async fn resolved_count(
    connection: &mut PgConnection,
    key: PassKey,
) -> Result<usize, ApiError> {
    let count = sqlx::query_scalar!(
        r#"SELECT count(*) AS "count!" FROM closer.verdicts
           WHERE tenant_id = $1 AND session_run_id = $2 AND activation_epoch = $3
             AND verdict = 'resolved'"#,
        key.tenant_id,
        key.run_id,
        key.epoch,
    )
    .fetch_one(connection)
    .await?;
    Ok(usize::try_from(count).unwrap_or(0))
}

/// Whether a pass of another epoch of the run recorded `memory_id` as resolved.
pub async fn resolved_in_another_epoch(
    connection: &mut PgConnection,
    key: PassKey,
    memory_id: Uuid,
) -> Result<bool, ApiError> {
    Ok(sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM closer.verdicts
             WHERE tenant_id = $1 AND session_run_id = $2 AND activation_epoch <> $3
               AND memory_id = $4 AND verdict = 'resolved') AS "resolved!""#,
        key.tenant_id,
        key.run_id,
        key.epoch,
        memory_id,
    )
    .fetch_one(connection)
    .await?)
}

/// A run's verdicts, by epoch then memory id.
pub async fn list(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    run_id: Uuid,
) -> Result<Vec<VerdictRow>, ApiError> {
    Ok(sqlx::query_as!(
        VerdictRow,
        "SELECT activation_epoch, memory_id, verdict, reason, judge, evidence, resolved_at \
         FROM closer.verdicts WHERE tenant_id = $1 AND session_run_id = $2 \
         ORDER BY activation_epoch, created_at, memory_id",
        tenant_id,
        run_id,
    )
    .fetch_all(connection)
    .await?)
}

/// The closer's resolves since an instant: (run, memory id, resolved at), oldest first, at
/// most `limit`.
pub async fn resolves_since(
    connection: &mut PgConnection,
    tenant_id: Uuid,
    since: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<(Uuid, Uuid, DateTime<Utc>)>, ApiError> {
    let rows = sqlx::query!(
        r#"SELECT session_run_id, memory_id, resolved_at AS "resolved_at!" FROM closer.verdicts
           WHERE tenant_id = $1 AND verdict = 'resolved' AND resolved_at >= $2
           ORDER BY resolved_at, session_run_id, memory_id LIMIT $3"#,
        tenant_id,
        since,
        limit,
    )
    .fetch_all(connection)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| (row.session_run_id, row.memory_id, row.resolved_at))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_briefed_commitment_gets_a_verdict_and_only_candidates_are_done() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let findings = vec![
            Finding {
                id: a.to_string().to_uppercase(),
                done: true,
                reason: "completed".to_string(),
                evidence: vec![Evidence {
                    quote: "Done.".to_string(),
                    source: EvidenceSource::Memory(c),
                }],
                confidence: 1.0,
            },
            Finding::open(b, "deferral", Vec::new()),
        ];
        let rows = recorded(&[a, b, c], &[a], &findings);
        assert_eq!(
            rows.iter().map(|r| r.done).collect::<Vec<_>>(),
            [true, false, false]
        );
        assert_eq!(rows[1].reason, "deferral");
        assert_eq!(rows[2].reason, "no-claim");
        assert_eq!(
            rows[0].evidence,
            json!([{"quote": "Done.", "source": "memory", "memoryId": c.to_string()}])
        );
    }
}
