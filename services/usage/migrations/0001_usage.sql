-- The usage context (seed 002): sessions, agent trees, token usage with its rollups, dated
-- prices and the immutable record of hook deliveries. Identifiers and counts only: no prompt,
-- message, tool input or output, and no path beyond the project slug ever reaches a column.
-- Tenant first in every key; every tenant table forces row-level security.

-- A session by its natural key. Hosts and client versions accumulate across uploads.
CREATE TABLE usage.sessions (
    tenant_id             uuid        NOT NULL,
    agent                 text        NOT NULL,
    session_id            text        NOT NULL,
    project_slug          text        NOT NULL,
    host_ids              text[]      NOT NULL DEFAULT '{}',
    client_versions       text[]      NOT NULL DEFAULT '{}' CHECK (cardinality(client_versions) <= 32),
    output_under_reported boolean     NOT NULL DEFAULT false,
    first_activity_at     timestamptz NULL,
    last_activity_at      timestamptz NULL,
    -- Raised monotonically by UserPromptSubmit and Stop deliveries (the status evidence).
    last_prompt_at        timestamptz NULL,
    last_stop_at          timestamptz NULL,
    CONSTRAINT sessions_pkey PRIMARY KEY (tenant_id, agent, session_id)
);

-- The session listing: newest activity first, keyset-paged (scanned backwards).
CREATE INDEX sessions_by_activity ON usage.sessions (tenant_id, last_activity_at, agent, session_id);

-- One agent of a session. The main agent is stored with agent_id '' (absent on the wire).
CREATE TABLE usage.agents (
    tenant_id         uuid        NOT NULL,
    agent             text        NOT NULL,
    session_id        text        NOT NULL,
    agent_id          text        NOT NULL,
    kind              text        NOT NULL CHECK (kind IN ('main', 'subagent', 'compaction')),
    parent_agent_id   text        NULL,
    subagent_type     text        NULL,
    spawn_tool        text        NULL,
    model             text        NULL,
    first_activity_at timestamptz NULL,
    last_activity_at  timestamptz NULL,
    -- Transcript evidence of an end; sticky once stored.
    ended             text        NULL CHECK (ended IN ('completed', 'error')),
    ended_at          timestamptz NULL,
    CONSTRAINT agents_pkey PRIMARY KEY (tenant_id, agent, session_id, agent_id),
    CONSTRAINT agents_main_has_no_id CHECK ((kind = 'main') = (agent_id = '')),
    CONSTRAINT agents_ended_has_time CHECK ((ended IS NULL) = (ended_at IS NULL)),
    CONSTRAINT agents_session_fk FOREIGN KEY (tenant_id, agent, session_id)
        REFERENCES usage.sessions (tenant_id, agent, session_id)
);

-- Parent → child, with the join path that proved it; the first proof stored wins.
-- parent_agent_id '' is the main agent.
CREATE TABLE usage.orchestration_edges (
    tenant_id       uuid NOT NULL,
    agent           text NOT NULL,
    session_id      text NOT NULL,
    parent_agent_id text NOT NULL,
    child_agent_id  text NOT NULL,
    join_path       text NOT NULL CHECK (join_path IN ('tool_result', 'agent_progress', 'meta_file',
                        'compaction', 'directory', 'legacy_sibling', 'inline_sidechain')),
    CONSTRAINT orchestration_edges_pkey
        PRIMARY KEY (tenant_id, agent, session_id, parent_agent_id, child_agent_id),
    CONSTRAINT edges_session_fk FOREIGN KEY (tenant_id, agent, session_id)
        REFERENCES usage.sessions (tenant_id, agent, session_id)
);

-- One model request after dedup. Cost in 10⁻¹⁵ USD; an unpriced row has cost 0 and
-- priced = false (its tokens are reported as unpriced, never as $0). The project, host and
-- agent kind are the row's rollup coordinates, fixed when the row is written.
CREATE TABLE usage.token_usage (
    tenant_id      uuid           NOT NULL,
    agent          text           NOT NULL,
    dedup_key      text           NOT NULL,
    session_id     text           NOT NULL,
    agent_id       text           NOT NULL,
    agent_kind     text           NOT NULL CHECK (agent_kind IN ('main', 'subagent', 'compaction')),
    project_slug   text           NOT NULL,
    host_id        text           NOT NULL,
    model          text           NULL,
    -- The normalised model id prices are looked up by (re-pricing finds rows by it).
    model_key      text           NULL,
    at             timestamptz    NOT NULL,
    input          bigint         NOT NULL CHECK (input >= 0),
    output         bigint         NOT NULL CHECK (output >= 0),
    cache_read     bigint         NOT NULL CHECK (cache_read >= 0),
    cache_write_5m bigint         NOT NULL CHECK (cache_write_5m >= 0),
    cache_write_1h bigint         NOT NULL CHECK (cache_write_1h >= 0),
    service_tier   text           NULL,
    speed          text           NULL,
    inference_geo  text           NULL,
    sidechain      boolean        NOT NULL,
    cost           numeric(40, 0) NOT NULL CHECK (cost >= 0),
    priced         boolean        NOT NULL,
    CONSTRAINT token_usage_pkey PRIMARY KEY (tenant_id, agent, dedup_key),
    CONSTRAINT token_usage_session_fk FOREIGN KEY (tenant_id, agent, session_id)
        REFERENCES usage.sessions (tenant_id, agent, session_id)
);

