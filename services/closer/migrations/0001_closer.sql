-- The closer's bookkeeping: one pass per (session run, activation epoch), generation metering,
-- per-tenant budgets, and the inbox of processed message ids.

CREATE TABLE closer.passes (
    tenant_id        uuid        NOT NULL,
    session_run_id   uuid        NOT NULL,
    activation_epoch bigint      NOT NULL,
    state            text        NOT NULL CHECK (state IN ('queued', 'running', 'finished', 'failed')),
    outcome          text        NULL CHECK (outcome IN ('fenced', 'claim-lost', 'not-eligible',
                         'nothing-briefed', 'completed', 'overflowed', 'refused', 'failed',
                         'not-found', 'not-closed')),
    -- The triage attempt this pass claimed (to recognise its own finished write-back after a crash).
    attempt_id       uuid        NULL,
    resolved         integer     NOT NULL DEFAULT 0,
    rejected         integer     NOT NULL DEFAULT 0,
    failures         integer     NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NULL,
    -- Bounded, never memory content: an error kind for operators.
    last_error       text        NULL CHECK (char_length(last_error) <= 300),
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    CONSTRAINT passes_pkey PRIMARY KEY (tenant_id, session_run_id, activation_epoch)
);

-- The sweep's retry scan, across tenants.
CREATE INDEX passes_due ON closer.passes (next_attempt_at) WHERE state = 'failed';

CREATE TABLE closer.budgets (
    tenant_id            uuid   NOT NULL,
    monthly_token_limit  bigint NOT NULL CHECK (monthly_token_limit >= 0),
    CONSTRAINT budgets_pkey PRIMARY KEY (tenant_id)
);

-- Generation metering: a reservation before a call, a usage record after it; the reservation
-- is released either way. Over budget, nothing is reserved and nothing is billed.
CREATE TABLE closer.usage (
    tenant_id        uuid        NOT NULL,
    id               uuid        NOT NULL,
    session_run_id   uuid        NOT NULL,
    activation_epoch bigint      NOT NULL,
    kind             text        NOT NULL CHECK (kind IN ('reservation', 'usage')),
    tokens           bigint      NOT NULL CHECK (tokens >= 0),
    created_at       timestamptz NOT NULL,
    released_at      timestamptz NULL,
    CONSTRAINT usage_pkey PRIMARY KEY (tenant_id, id)
);

CREATE INDEX usage_by_month ON closer.usage (tenant_id, created_at);

-- Message ids already handled (consumers are idempotent on them). Not tenant data.
CREATE TABLE closer.inbox (
    message_id   uuid        NOT NULL,
    processed_at timestamptz NOT NULL,
    CONSTRAINT inbox_pkey PRIMARY KEY (message_id)
);

ALTER TABLE closer.passes ENABLE ROW LEVEL SECURITY;
ALTER TABLE closer.passes FORCE ROW LEVEL SECURITY;
ALTER TABLE closer.budgets ENABLE ROW LEVEL SECURITY;
ALTER TABLE closer.budgets FORCE ROW LEVEL SECURITY;
ALTER TABLE closer.usage ENABLE ROW LEVEL SECURITY;
ALTER TABLE closer.usage FORCE ROW LEVEL SECURITY;

CREATE POLICY passes_tenant ON closer.passes
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY budgets_tenant ON closer.budgets
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY usage_tenant ON closer.usage
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON closer.passes TO baton_closer;
GRANT SELECT ON closer.budgets TO baton_closer;
GRANT SELECT, INSERT, UPDATE ON closer.usage TO baton_closer;
GRANT SELECT, INSERT ON closer.inbox TO baton_closer;

-- The maintenance role finds due passes across tenants for the sweep.
GRANT SELECT ON closer.passes TO baton_closer_maint;
