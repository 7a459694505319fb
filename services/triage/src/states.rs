//! `GetStates`: several runs' triage states at once, for the console's session list.
//!
//! Each answered run reads exactly as `GetState` answers it (a `completed` run with an event
//! outside its watermark reads `idle`), with the nudges ever armed for it (`ListAttempts`'
//! `count`). Runs triage has no row for are left out: an unknown id, another tenant's (row-level
//! security hides it), and a run of the tenant's that was never triaged, which `GetState` would
//! answer `idle` with no attempts. The rows come from one query; only `completed` runs need
//! provenance's listing, fetched a few at a time.

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use uuid::Uuid;

use baton_kit::db::begin_tenant;
use baton_kit::error::ApiError;
use baton_kit::grpc::{CallContext, OutboundCall};
use baton_kit::text;

use crate::decide::{self, Listing};
use crate::links::Links;
use crate::service::Triage;
use crate::status::Status;
use crate::store::{self, FoundRun};

/// Most run ids one call may name (duplicates included).
pub const MAX_RUN_IDS: usize = 200;

/// Listings asked of provenance at once: enough to hide latency, few enough that one console
/// page does not take every provenance connection.
pub const LISTING_CONCURRENCY: usize = 8;

/// One answered run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTriage {
    pub run_id: Uuid,
    pub status: Status,
    pub attempts: i64,
}

/// The run ids to look up, in the order asked, each once: 1..200 ids, each a uuid as `GetState`
/// takes its one id.
pub fn requested(raw: &[String]) -> Result<Vec<Uuid>, ApiError> {
    if raw.is_empty() || raw.len() > MAX_RUN_IDS {
        return Err(ApiError::invalid_input(
            "sessionRunIds must hold 1 to 200 run ids",
        ));
    }
    let mut seen = HashSet::new();
    let mut ids = Vec::new();
    for text in raw {
        let id = text::session_run_id("sessionRunIds[]", text)?;
        if seen.insert(id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Whether a stored row needs provenance's listing to read as `GetState` answers it.
fn needs_listing(run: &FoundRun) -> bool {
    run.state.status == Status::Completed
}

/// The answer in the order asked (`order` is already free of duplicates), unfound ids left
/// out; `listings` holds one entry per run that needs one.
pub fn answer(
    order: &[Uuid],
    found: Vec<FoundRun>,
    listings: &HashMap<Uuid, Listing>,
) -> Vec<RunTriage> {
    let mut by_id: HashMap<Uuid, FoundRun> =
        found.into_iter().map(|run| (run.run_id, run)).collect();
    order
        .iter()
        .filter_map(|id| by_id.remove(id))
        .map(|run| {
            let empty = Listing::default();
            let listing = listings.get(&run.run_id).unwrap_or(&empty);
            RunTriage {
                run_id: run.run_id,
                status: decide::effective_status(&run.state, listing),
                attempts: run.attempts_armed,
            }
        })
        .collect()
}

/// Provenance's listing of each of `run_ids`, a few at a time. Owned arguments: the futures
/// borrow nothing, so the handler's future stays `Send` for any lifetime.
async fn listings(
    links: Links,
    onward: OutboundCall,
    run_ids: Vec<Uuid>,
) -> Result<HashMap<Uuid, Listing>, ApiError> {
    futures::stream::iter(run_ids.into_iter().map(|run_id| {
        let links = links.clone();
        let onward = onward.clone();
        async move {
            let listing = links.listing(&onward, run_id).await?;
            Ok::<_, ApiError>((run_id, listing))
        }
    }))
    .buffer_unordered(LISTING_CONCURRENCY)
    .try_collect()
    .await
}

impl Triage {
    /// The effective status and attempt count of each of `run_ids` triage has a row for.
    pub async fn states(
        &self,
        call: &CallContext,
        run_ids: &[Uuid],
    ) -> Result<Vec<RunTriage>, ApiError> {
        let mut transaction = begin_tenant(self.pool(), call.tenant_id).await?;
        let found = store::find_many(&mut transaction, call.tenant_id, run_ids).await?;
        transaction.commit().await?;
        let completed = found
            .iter()
            .filter(|run| needs_listing(run))
            .map(|run| run.run_id)
            .collect();
        let listings = listings(self.links().clone(), call.onward(self.clock()), completed).await?;
        Ok(answer(run_ids, found, &listings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::RunState;

    /// A version-4 id (the contract refuses other shapes).
    fn id(n: u128) -> Uuid {
        Uuid::from_u128(0x0000_0000_0000_4000_8000_0000_0000_0000 | n)
    }

    #[test]
    fn requested_ids_are_bounded_parsed_and_answered_once_in_order() {
        let a = id(1).to_string();
        let b = id(2).to_string();
        let cases: Vec<(Vec<String>, Option<Vec<Uuid>>)> = vec![
            (vec![], None),
            (vec![a.clone()], Some(vec![id(1)])),
            (
                vec![b.clone(), a.clone(), b.clone()],
                Some(vec![id(2), id(1)]),
            ),
            (vec![a.to_uppercase(), a.clone()], Some(vec![id(1)])),
            (vec![a.clone(); MAX_RUN_IDS], Some(vec![id(1)])),
            (vec![a.clone(); MAX_RUN_IDS + 1], None),
            (vec![a.clone(), "not-a-uuid".to_string()], None),
            (vec![String::new()], None),
        ];
        for (raw, expected) in cases {
            let got = requested(&raw).ok();
            assert_eq!(got, expected, "{} ids", raw.len());
        }
    }

    fn found(n: u128, status: Status, watermark: Vec<Uuid>, attempts: i64) -> FoundRun {
        FoundRun {
            run_id: id(n),
            state: RunState {
                status,
                watermark,
                ..RunState::never_seen()
            },
            attempts_armed: attempts,
        }
    }

    #[test]
    fn the_answer_follows_the_request_and_reads_as_get_state() {
        let event = id(100);
        let rows = vec![
            found(1, Status::Pending, vec![], 1),
            found(2, Status::Completed, vec![event], 2),
            found(3, Status::Completed, vec![], 3),
            found(4, Status::Overflowed, vec![], 4),
        ];
        let listings = HashMap::from([
            (
                id(2),
                Listing {
                    ids: vec![event],
                    truncated: false,
                },
            ),
            (
                id(3),
                Listing {
                    ids: vec![event],
                    truncated: false,
                },
            ),
        ]);
        let got: Vec<(Uuid, Status, i64)> =
            answer(&[id(4), id(9), id(3), id(2), id(1)], rows, &listings)
                .into_iter()
                .map(|run| (run.run_id, run.status, run.attempts))
                .collect();
        assert_eq!(
            got,
            [
                (id(4), Status::Overflowed, 4),
                (id(3), Status::Idle, 3),
                (id(2), Status::Completed, 2),
                (id(1), Status::Pending, 1),
            ]
        );
    }

    #[test]
    fn only_completed_runs_need_a_listing() {
        let table = [
            (Status::Idle, false),
            (Status::Pending, false),
            (Status::Completed, true),
            (Status::Expired, false),
            (Status::Overflowed, false),
        ];
        for (status, expected) in table {
            assert_eq!(
                needs_listing(&found(1, status, vec![], 0)),
                expected,
                "{status:?}"
            );
        }
    }
}