CREATE INDEX token_usage_by_session ON usage.token_usage (tenant_id, agent, session_id);
CREATE INDEX token_usage_by_time ON usage.token_usage (tenant_id, at);
CREATE INDEX token_usage_by_model ON usage.token_usage (model_key);

-- Per tenant × 15-minute UTC bucket × model × project × host × agent kind. Fifteen minutes
-- because every real zone's offset is a multiple of it, so any zone's day is a whole number
-- of buckets. Maintained in the upload's transaction; model '' stands for "no model".
CREATE TABLE usage.rollups (
    tenant_id       uuid           NOT NULL,
    bucket          timestamptz    NOT NULL,
    model           text           NOT NULL,
    project_slug    text           NOT NULL,
    host_id         text           NOT NULL,
    agent_kind      text           NOT NULL CHECK (agent_kind IN ('main', 'subagent', 'compaction')),
    input           bigint         NOT NULL,
    output          bigint         NOT NULL,
    cache_read      bigint         NOT NULL,
    cache_write_5m  bigint         NOT NULL,
    cache_write_1h  bigint         NOT NULL,
    requests        bigint         NOT NULL,
    cost            numeric(40, 0) NOT NULL,
    unpriced_tokens bigint         NOT NULL,
    CONSTRAINT rollups_pkey
        PRIMARY KEY (tenant_id, bucket, model, project_slug, host_id, agent_kind)
);

-- Dated prices: reference data shared by every tenant (no tenant column). Each row is one
-- row of the repository's price file, stored as written.
CREATE TABLE usage.model_pricing (
    model          text        NOT NULL,
    effective_from date        NOT NULL,
    row_json       jsonb       NOT NULL,
    loaded_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT model_pricing_pkey PRIMARY KEY (model, effective_from)
);

-- The immutable record of hook deliveries (seed 002): one identifier-only row each, any
-- event name. The runtime role may INSERT and SELECT only; retention deletes as maintenance.
CREATE TABLE usage.hook_deliveries (
    tenant_id   uuid        NOT NULL,
    delivery_id uuid        NOT NULL,
    agent       text        NOT NULL,
    session_id  text        NOT NULL,
    event       text        NOT NULL CHECK (event ~ '^[A-Za-z0-9_-]{1,64}$'),
    observed_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    host_id     text        NOT NULL,
    CONSTRAINT hook_deliveries_pkey PRIMARY KEY (tenant_id, delivery_id)
);

CREATE INDEX hook_deliveries_by_received ON usage.hook_deliveries (received_at);

-- One line per retention run: counts only, no tenant data.
CREATE TABLE usage.retention_runs (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ran_at              timestamptz NOT NULL,
    cutoff              timestamptz NOT NULL,
    deliveries_deleted  bigint      NOT NULL,
    statements          integer     NOT NULL,
    sessions_straddling bigint      NOT NULL
);

ALTER TABLE usage.sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE usage.agents ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.agents FORCE ROW LEVEL SECURITY;
ALTER TABLE usage.orchestration_edges ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.orchestration_edges FORCE ROW LEVEL SECURITY;
ALTER TABLE usage.token_usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.token_usage FORCE ROW LEVEL SECURITY;
ALTER TABLE usage.rollups ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.rollups FORCE ROW LEVEL SECURITY;
ALTER TABLE usage.hook_deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.hook_deliveries FORCE ROW LEVEL SECURITY;

CREATE POLICY sessions_tenant ON usage.sessions
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY agents_tenant ON usage.agents
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY edges_tenant ON usage.orchestration_edges
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY token_usage_tenant ON usage.token_usage
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY rollups_tenant ON usage.rollups
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY hook_deliveries_tenant ON usage.hook_deliveries
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON usage.sessions TO baton_usage;
GRANT SELECT, INSERT, UPDATE ON usage.agents TO baton_usage;
GRANT SELECT, INSERT ON usage.orchestration_edges TO baton_usage;
GRANT SELECT, INSERT, UPDATE ON usage.token_usage TO baton_usage;
GRANT SELECT, INSERT, UPDATE ON usage.rollups TO baton_usage;
GRANT SELECT ON usage.model_pricing TO baton_usage;
GRANT SELECT, INSERT ON usage.hook_deliveries TO baton_usage;

-- Retention: deliveries past the window, in bounded windows, and its journal.
GRANT SELECT, DELETE ON usage.hook_deliveries TO baton_usage_maint;
GRANT SELECT, INSERT ON usage.retention_runs TO baton_usage_maint;
