-- The console's reads (ListSessions, ListMachines, the /clear successor) and a machine's
-- display label on pulses.

-- The label the machine's owner chose (the hook sends it only when configured). Validated at
-- the boundary (1..255 UTF-16 units, no control characters); the CHECK is the floor.
ALTER TABLE registry.process_episodes ADD COLUMN host_label text NULL
    CHECK (char_length(host_label) BETWEEN 1 AND 255);

-- ListSessions: newest opened first, keyset-paged on (opened_at, id).
CREATE INDEX agent_sessions_by_opened
    ON registry.agent_sessions (tenant_id, opened_at DESC, id DESC);

-- GetLiveness's successor: the newest session following a run.
CREATE INDEX agent_sessions_by_follows
    ON registry.agent_sessions (tenant_id, follows_run_id, opened_at DESC)
    WHERE follows_run_id IS NOT NULL;

-- ListMachines: the tenant's episodes pulsed since an instant, newest first.
CREATE INDEX process_episodes_by_last_pulse
    ON registry.process_episodes (tenant_id, last_pulse_at DESC);
