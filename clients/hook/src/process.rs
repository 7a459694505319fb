//! Facts about processes: which one is the client, is it still the same process, what is its
//! executable and version, which machine is this.
//!
//! The client version is not in any payload (seed 004), and it can change under a running
//! session when the client updates itself, so it is resolved per episode from the client's
//! executable: a node-hosted script's from its npm package's manifest, else `<exe> --version`,
//! cached by the executable's path, size and modification time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use crate::ancestry::{self, Identity};
use crate::config::Env;
use crate::dotted_version::parse_version;
use crate::fsutil;
use crate::harness::Harness;
use crate::proctable;

/// The client process to watch (see [`crate::ancestry`] for the rules): `CLAUDE_PID` when set
/// and believable, else the harness's process found up the hook's ancestry.
pub fn client(env: &Env, harness: Harness) -> Option<Identity> {
    let parent = std::os::unix::process::parent_id();
    let claimed = env
        .get("CLAUDE_PID")
        .and_then(|text| text.trim().parse::<u32>().ok())
        .filter(|pid| *pid > 1);
    match claimed {
        Some(pid) => {
            let hook_start = proctable::read(std::process::id()).map(|info| info.start);
            ancestry::claimed(proctable::read(pid), hook_start.as_deref())
        }
        None => ancestry::walk(harness, parent, proctable::read),
    }
}

/// True while the recorded client still runs as the same process (a pid now held by a process
/// that started at another time is not it).
pub fn still_running(client: &Identity) -> bool {
    ancestry::same_process(client, proctable::read(client.pid).as_ref())
}

/// True while `pid` runs (a zombie is not running).
pub fn alive(pid: u32) -> bool {
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may itself hold spaces.
        let state = stat
            .rfind(')')
            .and_then(|end| stat[end + 1..].split_whitespace().next());
        return !matches!(state, Some("Z" | "X" | "x"));
    }
    if Path::new("/proc/self/stat").exists() {
        return false;
    }
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(error) => error == nix::errno::Errno::EPERM,
    }
}

/// The client's executable: its own, or for a script run by an interpreter (a node-hosted
/// CLI) the script it runs. Relative scripts resolve against the process's folder where it can
/// be read (Linux); elsewhere they are not resolved.
pub fn executable(pid: u32) -> Option<PathBuf> {
    let info = proctable::read(pid)?;
    let exe = PathBuf::from(info.exe.as_deref()?);
    let name = exe.file_name()?.to_str()?;
    if !ancestry::INTERPRETERS
        .iter()
        .chain(["sh", "bash", "zsh", "dash"].iter())
        .any(|interpreter| name.starts_with(interpreter))
    {
        return Some(exe);
    }
    let script = info
        .argv
        .iter()
        .skip(1)
        .find(|argument| !argument.starts_with('-'))?;
    let script = PathBuf::from(script);
    if script.is_absolute() {
        return Some(script);
    }
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    Some(cwd.join(script))
}

fn cache_key(exe: &Path) -> Option<String> {
    let metadata = std::fs::metadata(exe).ok()?;
    let modified = metadata.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
    Some(format!(
        "{}|{}|{}",
        exe.display(),
        metadata.len(),
        modified.as_nanos()
    ))
}

/// The version of `exe`: a node-hosted script's from the npm package that ships it
/// ([`crate::package_version`]), else from the cache in `state_dir` or by running
/// `exe --version` (at most `timeout`).
pub fn version_of(exe: &Path, state_dir: &Path, timeout: Duration) -> Option<String> {
    if let Some(version) = crate::package_version::of_script(exe) {
        return Some(version);
    }
    let key = cache_key(exe)?;
    let cache_path = state_dir.join("versions.json");
    let mut cache: BTreeMap<String, String> = std::fs::read(&cache_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    if let Some(version) = cache.get(&key) {
        return Some(version.clone());
    }
    let version = run_version(exe, timeout)?;
    cache.retain(|cached, _| !cached.starts_with(&format!("{}|", exe.display())));
    cache.insert(key, version.clone());
    if let Ok(bytes) = serde_json::to_vec(&cache) {
        let _ = fsutil::private_dir(state_dir);
        let _ = fsutil::write_durably(&cache_path, &bytes);
    }
    Some(version)
}

fn run_version(exe: &Path, timeout: Duration) -> Option<String> {
    let mut child = Command::new(exe)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut output = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take()?, &mut output).ok()?;
    parse_version(&output)
}

/// A stable, opaque id of this machine: a digest of its machine id (or host name), never the
/// name itself.
pub fn host_id() -> String {
    let source = [
        "/etc/machine-id",
        "/var/lib/dbus/machine-id",
        "/proc/sys/kernel/hostname",
    ]
    .iter()
    .find_map(|path| {
        std::fs::read_to_string(path)
            .ok()
            .filter(|text| !text.trim().is_empty())
    })
    .unwrap_or_else(|| "unknown-host".to_string());
    let digest = Sha256::digest(format!("baton-host:{}", source.trim()).as_bytes());
    format!("h-{}", &hex::encode(digest)[..24])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(alive(std::process::id()));
        let mut child = Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        assert!(!alive(pid));
    }

    #[test]
    fn a_zombie_is_not_alive() {
        let child = Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(200));
        assert!(!alive(pid), "exited but not yet reaped");
        drop(child);
    }

    #[test]
    fn versions_are_resolved_once_and_cached() {
        let dir = tempfile::tempdir().expect("dir");
        let exe = dir.path().join("fake-client");
        let counter = dir.path().join("runs");
        std::fs::write(
            &exe,
            format!(
                "#!/bin/sh\necho run >> {}\necho '2.1.296 (Claude Code)'\n",
                counter.display()
            ),
        )
        .expect("script");
        std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let state = dir.path().join("state");
        for _ in 0..3 {
            assert_eq!(
                version_of(&exe, &state, Duration::from_secs(5)).as_deref(),
                Some("2.1.296")
            );
        }
        assert_eq!(
            std::fs::read_to_string(&counter)
                .expect("runs")
                .lines()
                .count(),
            1
        );
        assert!(host_id().starts_with("h-"));
    }
}
