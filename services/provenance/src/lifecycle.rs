//! Lifecycle decisions as pure functions: the commitment transition table (CONTRACT section
//! 10), the blocker's resolve-as-archive, and what a revise does to the predecessor's
//! commitment.

use crate::memory::{CommitmentStatus, EventKind, MemoryStatus, MemoryType};

/// COMMITMENT FSM: open→{waiting,resolved,expired}; waiting→{open,resolved,expired};
/// resolved→{open}; expired→{open}.
pub fn allowed(from: CommitmentStatus, to: CommitmentStatus) -> bool {
    use CommitmentStatus::{Expired, Open, Resolved, Waiting};
    matches!(
        (from, to),
        (Open, Waiting | Resolved | Expired)
            | (Waiting, Open | Resolved | Expired)
            | (Resolved, Open)
            | (Expired, Open)
    )
}

/// The event a commitment transition records, chosen by its TARGET status.
pub fn event_for(target: CommitmentStatus) -> EventKind {
    match target {
        CommitmentStatus::Open => EventKind::Unresolve,
        CommitmentStatus::Waiting => EventKind::Revise,
        CommitmentStatus::Resolved => EventKind::Resolve,
        CommitmentStatus::Expired => EventKind::Archive,
    }
}

/// What a resolve call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransitionDecision {
    /// Already there: answer 200, write nothing (a supplied run id is only checked for
    /// ownership).
    NoOp,
    /// Move the commitment and record `event`.
    Commitment { event: EventKind },
    /// A blocker is resolved by archiving it.
    ArchiveBlocker,
    /// Not allowed from here: 409 `invalid_transition`.
    Invalid,
    /// The memory has no commitment to move: 404.
    NoCommitment,
}

/// Decides a resolve call from the memory's type and state and the target status.
pub fn decide_transition(
    memory_type: MemoryType,
    memory_status: MemoryStatus,
    commitment: Option<CommitmentStatus>,
    target: CommitmentStatus,
) -> TransitionDecision {
    match (memory_type, commitment) {
        (MemoryType::Commitment, Some(current)) => {
            if current == target {
                TransitionDecision::NoOp
            } else if memory_status != MemoryStatus::Open || !allowed(current, target) {
                TransitionDecision::Invalid
            } else {
                TransitionDecision::Commitment {
                    event: event_for(target),
                }
            }
        }
        (MemoryType::Blocker, _) => {
            let closes = matches!(
                target,
                CommitmentStatus::Resolved | CommitmentStatus::Expired
            );
            match (memory_status, closes) {
                (MemoryStatus::Archived, true) => TransitionDecision::NoOp,
                (MemoryStatus::Open, true) => TransitionDecision::ArchiveBlocker,
                _ => TransitionDecision::Invalid,
            }
        }
        _ => TransitionDecision::NoCommitment,
    }
}

/// What a revise does to the predecessor's commitment (the "implicit resolve or archive").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarryDecision {
    /// The predecessor holds no live commitment: nothing implicit.
    Nothing,
    /// Commitment revised into a commitment: the predecessor's commitment is resolved (event
    /// `resolve` on the predecessor) and the successor's commitment carries its status.
    Carry { status: CommitmentStatus },
    /// Commitment revised into another type: the predecessor's commitment expires (event
    /// `archive`, the event of target `expired`).
    Demote,
}

/// Decides the implicit commitment effect of a revise.
pub fn decide_carry(
    predecessor_commitment: Option<CommitmentStatus>,
    successor_type: MemoryType,
) -> CarryDecision {
    let live = matches!(
        predecessor_commitment,
        Some(CommitmentStatus::Open | CommitmentStatus::Waiting)
    );
    match (predecessor_commitment, live, successor_type) {
        (Some(status), true, MemoryType::Commitment) => CarryDecision::Carry { status },
        (Some(_), true, _) => CarryDecision::Demote,
        _ => CarryDecision::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CommitmentStatus::{Expired, Open, Resolved, Waiting};

    #[test]
    fn commitment_fsm_table() {
        let all = [Open, Waiting, Resolved, Expired];
        let allowed_pairs = [
            (Open, Waiting),
            (Open, Resolved),
            (Open, Expired),
            (Waiting, Open),
            (Waiting, Resolved),
            (Waiting, Expired),
            (Resolved, Open),
            (Expired, Open),
        ];
        for from in all {
            for to in all {
                assert_eq!(
                    allowed(from, to),
                    allowed_pairs.contains(&(from, to)),
                    "{from:?}->{to:?}"
                );
            }
        }
    }

    #[test]
    fn event_kind_follows_the_target() {
        assert_eq!(event_for(Open), EventKind::Unresolve);
        assert_eq!(event_for(Waiting), EventKind::Revise);
        assert_eq!(event_for(Resolved), EventKind::Resolve);
        assert_eq!(event_for(Expired), EventKind::Archive);
    }

    #[test]
    fn transition_rows() {
        use MemoryStatus::{Archived, Superseded};
        let open = MemoryStatus::Open;
        let cases = [
            (
                MemoryType::Commitment,
                open,
                Some(Open),
                Resolved,
                TransitionDecision::Commitment {
                    event: EventKind::Resolve,
                },
            ),
            (
                MemoryType::Commitment,
                open,
                Some(Resolved),
                Resolved,
                TransitionDecision::NoOp,
            ),
            (
                MemoryType::Commitment,
                open,
                Some(Resolved),
                Waiting,
                TransitionDecision::Invalid,
            ),
            (
                MemoryType::Commitment,
                open,
                Some(Resolved),
                Open,
                TransitionDecision::Commitment {
                    event: EventKind::Unresolve,
                },
            ),
            (
                MemoryType::Commitment,
                open,
                Some(Expired),
                Resolved,
                TransitionDecision::Invalid,
            ),
            (
                MemoryType::Commitment,
                Superseded,
                Some(Open),
                Resolved,
                TransitionDecision::Invalid,
            ),
            (
                MemoryType::Blocker,
                open,
                None,
                Resolved,
                TransitionDecision::ArchiveBlocker,
            ),
            (
                MemoryType::Blocker,
                open,
                None,
                Expired,
                TransitionDecision::ArchiveBlocker,
            ),
            (
                MemoryType::Blocker,
                Archived,
                None,
                Resolved,
                TransitionDecision::NoOp,
            ),
            (
                MemoryType::Blocker,
                open,
                None,
                Open,
                TransitionDecision::Invalid,
            ),
            (
                MemoryType::Blocker,
                Superseded,
                None,
                Resolved,
                TransitionDecision::Invalid,
            ),
            (
                MemoryType::Decision,
                open,
                None,
                Resolved,
                TransitionDecision::NoCommitment,
            ),
        ];
        for (memory_type, status, commitment, target, expected) in cases {
            assert_eq!(
                decide_transition(memory_type, status, commitment, target),
                expected,
                "{memory_type:?} {status:?} {commitment:?} -> {target:?}"
            );
        }
    }

    #[test]
    fn revise_carries_or_demotes_live_commitments_only() {
        assert_eq!(
            decide_carry(Some(Waiting), MemoryType::Commitment),
            CarryDecision::Carry { status: Waiting }
        );
        assert_eq!(
            decide_carry(Some(Open), MemoryType::Decision),
            CarryDecision::Demote
        );
        assert_eq!(
            decide_carry(Some(Resolved), MemoryType::Commitment),
            CarryDecision::Nothing
        );
        assert_eq!(
            decide_carry(None, MemoryType::Commitment),
            CarryDecision::Nothing
        );
    }
}
