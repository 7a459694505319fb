//! The live briefing a session starts from (CONTRACT section 11): today's bounded state of the
//! tenant's memories through a selector, in six sections. A read: it writes no event.

use chrono::{DateTime, Duration, Utc};

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::CallContext;
use baton_kit::selector::Selector;

use crate::service::Provenance;
use crate::store::briefing::{self, CommitmentItemRow, Filter, MemoryItemRow};

/// An open commitment or blocker untouched this long is a stale candidate.
pub const STALE_AFTER: Duration = Duration::days(14);
/// Largest `sectionLimit`.
pub const MAX_SECTION_LIMIT: u32 = 100;

/// `brief` (3 items a section) or `full` (25).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Brief,
    Full,
}

impl Mode {
    pub fn parse(text: Option<&str>) -> Result<Mode, ApiError> {
        match text {
            None | Some("brief") => Ok(Mode::Brief),
            Some("full") => Ok(Mode::Full),
            Some(_) => Err(ApiError::invalid_input("mode must be brief or full")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Brief => "brief",
            Mode::Full => "full",
        }
    }

    fn default_limit(self) -> u32 {
        match self {
            Mode::Brief => 3,
            Mode::Full => 25,
        }
    }
}

/// The six sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Commitments,
    Overdue,
    Blockers,
    StaleCandidates,
    RecentDecisions,
    Preferences,
}

impl Section {
    pub const ALL: [Section; 6] = [
        Section::Commitments,
        Section::Overdue,
        Section::Blockers,
        Section::StaleCandidates,
        Section::RecentDecisions,
        Section::Preferences,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Section::Commitments => "commitments",
            Section::Overdue => "overdue",
            Section::Blockers => "blockers",
            Section::StaleCandidates => "staleCandidates",
            Section::RecentDecisions => "recentDecisions",
            Section::Preferences => "preferences",
        }
    }

    pub fn parse(text: &str) -> Option<Section> {
        Section::ALL
            .into_iter()
            .find(|section| section.as_str() == text)
    }
}

/// A validated briefing request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BriefingQuery {
    pub selector: Selector,
    pub mode: Mode,
    /// Requested sections, unique; empty means all six.
    pub sections: Vec<Section>,
    pub section_limit: Option<u32>,
}

impl BriefingQuery {
    /// Validates sections (known, unique) and the limit (1..100).
    pub fn new(
        selector: Selector,
        mode: Mode,
        sections: &[String],
        section_limit: Option<u32>,
    ) -> Result<BriefingQuery, ApiError> {
        let mut parsed = Vec::new();
        for name in sections {
            let section = Section::parse(name).ok_or_else(|| {
                ApiError::invalid_input(
                    "sections may only name commitments, overdue, blockers, staleCandidates, \
                     recentDecisions or preferences",
                )
            })?;
            if parsed.contains(&section) {
                return Err(ApiError::invalid_input(
                    "sections must not repeat a section",
                ));
            }
            parsed.push(section);
        }
        if section_limit.is_some_and(|limit| !(1..=MAX_SECTION_LIMIT).contains(&limit)) {
            return Err(ApiError::invalid_input("sectionLimit must be 1 to 100"));
        }
        Ok(BriefingQuery {
            selector,
            mode,
            sections: parsed,
            section_limit,
        })
    }

    fn wants(&self, section: Section) -> bool {
        self.sections.is_empty() || self.sections.contains(&section)
    }

    fn limit(&self) -> i64 {
        i64::from(self.section_limit.unwrap_or(self.mode.default_limit()))
    }
}

/// What a selector admits, as a SQL filter.
pub fn filter_of(selector: &Selector) -> Filter {
    match selector {
        Selector::All {} => Filter::default(),
        Selector::Scope { scope } => Filter {
            scope: Some(scope.clone()),
            ..Filter::default()
        },
        Selector::Project { project } => Filter {
            project: Some(project.clone()),
            ..Filter::default()
        },
        Selector::ScopeProject {
            scope,
            project,
            include_unscoped,
        } => Filter {
            scope: Some(scope.clone()),
            project: Some(project.clone()),
            include_unscoped: *include_unscoped,
        },
    }
}

/// A commitment item and whether it is past due at the briefing's instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitmentItem {
    pub row: CommitmentItemRow,
    pub overdue: bool,
}

/// A section: the total that matched, the items shown, whether more exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionOf<T> {
    pub count: i64,
    pub items: Vec<T>,
    pub has_more: bool,
}

fn commitment_section(
    rows: Vec<CommitmentItemRow>,
    now: DateTime<Utc>,
) -> SectionOf<CommitmentItem> {
    let count = rows.first().map_or(0, |row| row.total);
    let items: Vec<CommitmentItem> = rows
        .into_iter()
        .map(|row| CommitmentItem {
            overdue: row.due_at.is_some_and(|due| due < now),
            row,
        })
        .collect();
    SectionOf {
        has_more: count > items.len() as i64,
        count,
        items,
    }
}

