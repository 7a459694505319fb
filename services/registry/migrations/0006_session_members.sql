-- Members (issue 24): the people whose keys reported a session (open, heartbeat, pulse), at
-- most 32, in the order first seen. Empty: only keys without a member reported it
-- ("unattributed"). The console's session list filters on it.
ALTER TABLE registry.agent_sessions
    ADD COLUMN members text[] NOT NULL DEFAULT '{}'
        CONSTRAINT agent_sessions_members_bound CHECK (cardinality(members) <= 32);

CREATE INDEX agent_sessions_by_member ON registry.agent_sessions USING gin (members);
