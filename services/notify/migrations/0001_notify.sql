-- Notify: a tenant's webhooks, one delivery per (webhook, alert message), and every attempt
-- made to deliver it.

-- The signing secret is stored as generated, in this tenant-scoped table: the service must
-- sign every attempt with it, so a one-way hash cannot serve, and an encryption key held by
-- the same process would guard against nothing this table's privileges do not (only the
-- runtime role reads it, under row-level security; the maintenance role has no grant on this
-- table). It is cleared when the webhook is deleted.
CREATE TABLE notify.webhooks (
    tenant_id  uuid        NOT NULL,
    id         uuid        NOT NULL,
    url        text        NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
    events     text[]      NOT NULL CHECK (cardinality(events) >= 1
                   AND events <@ ARRAY['budget.crossed', 'runaway.flagged']::text[]),
    format     text        NOT NULL CHECK (format IN ('baton', 'slack')),
    secret     text        NULL,
    created_at timestamptz NOT NULL,
    deleted_at timestamptz NULL,
    CONSTRAINT webhooks_secret_while_live CHECK ((deleted_at IS NULL) = (secret IS NOT NULL)),
    CONSTRAINT webhooks_pkey PRIMARY KEY (tenant_id, id)
);

CREATE INDEX webhooks_live ON notify.webhooks (tenant_id, created_at) WHERE deleted_at IS NULL;

-- One row per (webhook, bus message): the consumer inserts them in one transaction, and a
-- redelivered message finds its rows there already (`deliveries_once`). The body is rendered
-- once, so every attempt signs and sends the same bytes.
CREATE TABLE notify.deliveries (
    tenant_id       uuid        NOT NULL,
    id              uuid        NOT NULL,
    webhook_id      uuid        NOT NULL,
    event_id        uuid        NOT NULL,
    event           text        NOT NULL CHECK (event IN ('budget.crossed', 'runaway.flagged')),
    body            text        NOT NULL CHECK (octet_length(body) <= 65536),
    state           text        NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'cancelled')),
    attempts        integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- Set while pending: when the next attempt is due (or, while one is in flight, when its
    -- claim lapses and another worker may take it).
    next_attempt_at timestamptz NULL,
    created_at      timestamptz NOT NULL,
    settled_at      timestamptz NULL,
    CONSTRAINT deliveries_pending_is_scheduled CHECK ((state = 'pending') = (next_attempt_at IS NOT NULL)),
    CONSTRAINT deliveries_pkey PRIMARY KEY (tenant_id, id),
    CONSTRAINT deliveries_once UNIQUE (tenant_id, webhook_id, event_id),
    CONSTRAINT deliveries_webhook_fk FOREIGN KEY (tenant_id, webhook_id)
        REFERENCES notify.webhooks (tenant_id, id)
);

-- The worker's scan for due deliveries, across tenants.
CREATE INDEX deliveries_due ON notify.deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX deliveries_newest ON notify.deliveries (tenant_id, created_at DESC, id);

-- Every attempt: the receiver's status, or the class of the failure, how long it took.
CREATE TABLE notify.attempts (
    tenant_id   uuid        NOT NULL,
    delivery_id uuid        NOT NULL,
    number      integer     NOT NULL CHECK (number >= 1),
    at          timestamptz NOT NULL,
    duration_ms integer     NOT NULL CHECK (duration_ms >= 0),
    status_code integer     NULL CHECK (status_code BETWEEN 100 AND 599),
    error       text        NULL CHECK (error IN ('http_status', 'timeout', 'dns', 'connect',
                    'address_refused', 'invalid_url', 'request')),
    CONSTRAINT attempts_succeeded_or_say_why CHECK ((error IS NULL) = coalesce(status_code BETWEEN 200 AND 299, false)),
    CONSTRAINT attempts_pkey PRIMARY KEY (tenant_id, delivery_id, number),
    CONSTRAINT attempts_delivery_fk FOREIGN KEY (tenant_id, delivery_id)
        REFERENCES notify.deliveries (tenant_id, id)
);

ALTER TABLE notify.webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE notify.webhooks FORCE ROW LEVEL SECURITY;
ALTER TABLE notify.deliveries ENABLE ROW LEVEL SECURITY;
ALTER TABLE notify.deliveries FORCE ROW LEVEL SECURITY;
ALTER TABLE notify.attempts ENABLE ROW LEVEL SECURITY;
ALTER TABLE notify.attempts FORCE ROW LEVEL SECURITY;

CREATE POLICY webhooks_tenant ON notify.webhooks
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY deliveries_tenant ON notify.deliveries
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY attempts_tenant ON notify.attempts
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

-- No DELETE anywhere: a deleted webhook is marked, its history kept.
GRANT SELECT, INSERT ON notify.webhooks TO baton_notify;
GRANT UPDATE (secret, deleted_at) ON notify.webhooks TO baton_notify;
GRANT SELECT, INSERT ON notify.deliveries TO baton_notify;
GRANT UPDATE (state, attempts, next_attempt_at, settled_at) ON notify.deliveries TO baton_notify;
GRANT SELECT, INSERT ON notify.attempts TO baton_notify;

-- The maintenance role (BYPASSRLS) finds and claims due deliveries across tenants, and counts
-- the backlog: the scheduling columns only, never a body, a URL or a secret.
GRANT SELECT (tenant_id, id, state, attempts, next_attempt_at) ON notify.deliveries TO baton_notify_maint;
GRANT UPDATE (next_attempt_at) ON notify.deliveries TO baton_notify_maint;
