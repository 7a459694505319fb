//! A stand-in harness client: a process whose name is the harness's (`codex`, `cursor-agent`,
//! `claude`) that runs the hooks a test queues the way that harness would — through a
//! non-exec'ing `/bin/sh -c` or directly as its own child — and otherwise just lives, until the
//! test SIGKILLs it or tells it to exit.
//!
//! It is a POSIX shell script named after the harness: the kernel names a script's process
//! after the script (`comm`), which is what the hook's ancestry walk reads, and `--version`
//! answers like the real client, which is what the sidecar's version probe runs.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::Value;
use tokio::process::Child;

use crate::binary;
use crate::hook::HookHome;

/// How the stand-in starts each hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// `/bin/sh -c "<hook> <args>; exit $?"`: a shell that cannot exec the hook stays its
    /// parent and exits right after it (Debian's dash does not exec even a lone command).
    Shell,
    /// The client forks and execs the hook itself: the client is the hook's parent.
    Direct,
}

const SCRIPT: &str = r#"#!/bin/sh
# Stand-in harness client (see tests/src/client_standin.rs).
if [ "$1" = "--version" ]; then echo "$BATON_STANDIN_VERSION"; exit 0; fi
dir=$(dirname "$0"); hook="$1"; launch="$2"; n=0
while :; do
  if [ -e "$dir/$n.args" ]; then
    args=$(cat "$dir/$n.args")
    if [ "$args" = "exit" ]; then exit 0; fi
    if [ "$launch" = shell ]; then
      /bin/sh -c "$hook $args; exit \$?" < "$dir/$n.json" > "$dir/$n.tmp"
    else
      $hook $args < "$dir/$n.json" > "$dir/$n.tmp"
    fi
    mv "$dir/$n.tmp" "$dir/$n.out"
    n=$((n + 1))
  else
    sleep 0.05
  fi
done
"#;

/// A running stand-in client.
pub struct StandIn {
    child: Child,
    dir: PathBuf,
    step: usize,
}

impl StandIn {
    /// Starts a client named `name` (answering `--version` with `version`) in `home`'s
    /// environment, launching hooks the `launch` way.
    pub fn spawn(home: &HookHome, name: &str, version: &str, launch: Launch) -> StandIn {
        let dir = std::env::temp_dir().join(format!("client-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("stand-in folder");
        let script = dir.join(name);
        std::fs::write(&script, SCRIPT).expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let hook = binary("baton-hook");
        let launch = match launch {
            Launch::Shell => "shell",
            Launch::Direct => "direct",
        };
        let child = home
            .command_for(&script)
            .arg(&hook)
            .arg(launch)
            .env("BATON_STANDIN_VERSION", version)
            .process_group(0)
            .kill_on_drop(true)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("stand-in client");
        StandIn {
            child,
            dir,
            step: 0,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    fn queue(&mut self, args: &str, payload: &Value) -> PathBuf {
        let n = self.step;
        self.step += 1;
        std::fs::write(self.dir.join(format!("{n}.json")), payload.to_string()).expect("payload");
        let tmp = self.dir.join(format!("{n}.args.tmp"));
        std::fs::write(&tmp, args).expect("args");
        std::fs::rename(&tmp, self.dir.join(format!("{n}.args"))).expect("queue");
        self.dir.join(format!("{n}.out"))
    }

    /// Has the client run `baton-hook <args>` with `payload`; returns what it printed.
    pub async fn hook(&mut self, args: &[&str], payload: &Value) -> String {
        let out = self.queue(&args.join(" "), payload);
        let started = Instant::now();
        while !out.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the stand-in never ran {args:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        std::fs::read_to_string(&out).expect("hook output")
    }

    /// SIGKILL to the client's whole process group, then reap it (a zombie still looks alive).
    pub async fn kill(&mut self) {
        let pid = self.pid() as i32;
        nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL).expect("SIGKILL the client");
        let _ = self.child.wait().await;
    }

    /// Tells the client to exit normally, and waits.
    pub async fn exit(&mut self) {
        let empty = Value::Null;
        self.queue("exit", &empty);
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
