-- The registry's transactional outbox: registry.session.closed and registry.session.resurrected
-- are written here in the same transaction as the change they report; a relay publishes them
-- with publisher confirms and deletes each row only after its confirm. Infrastructure rather
-- than tenant data (the envelope carries the tenant), and read across tenants by the relay, so
-- no row-level security: the runtime role may only insert.
CREATE TABLE registry.outbox (
    id          uuid        NOT NULL,
    routing_key text        NOT NULL,
    envelope    jsonb       NOT NULL,
    headers     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL,
    CONSTRAINT outbox_pkey PRIMARY KEY (id)
);

CREATE INDEX outbox_order ON registry.outbox (created_at, id);

-- The sweep's two scans: open rows by staleness, and closed rows still holding an excerpt.
CREATE INDEX agent_sessions_open_by_last_seen
    ON registry.agent_sessions (last_seen_at)
    WHERE closed_at IS NULL;
CREATE INDEX agent_sessions_excerpt_by_last_seen
    ON registry.agent_sessions (last_seen_at)
    WHERE closed_at IS NOT NULL AND last_message_excerpt IS NOT NULL;

GRANT INSERT ON registry.outbox TO baton_registry;

-- The maintenance role (BYPASSRLS; the sweep and the relay, never the request path).
GRANT SELECT, UPDATE ON registry.agent_sessions TO baton_registry_maint;
-- UPDATE because the relay takes rows FOR UPDATE SKIP LOCKED (it never changes them).
GRANT SELECT, INSERT, UPDATE, DELETE ON registry.outbox TO baton_registry_maint;
