-- Who is calling. These two tables are the tenant directory itself: an API key is looked up by
-- its prefix before any tenant is known, so they carry no row-level security (unlike every
-- tenant-owned table). The runtime role can read keys and record their use; it cannot delete.
CREATE TABLE gateway.tenants (
    id         uuid        NOT NULL,
    name       text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    created_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz NULL,
    CONSTRAINT tenants_pkey PRIMARY KEY (id)
);

-- A key is `btn_<prefix>_<secret>`; only the prefix and SHA-256 of the secret are stored.
CREATE TABLE gateway.api_keys (
    prefix        text        NOT NULL,
    tenant_id     uuid        NOT NULL REFERENCES gateway.tenants (id),
    secret_sha256 bytea       NOT NULL CHECK (octet_length(secret_sha256) = 32),
    scopes        text[]      NOT NULL DEFAULT ARRAY['read', 'write'],
    created_at    timestamptz NOT NULL DEFAULT now(),
    revoked_at    timestamptz NULL,
    last_used_at  timestamptz NULL,
    CONSTRAINT api_keys_pkey PRIMARY KEY (prefix)
);

CREATE INDEX api_keys_by_tenant ON gateway.api_keys (tenant_id);

GRANT SELECT, INSERT ON gateway.tenants TO baton_gateway;
GRANT SELECT, INSERT ON gateway.api_keys TO baton_gateway;
GRANT UPDATE (last_used_at, revoked_at) ON gateway.api_keys TO baton_gateway;
GRANT UPDATE (deleted_at) ON gateway.tenants TO baton_gateway;
