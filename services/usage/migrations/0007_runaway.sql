-- Runaway sessions (issue 24, item 3): a session whose spend over a sliding window passes the
-- tenant's limit, or whose main agent keeps working past a limit with no user prompt, is
-- flagged once per episode. An episode opens when the condition is first seen and closes when
-- an upload finds it no longer holds; at most one open episode per session and reason (the
-- partial unique index), so concurrent uploads raise one usage.runaway.flagged between them.
CREATE TABLE usage.runaway_policies (
    tenant_id          uuid        NOT NULL,
    window_minutes     integer     NOT NULL CHECK (window_minutes BETWEEN 1 AND 1440),
    -- USD × 10⁶.
    spend_micros       bigint      NOT NULL CHECK (spend_micros > 0),
    unattended_minutes integer     NOT NULL CHECK (unattended_minutes BETWEEN 1 AND 10080),
    updated_at         timestamptz NOT NULL,
    CONSTRAINT runaway_policies_pkey PRIMARY KEY (tenant_id)
);

CREATE TABLE usage.runaway_episodes (
    tenant_id  uuid           NOT NULL,
    agent      text           NOT NULL,
    session_id text           NOT NULL,
    reason     text           NOT NULL CHECK (reason IN ('spend', 'unattended')),
    started_at timestamptz    NOT NULL,
    ended_at   timestamptz    NULL,
    -- 10⁻¹⁵ USD: the window's spend (spend) or the spend since the last prompt (unattended).
    spent      numeric(40, 0) NOT NULL,
    CONSTRAINT runaway_episodes_pkey PRIMARY KEY (tenant_id, agent, session_id, reason, started_at)
);
CREATE UNIQUE INDEX runaway_episodes_open
    ON usage.runaway_episodes (tenant_id, agent, session_id, reason) WHERE ended_at IS NULL;
CREATE INDEX runaway_episodes_open_by_tenant
    ON usage.runaway_episodes (tenant_id, started_at) WHERE ended_at IS NULL;

ALTER TABLE usage.runaway_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.runaway_policies FORCE ROW LEVEL SECURITY;
ALTER TABLE usage.runaway_episodes ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.runaway_episodes FORCE ROW LEVEL SECURITY;

CREATE POLICY runaway_policies_tenant ON usage.runaway_policies
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY runaway_episodes_tenant ON usage.runaway_episodes
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON usage.runaway_policies TO baton_usage;
GRANT SELECT, INSERT, UPDATE ON usage.runaway_episodes TO baton_usage;
