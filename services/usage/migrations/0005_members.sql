-- Issue 24: members. An ingest key may speak for a member (a person); the gateway sends it
-- with every upload, and usage is attributed to it as it is to the uploading host.
-- '' is unattributed (a key without a member) and is never a member name. Constant defaults:
-- no table rewrite, and everything stored before this migration reads as unattributed. The
-- tables' row-level security and grants cover the new columns as they stand.

-- The member of the upload whose copy of the row is stored: it changes with `host_id` under
-- the collision rule, so a row's host and member are always those of one upload.
ALTER TABLE usage.token_usage
    ADD COLUMN member text NOT NULL DEFAULT '';

-- The members a session was uploaded by, accumulated like `host_ids` (sorted, at most 64);
-- '' is never stored, so a session only unattributed keys reported has none.
ALTER TABLE usage.sessions
    ADD COLUMN members text[] NOT NULL DEFAULT '{}';

-- Rollups are kept per member too, so `groupBy=member` reads whole buckets from them.
ALTER TABLE usage.rollups
    ADD COLUMN member text NOT NULL DEFAULT '',
    DROP CONSTRAINT rollups_pkey,
    ADD CONSTRAINT rollups_pkey
        PRIMARY KEY (tenant_id, bucket, model, project_slug, host_id, agent_kind, member);
