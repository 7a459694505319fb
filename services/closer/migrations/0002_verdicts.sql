-- Every verdict of a pass, with its evidence: one row per (pass, briefed commitment).
-- `evidence` is a JSON array of {"quote", "source": "excerpt" | "memory", "memoryId"?}; quotes
-- are verbatim slices of the session's last message or of a memory the run wrote (bounded by
-- the pass), kept so a user can see why a commitment was resolved and undo it.

CREATE TABLE closer.verdicts (
    tenant_id        uuid        NOT NULL,
    session_run_id   uuid        NOT NULL,
    activation_epoch bigint      NOT NULL,
    memory_id        uuid        NOT NULL,
    -- judged-done: the judge found it completed (a resolve follows); resolved: the closer
    -- resolved it; skipped: found completed but no longer open at the live re-read;
    -- not-done: the judge left it open.
    verdict          text        NOT NULL CHECK (verdict IN ('judged-done', 'resolved', 'skipped', 'not-done')),
    -- completed, or why not (no-claim, negation, deferral, plan, other-entity, ...).
    reason           text        NOT NULL CHECK (char_length(reason) <= 40),
    judge            text        NOT NULL CHECK (char_length(judge) <= 40),
    evidence         jsonb       NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(evidence) = 'array'),
    resolved_at      timestamptz NULL,
    created_at       timestamptz NOT NULL,
    CONSTRAINT verdicts_pkey PRIMARY KEY (tenant_id, session_run_id, activation_epoch, memory_id),
    CONSTRAINT verdicts_pass FOREIGN KEY (tenant_id, session_run_id, activation_epoch)
        REFERENCES closer.passes (tenant_id, session_run_id, activation_epoch)
);

-- The report's scan by time.
CREATE INDEX verdicts_by_time ON closer.verdicts (tenant_id, created_at);

ALTER TABLE closer.verdicts ENABLE ROW LEVEL SECURITY;
ALTER TABLE closer.verdicts FORCE ROW LEVEL SECURITY;
CREATE POLICY verdicts_tenant ON closer.verdicts
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON closer.verdicts TO baton_closer;
