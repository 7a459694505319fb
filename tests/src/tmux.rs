//! A private tmux server for driving a harness's real interactive screen: keys typed as a
//! person types them, the screen read back. A bare pseudo-terminal is not enough for these
//! clients: they query the terminal (device attributes, colours, keyboard protocol) and wait
//! for answers tmux gives.

use std::time::{Duration, Instant};

use tokio::process::Command;

/// One window on a server of its own (socket named per test), killed on drop.
pub struct Tmux {
    pub socket: String,
    window: String,
}

impl Tmux {
    pub fn new(window: &str) -> Tmux {
        Tmux {
            socket: format!("baton-{window}-{}", uuid::Uuid::new_v4().simple()),
            window: window.to_string(),
        }
    }

    /// Arguments for `tmux` that start the server with a 200×50 window running
    /// `program_line`; the caller's command carries the environment the program gets.
    pub fn start_args(&self, program_line: &str) -> Vec<String> {
        [
            "-L",
            &self.socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            &self.window,
            "-x",
            "200",
            "-y",
            "50",
            program_line,
        ]
        .iter()
        .map(|arg| arg.to_string())
        .collect()
    }

    pub async fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .await
            .expect("tmux (scripts/install-harnesses.sh installs it)");
        assert!(output.status.success(), "tmux {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    pub async fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", &self.window]).await
    }

    /// Waits (at most a minute) until the screen shows `text`.
    pub async fn until_screen_shows(&self, text: &str) {
        let started = Instant::now();
        loop {
            let screen = self.screen().await;
            if screen.contains(text) {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the screen never showed {text:?}:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Types `line`, waits until the screen echoes it, then presses Enter (sent apart, so the
    /// client does not take the whole as a paste).
    pub async fn enter(&self, line: &str) {
        self.run(&["send-keys", "-t", &self.window, "-l", line])
            .await;
        self.until_screen_shows(line).await;
        self.run(&["send-keys", "-t", &self.window, "C-m"]).await;
    }
}

impl Tmux {
    /// Types `command` (the harness's own way out, `/exit` or `/quit`) and waits, at most
    /// `limit`, until the program has exited: its only window, and with it this private server,
    /// is gone. A harness's way out can take long on a loaded machine; what a test then holds
    /// Baton to is counted from this event.
    ///
    /// An Enter can be lost to a completion menu drawn between the echo and the key. A person
    /// whose command still sits on the prompt after a while presses Enter again; so does this,
    /// at most twice and only while a line of the screen still holds the command after a prompt
    /// glyph, so an exit under way is never typed into. On failure the message carries the
    /// screen and `diagnose()` (the harness's own log, say).
    pub async fn exit_with(&self, command: &str, limit: Duration, diagnose: impl Fn() -> String) {
        self.enter(command).await;
        let started = Instant::now();
        let mut pressed_at = Instant::now();
        let mut presses = 1;
        loop {
            if !self.alive().await {
                return;
            }
            if started.elapsed() >= limit {
                panic!(
                    "the program never exited after {command} ({presses} Enter presses):\n{}\n{}",
                    self.screen().await,
                    diagnose()
                );
            }
            if presses < 3
                && pressed_at.elapsed() > Duration::from_secs(20)
                && holds_on_prompt(&self.screen().await, command)
            {
                self.run(&["send-keys", "-t", &self.window, "C-m"]).await;
                presses += 1;
                pressed_at = Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Submits `command` again when the program has not taken it: presses Enter when it still
    /// sits on the prompt (the first Enter went to a completion menu), types it again when the
    /// prompt is back to its empty `placeholder` (the program dropped it), and does nothing
    /// while neither shows (the program is busy with it).
    pub async fn resubmit(&self, command: &str, placeholder: &str) {
        let screen = self.screen().await;
        if screen.contains(placeholder) {
            self.enter(command).await;
        } else if holds_on_prompt(&screen, command) {
            self.run(&["send-keys", "-t", &self.window, "C-m"]).await;
        }
    }

    async fn alive(&self) -> bool {
        Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null", "has-session"])
            .output()
            .await
            .is_ok_and(|output| output.status.success())
    }
}

/// Whether a line of `screen` holds `command` right after a prompt glyph (`❯ /exit`, `> /quit`):
/// the command typed and not yet taken.
fn holds_on_prompt(screen: &str, command: &str) -> bool {
    screen.lines().any(|line| {
        let mut rest = line.trim_start().chars();
        rest.next()
            .is_some_and(|glyph| !glyph.is_alphanumeric() && glyph != '/')
            && rest.as_str().trim_start().starts_with(command)
    })
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

#[cfg(test)]
mod tests {
    use super::holds_on_prompt;

    #[test]
    fn a_command_counts_as_held_only_right_after_a_prompt_glyph() {
        let cases = [
            ("❯ /exit [print]", true),
            ("  ❯ /exit", true),
            ("> /quit", true),
            ("/exit", false),
            ("You typed /exit earlier", false),
            ("❯ hello /exit", false),
            ("", false),
        ];
        for (screen, held) in cases {
            let command = if screen.contains("quit") {
                "/quit"
            } else {
                "/exit"
            };
            assert_eq!(holds_on_prompt(screen, command), held, "{screen:?}");
        }
    }
}
