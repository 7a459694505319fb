-- The closer report counts a tenant's writes since an instant: without this index that is a
-- scan of the tenant's whole history.
CREATE INDEX memory_events_by_time ON provenance.memory_events (tenant_id, created_at);
