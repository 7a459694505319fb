//! Bus messages: the facts one context publishes for others to react to (DESIGN section 3.3).
//!
//! Each message travels in a versioned, tagged envelope; `type` is also the routing key on the
//! `baton.events` topic exchange. A consumer is idempotent on the envelope's `id`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Routing key (and envelope `type`) of [`SessionClosed`].
pub const SESSION_CLOSED: &str = "registry.session.closed";
/// Routing key (and envelope `type`) of [`SessionResurrected`].
pub const SESSION_RESURRECTED: &str = "registry.session.resurrected";

/// Routing key (and envelope `type`) of [`BudgetCrossed`].
pub const BUDGET_CROSSED: &str = "usage.budget.crossed";
/// Routing key (and envelope `type`) of [`RunawayFlagged`].
pub const RUNAWAY_FLAGGED: &str = "usage.runaway.flagged";

/// The envelope around every message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Envelope {
    /// The message's type, e.g. `registry.session.closed`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The payload's schema version.
    pub version: u32,
    /// Unique per message; consumers deduplicate on it.
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub occurred_at: DateTime<Utc>,
    pub data: serde_json::Value,
}

/// A session run was closed: explicitly (SessionEnd) or implicitly (the lease-expiry sweep, or a
/// close that arrived after the lease ran out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionClosed {
    pub session_run_id: Uuid,
    pub activation_epoch: i64,
    pub explicit: bool,
    pub closed_at: DateTime<Utc>,
}

/// A closed or lease-expired run came back (heartbeat, resume, or an attaching write); its
/// epoch moved, which fences any closer work taken under the old one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionResurrected {
    pub session_run_id: Uuid,
    pub activation_epoch: i64,
}

/// A budget's spend in one period reached one of its thresholds. Published once per (budget,
/// period, threshold), in the transaction of the upload whose usage made it so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetCrossed {
    pub budget_id: Uuid,
    /// `tenant`, `project` or `member`.
    pub scope: String,
    /// The project slug or member name a scoped budget watches; absent for `tenant`.
    pub subject: Option<String>,
    /// `month` or `day`.
    pub period: String,
    /// The period's first local day (`YYYY-MM-DD`) in `timezone`.
    pub period_start: String,
    pub timezone: String,
    /// Percent of the limit: 50, 80, 100 by default.
    pub threshold_percent: u32,
    pub limit_usd: f64,
    /// The period's spend when the crossing was seen.
    pub spent_usd: f64,
    pub crossed_at: DateTime<Utc>,
}

/// A session was flagged as running away: its spend over a sliding window passed the tenant's
/// limit (`reason = spend`), or its main agent kept working past the limit without a user
/// prompt (`reason = unattended`). Published once per session and episode of runaway.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunawayFlagged {
    pub agent: String,
    pub session_id: String,
    /// `spend` or `unattended`.
    pub reason: String,
    /// When the episode began (the window's end, or the last prompt plus the limit).
    pub started_at: DateTime<Utc>,
    /// The spend inside the window (`spend`), or the session's spend since its last prompt.
    pub spent_usd: f64,
    /// The window (`spend`) or the unattended limit (`unattended`), in minutes.
    pub minutes: u32,
    /// The limit that was passed, in USD (`spend`); 0 for `unattended`.
    pub limit_usd: f64,
}

/// Version of every payload above.
pub const VERSION: u32 = 1;

impl Envelope {
    /// Wraps a payload.
    pub fn new<T: Serialize>(
        kind: &str,
        tenant_id: Uuid,
        occurred_at: DateTime<Utc>,
        data: &T,
    ) -> Result<Envelope, serde_json::Error> {
        Ok(Envelope {
            kind: kind.to_string(),
            version: VERSION,
            id: Uuid::now_v7(),
            tenant_id,
            occurred_at,
            data: serde_json::to_value(data)?,
        })
    }

    /// The payload as `T`, when the type and version are the ones expected.
    pub fn payload<T: for<'de> Deserialize<'de>>(&self, kind: &str) -> Result<T, String> {
        if self.kind != kind || self.version != VERSION {
            return Err(format!(
                "unexpected message {} v{}",
                self.kind, self.version
            ));
        }
        serde_json::from_value(self.data.clone()).map_err(|error| error.to_string())
    }
}
