-- Memories (curated atoms), their commitments, and the append-only event log that records every
-- write. Tenant first in every key; row-level security forced on every table.

CREATE TABLE provenance.memories (
    tenant_id      uuid        NOT NULL,
    id             uuid        NOT NULL,
    memory_type    text        NOT NULL CHECK (memory_type IN
                       ('decision', 'commitment', 'blocker', 'fact', 'preference', 'pattern', 'note', 'event')),
    topic          text        NOT NULL CHECK (char_length(topic) BETWEEN 1 AND 256),
    content        text        NOT NULL CHECK (char_length(content) BETWEEN 1 AND 2000),
    -- SHA-256 of the content: the duplicate check compares digests, never long text in an index.
    content_sha256 bytea       NOT NULL,
    scope          text        NOT NULL DEFAULT 'personal',
    project        text        NULL,
    tags           text[]      NOT NULL DEFAULT '{}',
    status         text        NOT NULL CHECK (status IN ('open', 'archived', 'superseded')),
    predecessor_id uuid        NULL,
    edge_intent    text        NULL CHECK (edge_intent IN ('supersedes', 'updates')),
    superseded_by  uuid        NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    valid_to       timestamptz NULL,
    CONSTRAINT memories_pkey PRIMARY KEY (tenant_id, id)
);

-- A live memory's content is unique per tenant, type and topic (409 duplicate_memory).
CREATE UNIQUE INDEX memories_live_content
    ON provenance.memories (tenant_id, memory_type, topic, content_sha256)
    WHERE status = 'open';

-- Briefing sections read open memories by type, newest first.
CREATE INDEX memories_open_by_type
    ON provenance.memories (tenant_id, memory_type, updated_at DESC)
    WHERE status = 'open';

CREATE TABLE provenance.commitments (
    tenant_id  uuid        NOT NULL,
    id         uuid        NOT NULL,
    memory_id  uuid        NOT NULL,
    status     text        NOT NULL CHECK (status IN ('open', 'waiting', 'resolved', 'expired')),
    due_at     timestamptz NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CONSTRAINT commitments_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT commitments_memory UNIQUE (tenant_id, memory_id),
    CONSTRAINT commitments_memory_fk FOREIGN KEY (tenant_id, memory_id)
        REFERENCES provenance.memories (tenant_id, id)
);

CREATE TABLE provenance.memory_events (
    tenant_id  uuid        NOT NULL,
    -- uuidv7: the typed read keysets on it.
    id         uuid        NOT NULL,
    memory_id  uuid        NOT NULL,
    event_kind text        NOT NULL CHECK (event_kind IN
                   ('create', 'revise', 'supersede', 'resolve', 'unresolve', 'archive', 'import', 'embed_failed')),
    actor_kind text        NOT NULL CHECK (actor_kind IN
                   ('user_dashboard', 'user_api', 'user_mcp', 'worker', 'importer', 'system')),
    payload    jsonb       NULL,
    -- The run the write's provenance payload names, kept as a stored column of that same
    -- expression (see memory_events_session_idx for why).
    session_run_id text GENERATED ALWAYS AS (payload->>'sessionRunId') STORED,
    created_at timestamptz NOT NULL,
    CONSTRAINT memory_events_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT memory_events_memory_fk FOREIGN KEY (tenant_id, memory_id)
        REFERENCES provenance.memories (tenant_id, id)
);

CREATE INDEX memory_events_by_memory ON provenance.memory_events (tenant_id, memory_id, id);

-- Seed 000 layer 2: a run's events without scanning the tenant's audit history; the reader
-- keysets on id. The key spelling must match the payload the write path stamps.
--
-- This is the seed's (tenant_id, (payload->>'sessionRunId'), id) index over the stored value of
-- that expression rather than over the expression itself, on purpose: under FORCE ROW LEVEL
-- SECURITY Postgres evaluates a query's non-leakproof operators only after the policy, so
-- `payload->>'sessionRunId' = $run` (jsonb_object_field_text is not leakproof) can never be an
-- index condition for the runtime role; the planner falls back to scanning the tenant's whole
-- history and filtering. Plain text equality on the stored column is leakproof, so the index
-- serves the read under RLS (checked by a test as the runtime role, and by `make bench`).
CREATE INDEX memory_events_session_idx
    ON provenance.memory_events (tenant_id, session_run_id, id)
    WHERE session_run_id IS NOT NULL;

ALTER TABLE provenance.memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE provenance.memories FORCE ROW LEVEL SECURITY;
ALTER TABLE provenance.commitments ENABLE ROW LEVEL SECURITY;
ALTER TABLE provenance.commitments FORCE ROW LEVEL SECURITY;
ALTER TABLE provenance.memory_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE provenance.memory_events FORCE ROW LEVEL SECURITY;

CREATE POLICY memories_tenant ON provenance.memories
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY commitments_tenant ON provenance.commitments
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY memory_events_tenant ON provenance.memory_events
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON provenance.memories TO baton_provenance;
GRANT SELECT, INSERT, UPDATE ON provenance.commitments TO baton_provenance;
-- Append-only: the runtime role may insert and read events, nothing else.
GRANT SELECT, INSERT ON provenance.memory_events TO baton_provenance;
