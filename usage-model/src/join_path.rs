//! How a parent→child edge of an agent tree was proved: the client finds it in a transcript,
//! the usage service checks the name on the wire and stores it with the edge.

use serde::{Deserialize, Serialize};

/// How a parent→child edge was established (the seed's "source join path").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum JoinPath {
    /// The spawn's `tool_result` carries `toolUseResult.agentId` (Claude Code), or the
    /// completed `invoke_agent` call in a Gemini CLI chat carries `agentId` (the tool's result
    /// data, recorded with the call).
    ToolResult,
    /// A parent `progress` line (`agent_progress`) names the agent and the spawn's id; in a
    /// Copilot CLI session log, the `subagent.started` line that names both.
    AgentProgress,
    /// The subagent's `agent-<id>.meta.json` names the spawn's `toolUseId`.
    MetaFile,
    /// A `<task-notification>` delivered to the parent as a `user` line names the agent (its
    /// task id) and the spawn's tool-use id (a background subagent's end).
    TaskNotification,
    /// The same notification in the `queue-operation` line that queued it.
    QueueOperation,
    /// A Codex subagent rollout's `session_meta.source.subagent` names its parent thread.
    CodexSource,
    /// A Codex review thread's usage events are echoed, with the same time and total, in the
    /// parent rollout between `entered_review_mode` and `exited_review_mode`.
    CodexReviewEcho,
    /// A compaction call (`agent-acompact-*`): its parent is the session's main agent.
    Compaction,
    /// Only the file's place in the session folder ties it to the session; the spawning call
    /// was not found, so the parent is the main agent.
    Directory,
    /// A pre-2.1.2 sibling `agent-*.jsonl` whose lines name the session.
    LegacySibling,
    /// Sidechain lines written inline in the main file by very old versions.
    InlineSidechain,
}

impl JoinPath {
    /// The name used in reports and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            JoinPath::ToolResult => "tool_result",
            JoinPath::AgentProgress => "agent_progress",
            JoinPath::MetaFile => "meta_file",
            JoinPath::TaskNotification => "task_notification",
            JoinPath::QueueOperation => "queue_operation",
            JoinPath::CodexSource => "codex_source",
            JoinPath::CodexReviewEcho => "codex_review_echo",
            JoinPath::Compaction => "compaction",
            JoinPath::Directory => "directory",
            JoinPath::LegacySibling => "legacy_sibling",
            JoinPath::InlineSidechain => "inline_sidechain",
        }
    }
}
