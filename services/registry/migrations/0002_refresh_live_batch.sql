-- The heartbeat fast path for a batch of live refreshes in ONE statement and one round trip.
-- For each tenant in the batch in turn: set the tenant for this transaction, then floor the
-- lease (and store the excerpt when given) of every batch row that is LIVE at its own `now`.
-- Rows absent, closed or stale come back missing; their callers take the locked path, which
-- decides with the pure functions. SECURITY INVOKER (the default): row-level security applies
-- to each UPDATE exactly as to any other query. Callers send each natural key at most once and
-- sorted, so concurrent batches lock rows in the same order.
CREATE FUNCTION registry.refresh_live_batch(
    p_tenant_ids  uuid[],
    p_agents      text[],
    p_session_ids text[],
    p_nows        timestamptz[],
    p_cutoffs     timestamptz[],
    p_excerpts    text[]
) RETURNS TABLE (
    tenant_id        uuid,
    agent            text,
    session_id       text,
    id               uuid,
    activation_epoch bigint,
    last_seen_at     timestamptz
)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
    v_tenant uuid;
BEGIN
    FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenant_ids) AS t LOOP
        PERFORM pg_catalog.set_config('baton.tenant_id', v_tenant::text, true);
        RETURN QUERY
        UPDATE registry.agent_sessions AS s
           SET last_seen_at = greatest(s.last_seen_at, b.now),
               last_message_excerpt = coalesce(b.excerpt, s.last_message_excerpt)
          FROM unnest(p_tenant_ids, p_agents, p_session_ids, p_nows, p_cutoffs, p_excerpts)
               AS b (tenant_id, agent, session_id, now, cutoff, excerpt)
         WHERE b.tenant_id = v_tenant
           AND s.tenant_id = v_tenant
           AND s.agent = b.agent
           AND s.session_id = b.session_id
           AND s.closed_at IS NULL
           AND s.last_seen_at > b.cutoff
        RETURNING s.tenant_id, s.agent, s.session_id, s.id, s.activation_epoch, s.last_seen_at;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION registry.refresh_live_batch(uuid[], text[], text[], timestamptz[], timestamptz[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION registry.refresh_live_batch(uuid[], text[], text[], timestamptz[], timestamptz[], text[]) TO baton_registry;
