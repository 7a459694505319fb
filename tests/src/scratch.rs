//! A real client's scratch: a home and a project folder of the test's own and the exact
//! environment the client and `baton-hook` run in; kept when the test fails, so the client's
//! files and Baton's hook log can be read.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, Command};

use crate::binary;
use crate::tmux::Tmux;

/// A scratch home and project folder with the environment a client runs in.
pub struct Scratch {
    pub root: PathBuf,
    harness: String,
    env: Vec<(String, String)>,
}

impl Scratch {
    /// Makes `<temp>/baton-<harness>-real-<uuid>` with `home` and `project` folders; the
    /// environment is `PATH`, `HOME` and `env`.
    pub fn new(harness: &str, env: &[(&str, &str)]) -> Scratch {
        let root = std::env::temp_dir().join(format!(
            "baton-{harness}-real-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(root.join("home")).expect("home");
        std::fs::create_dir_all(root.join("project")).expect("project");
        let mut all = vec![
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            ("HOME".to_string(), root.join("home").display().to_string()),
        ];
        all.extend(
            env.iter()
                .map(|(name, value)| (name.to_string(), value.to_string())),
        );
        Scratch {
            root,
            harness: harness.to_string(),
            env: all,
        }
    }

    /// Points Baton's hooks at `baton_url` with `api_key`, the stop nudge on and the
    /// sidecar pulsing every 200 ms.
    pub fn reporting_to(mut self, baton_url: &str, api_key: &str) -> Scratch {
        for (name, value) in [
            ("BATON_URL", baton_url),
            ("BATON_API_KEY", api_key),
            ("BATON_STOP_NUDGE", "1"),
            ("BATON_HOOK_PULSE_INTERVAL_MS", "200"),
        ] {
            self.env.push((name.to_string(), value.to_string()));
        }
        self
    }

    /// The client's home folder.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// `program` in the project folder with exactly the scratch environment and no stdin.
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(self.root.join("project"))
            .env_clear()
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null());
        command
    }

    /// `program ARGS`, started in its own process group with its output piped, not waited
    /// for (killed when dropped).
    pub fn spawn(&self, program: &Path, args: &[&str]) -> Child {
        self.command(program)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("{}: {error}", program.display()))
    }

    /// Starts `tmux`'s server with the scratch environment, a terminal type and `env`; its
    /// window runs `program_line` in the project folder.
    pub async fn start_tmux(&self, tmux: &Tmux, program_line: &str, env: &[(&str, &str)]) {
        let started = self
            .command(Path::new("tmux"))
            .args(tmux.start_args(program_line))
            .env("TERM", "xterm-256color")
            .envs(env.iter().copied())
            .output()
            .await
            .expect("tmux");
        assert!(started.status.success(), "{started:?}");
    }

    /// `baton-hook ARGS`, which must succeed; its stdout.
    pub async fn baton_hook(&self, args: &[&str]) -> String {
        let output = self
            .command(&binary("baton-hook"))
            .args(args)
            .output()
            .await
            .expect("baton-hook");
        assert!(output.status.success(), "{args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `baton-hook VERB --harness HARNESS --scope user ARGS` for this scratch's harness.
    pub async fn user_hooks(&self, verb: &str, args: &[&str]) -> String {
        let mut all = vec![verb, "--harness", self.harness.as_str(), "--scope", "user"];
        all.extend(args);
        self.baton_hook(&all).await
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}: scratch kept in {}", self.harness, self.root.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
