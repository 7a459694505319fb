//! Webhook secrets and the signature every delivery carries.
//!
//! # Verifying a delivery (for receivers)
//!
//! Each POST carries:
//!
//! - `X-Baton-Event`: `budget.crossed` or `runaway.flagged`;
//! - `X-Baton-Delivery`: the delivery id, the same on every retry of one delivery (deduplicate
//!   on it);
//! - `X-Baton-Timestamp`: unix seconds at which this attempt was signed;
//! - `X-Baton-Signature`: `v1=` followed by the lowercase hex of
//!   `HMAC-SHA256(key = secret, message = "{timestamp}.{body}")`, where `secret` is the whole
//!   string CreateWebhook returned (`whsec_...`, as UTF-8 bytes), `timestamp` the header's
//!   decimal digits and `body` the raw request body bytes.
//!
//! A receiver recomputes the HMAC over the bytes it received, compares it with the header's
//! value in constant time, and rejects a timestamp more than a few minutes from its own clock
//! (a captured request cannot be replayed later). Signing the timestamp with the body is what
//! makes that check worth anything. `v1=` names the scheme so a later one can be sent beside
//! it during a rotation. With a shell:
//!
//! ```text
//! printf '%s.%s' "$timestamp" "$body" | openssl dgst -sha256 -hmac "$secret" -hex
//! ```

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// Prefix of every secret, so one found in a log or a repository is recognisable.
pub const SECRET_PREFIX: &str = "whsec_";
/// The signature scheme's version tag.
pub const SCHEME: &str = "v1";

/// A new secret: the prefix and 32 random bytes in hex.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{SECRET_PREFIX}{}", hex::encode(bytes))
}

/// The `X-Baton-Signature` value for `body` sent at `timestamp` (unix seconds).
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC accepts a key of any length; this cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("{SCHEME}={}", hex::encode(mac.finalize().into_bytes()))
}

/// Whether `header` is a valid signature of `body` at `timestamp` (constant time). What a
/// receiver does; the tests use it.
pub fn verify(secret: &str, timestamp: i64, body: &[u8], header: &str) -> bool {
    let Some(hex_digest) = header.strip_prefix("v1=") else {
        return false;
    };
    let Ok(expected) = hex::decode(hex_digest) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_body() {
        // Computed independently: printf '%s.%s' 1700000000 '{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        let header = signature("whsec_test", 1_700_000_000, br#"{"a":1}"#);
        assert_eq!(
            header,
            "v1=38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
        assert!(verify("whsec_test", 1_700_000_000, br#"{"a":1}"#, &header));
        assert!(!verify("whsec_test", 1_700_000_001, br#"{"a":1}"#, &header));
        assert!(!verify(
            "whsec_other",
            1_700_000_000,
            br#"{"a":1}"#,
            &header
        ));
        assert!(!verify("whsec_test", 1_700_000_000, br#"{"a":2}"#, &header));
    }

    #[test]
    fn secrets_are_prefixed_random_and_64_hex_digits() {
        let first = new_secret();
        let second = new_secret();
        assert_ne!(first, second);
        let digits = first.strip_prefix(SECRET_PREFIX).expect("prefix");
        assert_eq!(digits.len(), 64);
        assert!(digits.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
