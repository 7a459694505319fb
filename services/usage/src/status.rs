//! An agent's status, derived at read time (pure). Each word has one kind of evidence
//! (seed 002):
//!
//! - `working` — activity: the transcript's latest activity of the agent, or for the main
//!   agent a `UserPromptSubmit` delivery. Activity proves work, never an end.
//! - `waiting` — the main agent's `Stop` delivery: its `lastStopAt` is at or after its latest
//!   activity (transcript activity or prompt).
//! - `completed` — a subagent or compaction whose spawning tool call has its result in the
//!   parent's transcript (the upload's `ended: completed`). Baton registers no SubagentStop.
//! - `error` — the transcript records an early termination or a failed spawn result
//!   (`ended: error`).
//! - `unknown` — the watchdog: a non-terminal agent (anything but `completed`/`error`) whose
//!   latest evidence of any kind is older than the window at "now" (the kit clock, so the
//!   test clock drives it). Nothing stores it: it reverts as soon as activity strictly
//!   advances past the anchor, and an upload repeating the same instant changes nothing.
//!
//! Observed terminals are sticky: the store never clears a stored `ended`, so a later upload
//! of activity cannot turn `completed` back into `working`.

use chrono::{DateTime, Duration, Utc};

/// The five words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Working,
    Waiting,
    Completed,
    Error,
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::Waiting => "waiting",
            Status::Completed => "completed",
            Status::Error => "error",
            Status::Unknown => "unknown",
        }
    }
}

/// What is known about one agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Evidence<'a> {
    pub is_main: bool,
    /// The transcript's latest activity of this agent.
    pub last_activity_at: Option<DateTime<Utc>>,
    /// Main agent only: the newest UserPromptSubmit and Stop deliveries.
    pub last_prompt_at: Option<DateTime<Utc>>,
    pub last_stop_at: Option<DateTime<Utc>>,
    /// Stored transcript end (`completed` or `error`).
    pub ended: Option<&'a str>,
}

/// The status at `now` with the watchdog `window`.
pub fn status(evidence: &Evidence<'_>, now: DateTime<Utc>, window: Duration) -> Status {
    if !evidence.is_main {
        match evidence.ended {
            Some("completed") => return Status::Completed,
            Some("error") => return Status::Error,
            _ => {}
        }
    }
    let activity = if evidence.is_main {
        evidence.last_activity_at.max(evidence.last_prompt_at)
    } else {
        evidence.last_activity_at
    };
    let stop = evidence.last_stop_at.filter(|_| evidence.is_main);
    let anchor = activity.max(stop);
    if let Some(anchor) = anchor
        && now - anchor > window
    {
        return Status::Unknown;
    }
    match (stop, activity) {
        (Some(stop), Some(activity)) if stop >= activity => Status::Waiting,
        (Some(_), None) => Status::Waiting,
        _ => Status::Working,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: i64) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(1_780_000_000 + minute * 60, 0)
    }

    #[test]
    fn each_word_comes_from_its_one_source() {
        let window = Duration::minutes(10);
        let main = |activity: i64, prompt: Option<i64>, stop: Option<i64>| Evidence {
            is_main: true,
            last_activity_at: at(activity),
            last_prompt_at: prompt.and_then(at),
            last_stop_at: stop.and_then(at),
            ended: None,
        };
        let sub = |activity: i64, ended: Option<&'static str>| Evidence {
            is_main: false,
            last_activity_at: at(activity),
            ended,
            ..Evidence::default()
        };
        let now = at(5).expect("now");
        let table = [
            ("main, activity only", main(4, None, None), Status::Working),
            (
                "main, stop after activity",
                main(3, None, Some(4)),
                Status::Waiting,
            ),
            (
                "main, stop at the same instant",
                main(4, None, Some(4)),
                Status::Waiting,
            ),
            (
                "main, prompt after stop",
                main(2, Some(4), Some(3)),
                Status::Working,
            ),
            (
                "main, transcript after stop",
                main(4, Some(1), Some(3)),
                Status::Working,
            ),
            (
                "main, quiet past the window",
                main(-6, None, None),
                Status::Unknown,
            ),
            (
                "main, waiting and quiet",
                main(-9, None, Some(-8)),
                Status::Unknown,
            ),
            (
                "main, stop recent though activity old",
                main(-20, None, Some(4)),
                Status::Waiting,
            ),
            ("sub, activity", sub(4, None), Status::Working),
            (
                "sub, completed",
                sub(4, Some("completed")),
                Status::Completed,
            ),
            ("sub, error", sub(4, Some("error")), Status::Error),
            (
                "sub, completed and quiet stays completed",
                sub(-60, Some("completed")),
                Status::Completed,
            ),
            ("sub, quiet", sub(-6, None), Status::Unknown),
            (
                "sub, a Stop is the main agent's, never a subagent's",
                Evidence {
                    last_stop_at: at(4),
                    ..sub(3, None)
                },
                Status::Working,
            ),
        ];
        for (name, evidence, expected) in table {
            assert_eq!(status(&evidence, now, window), expected, "{name}");
        }
    }

    #[test]
    fn unknown_reverts_only_when_activity_strictly_advances() {
        let window = Duration::minutes(10);
        let quiet = Evidence {
            is_main: false,
            last_activity_at: at(0),
            ..Evidence::default()
        };
        let now = at(11).expect("now");
        assert_eq!(status(&quiet, now, window), Status::Unknown);
        // Exactly at the window's edge it is not yet past it.
        assert_eq!(
            status(&quiet, at(10).expect("edge"), window),
            Status::Working
        );
        let same = Evidence {
            last_activity_at: at(0),
            ..quiet
        };
        assert_eq!(status(&same, now, window), Status::Unknown);
        let advanced = Evidence {
            last_activity_at: at(2),
            ..quiet
        };
        assert_eq!(status(&advanced, now, window), Status::Working);
    }
}
