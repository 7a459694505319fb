-- Issue 22: reasoning tokens and per-call server tools (web search, web fetch), carried from
-- the transcripts to every figure, and the four join paths the parsers now prove.

-- Reasoning is part of `output` (never added to a total); server-tool calls are billed per
-- call. `cost` stays the row's whole price (tokens and calls); `server_tool_cost` is the part
-- that is calls, and `unpriced_calls` the calls no dated row covered (never a confident $0).
-- Constant defaults: no table rewrite, and rows stored before this migration read as zero.
ALTER TABLE usage.token_usage
    ADD COLUMN reasoning           bigint         NOT NULL DEFAULT 0 CHECK (reasoning >= 0),
    ADD COLUMN web_search_requests bigint         NOT NULL DEFAULT 0 CHECK (web_search_requests >= 0),
    ADD COLUMN web_fetch_requests  bigint         NOT NULL DEFAULT 0 CHECK (web_fetch_requests >= 0),
    ADD COLUMN server_tool_cost    numeric(40, 0) NOT NULL DEFAULT 0 CHECK (server_tool_cost >= 0),
    ADD COLUMN unpriced_calls      bigint         NOT NULL DEFAULT 0 CHECK (unpriced_calls >= 0);

-- Re-pricing after a server-tool price import finds the rows that made calls through this
-- (few rows, so a small index).
CREATE INDEX token_usage_with_server_tools ON usage.token_usage (agent)
    WHERE web_search_requests > 0 OR web_fetch_requests > 0;

-- Rollups carry the same sums; deltas may be negative, so no sign check (as for the tokens).
ALTER TABLE usage.rollups
    ADD COLUMN reasoning           bigint         NOT NULL DEFAULT 0,
    ADD COLUMN web_search_requests bigint         NOT NULL DEFAULT 0,
    ADD COLUMN web_fetch_requests  bigint         NOT NULL DEFAULT 0,
    ADD COLUMN server_tool_cost    numeric(40, 0) NOT NULL DEFAULT 0,
    ADD COLUMN unpriced_calls      bigint         NOT NULL DEFAULT 0;

-- Dated per-call prices of server tools: reference data shared by every tenant (no tenant
-- column), like usage.model_pricing. Each row is one `serverTools` row of the repository's
-- price file, stored as written, one per (provider, tool, effectiveFrom).
CREATE TABLE usage.server_tool_pricing (
    provider       text        NOT NULL,
    tool           text        NOT NULL CHECK (tool IN ('web_search', 'web_fetch')),
    effective_from date        NOT NULL,
    row_json       jsonb       NOT NULL,
    loaded_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT server_tool_pricing_pkey PRIMARY KEY (provider, tool, effective_from)
);

GRANT SELECT ON usage.server_tool_pricing TO baton_usage;

-- The join paths seed 002 named and the Codex tree proves: task_notification and
-- queue_operation (Claude Code background subagents), codex_source and codex_review_echo.
ALTER TABLE usage.orchestration_edges
    DROP CONSTRAINT orchestration_edges_join_path_check,
    ADD CONSTRAINT orchestration_edges_join_path_check CHECK (join_path IN ('tool_result',
        'agent_progress', 'meta_file', 'task_notification', 'queue_operation', 'codex_source',
        'codex_review_echo', 'compaction', 'directory', 'legacy_sibling', 'inline_sidechain'));
