//! What a rollout's `session_meta` says about the thread that wrote it.
//!
//! `payload.source` is how the thread was started: a plain string for a thread a person or a
//! tool started (`cli`, `exec`, `vscode`, `mcp`, …), or `{"subagent": …}` for a thread another
//! thread started (Codex's `SessionSource::SubAgent`):
//!
//! | `source` | kind | parent |
//! |---|---|---|
//! | `"cli"`, `"exec"`, `"vscode"`, … | main | — |
//! | `{"subagent": {"thread_spawn": {"parent_thread_id": P, "depth": N, "agent_role": R, "agent_nickname": K}}}` | `thread_spawn` | P |
//! | `{"subagent": "review"}` | `review` | not named: proven by the parent's echo (see `review`) |
//! | `{"subagent": "compact"}`, `{"subagent": "memory_consolidation"}` | that word | not named |
//! | `{"subagent": {"other": "guardian"}}` | `guardian` (the `other` word) | not named |
//!
//! `payload.forked_from_id` names the thread a fork copied its history from; a fork's own
//! usage starts after that copy (see `replay`).

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// How a thread was started.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Origin {
    /// `None` for a main thread; else the subagent kind (`thread_spawn`, `review`,
    /// `guardian`, `compact`, …).
    pub subagent: Option<String>,
    /// The thread that started it, when the meta names it.
    pub parent_thread_id: Option<String>,
    /// `agent_role` (or `agent_nickname`) of a spawned thread.
    pub role: Option<String>,
    /// The plain source word of a main thread (`cli`, `exec`, …).
    pub source: Option<String>,
}

/// The `session_meta` fields Baton reads.
#[derive(Debug, Deserialize)]
pub struct MetaPayload<'a> {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub cli_version: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub forked_from_id: Option<String>,
    #[serde(borrow, default)]
    pub source: Option<&'a RawValue>,
}

/// Reads `payload.source` (absent or unreadable: a main thread of unknown source).
pub fn origin(source: Option<&RawValue>) -> Origin {
    let Some(value) = source.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok()) else {
        return Origin::default();
    };
    if let Value::String(word) = &value {
        return Origin {
            source: Some(word.clone()),
            ..Origin::default()
        };
    }
    let Some(subagent) = value.get("subagent").or_else(|| value.get("subAgent")) else {
        return Origin::default();
    };
    match subagent {
        Value::String(word) => Origin {
            subagent: Some(word.clone()),
            ..Origin::default()
        },
        Value::Object(map) => {
            if let Some(spawn) = map.get("thread_spawn") {
                let text = |key: &str| spawn.get(key).and_then(Value::as_str).map(str::to_string);
                Origin {
                    subagent: Some("thread_spawn".to_string()),
                    parent_thread_id: text("parent_thread_id"),
                    role: text("agent_role").or_else(|| text("agent_nickname")),
                    source: None,
                }
            } else if let Some(word) = map.get("other").and_then(Value::as_str) {
                Origin {
                    subagent: Some(word.to_string()),
                    ..Origin::default()
                }
            } else {
                Origin {
                    subagent: map.keys().next().cloned(),
                    ..Origin::default()
                }
            }
        }
        _ => Origin {
            subagent: Some("subagent".to_string()),
            ..Origin::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(source: &str) -> Origin {
        let raw: Box<RawValue> = serde_json::from_str(source).expect("json");
        origin(Some(&raw))
    }

    #[test]
    fn sources() {
        type Case<'a> = (
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let cases: &[Case<'_>] = &[
            // (source, subagent, parent, role, source word)
            (r#""cli""#, None, None, None, Some("cli")),
            (r#""exec""#, None, None, None, Some("exec")),
            (r#"{"subagent":"review"}"#, Some("review"), None, None, None),
            (
                r#"{"subagent":"compact"}"#,
                Some("compact"),
                None,
                None,
                None,
            ),
            (
                r#"{"subagent":{"other":"guardian"}}"#,
                Some("guardian"),
                None,
                None,
                None,
            ),
            (
                r#"{"subagent":{"thread_spawn":{"parent_thread_id":"p1","depth":1,"agent_role":"explorer"}}}"#,
                Some("thread_spawn"),
                Some("p1"),
                Some("explorer"),
                None,
            ),
            (
                r#"{"subagent":{"thread_spawn":{"parent_thread_id":"p1","agent_nickname":"Ada","agent_role":null}}}"#,
                Some("thread_spawn"),
                Some("p1"),
                Some("Ada"),
                None,
            ),
            (r#"{"something":"else"}"#, None, None, None, None),
            (r#"42"#, None, None, None, None),
        ];
        for (source, subagent, parent, role, word) in cases {
            let found = read(source);
            assert_eq!(
                (
                    found.subagent.as_deref(),
                    found.parent_thread_id.as_deref(),
                    found.role.as_deref(),
                    found.source.as_deref()
                ),
                (*subagent, *parent, *role, *word),
                "{source}"
            );
        }
        assert_eq!(origin(None), Origin::default());
    }
}
