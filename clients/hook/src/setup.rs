//! `baton-hook install` and `uninstall`: the human-facing commands around [`crate::install`].

use std::path::PathBuf;
use std::time::Duration;

use crate::claims;
use crate::config::Env;
use crate::harness::Harness;
use crate::install::{self, InstallOptions, Outcome, Scope, Target};

const USAGE: &str = "usage: baton-hook install|uninstall \
                     --harness claude-code|codex|cursor|gemini|copilot \
                     [--scope user|project] [--project-dir DIR] [--nudge]";

fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|arg| arg == flag)
        .and_then(|index| args.get(index + 1))
        .map(String::as_str)
}

fn target(env: &Env, args: &[String]) -> Result<Target, String> {
    let harness = value(args, "--harness")
        .and_then(Harness::parse)
        .ok_or_else(|| USAGE.to_string())?;
    let scope = match value(args, "--scope").unwrap_or("user") {
        "user" => Scope::User,
        "project" => Scope::Project,
        _ => return Err(USAGE.to_string()),
    };
    let project_dir = match value(args, "--project-dir") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_dir().map_err(|error| error.to_string())?,
    };
    let moved_home = install::home_variable(harness)
        .and_then(|name| env.get(name))
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let settings_path = install::settings_path(
        harness,
        scope,
        &env.home(),
        &project_dir,
        moved_home.as_deref(),
    );
    Ok(Target {
        harness,
        scope,
        settings_path,
    })
}

/// Runs install or uninstall; the process exit code.
pub fn run(command: &str, args: &[String]) -> i32 {
    let env = Env::capture();
    let target = match target(&env, args) {
        Ok(target) => target,
        Err(message) => {
            eprintln!("{message}");
            return 2;
        }
    };
    let state_dir = env.state_dir();
    let result = if command == "install" {
        let exe = std::env::current_exe()
            .and_then(|exe| exe.canonicalize())
            .map(|exe| exe.display().to_string());
        let Ok(exe) = exe else {
            eprintln!("baton-hook: cannot tell where this binary is");
            return 1;
        };
        let options = InstallOptions {
            command: shell_quote(&exe),
            nudge: args.iter().any(|arg| arg == "--nudge"),
            state_dir: state_dir.clone(),
        };
        install::install(&target, &options)
    } else {
        let result = install::uninstall(&target, &state_dir);
        let stopped = claims::stop_all(&state_dir, Duration::from_secs(3));
        if stopped > 0 {
            println!("stopped {stopped} liveness sidecar(s)");
        }
        result
    };
    match result {
        Ok(outcome) => {
            let path = target.settings_path.display();
            match outcome {
                Outcome::Installed => println!("installed Baton's hooks in {path}"),
                Outcome::AlreadyInstalled => println!("Baton's hooks are already in {path}"),
                Outcome::Uninstalled => println!("removed Baton's hooks from {path}"),
                Outcome::NotInstalled => println!("no Baton hooks in {path}"),
            }
            if command == "install" {
                println!("{}", install::trust_step(&target));
            }
            0
        }
        Err(error) => {
            eprintln!("baton-hook: {error}");
            1
        }
    }
}

/// Quotes a path for the harness's shell when it needs it.
fn shell_quote(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoting() {
        assert_eq!(
            super::shell_quote("/usr/bin/baton-hook"),
            "/usr/bin/baton-hook"
        );
        assert_eq!(
            super::shell_quote("/My Apps/baton-hook"),
            "'/My Apps/baton-hook'"
        );
        assert_eq!(
            super::shell_quote("/a'b/baton-hook"),
            r"'/a'\''b/baton-hook'"
        );
    }
}
