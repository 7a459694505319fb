-- Idempotence keys of spooled hook calls (issue 26, R11). The hook gives every line it spools
-- a key and sends it with each attempt as `Idempotency-Key`; the gateway records the keys of
-- calls it answered with success, so a line the drain sends again (killed after the send,
-- before it recorded its progress) is seen as a resend and counted. The calls themselves are
-- idempotent (a repeated close reads "already closed"): the record is what makes a resend
-- visible. Kept 14 days: each recording deletes up to 100 of its tenant's older keys.
CREATE TABLE gateway.call_keys (
    tenant_id  uuid        NOT NULL,
    key        uuid        NOT NULL,
    route      text        NOT NULL CHECK (char_length(route) BETWEEN 1 AND 200),
    first_at   timestamptz NOT NULL DEFAULT now(),
    last_at    timestamptz NOT NULL DEFAULT now(),
    resends    integer     NOT NULL DEFAULT 0 CHECK (resends >= 0),
    CONSTRAINT call_keys_pkey PRIMARY KEY (tenant_id, key)
);

CREATE INDEX call_keys_by_age ON gateway.call_keys (tenant_id, first_at);

ALTER TABLE gateway.call_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE gateway.call_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY call_keys_tenant ON gateway.call_keys
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, DELETE ON gateway.call_keys TO baton_gateway;
GRANT UPDATE (last_at, resends) ON gateway.call_keys TO baton_gateway;