fn memory_section(rows: Vec<MemoryItemRow>) -> SectionOf<MemoryItemRow> {
    let count = rows.first().map_or(0, |row| row.total);
    SectionOf {
        has_more: count > rows.len() as i64,
        count,
        items: rows,
    }
}

/// The briefing: only requested sections are present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Briefing {
    pub selector: Selector,
    pub mode: Mode,
    pub generated_at: DateTime<Utc>,
    pub commitments: Option<SectionOf<CommitmentItem>>,
    pub overdue: Option<SectionOf<CommitmentItem>>,
    pub blockers: Option<SectionOf<MemoryItemRow>>,
    pub stale_candidates: Option<SectionOf<MemoryItemRow>>,
    pub recent_decisions: Option<SectionOf<MemoryItemRow>>,
    pub preferences: Option<SectionOf<MemoryItemRow>>,
}

impl Provenance {
    /// Builds the briefing in one read transaction.
    pub async fn briefing(
        &self,
        call: &CallContext,
        query: &BriefingQuery,
    ) -> Result<Briefing, ApiError> {
        let (tenant_id, now) = (call.tenant_id, call.now);
        let filter = filter_of(&query.selector);
        let limit = query.limit();
        let mut transaction = begin_tenant(&self.pool, tenant_id).await?;
        let mut briefing = Briefing {
            selector: query.selector.clone(),
            mode: query.mode,
            generated_at: now,
            commitments: None,
            overdue: None,
            blockers: None,
            stale_candidates: None,
            recent_decisions: None,
            preferences: None,
        };
        if query.wants(Section::Commitments) {
            let rows =
                briefing::commitments(&mut transaction, tenant_id, &filter, None, limit).await?;
            briefing.commitments = Some(commitment_section(rows, now));
        }
        if query.wants(Section::Overdue) {
            let rows =
                briefing::commitments(&mut transaction, tenant_id, &filter, Some(now), limit)
                    .await?;
            briefing.overdue = Some(commitment_section(rows, now));
        }
        if query.wants(Section::Blockers) {
            let rows =
                briefing::newest(&mut transaction, tenant_id, &filter, &["blocker"], limit).await?;
            briefing.blockers = Some(memory_section(rows));
        }
        if query.wants(Section::StaleCandidates) {
            let rows = briefing::stale(
                &mut transaction,
                tenant_id,
                &filter,
                now - STALE_AFTER,
                limit,
            )
            .await?;
            briefing.stale_candidates = Some(memory_section(rows));
        }
        if query.wants(Section::RecentDecisions) {
            let rows = briefing::newest(&mut transaction, tenant_id, &filter, &["decision"], limit)
                .await?;
            briefing.recent_decisions = Some(memory_section(rows));
        }
        if query.wants(Section::Preferences) {
            let rows =
                briefing::newest(&mut transaction, tenant_id, &filter, &["preference"], limit)
                    .await?;
            briefing.preferences = Some(memory_section(rows));
        }
        transaction.commit().await?;
        Ok(briefing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_known_and_unique_and_limits_bounded() {
        let names = |list: &[&str]| list.iter().map(|name| name.to_string()).collect::<Vec<_>>();
        let all = BriefingQuery::new(Selector::All {}, Mode::Brief, &[], None).expect("valid");
        assert!(Section::ALL.iter().all(|section| all.wants(*section)));
        assert_eq!(all.limit(), 3);
        let full = BriefingQuery::new(Selector::All {}, Mode::Full, &names(&["overdue"]), None)
            .expect("valid");
        assert_eq!(full.limit(), 25);
        assert!(full.wants(Section::Overdue) && !full.wants(Section::Commitments));
        assert!(
            BriefingQuery::new(
                Selector::All {},
                Mode::Brief,
                &names(&["overdue", "overdue"]),
                None
            )
            .is_err()
        );
        assert!(
            BriefingQuery::new(Selector::All {}, Mode::Brief, &names(&["everything"]), None)
                .is_err()
        );
        assert!(BriefingQuery::new(Selector::All {}, Mode::Brief, &[], Some(0)).is_err());
        assert!(BriefingQuery::new(Selector::All {}, Mode::Brief, &[], Some(101)).is_err());
        assert_eq!(
            BriefingQuery::new(Selector::All {}, Mode::Full, &[], Some(7))
                .expect("valid")
                .limit(),
            7
        );
    }

    #[test]
    fn selectors_map_to_filters() {
        let filter = filter_of(&Selector::ScopeProject {
            scope: "work".to_string(),
            project: "baton".to_string(),
            include_unscoped: true,
        });
        assert_eq!(filter.scope.as_deref(), Some("work"));
        assert_eq!(filter.project.as_deref(), Some("baton"));
        assert!(filter.include_unscoped);
        assert_eq!(filter_of(&Selector::All {}), Filter::default());
    }
}
