-- Members (issue 24): an ingest key may speak for one person of the tenant. Everything the key
-- reports (session opens, heartbeats, pulses, usage uploads) is attributed to that member;
-- a key without one reports as "unattributed". The rule is baton_kit::member's: a handle or
-- an e-mail address, 1..64 characters, never the reserved word.
ALTER TABLE gateway.api_keys
    ADD COLUMN member text NULL
        CONSTRAINT api_keys_member_form CHECK (
            member ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$' AND lower(member) <> 'unattributed'
        );

-- The console's list of a tenant's keys and members.
CREATE INDEX api_keys_by_tenant_member ON gateway.api_keys (tenant_id, member);
