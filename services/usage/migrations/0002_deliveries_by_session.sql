-- A delivery needs no stored session; its status evidence (the latest UserPromptSubmit and
-- Stop) is read per session when the session's facts arrive, through this index.
CREATE INDEX hook_deliveries_by_session
    ON usage.hook_deliveries (tenant_id, agent, session_id, event, observed_at);
