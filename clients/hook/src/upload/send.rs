//! Sending planned batches in order and reading what the server made of each.
//!
//! Rules: a 2xx is acknowledged; a definitive refusal (400, 404, 409, 413, 422) is reported
//! with the server's error code and the next batch is tried; anything else (no answer, 401,
//! 403, 429, 5xx) stops the run: later batches may depend on this one, and the ledger keeps
//! them for the next run.

use serde_json::Value;

use super::plan::Planned;
use crate::http::{Answer, Client, Failure};

/// The server's route for uploads.
pub const PATH: &str = "/api/v1/usage/batches";

/// What the server made of one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    /// Status and the contract's error code (`{"error": code}`), when the body had one.
    Refused(u16, Option<String>),
    /// The server could not take it now (or could not be reached): `status` 0 = no answer.
    Later(u16, String),
}

/// The verdict for one answer (pure).
pub fn verdict(answer: Result<Answer, Failure>) -> Verdict {
    match answer {
        Ok(answer) if answer.ok() => Verdict::Accepted,
        Ok(answer) if matches!(answer.status, 400 | 404 | 409 | 413 | 422) => {
            Verdict::Refused(answer.status, answer.text("error").map(str::to_string))
        }
        Ok(answer) => Verdict::Later(
            answer.status,
            answer.text("error").unwrap_or("unavailable").to_string(),
        ),
        Err(failure) => Verdict::Later(0, failure.code().to_string()),
    }
}

/// Sends `planned` in order through `post`; one verdict per batch tried (fewer than planned
/// when the run stopped).
pub fn send_all(
    planned: &[Planned],
    mut post: impl FnMut(&Value) -> Result<Answer, Failure>,
    mut each: impl FnMut(&Planned, &Verdict),
) -> Vec<Verdict> {
    let mut verdicts = Vec::new();
    for plan in planned {
        let body = serde_json::to_value(&plan.batch).unwrap_or(Value::Null);
        let verdict = verdict(post(&body));
        each(plan, &verdict);
        let stop = matches!(verdict, Verdict::Later(..));
        verdicts.push(verdict);
        if stop {
            break;
        }
    }
    verdicts
}

/// `post` through the hook's client.
pub fn through(client: &Client) -> impl FnMut(&Value) -> Result<Answer, Failure> + '_ {
    move |body| client.post(PATH, body)
}
