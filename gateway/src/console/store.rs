//! Console sessions in `gateway.console_sessions`: created by signing in with a console key,
//! looked up by the SHA-256 of the cookie's token, revoked by signing out. A session is good
//! until it expires, is revoked, or its key is revoked or its tenant deleted — whichever comes
//! first, checked on every request.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

/// How long a console session lasts after sign-in.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 60 * 60);

/// A signed-in session as a request sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSession {
    pub tenant_id: Uuid,
    pub csrf_token: String,
    pub token_sha256: Vec<u8>,
}

/// A new session: the cookie's token (never stored) and the session's CSRF token.
#[derive(Debug, Clone)]
pub struct Created {
    pub token: String,
    pub csrf_token: String,
}

/// 32 random bytes, URL-safe base64 (43 characters).
fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The stored form of a cookie token.
pub fn digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Whether `text` has the shape of a token this module minted (checked before any look-up).
pub fn well_formed(text: &str) -> bool {
    text.len() == 43
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// Opens a session for a verified console key; sweeps sessions expired a day ago.
#[tracing::instrument(name = "db.gateway.console_sign_in", skip_all)]
pub async fn create(
    pool: &PgPool,
    tenant_id: Uuid,
    key_prefix: &str,
) -> Result<Created, sqlx::Error> {
    let created = Created {
        token: random_token(),
        csrf_token: random_token(),
    };
    sqlx::query!(
        "DELETE FROM gateway.console_sessions WHERE expires_at < now() - interval '1 day'"
    )
    .execute(pool)
    .await?;
    sqlx::query!(
        "INSERT INTO gateway.console_sessions \
           (token_sha256, tenant_id, key_prefix, csrf_token, expires_at) \
         VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))",
        digest(&created.token),
        tenant_id,
        key_prefix,
        created.csrf_token,
        SESSION_TTL.as_secs_f64(),
    )
    .execute(pool)
    .await?;
    Ok(created)
}

/// The live session behind a cookie token, if any.
#[tracing::instrument(name = "db.gateway.console_session", skip_all)]
pub async fn find(pool: &PgPool, token: &str) -> Result<Option<ConsoleSession>, sqlx::Error> {
    if !well_formed(token) {
        return Ok(None);
    }
    sqlx::query_as!(
        ConsoleSession,
        "SELECT s.tenant_id, s.csrf_token, s.token_sha256 \
         FROM gateway.console_sessions AS s \
         JOIN gateway.api_keys AS k ON k.prefix = s.key_prefix \
         JOIN gateway.tenants AS t ON t.id = s.tenant_id \
         WHERE s.token_sha256 = $1 AND s.revoked_at IS NULL AND s.expires_at > now() \
           AND k.revoked_at IS NULL AND t.deleted_at IS NULL",
        digest(token),
    )
    .fetch_optional(pool)
    .await
}

/// Ends a session (sign-out). Idempotent.
#[tracing::instrument(name = "db.gateway.console_sign_out", skip_all)]
pub async fn revoke(pool: &PgPool, token_sha256: &[u8]) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE gateway.console_sessions SET revoked_at = now() \
         WHERE token_sha256 = $1 AND revoked_at IS NULL",
        token_sha256,
    )
    .execute(pool)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_tokens_are_well_formed_and_distinct() {
        let (first, second) = (random_token(), random_token());
        assert!(well_formed(&first) && well_formed(&second));
        assert_ne!(first, second);
        assert_eq!(digest(&first).len(), 32);
        for bad in ["", "short", &"a".repeat(44), &format!("{}=", &first[..42])] {
            assert!(!well_formed(bad), "{bad}");
        }
    }
}
