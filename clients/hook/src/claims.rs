//! The sidecar's claim files: one per (session, client process), created exclusively, so two
//! SessionStarts racing still leave one sidecar; removing a claim (uninstall) tells its
//! sidecar to stop.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::ancestry::Identity;
use crate::fsutil;
use crate::process;

fn digest(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

/// `<state>/sidecars/<digest of agent and session>-<client pid>-<digest of its start>`: a
/// later process holding the same pid is another client with another claim.
pub fn claim_path(state_dir: &Path, agent: &str, session_id: &str, client: &Identity) -> PathBuf {
    state_dir.join("sidecars").join(format!(
        "{}-{}-{}",
        digest(&format!("{agent}\n{session_id}")),
        client.pid,
        digest(&client.start)
    ))
}

/// The pid written in a claim.
pub fn holder(path: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(path).ok()?;
    text.trim().parse().ok()
}

/// Takes the claim file exclusively; a claim left by a dead sidecar is taken over once.
pub fn claim(path: &Path) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    if fsutil::private_dir(dir).is_err() {
        return false;
    }
    for _ in 0..2 {
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path);
        match created {
            Ok(mut file) => {
                return std::io::Write::write_all(
                    &mut file,
                    std::process::id().to_string().as_bytes(),
                )
                .is_ok();
            }
            Err(_) => match holder(path) {
                Some(pid) if process::alive(pid) => return false,
                _ => {
                    let _ = std::fs::remove_file(path);
                }
            },
        }
    }
    false
}

/// Stops every sidecar (uninstall): removes their claims, waits for them to send their last
/// pulse and exit, and kills any that do not within `patience`. Returns how many were running.
pub fn stop_all(state_dir: &Path, patience: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(state_dir.join("sidecars")) else {
        return 0;
    };
    let pids: Vec<u32> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid = holder(&entry.path());
            let _ = std::fs::remove_file(entry.path());
            pid
        })
        .filter(|pid| process::alive(*pid))
        .collect();
    let deadline = Instant::now() + patience;
    while pids.iter().any(|pid| process::alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    for pid in pids.iter().filter(|pid| process::alive(**pid)) {
        if let Ok(pid) = i32::try_from(*pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    pids.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_claim_per_session_and_process() {
        let dir = tempfile::tempdir().expect("dir");
        let client = |pid: u32, start: &str| Identity {
            pid,
            start: start.to_string(),
        };
        let path = claim_path(dir.path(), "claude-code", "s", &client(42, "100"));
        assert!(claim(&path));
        assert!(!claim(&path), "this process holds it and is alive");
        std::fs::write(&path, "999999999").expect("stale claim");
        assert!(claim(&path), "a dead holder's claim is taken over");
        assert_ne!(
            path,
            claim_path(dir.path(), "claude-code", "s", &client(43, "100"))
        );
        assert_ne!(
            path,
            claim_path(dir.path(), "claude-code", "s", &client(42, "101")),
            "a recycled pid is another client"
        );
    }
}
