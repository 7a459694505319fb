//! The session page's closer passes: each pass with its verdicts, their evidence and whether
//! a resolve can still be undone.

use baton_proto::closer::v1 as closer;

use super::moment;
use crate::console::view::Moment;
use crate::console::viewer::Viewer;

pub struct EvidenceRow {
    pub quote: String,
    pub source: String,
}

pub struct VerdictRow {
    pub memory_id: String,
    pub verdict: String,
    pub reason: String,
    pub judge: String,
    pub evidence: Vec<EvidenceRow>,
    pub resolved_at: Option<Moment>,
    pub undone_at: Option<Moment>,
    pub can_undo: bool,
}

pub struct PassRow {
    pub epoch: i64,
    pub state: String,
    pub outcome: String,
    pub resolved: u32,
    pub rejected: u32,
    pub verdicts: Vec<VerdictRow>,
}

pub(super) fn pass_rows(viewer: &Viewer, passes: &[closer::Pass]) -> Vec<PassRow> {
    passes
        .iter()
        .map(|pass| PassRow {
            epoch: pass.activation_epoch,
            state: pass.state.clone(),
            outcome: pass.outcome.clone().unwrap_or_else(|| "—".to_string()),
            resolved: pass.resolved,
            rejected: pass.rejected,
            verdicts: pass
                .verdicts
                .iter()
                .map(|verdict| VerdictRow {
                    memory_id: verdict.memory_id.clone(),
                    verdict: verdict.verdict.clone(),
                    reason: verdict.reason.clone(),
                    judge: verdict.judge.clone(),
                    evidence: verdict
                        .evidence
                        .iter()
                        .map(|evidence| EvidenceRow {
                            quote: evidence.quote.clone(),
                            source: match &evidence.memory_id {
                                Some(id) => format!("{} {id}", evidence.source),
                                None => evidence.source.clone(),
                            },
                        })
                        .collect(),
                    resolved_at: moment(viewer, verdict.resolved_at.as_ref()),
                    undone_at: moment(viewer, verdict.undone_at.as_ref()),
                    can_undo: verdict.verdict == "resolved" && !verdict.undone,
                })
                .collect(),
        })
        .collect()
}
