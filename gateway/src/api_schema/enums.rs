//! The closed sets of strings the API's fields hold. The gateway passes most of them through
//! as text (the service behind it decides and answers `invalid_input` with its own detail);
//! the document states the set the service accepts or writes.

use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};

// Sessions, liveness and triage.
choice!(
    /// A run's effective triage status.
    TriageStatus: "idle", "pending", "completed", "expired", "overflowed"
);
choice!(
    /// A session's liveness, derived from its lease and its sidecar's pulses.
    Liveness: "live", "idle", "disconnected", "closed"
);
choice!(
    /// Why a sidecar sent its last pulse.
    EndReason: "process_exited", "session_closed", "stopped"
);
choice!(
    /// A disconnected session's outcome: the client went away without an end.
    Outcome: "unknown"
);
choice!(
    /// Why `triage/begin` did not arm.
    BeginReason: "not-live", "terminal", "pending", "pending-fresh", "no-signal", "debounce",
    "overflowed"
);
choice!(
    /// How an armed attempt ended.
    AttemptOutcome: "completed", "expired", "overflowed"
);

// The closer.
choice!(
    /// Where a verdict's quote comes from.
    EvidenceSource: "excerpt", "memory"
);
choice!(
    /// The closer's verdict on one briefed commitment.
    Verdict: "judged-done", "resolved", "skipped", "not-done"
);
choice!(
    /// A closer pass's progress.
    PassState: "queued", "running", "finished", "failed"
);
choice!(
    /// How a finished closer pass ended.
    PassOutcome: "fenced", "claim-lost", "not-eligible", "nothing-briefed", "completed",
    "overflowed", "refused", "failed", "not-found", "not-closed"
);

// Memories and the briefing.
choice!(
    /// A memory's type.
    MemoryType: "decision", "commitment", "blocker", "fact", "preference", "pattern", "note",
    "event"
);
choice!(
    /// A provenance event's kind.
    EventKind: "create", "revise", "supersede", "resolve", "unresolve", "archive", "import",
    "embed_failed"
);
choice!(
    /// Who wrote a provenance event.
    ActorKind: "user_dashboard", "user_api", "user_mcp", "worker", "importer", "system"
);
choice!(
    /// A commitment's status.
    CommitmentStatus: "open", "waiting", "resolved", "expired"
);
choice!(
    /// The status a resolve leaves: a commitment's, or `archived` for a blocker.
    ResolvedStatus: "open", "waiting", "resolved", "expired", "archived"
);
choice!(
    /// An archived memory's status.
    Archived: "archived"
);
choice!(
    /// A memory's status.
    MemoryStatus: "open", "archived", "superseded"
);
choice!(
    /// The edge a revision draws to its predecessor.
    EdgeIntent: "supersedes", "updates"
);
choice!(
    /// A provenance payload's JSON type.
    JsonType: "object", "array", "string", "number", "boolean", "null"
);
choice!(
    /// Baton computes no embeddings.
    Embedded: "off"
);
choice!(
    /// A briefing selector's kind, as a query names it.
    SelectorKind: "all", "scope", "project", "scope_project"
);
choice!(
    /// How much of each item a briefing writes.
    BriefingMode: "brief", "full"
);
choice!(
    /// A briefing section.
    BriefingSection: "commitments", "overdue", "blockers", "staleCandidates",
    "recentDecisions", "preferences"
);

kind! {
    /// The sections a briefing query asks for, each once.
    BriefingSections => ArrayBuilder::new()
        .items(<BriefingSection as utoipa::PartialSchema>::schema())
        .unique_items(true)
}

// Usage.
choice!(
    /// An agent's kind in a run's tree.
    AgentKind: "main", "subagent", "compaction"
);
choice!(
    /// How an agent ended.
    AgentEnd: "completed", "error"
);
choice!(
    /// The evidence a tree edge was proved by.
    JoinPath: "tool_result", "agent_progress", "meta_file", "task_notification",
    "queue_operation", "codex_source", "codex_review_echo", "compaction", "directory",
    "legacy_sibling", "inline_sidechain"
);
choice!(
    /// An agent's status in a run's tree.
    AgentStatus: "working", "waiting", "completed", "error", "unknown"
);
choice!(
    /// Why a session is flagged as running away.
    RunawayReason: "spend", "unattended"
);
choice!(
    /// How `GET /usage` groups its figures.
    GroupBy: "day", "week", "month", "model", "project", "host", "session", "agentType",
    "member"
);
kind! {
    /// `runaway=true|false` of the session listing.
    RunawayFilter => ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["true", "false"]))
        .description(Some("true: only sessions flagged as running away now."))
}
kind! {
    /// `true`, always: delegation savings are a counterfactual.
    AlwaysTrue => ObjectBuilder::new().schema_type(Type::Boolean).enum_values(Some([true]))
}

// Budgets and webhooks.
choice!(
    /// Whose spend a budget limits.
    BudgetScope: "tenant", "project", "member"
);
choice!(
    /// A budget's calendar period.
    BudgetPeriod: "month", "day"
);
choice!(
    /// An alert a webhook can receive.
    WebhookEvent: "budget.crossed", "runaway.flagged"
);
choice!(
    /// A webhook's payload format.
    WebhookFormat: "baton", "slack"
);
choice!(
    /// A delivery's state.
    DeliveryState: "pending", "delivered", "failed", "cancelled"
);
choice!(
    /// Why a delivery attempt failed.
    DeliveryError: "http_status", "timeout", "dns", "connect", "address_refused",
    "invalid_url", "request"
);
