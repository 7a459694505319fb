-- The console's one list of sessions pages usage's sessions newest-started first (merged with
-- the registry's newest-opened-first list): a keyset scan on the first activity, as
-- sessions_by_activity serves the last-activity listing.
CREATE INDEX sessions_by_first_activity
    ON usage.sessions (tenant_id, first_activity_at, agent, session_id);
