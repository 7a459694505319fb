-- Process episodes and the /clear successor link (DESIGN section 5, seed 004).
--
-- One native session can span several client processes (resume starts a new one); one process
-- can host several sessions in turn (/clear mints a new session id in the same process). An
-- episode is one (session, process) lifetime as the liveness sidecar reports it.

ALTER TABLE registry.agent_sessions ADD COLUMN follows_run_id uuid NULL;

CREATE TABLE registry.process_episodes (
    tenant_id      uuid        NOT NULL,
    id             uuid        NOT NULL,
    session_run_id uuid        NOT NULL,
    client         text        NOT NULL,
    client_version text        NULL,
    host_client    text        NULL,
    host_id        text        NOT NULL,
    pid            bigint      NOT NULL CHECK (pid > 0),
    started_at     timestamptz NOT NULL,
    last_pulse_at  timestamptz NOT NULL,
    ended_at       timestamptz NULL,
    end_reason     text        NULL
        CHECK (end_reason IN ('process_exited', 'session_closed', 'stopped')),
    CONSTRAINT process_episodes_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT process_episodes_session FOREIGN KEY (tenant_id, session_run_id)
        REFERENCES registry.agent_sessions (tenant_id, id)
);

CREATE INDEX process_episodes_by_session
    ON registry.process_episodes (tenant_id, session_run_id, started_at DESC);

ALTER TABLE registry.process_episodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE registry.process_episodes FORCE ROW LEVEL SECURITY;

CREATE POLICY process_episodes_tenant ON registry.process_episodes
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON registry.process_episodes TO baton_registry;
