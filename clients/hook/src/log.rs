//! The hook's one local log line per failure.
//!
//! The agent must never see a hook fail, so failures go to `<state>/hook.log`, one line each:
//! time, command, harness and an error code — never a prompt, a message, a briefing or a key.
//! The file is kept under 1 MiB by rotating it once to `hook.log.1`.

use std::io::Write;
use std::path::Path;

const MAX_BYTES: u64 = 1024 * 1024;

/// Appends one line; logging never fails the hook.
pub fn line(state_dir: &Path, command: &str, harness: &str, code: &str) {
    let _ = try_line(state_dir, command, harness, code);
}

fn try_line(state_dir: &Path, command: &str, harness: &str, code: &str) -> std::io::Result<()> {
    crate::fsutil::private_dir(state_dir)?;
    let path = state_dir.join("hook.log");
    if std::fs::metadata(&path).is_ok_and(|metadata| metadata.len() > MAX_BYTES) {
        std::fs::rename(&path, state_dir.join("hook.log.1"))?;
    }
    let mut file = crate::fsutil::private_append(&path)?;
    let now = crate::clock::iso_now();
    let clean = |text: &str| text.replace(|c: char| c.is_control(), " ");
    writeln!(
        file,
        "{now} {} {} {}",
        clean(command),
        clean(harness),
        clean(code)
    )
}
