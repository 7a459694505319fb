//! `baton-hook usage` arguments and where the transcripts are.

use std::path::PathBuf;

use chrono::NaiveDate;
use chrono_tz::Tz;

use crate::config::Env;

/// Which report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Daily,
    Session,
    Blocks,
    Models,
    Tree(String),
}

/// A parsed `usage` command line.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageArgs {
    pub report: Report,
    pub since: Option<NaiveDate>,
    pub until: Option<NaiveDate>,
    pub timezone: Tz,
    pub project: Option<String>,
    pub json: bool,
    /// Read everything again instead of going on from the checkpoints.
    pub no_cache: bool,
}

pub const USAGE: &str = "usage: baton-hook usage <daily|session|blocks|models|tree SESSION_ID> \
[--since YYYY-MM-DD] [--until YYYY-MM-DD] [--timezone IANA_ZONE] [--project SLUG] [--json] [--no-cache]";

/// Parses the words after `usage`; the error is one line for the user.
pub fn parse(words: &[String], env: &Env) -> Result<UsageArgs, String> {
    let mut words = words.iter();
    let report = match words.next().map(String::as_str) {
        Some("daily") => Report::Daily,
        Some("session") => Report::Session,
        Some("blocks") => Report::Blocks,
        Some("models") => Report::Models,
        Some("tree") => match words.next() {
            Some(id) if !id.starts_with("--") => Report::Tree(id.clone()),
            _ => return Err("tree needs a session id".to_string()),
        },
        Some(other) => return Err(format!("unknown report {other:?}")),
        None => return Err("which report?".to_string()),
    };
    let mut parsed = UsageArgs {
        report,
        since: None,
        until: None,
        timezone: default_timezone(env),
        project: None,
        json: false,
        no_cache: false,
    };
    while let Some(word) = words.next() {
        let (flag, inline) = match word.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_string())),
            None => (word.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| words.next().cloned())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag {
            "--json" => parsed.json = true,
            "--no-cache" => parsed.no_cache = true,
            "--since" => parsed.since = Some(date(&value("--since")?)?),
            "--until" => parsed.until = Some(date(&value("--until")?)?),
            "--timezone" | "--tz" => {
                let zone = value("--timezone")?;
                parsed.timezone = zone
                    .parse::<Tz>()
                    .map_err(|_| format!("unknown timezone {zone:?}"))?;
            }
            "--project" => parsed.project = Some(value("--project")?),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if let (Some(since), Some(until)) = (parsed.since, parsed.until)
        && since > until
    {
        return Err("--since is after --until".to_string());
    }
    Ok(parsed)
}

/// `YYYY-MM-DD` or ccusage's `YYYYMMDD`.
fn date(text: &str) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .or_else(|_| NaiveDate::parse_from_str(text, "%Y%m%d"))
        .map_err(|_| format!("not a date: {text:?} (YYYY-MM-DD)"))
}

/// `TZ` when it names a zone, else the system's zone, else UTC.
fn default_timezone(env: &Env) -> Tz {
    env.get("TZ")
        .map(|zone| zone.trim_start_matches(':'))
        .and_then(|zone| zone.parse::<Tz>().ok())
        .or_else(|| {
            iana_time_zone::get_timezone()
                .ok()
                .and_then(|zone| zone.parse::<Tz>().ok())
        })
        .unwrap_or(Tz::UTC)
}

