-- The console (issue 11): keys carry one scope, and a console key signs in to a short-lived
-- session held here.
--
-- Scopes: `ingest` keys call the hook-facing API (`/api/v1`); `console` keys only sign in to
-- `/console`. Keys minted before scopes existed were `{read, write}`: they are ingest keys.
UPDATE gateway.api_keys SET scopes = ARRAY['ingest'] WHERE NOT (scopes && ARRAY['console']);
ALTER TABLE gateway.api_keys ALTER COLUMN scopes SET DEFAULT ARRAY['ingest'];
ALTER TABLE gateway.api_keys ADD CONSTRAINT api_keys_one_scope
    CHECK (scopes = ARRAY['ingest'] OR scopes = ARRAY['console']);

-- A signed-in console session. The cookie holds a random token; only its SHA-256 is stored, so a
-- read of this table signs nobody in. The CSRF token is per session and rendered into forms.
CREATE TABLE gateway.console_sessions (
    token_sha256 bytea       NOT NULL CHECK (octet_length(token_sha256) = 32),
    tenant_id    uuid        NOT NULL REFERENCES gateway.tenants (id),
    key_prefix   text        NOT NULL REFERENCES gateway.api_keys (prefix),
    csrf_token   text        NOT NULL CHECK (char_length(csrf_token) = 43),
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz NULL,
    CONSTRAINT console_sessions_pkey PRIMARY KEY (token_sha256),
    CONSTRAINT console_sessions_expiry CHECK (expires_at > created_at)
);

CREATE INDEX console_sessions_by_expiry ON gateway.console_sessions (expires_at);

GRANT SELECT, INSERT, DELETE ON gateway.console_sessions TO baton_gateway;
GRANT UPDATE (revoked_at) ON gateway.console_sessions TO baton_gateway;
