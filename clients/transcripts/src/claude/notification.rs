//! `<task-notification>` messages: how Claude Code tells the main agent that a background task
//! it started has stopped (a subagent launched with `run_in_background`, or a background shell).
//!
//! The message is an XML-like block of one tag per line, written by the client:
//!
//! ```text
//! <task-notification>
//! <task-id>a8f3c2e1b4d5f6a7</task-id>
//! <tool-use-id>toolu_01…</tool-use-id>
//! <output-file>…/a8f3c2e1b4d5f6a7.output</output-file>
//! <status>completed</status>
//! <summary>…</summary>
//! </task-notification>
//! ```
//!
//! It reaches the transcript twice: as the `content` of a `queue-operation` line (`enqueue`,
//! written on receipt) and as a `user` line once the agent takes it (seed 002's
//! `queue_operation` and `task_notification` join paths). When the task is a subagent, the
//! task id is its agent id and the tool-use id is the spawn call's: together they prove the
//! parent→child edge. A background shell's notification names a `Bash` call, which is no spawn,
//! so the tree never takes it for an agent. Only tags read as whole, non-empty values count; a
//! notification without both ids proves nothing.

/// What one notification states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskNotification<'a> {
    pub task_id: &'a str,
    pub tool_use_id: &'a str,
    /// `completed`, `failed`, `killed`, ... when stated.
    pub status: Option<&'a str>,
}

/// The notification in `text`, when it holds one with both ids.
pub fn parse(text: &str) -> Option<TaskNotification<'_>> {
    let start = text.find("<task-notification>")?;
    let body = &text[start..];
    let body = match body.find("</task-notification>") {
        Some(end) => &body[..end],
        None => body,
    };
    Some(TaskNotification {
        task_id: tag(body, "task-id")?,
        tool_use_id: tag(body, "tool-use-id")?,
        status: tag(body, "status"),
    })
}

/// The trimmed value of `<name>…</name>` in `body`, if present, non-empty and on one line.
fn tag<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let from = body.find(&open)? + open.len();
    let to = from + body[from..].find(&close)?;
    let value = body[from..to].trim();
    (!value.is_empty() && !value.contains(['\n', '<', '>'])).then_some(value)
}

/// Whether a notification status is an early end (anything but `completed`).
pub fn is_error(status: &str) -> bool {
    status != "completed"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications() {
        let full = "<task-notification>\n<task-id>a1b2</task-id>\n<tool-use-id>toolu_9</tool-use-id>\n<status>completed</status>\n<summary>done</summary>\n</task-notification>";
        type Found<'a> = Option<(&'a str, &'a str, Option<&'a str>)>;
        let cases: &[(&str, Found<'_>)] = &[
            (full, Some(("a1b2", "toolu_9", Some("completed")))),
            // Text before the block (a queued prompt wrapper) is ignored.
            (
                "Background work ended. <task-notification><task-id>x</task-id><tool-use-id>t</tool-use-id><status>killed</status></task-notification>",
                Some(("x", "t", Some("killed"))),
            ),
            // Without a status the edge is still proven.
            (
                "<task-notification>\n<task-id>x</task-id>\n<tool-use-id>t</tool-use-id>\n",
                Some(("x", "t", None)),
            ),
            // A notification with one id proves nothing.
            (
                "<task-notification>\n<task-id>bg1</task-id>\n<status>completed</status>",
                None,
            ),
            ("<task-notification>\n<tool-use-id>t</tool-use-id>", None),
            // Empty or broken values are not ids.
            (
                "<task-notification><task-id> </task-id><tool-use-id>t</tool-use-id>",
                None,
            ),
            (
                "<task-notification><task-id>a\nb</task-id><tool-use-id>t</tool-use-id>",
                None,
            ),
            (
                "<task-notification><task-id>a<tool-use-id>t</tool-use-id>",
                None,
            ),
            // Tags after the block's end belong to something else.
            (
                "<task-notification><task-id>a</task-id></task-notification><tool-use-id>t</tool-use-id>",
                None,
            ),
            ("plain prompt mentioning <task-id>a</task-id>", None),
        ];
        for (text, expected) in cases {
            let parsed = parse(text).map(|n| (n.task_id, n.tool_use_id, n.status));
            assert_eq!(parsed, *expected, "{text}");
        }
    }

    #[test]
    fn only_completed_is_a_clean_end() {
        assert!(!is_error("completed"));
        assert!(is_error("failed"));
        assert!(is_error("killed"));
    }
}
