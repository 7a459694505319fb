//! Claude Code's `/clear` ends one session and starts another in the same process: the end
//! leaves a marker for that process, and the next SessionStart reads it to record which session
//! it follows. The marker is named after the client process (pid and start time); with no
//! client found there is no marker, so no predecessor is guessed.

use std::time::Duration;

use serde_json::{Value, json};

use crate::context::Hook;
use crate::fsutil;
use crate::process;

/// A marker older than this names no predecessor.
const MARKER_AGE: Duration = Duration::from_secs(300);

/// Records, for this client process, that `session_id` just ended with `/clear`.
pub fn mark_cleared(hook: &Hook, session_id: &str) {
    let dir = hook.state_dir.join("cleared");
    let Some(name) = marker_name(hook) else {
        return;
    };
    let body = json!({"agent": hook.agent(), "sessionId": session_id}).to_string();
    if fsutil::private_dir(&dir).is_err() || std::fs::write(dir.join(name), body).is_err() {
        hook.log("clear_marker_io");
    }
}

/// The session this process cleared just before this SessionStart, if any (consumed).
pub fn cleared_predecessor(hook: &Hook, session_id: &str) -> Option<String> {
    let path = hook.state_dir.join("cleared").join(marker_name(hook)?);
    let fresh = std::fs::metadata(&path)
        .and_then(|metadata| metadata.modified())
        .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age < MARKER_AGE));
    let marker: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
    let _ = std::fs::remove_file(&path);
    let predecessor = marker.get("sessionId")?.as_str()?;
    let same_agent = marker.get("agent").and_then(Value::as_str) == Some(hook.agent());
    (fresh && same_agent && predecessor != session_id).then(|| predecessor.to_string())
}

/// `<pid>-<start>` of this hook's client, file-name safe.
fn marker_name(hook: &Hook) -> Option<String> {
    let client = process::client(&hook.env, hook.harness)?;
    let start: String = client
        .start
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    Some(format!("{}-{start}", client.pid))
}
