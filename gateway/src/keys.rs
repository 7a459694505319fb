//! API keys: `btn_<prefix>_<secret>`.
//!
//! The prefix is public and indexes the key; the secret is shown once at creation and stored
//! only as its SHA-256. Verification hashes the presented secret and compares the digests in
//! constant time.

use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Every key starts with this marker.
pub const KEY_MARKER: &str = "btn";
/// Prefix length: 12 lowercase alphanumerics.
pub const PREFIX_LEN: usize = 12;
/// Secret length: 40 alphanumerics (about 238 bits).
pub const SECRET_LEN: usize = 40;

const PREFIX_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const SECRET_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A key split into its parts (the secret stays in memory only as long as the request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedKey {
    pub prefix: String,
    secret: String,
}

impl PresentedKey {
    /// Parses `btn_<prefix>_<secret>`; anything else is not a key.
    pub fn parse(text: &str) -> Option<PresentedKey> {
        let mut parts = text.trim().splitn(3, '_');
        let (marker, prefix, secret) = (parts.next()?, parts.next()?, parts.next()?);
        let prefix_ok = prefix.len() == PREFIX_LEN
            && prefix.bytes().all(|byte| PREFIX_ALPHABET.contains(&byte));
        let secret_ok = secret.len() == SECRET_LEN
            && secret.bytes().all(|byte| SECRET_ALPHABET.contains(&byte));
        (marker == KEY_MARKER && prefix_ok && secret_ok).then(|| PresentedKey {
            prefix: prefix.to_string(),
            secret: secret.to_string(),
        })
    }

    /// Whether this key's secret hashes to `stored_sha256` (constant time).
    pub fn matches(&self, stored_sha256: &[u8]) -> bool {
        let digest = hash_secret(&self.secret);
        bool::from(digest.as_slice().ct_eq(stored_sha256))
    }
}

/// A freshly minted key: the full text (shown once) and what is stored.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub text: String,
    pub prefix: String,
    pub secret_sha256: Vec<u8>,
}

/// Mints a random key.
pub fn generate() -> NewKey {
    let mut rng = rand::rng();
    let mut pick = |alphabet: &[u8], length: usize| -> String {
        (0..length)
            .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
            .collect()
    };
    let prefix = pick(PREFIX_ALPHABET, PREFIX_LEN);
    let secret = pick(SECRET_ALPHABET, SECRET_LEN);
    NewKey {
        text: format!("{KEY_MARKER}_{prefix}_{secret}"),
        secret_sha256: hash_secret(&secret),
        prefix,
    }
}

fn hash_secret(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_verify() {
        let key = generate();
        let presented = PresentedKey::parse(&key.text).expect("well-formed");
        assert_eq!(presented.prefix, key.prefix);
        assert!(presented.matches(&key.secret_sha256));
        assert!(!presented.matches(&[0u8; 32]));
        assert!(!key.text.contains(&hex::encode(&key.secret_sha256)));
    }

    #[test]
    fn malformed_keys_are_rejected() {
        let key = generate();
        let tampered_marker = key.text.replacen("btn", "3ng", 1);
        let short = &key.text[..key.text.len() - 1];
        let extra = format!("{}_x", key.text);
        for bad in [
            "",
            "btn",
            "btn__",
            tampered_marker.as_str(),
            short,
            extra.as_str(),
        ] {
            assert!(PresentedKey::parse(bad).is_none(), "{bad}");
        }
    }
}