/// The folders read, as Claude Code and ccusage find them: `$CLAUDE_CONFIG_DIR/projects` for
/// each entry of that comma-separated list when set, else `~/.claude/projects` and
/// `~/.config/claude/projects`; plus `$CODEX_HOME/sessions` or `~/.codex/sessions`; plus Gemini
/// CLI's `tmp/` under its home: `$GEMINI_CLI_HOME` stands in for the home folder when set (as
/// in Gemini CLI's own `homedir()`), and under macOS's `sandbox-exec` the client keeps its chats
/// in `<home>/.cache/.gemini` instead (`Storage.getGlobalRuntimeDir`), so both are read; plus
/// Copilot CLI's `$COPILOT_HOME/session-state`, else `~/.copilot/session-state` (its `help
/// environment`: `COPILOT_HOME` replaces `~/.copilot`).
pub fn roots(env: &Env) -> baton_transcripts::Roots {
    let home = env.home();
    let claude = match env.get("CLAUDE_CONFIG_DIR") {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| PathBuf::from(entry).join("projects"))
            .collect(),
        None => vec![
            home.join(".claude/projects"),
            home.join(".config/claude/projects"),
        ],
    };
    let codex = vec![
        env.get("CODEX_HOME")
            .map_or_else(|| home.join(".codex"), PathBuf::from)
            .join("sessions"),
    ];
    let gemini_home = env
        .get("GEMINI_CLI_HOME")
        .filter(|value| !value.is_empty())
        .map_or_else(|| home.clone(), PathBuf::from);
    let gemini = vec![
        gemini_home.join(".gemini/tmp"),
        gemini_home.join(".cache/.gemini/tmp"),
    ];
    let copilot = vec![
        env.get("COPILOT_HOME")
            .filter(|value| !value.is_empty())
            .map_or_else(|| home.join(".copilot"), PathBuf::from)
            .join("session-state"),
    ];
    baton_transcripts::Roots {
        claude,
        codex,
        gemini,
        copilot,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn flags_parse_in_both_spellings() {
        let env = Env::from_pairs(&[("TZ", "UTC")]);
        let parsed = parse(
            &words("daily --since 2026-02-01 --until=20260228 --timezone Europe/Paris --json"),
            &env,
        )
        .unwrap();
        assert_eq!(parsed.since, NaiveDate::from_ymd_opt(2026, 2, 1));
        assert_eq!(parsed.until, NaiveDate::from_ymd_opt(2026, 2, 28));
        assert_eq!(parsed.timezone, chrono_tz::Europe::Paris);
        assert!(parsed.json);
    }

    #[test]
    fn bad_input_is_one_clear_line() {
        let env = Env::from_pairs(&[]);
        assert_eq!(
            parse(&words("weekly"), &env).unwrap_err(),
            "unknown report \"weekly\""
        );
        assert!(
            parse(&words("daily --timezone Mars/Base"), &env)
                .unwrap_err()
                .contains("timezone")
        );
        assert!(
            parse(&words("daily --since 2026-13-01"), &env)
                .unwrap_err()
                .contains("not a date")
        );
        assert!(parse(&words("daily --since 2026-02-02 --until 2026-02-01"), &env).is_err());
        assert!(parse(&words("tree"), &env).is_err());
    }

    #[test]
    fn roots_follow_claude_config_dir_list() {
        let env = Env::from_pairs(&[
            ("HOME", "/h"),
            ("CLAUDE_CONFIG_DIR", "/a, /b"),
            ("CODEX_HOME", "/c"),
        ]);
        let found = roots(&env);
        assert_eq!(
            found.claude,
            vec![PathBuf::from("/a/projects"), PathBuf::from("/b/projects")]
        );
        assert_eq!(found.codex, vec![PathBuf::from("/c/sessions")]);
        let env = Env::from_pairs(&[("HOME", "/h")]);
        let found = roots(&env);
        assert_eq!(
            found.claude,
            vec![
                PathBuf::from("/h/.claude/projects"),
                PathBuf::from("/h/.config/claude/projects")
            ]
        );
        assert_eq!(found.codex, vec![PathBuf::from("/h/.codex/sessions")]);
    }

    #[test]
    fn gemini_root_follows_gemini_cli_home() {
        // (environment, the first Gemini root)
        let cases: [(&[(&str, &str)], &str); 3] = [
            (&[("HOME", "/h")], "/h/.gemini/tmp"),
            (
                &[("HOME", "/h"), ("GEMINI_CLI_HOME", "/g")],
                "/g/.gemini/tmp",
            ),
            (&[("HOME", "/h"), ("GEMINI_CLI_HOME", "")], "/h/.gemini/tmp"),
        ];
        for (pairs, expected) in cases {
            let found = roots(&Env::from_pairs(pairs));
            assert_eq!(found.gemini[0], PathBuf::from(expected), "{pairs:?}");
            assert_eq!(found.gemini.len(), 2);
        }
    }

    #[test]
    fn copilot_root_follows_copilot_home() {
        // (environment, the Copilot root)
        let cases: [(&[(&str, &str)], &str); 3] = [
            (&[("HOME", "/h")], "/h/.copilot/session-state"),
            (
                &[("HOME", "/h"), ("COPILOT_HOME", "/c")],
                "/c/session-state",
            ),
            (
                &[("HOME", "/h"), ("COPILOT_HOME", "")],
                "/h/.copilot/session-state",
            ),
        ];
        for (pairs, expected) in cases {
            let found = roots(&Env::from_pairs(pairs));
            assert_eq!(found.copilot, vec![PathBuf::from(expected)], "{pairs:?}");
        }
    }
}
