//! Running the real `baton-hook` binary the way a harness does: a JSON payload on stdin, a
//! private home folder, a clean environment.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::binary;

/// A hook installation: its own HOME and state folder, removed on drop.
pub struct HookHome {
    pub home: PathBuf,
    env: Vec<(String, String)>,
}

/// One hook process's result.
#[derive(Debug)]
pub struct HookRun {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl HookRun {
    /// Stdout as JSON (`None` when the hook printed nothing).
    pub fn json(&self) -> Option<Value> {
        let text = self.stdout.trim();
        (!text.is_empty()).then(|| serde_json::from_str(text).expect("hook stdout is JSON"))
    }
}

impl HookHome {
    /// A fresh home talking to `base_url` with `api_key`; the sidecar is off unless a test
    /// turns it on.
    pub fn new(base_url: &str, api_key: &str) -> HookHome {
        let home =
            std::env::temp_dir().join(format!("baton-hook-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&home).expect("hook home");
        let env = vec![
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            ("HOME".to_string(), home.display().to_string()),
            (
                "BATON_HOOK_HOME".to_string(),
                home.join(".baton").display().to_string(),
            ),
            ("BATON_URL".to_string(), base_url.to_string()),
            ("BATON_API_KEY".to_string(), api_key.to_string()),
            ("BATON_HOOK_SIDECAR".to_string(), "off".to_string()),
        ];
        HookHome { home, env }
    }

    /// Sets (or replaces) one environment variable for every later run.
    pub fn set(&mut self, name: &str, value: &str) {
        self.env.retain(|(key, _)| key != name);
        self.env.push((name.to_string(), value.to_string()));
    }

    pub fn state_dir(&self) -> PathBuf {
        self.home.join(".baton")
    }

    pub fn spool_dir(&self) -> PathBuf {
        self.state_dir().join("spool")
    }

    /// The spooled entries not yet answered, oldest first: the rotated batches past their
    /// recorded progress, then the journal.
    pub fn spooled(&self) -> Vec<Value> {
        spooled_at(&self.spool_dir())
    }

    /// As [`HookHome::spooled`], for the usage context's spool (delivery records, flushes).
    pub fn usage_spooled(&self) -> Vec<Value> {
        spooled_at(&self.state_dir().join("usage").join("spool"))
    }

    /// A command for `baton-hook <args>` in this home's environment.
    /// Starts `drain` `kills` times and SIGKILLs each a little later than the last (15 ms, then
    /// 3 ms more each time); returns how many kills landed mid-way: the drain had sent
    /// something through `proxy` and left something spooled.
    pub async fn kill_drains(
        &self,
        proxy: &crate::recording_proxy::RecordingProxy,
        kills: u64,
    ) -> usize {
        let mut mid_way = 0;
        for kill in 0..kills {
            let before = proxy.count();
            let mut drain = self.command(&["drain"]).spawn().expect("drain");
            tokio::time::sleep(Duration::from_millis(15 + kill * 3)).await;
            drain.start_kill().expect("SIGKILL");
            let _ = drain.wait().await;
            if proxy.count() > before && !self.spooled().is_empty() {
                mid_way += 1;
            }
        }
        mid_way
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary("baton-hook"));
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().cloned());
        command
    }

    /// A command for any program in this home's environment (a stand-in client that runs the
    /// hook the way its harness does).
    pub fn command_for(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.env_clear().envs(self.env.iter().cloned());
        command
    }

    /// The same command for blocking callers (the latency benchmark).
    pub fn std_command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(binary("baton-hook"));
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().cloned());
        command
    }

    /// Runs `baton-hook <args>` with `payload` on stdin, and waits.
    pub async fn run(&self, args: &[&str], payload: &Value) -> HookRun {
        self.run_with(args, payload, &[]).await
    }

    /// As [`HookHome::run`], with extra environment for this run only.
    pub async fn run_with(
        &self,
        args: &[&str],
        payload: &Value,
        extra: &[(&str, &str)],
    ) -> HookRun {
        let started = Instant::now();
        let mut child = self
            .command(args)
            .envs(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn baton-hook");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(payload.to_string().as_bytes())
            .await
            .expect("write payload");
        drop(stdin);
        let output = child.wait_with_output().await.expect("baton-hook ran");
        HookRun {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            elapsed: started.elapsed(),
        }
    }

    /// The local log's lines.
    pub fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.state_dir().join("hook.log"))
            .map(|text| text.lines().map(str::to_string).collect())
            .unwrap_or_default()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.home.join(relative)
    }
}

impl Drop for HookHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// The newline-terminated lines of a spool file, as the drain counts them.
fn complete_lines(text: &str) -> impl Iterator<Item = &str> {
    let end = text.rfind('\n').unwrap_or(0);
    text[..end].split('\n')
}

fn parse_line(line: &str) -> Value {
    serde_json::from_str(line).expect("spool line is JSON")
}

/// A recorded Claude Code payload from `fixtures/hook-payloads/<source>/<file>.json`
/// (each file is an array of real deliveries).
pub fn fixture(source: &str, file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/hook-payloads")
        .join(source)
        .join(format!("{file}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("fixture {}", path.display()));
    serde_json::from_str(&text).expect("fixture is a JSON array")
}

/// Runs `baton-hook usage ARGS --json` with exactly `env` (plus `PATH`) and returns its report;
/// panics with both streams when it fails or prints no JSON.
pub async fn usage_report(args: &[&str], env: &[(&str, &Path)]) -> Value {
    let mut command = Command::new(binary("baton-hook"));
    command
        .arg("usage")
        .args(args)
        .arg("--json")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(name, value)| (*name, *value)))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("baton-hook usage finished within a minute")
        .expect("run baton-hook usage");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "baton-hook usage {args:?} failed: {stdout}\n{stderr}"
    );
    serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!("baton-hook usage {args:?} printed no JSON report ({error}): {stdout}\n{stderr}")
    })
}

/// The unanswered entries of the spool in `dir`, oldest first.
fn spooled_at(dir: &Path) -> Vec<Value> {
    let mut batches: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| {
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    name.starts_with("batch-") && !name.ends_with(".done")
                })
                .collect()
        })
        .unwrap_or_default();
    batches.sort();
    let mut entries = Vec::new();
    for batch in batches {
        let done: usize = std::fs::read_to_string(format!("{}.done", batch.display()))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        let text = std::fs::read_to_string(&batch).unwrap_or_default();
        entries.extend(
            complete_lines(&text)
                .skip(done)
                .filter(|line| !line.is_empty())
                .map(parse_line),
        );
    }
    let journal = std::fs::read_to_string(dir.join("journal")).unwrap_or_default();
    entries.extend(
        complete_lines(&journal)
            .filter(|line| !line.is_empty())
            .map(parse_line),
    );
    entries
}
