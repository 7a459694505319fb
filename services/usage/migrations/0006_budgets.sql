-- Budgets (issue 24, item 2): a USD limit per calendar month or day, cut in the budget's IANA
-- zone, for the whole tenant, one project or one member, with warning thresholds in percent.
-- Each threshold crossing of a period is recorded once (the primary key) in the transaction of
-- the upload whose usage made it so, together with its usage.budget.crossed message in the
-- outbox; a re-upload of the same facts or a concurrent upload cannot record it again.
CREATE TABLE usage.budgets (
    tenant_id    uuid        NOT NULL,
    id           uuid        NOT NULL,
    scope        text        NOT NULL CHECK (scope IN ('tenant', 'project', 'member')),
    subject      text        NULL CHECK ((scope = 'tenant') = (subject IS NULL)),
    period       text        NOT NULL CHECK (period IN ('month', 'day')),
    -- USD × 10⁶.
    limit_micros bigint      NOT NULL CHECK (limit_micros > 0),
    thresholds   integer[]   NOT NULL CHECK (cardinality(thresholds) BETWEEN 1 AND 10),
    timezone     text        NOT NULL,
    created_at   timestamptz NOT NULL,
    CONSTRAINT budgets_pkey PRIMARY KEY (tenant_id, id)
);

CREATE TABLE usage.budget_crossings (
    tenant_id     uuid           NOT NULL,
    budget_id     uuid           NOT NULL,
    -- The period's first local day, YYYY-MM-DD.
    period_start  text           NOT NULL,
    threshold     integer        NOT NULL,
    crossed_at    timestamptz    NOT NULL,
    -- The period's spend when seen, 10⁻¹⁵ USD (the rollups' unit).
    spent         numeric(40, 0) NOT NULL,
    CONSTRAINT budget_crossings_pkey PRIMARY KEY (tenant_id, budget_id, period_start, threshold),
    CONSTRAINT budget_crossings_budget FOREIGN KEY (tenant_id, budget_id)
        REFERENCES usage.budgets (tenant_id, id) ON DELETE CASCADE
);

-- The usage context's transactional outbox (usage.budget.crossed, usage.runaway.flagged):
-- infrastructure, read across tenants by the relay, so no row-level security; the runtime
-- role may only insert (as registry.outbox).
CREATE TABLE usage.outbox (
    id          uuid        NOT NULL,
    routing_key text        NOT NULL,
    envelope    jsonb       NOT NULL,
    headers     jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL,
    CONSTRAINT outbox_pkey PRIMARY KEY (id)
);
CREATE INDEX outbox_order ON usage.outbox (created_at, id);

ALTER TABLE usage.budgets ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.budgets FORCE ROW LEVEL SECURITY;
ALTER TABLE usage.budget_crossings ENABLE ROW LEVEL SECURITY;
ALTER TABLE usage.budget_crossings FORCE ROW LEVEL SECURITY;

CREATE POLICY budgets_tenant ON usage.budgets
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);
CREATE POLICY budget_crossings_tenant ON usage.budget_crossings
    USING (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('baton.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, DELETE ON usage.budgets TO baton_usage;
GRANT SELECT, INSERT ON usage.budget_crossings TO baton_usage;
GRANT INSERT ON usage.outbox TO baton_usage;
-- UPDATE because the relay takes rows FOR UPDATE SKIP LOCKED (it never changes them).
GRANT SELECT, INSERT, UPDATE, DELETE ON usage.outbox TO baton_usage_maint;
