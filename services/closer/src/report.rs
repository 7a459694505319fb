//! `Report`: the validation bar from real use (issue 10 item 4, seed 000's measurements
//! before default-on) for one tenant since an instant. Each figure comes from the context
//! that owns it over gRPC: the closer's own resolves (closer), what became of each briefed
//! commitment and whether a user undid a resolve (provenance's trails), sessions opened and
//! what they were briefed (registry), nudges (triage), memory writes (provenance).
//!
//! The answer holds counts only, so reports of several tenants add up; [`Rates`] derives
//! the rates. Reads are bounded ([`MAX_RESOLVES`], [`MAX_BRIEFED`]); past a bound the
//! answer says `truncated` and covers the oldest part of the window.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::OutboundCall;
use baton_proto::closer::v1 as proto;

use crate::links::Links;
use crate::undo::{self, Fate};
use crate::verdicts;

/// Most closer resolves one report reads.
pub const MAX_RESOLVES: i64 = 5000;
/// Most briefed (session, commitment) pairs one report reads.
pub const MAX_BRIEFED: u32 = 10_000;

/// Gathers the tenant's figures since `since`.
pub async fn gather(
    pool: &sqlx::PgPool,
    links: &Links,
    call: &OutboundCall,
    since: DateTime<Utc>,
) -> Result<proto::ReportResponse, ApiError> {
    let mut transaction = begin_tenant(pool, call.tenant_id).await?;
    let mut resolves =
        verdicts::resolves_since(&mut transaction, call.tenant_id, since, MAX_RESOLVES + 1).await?;
    transaction.commit().await?;
    let mut truncated = resolves.len() as i64 > MAX_RESOLVES;
    resolves.truncate(MAX_RESOLVES as usize);

    let briefed = links.briefed_since(call, since, MAX_BRIEFED).await?;
    truncated |= briefed.truncated;
    let mut ids: Vec<Uuid> = resolves.iter().map(|(_, memory, _)| *memory).collect();
    ids.extend(briefed.briefed.iter().map(|(_, memory)| *memory));
    let trails = if ids.is_empty() {
        Vec::new()
    } else {
        links.trails(call, &ids).await?
    };
    let trail_of = |memory: Uuid| trails.iter().find(|trail| trail.memory_id == memory);

    let undone = resolves
        .iter()
        .filter(|(run, memory, at)| {
            trail_of(*memory)
                .and_then(|trail| undo::undone_at(&trail.events, *run, Some(*at)))
                .is_some()
        })
        .count();
    let fates: Vec<Fate> = briefed
        .briefed
        .iter()
        .map(|(run, memory)| undo::fate(trail_of(*memory), *run))
        .collect();
    let count = |fate: Fate| fates.iter().filter(|each| **each == fate).count() as u64;

    let nudges = links.nudge_counts(call, since).await?;
    let writes = links.write_counts(call, since).await?;
    Ok(proto::ReportResponse {
        closer_resolves: resolves.len() as u64,
        closer_resolves_undone: undone as u64,
        briefed: fates.len() as u64,
        briefed_resolved_by_agent: count(Fate::ByAgent),
        briefed_resolved_by_closer: count(Fate::ByCloser),
        briefed_still_open: count(Fate::StillOpen),
        briefed_other: count(Fate::Other),
        nudges_armed: nudges.armed,
        nudges_completed: nudges.completed,
        nudges_expired: nudges.expired,
        nudges_overflowed: nudges.overflowed,
        // Each armed nudge blocked one stop: the agent took one more turn to debrief.
        nudge_extra_turns: nudges.armed,
        nudged_runs: nudges.runs,
        nudged_runs_repeated: nudges.runs_repeated,
        memory_writes: writes.writes,
        memory_writes_attributed: writes.attributed,
        memories_created: writes.created,
        sessions_opened: briefed.sessions_opened,
        truncated,
    })
}

/// The rates a report's counts give; `None` where the denominator is zero (no data is not
/// a rate of zero).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Closer resolves a user undid, over closer resolves (the observed spurious rate).
    pub spurious: Option<f64>,
    /// Briefed commitments resolved by the agent or the closer, over briefed.
    pub recall_agent: Option<f64>,
    pub recall_closer: Option<f64>,
    pub still_open: Option<f64>,
    /// Expired nudges over those that ended completed or expired (the ignore rate).
    pub ignore: Option<f64>,
    /// Memory writes stamped with a run, over all writes.
    pub attributed: Option<f64>,
    /// Runs nudged more than once, over runs nudged.
    pub repeated_trigger: Option<f64>,
    /// Memories created per session opened.
    pub growth_per_session: Option<f64>,
}

fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

impl Rates {
    pub fn of(report: &proto::ReportResponse) -> Rates {
        Rates {
            spurious: ratio(report.closer_resolves_undone, report.closer_resolves),
            recall_agent: ratio(report.briefed_resolved_by_agent, report.briefed),
            recall_closer: ratio(report.briefed_resolved_by_closer, report.briefed),
            still_open: ratio(report.briefed_still_open, report.briefed),
            ignore: ratio(
                report.nudges_expired,
                report.nudges_completed + report.nudges_expired,
            ),
            attributed: ratio(report.memory_writes_attributed, report.memory_writes),
            repeated_trigger: ratio(report.nudged_runs_repeated, report.nudged_runs),
            growth_per_session: ratio(report.memories_created, report.sessions_opened),
        }
    }
}

/// Adds `other`'s counts into `total` (reports of several tenants).
pub fn add(total: &mut proto::ReportResponse, other: &proto::ReportResponse) {
    total.closer_resolves += other.closer_resolves;
    total.closer_resolves_undone += other.closer_resolves_undone;
    total.briefed += other.briefed;
    total.briefed_resolved_by_agent += other.briefed_resolved_by_agent;
    total.briefed_resolved_by_closer += other.briefed_resolved_by_closer;
    total.briefed_still_open += other.briefed_still_open;
    total.briefed_other += other.briefed_other;
    total.nudges_armed += other.nudges_armed;
    total.nudges_completed += other.nudges_completed;
    total.nudges_expired += other.nudges_expired;
    total.nudges_overflowed += other.nudges_overflowed;
    total.nudge_extra_turns += other.nudge_extra_turns;
    total.nudged_runs += other.nudged_runs;
    total.nudged_runs_repeated += other.nudged_runs_repeated;
    total.memory_writes += other.memory_writes;
    total.memory_writes_attributed += other.memory_writes_attributed;
    total.memories_created += other.memories_created;
    total.sessions_opened += other.sessions_opened;
    total.truncated |= other.truncated;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_divide_the_counts_and_are_absent_without_a_denominator() {
        let report = proto::ReportResponse {
            closer_resolves: 20,
            closer_resolves_undone: 1,
            briefed: 10,
            briefed_resolved_by_agent: 3,
            briefed_resolved_by_closer: 4,
            briefed_still_open: 2,
            nudges_completed: 3,
            nudges_expired: 1,
            memory_writes: 8,
            memory_writes_attributed: 6,
            nudged_runs: 4,
            nudged_runs_repeated: 1,
            memories_created: 9,
            sessions_opened: 3,
            ..Default::default()
        };
        let rates = Rates::of(&report);
        assert_eq!(rates.spurious, Some(0.05));
        assert_eq!(rates.recall_agent, Some(0.3));
        assert_eq!(rates.recall_closer, Some(0.4));
        assert_eq!(rates.still_open, Some(0.2));
        assert_eq!(rates.ignore, Some(0.25));
        assert_eq!(rates.attributed, Some(0.75));
        assert_eq!(rates.repeated_trigger, Some(0.25));
        assert_eq!(rates.growth_per_session, Some(3.0));
        let empty = Rates::of(&proto::ReportResponse::default());
        assert_eq!(empty.spurious, None);
        assert_eq!(empty.ignore, None);
        assert_eq!(empty.growth_per_session, None);
    }

    #[test]
    fn tenant_reports_add_up_count_by_count() {
        let one = proto::ReportResponse {
            closer_resolves: 2,
            closer_resolves_undone: 1,
            sessions_opened: 1,
            ..Default::default()
        };
        let two = proto::ReportResponse {
            closer_resolves: 3,
            sessions_opened: 4,
            truncated: true,
            ..Default::default()
        };
        let mut total = proto::ReportResponse::default();
        add(&mut total, &one);
        add(&mut total, &two);
        assert_eq!(total.closer_resolves, 5);
        assert_eq!(total.closer_resolves_undone, 1);
        assert_eq!(total.sessions_opened, 5);
        assert!(total.truncated);
    }
}
