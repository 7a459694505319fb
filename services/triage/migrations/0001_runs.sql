-- Triage state per session run: the Stop handshake's status, the attempt in flight and who
-- holds it, the watermark (the set of event ids accounted for) and a bounded attempt log. A run
-- without a row has never been triaged and reads as idle.
CREATE TABLE triage.runs (
    tenant_id      uuid        NOT NULL,
    session_run_id uuid        NOT NULL,
    status         text        NOT NULL CHECK (status IN ('idle', 'pending', 'completed', 'expired', 'overflowed')),
    attempt_id     uuid        NULL,
    attempt_holder text        NULL CHECK (attempt_holder IN ('hook', 'closer')),
    armed_at       timestamptz NULL,
    -- A set of event ids, never a timestamp or an id order (seed 000 layer 4). At most 500.
    watermark      uuid[]      NOT NULL DEFAULT '{}' CHECK (cardinality(watermark) <= 500),
    -- Attempts ever armed by the hook (the log below keeps the newest 50).
    attempts_armed integer     NOT NULL DEFAULT 0,
    -- The registry epoch a closer claim was taken at (the closer's fence).
    claim_epoch    bigint      NULL,
    updated_at     timestamptz NOT NULL,
    CONSTRAINT runs_pkey PRIMARY KEY (tenant_id, session_run_id)
);

-- The interactive attempt log: appended by an arm, finalized by the complete that finishes it.
-- Closer claims are not logged. Bounded: only the newest 50 per run are kept.
CREATE TABLE triage.attempts (
    tenant_id      uuid        NOT NULL,
    session_run_id uuid        NOT NULL,
    attempt_id     uuid        NOT NULL,
    armed_at       timestamptz NOT NULL,
    finalized_at   timestamptz NULL,
    outcome        text        NULL CHECK (outcome IN ('completed', 'expired', 'overflowed')),
    CONSTRAINT attempts_pkey PRIMARY KEY (tenant_id, session_run_id, attempt_id),
    CONSTRAINT attempts_run_fk FOREIGN KEY (tenant_id, session_run_id)
        REFERENCES triage.runs (tenant_id, session_run_id)
);

CREATE INDEX attempts_by_run ON triage.attempts (tenant_id, session_run_id, armed_at, attempt_id);

ALTER TABLE triage.runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE triage.runs FORCE ROW LEVEL SECURITY;
ALTER TABLE triage.attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE triage.attempts FORCE ROW LEVEL SECURITY;

CREATE POLICY runs_tenant ON triage.runs
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY attempts_tenant ON triage.attempts
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON triage.runs TO baton_triage;
-- DELETE only to trim the attempt log to its newest 50 entries.
GRANT SELECT, INSERT, UPDATE, DELETE ON triage.attempts TO baton_triage;
