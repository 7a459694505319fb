-- The session row (DESIGN section 2): identity, lease, activation epoch, briefing bookkeeping
-- and the bounded excerpt. Triage state lives in the triage context, not here.
CREATE TABLE registry.agent_sessions (
    tenant_id             uuid        NOT NULL,
    id                    uuid        NOT NULL,
    agent                 text        NOT NULL,
    session_id            text        NOT NULL,
    source                text        NOT NULL CHECK (source IN ('startup', 'resume')),
    project               text        NULL,
    scope                 text        NULL,
    selector              jsonb       NOT NULL,
    opened_at             timestamptz NOT NULL,
    closed_at             timestamptz NULL,
    last_seen_at          timestamptz NOT NULL,
    activation_epoch      bigint      NOT NULL CHECK (activation_epoch >= 1),
    briefing_delivered_at timestamptz NULL,
    briefed_memories      jsonb       NOT NULL DEFAULT '[]'::jsonb,
    last_message_excerpt  text        NULL,
    CONSTRAINT agent_sessions_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT agent_sessions_natural_key UNIQUE (tenant_id, agent, session_id)
);

-- Open rows by project: the single-open default and the lease-expiry sweep read these.
CREATE INDEX agent_sessions_open_by_project
    ON registry.agent_sessions (tenant_id, project, last_seen_at)
    WHERE closed_at IS NULL;

ALTER TABLE registry.agent_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE registry.agent_sessions FORCE ROW LEVEL SECURITY;

-- The tenant comes from set_config('baton.tenant_id', ..., true) inside the transaction; with
-- no tenant set, no row is visible and no row can be written.
CREATE POLICY agent_sessions_tenant ON registry.agent_sessions
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

-- No DELETE: a close is an update.
GRANT SELECT, INSERT, UPDATE ON registry.agent_sessions TO baton_registry;
