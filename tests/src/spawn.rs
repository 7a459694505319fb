//! Running `baton serve` as a child process: finding the binary, waiting until the services a
//! test needs have announced themselves, and keeping every line the process logs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Path of a workspace binary built alongside the caller: next to it (a benchmark binary in
/// `target/<profile>/`) or one level up (a test in `target/<profile>/deps/`).
pub fn binary(name: &str) -> PathBuf {
    let executable = std::env::current_exe().expect("executable path");
    let candidates = executable
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(name))
        .collect::<Vec<_>>();
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{name} is missing next to {}: run `cargo build --workspace --bins` (make test does)",
                executable.display()
            )
        })
}

/// The stdout lines of a spawned process, collected as they arrive.
#[derive(Debug, Clone, Default)]
pub struct Logs(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Logs {
    fn push(&self, line: &str) {
        self.0.lock().expect("logs").push(line.to_string());
    }

    /// The lines that are JSON objects, parsed.
    pub fn json(&self) -> Vec<Value> {
        self.0
            .lock()
            .expect("logs")
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }

    /// Every line, raw.
    pub fn raw(&self) -> Vec<String> {
        self.0.lock().expect("logs").clone()
    }
}

/// A process running some services, killed on drop.
pub struct ServiceProcess {
    pub(crate) child: Child,
    pub addresses: HashMap<String, String>,
    pub(crate) logs: Logs,
}

impl ServiceProcess {
    /// What the process has logged so far.
    pub fn logs(&self) -> &Logs {
        &self.logs
    }

    /// SIGKILL: no drain, no goodbye.
    pub async fn kill(mut self) {
        let _ = self.child.kill().await;
    }
}

/// What a spawned process must have logged before a test uses it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ready<'a> {
    /// The named service announced its address.
    Listening(&'a str),
    /// The named service announced its address and a bus consumer reported `consuming`.
    Consuming(&'a str),
}

/// Starts `baton serve ARGS` with exactly `env` and waits until the service named `last`
/// announced its address; returns the child and every announced address.
pub async fn spawn(
    args: &[&str],
    env: &[(String, String)],
    last: &str,
) -> (Child, HashMap<String, String>) {
    spawn_until(args, env, Ready::Listening(last)).await
}

/// As [`spawn`], also returning the process's stdout lines (its JSON logs) as they arrive.
pub async fn spawn_with_logs(
    args: &[&str],
    env: &[(String, String)],
    last: &str,
) -> (Child, HashMap<String, String>, Logs) {
    let logs = Logs::default();
    let (child, addresses) = spawn_logged(args, env, Ready::Listening(last), logs.clone()).await;
    (child, addresses, logs)
}

async fn spawn_until(
    args: &[&str],
    env: &[(String, String)],
    ready: Ready<'_>,
) -> (Child, HashMap<String, String>) {
    spawn_logged(args, env, ready, Logs::default()).await
}

pub(crate) async fn spawn_logged(
    args: &[&str],
    env: &[(String, String)],
    ready: Ready<'_>,
    logs: Logs,
) -> (Child, HashMap<String, String>) {
    let mut command = Command::new(binary("baton"));
    command
        .arg("serve")
        .args(args)
        .envs(env.iter().cloned())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    // Exactly the Baton settings the test chose: none leaks in from the caller (`make test`
    // exports BATON_SERVICE_TOKEN and BATON_DATABASE_URL for local runs).
    for (key, _) in std::env::vars() {
        if key.starts_with("BATON_") && !env.iter().any(|(given, _)| *given == key) {
            command.env_remove(&key);
        }
    }
    let mut child = command.spawn().expect("spawn baton serve");
    let stdout = child.stdout.take().expect("stdout");
    let addresses = tokio::time::timeout(Duration::from_secs(60), wait_for(stdout, ready, logs))
        .await
        .expect("baton announced its addresses in time");
    (child, addresses)
}

async fn wait_for(
    stdout: tokio::process::ChildStdout,
    ready: Ready<'_>,
    logs: Logs,
) -> HashMap<String, String> {
    let (last, needs_consumer) = match ready {
        Ready::Listening(service) => (service, false),
        Ready::Consuming(service) => (service, true),
    };
    let mut lines = BufReader::new(stdout).lines();
    let mut addresses = HashMap::new();
    let mut consuming = false;
    while let Ok(Some(line)) = lines.next_line().await {
        if std::env::var_os("TEST_LOG").is_some() {
            eprintln!("{line}");
        }
        logs.push(&line);
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if event["message"] == "consuming" {
            consuming = true;
        } else if event["message"] == "listening"
            && let (Some(service), Some(address)) =
                (event["service"].as_str(), event["addr"].as_str())
        {
            addresses.insert(service.to_string(), address.to_string());
        }
        if addresses.contains_key(last) && (consuming || !needs_consumer) {
            // Keep draining stdout so the child never blocks on a full pipe.
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    if std::env::var_os("TEST_LOG").is_some() {
                        eprintln!("{line}");
                    }
                    logs.push(&line);
                }
            });
            return addresses;
        }
    }
    panic!("baton exited before announcing {last}");
}
