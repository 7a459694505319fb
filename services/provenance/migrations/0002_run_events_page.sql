-- One page of a run's typed events in ONE statement and one round trip (CONTRACT section 7,
-- table I): set the tenant for this statement's implicit transaction, take the run's first
-- 501 event ids through the session expression index (501 tells "more than 500"), keep the
-- first 500 visible, and return the page after the cursor plus one row more (which tells
-- whether another page follows). The first row always carries `total`, the number of ids seen
-- (at most 501); an empty page is a single row with NULL event columns. SECURITY INVOKER (the
-- default): row-level security applies as to any other query.
CREATE FUNCTION provenance.run_events_page(
    p_tenant_id uuid,
    p_session_run_id text,
    p_cursor uuid,
    p_limit integer
) RETURNS TABLE (
    total      bigint,
    id         uuid,
    memory_id  uuid,
    event_kind text,
    actor_kind text,
    created_at timestamptz
)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_catalog.set_config('baton.tenant_id', p_tenant_id::text, true);
    RETURN QUERY
    WITH firsts AS MATERIALIZED (
        SELECT e.id FROM provenance.memory_events e
         WHERE e.tenant_id = p_tenant_id AND e.session_run_id = p_session_run_id
         ORDER BY e.id LIMIT 501
    ), counted AS (
        SELECT count(*) AS total FROM firsts
    ), page AS (
        SELECT v.id FROM (SELECT f.id FROM firsts f ORDER BY f.id LIMIT 500) v
         WHERE p_cursor IS NULL OR v.id > p_cursor
         ORDER BY v.id LIMIT p_limit + 1
    )
    SELECT c.total, e.id, e.memory_id, e.event_kind, e.actor_kind, e.created_at
      FROM counted c
      LEFT JOIN (page p JOIN provenance.memory_events e
                   ON e.tenant_id = p_tenant_id AND e.id = p.id) ON true
     ORDER BY e.id;
END
$$;

REVOKE ALL ON FUNCTION provenance.run_events_page(uuid, text, uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION provenance.run_events_page(uuid, text, uuid, integer) TO baton_provenance;
