//! AMQPS: TLS to the broker with a private CA and, optionally, a client certificate.
//!
//! TLS is chosen by the URL: `amqps://` connects over TLS (port 5671 by default), `amqp://`
//! in plaintext. The server's certificate is verified against the public web roots plus
//! `BATON_AMQP_TLS_CA` (a PEM file: the private CA that signs the broker's certificate), and
//! the host name in the URL must match it. `BATON_AMQP_TLS_CERT` and `BATON_AMQP_TLS_KEY`
//! (PEM; the key PKCS#8, as `openssl req -nodes` writes it) present a client certificate for a
//! broker that asks for one (RabbitMQ `ssl_options.fail_if_no_peer_cert`); both or neither.
//! Any of the three with an `amqp://` URL is a configuration error: a CA given for a
//! plaintext connection means the operator believes the link is encrypted when it is not.

use std::fmt;

use lapin::tcp::{OwnedIdentity, OwnedTLSConfig};

use crate::config::{ConfigError, Env, SecretUrl};

/// The TLS material for the broker connection.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BusTls {
    ca: Option<String>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl fmt::Debug for BusTls {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("BusTls")
            .field("private_ca", &self.ca.is_some())
            .field("client_certificate", &self.identity.is_some())
            .finish()
    }
}

pub const CA: &str = "BATON_AMQP_TLS_CA";
pub const CERT: &str = "BATON_AMQP_TLS_CERT";
pub const KEY: &str = "BATON_AMQP_TLS_KEY";

impl BusTls {
    /// Reads the variables and checks them against the URL's scheme.
    pub fn from_env(env: &Env, url: &SecretUrl) -> Result<BusTls, ConfigError> {
        let settings: super::BusSettings = crate::config::load(env)?;
        let ca = settings
            .amqp_tls_ca
            .as_deref()
            .map(|path| crate::grpc_tls::read_pem(CA, path))
            .transpose()?;
        let identity = match (
            settings.amqp_tls_cert.as_deref(),
            settings.amqp_tls_key.as_deref(),
        ) {
            (None, None) => None,
            (Some(cert), Some(key)) => Some((
                crate::grpc_tls::read_pem(CERT, cert)?,
                crate::grpc_tls::read_pem(KEY, key)?,
            )),
            (Some(_), None) => {
                return Err(ConfigError::new(KEY, "needed with BATON_AMQP_TLS_CERT"));
            }
            (None, Some(_)) => {
                return Err(ConfigError::new(CERT, "needed with BATON_AMQP_TLS_KEY"));
            }
        };
        let tls = BusTls {
            ca: ca.map(|bytes| String::from_utf8_lossy(&bytes).into_owned()),
            identity,
        };
        let encrypted = url.expose().starts_with("amqps://");
        if !encrypted && tls != BusTls::default() {
            let key = if tls.ca.is_some() { CA } else { CERT };
            return Err(ConfigError::new(
                key,
                "TLS material given but BATON_AMQP_URL is not amqps://",
            ));
        }
        Ok(tls)
    }

    /// lapin's form of it.
    pub fn lapin(&self) -> OwnedTLSConfig {
        OwnedTLSConfig {
            identity: self
                .identity
                .as_ref()
                .map(|(pem, key)| OwnedIdentity::PKCS8 {
                    pem: pem.clone(),
                    key: key.clone(),
                }),
            cert_chain: self.ca.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pem(dir: &std::path::Path, name: &str) -> String {
        let path = dir.join(name);
        std::fs::write(
            &path,
            "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n",
        )
        .expect("write pem");
        path.to_string_lossy().into_owned()
    }

    #[test]
    fn tls_material_must_match_the_url_scheme_and_come_in_pairs() {
        let dir = std::env::temp_dir().join(format!("baton-bus-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (ca, cert, key) = (pem(&dir, "ca.pem"), pem(&dir, "c.pem"), pem(&dir, "k.pem"));
        let plain = SecretUrl::new("amqp://guest:guest@127.0.0.1:5672/%2f".into());
        let tls = SecretUrl::new("amqps://guest:guest@localhost:5671/%2f".into());
        type Case<'a> = (
            Vec<(&'a str, &'a str)>,
            &'a SecretUrl,
            Result<(bool, bool), &'a str>,
        );
        let table: Vec<Case<'_>> = vec![
            (vec![], &plain, Ok((false, false))),
            (vec![], &tls, Ok((false, false))),
            (vec![(CA, &ca)], &tls, Ok((true, false))),
            (
                vec![(CA, &ca), (CERT, &cert), (KEY, &key)],
                &tls,
                Ok((true, true)),
            ),
            (vec![(CA, &ca)], &plain, Err(CA)),
            (vec![(CERT, &cert), (KEY, &key)], &plain, Err(CERT)),
            (vec![(CERT, &cert)], &tls, Err(KEY)),
            (vec![(KEY, &key)], &tls, Err(CERT)),
            (vec![(CA, "/nonexistent/ca.pem")], &tls, Err(CA)),
        ];
        for (pairs, url, expected) in table {
            let env = Env::from_pairs(pairs.clone());
            let got = BusTls::from_env(&env, url)
                .map(|tls| (tls.ca.is_some(), tls.identity.is_some()))
                .map_err(|error| error.key);
            assert_eq!(got, expected.map_err(str::to_string), "{pairs:?} {url}");
        }
        let shown = format!(
            "{:?}",
            BusTls::from_env(&Env::from_pairs([(CA, ca.as_str())]), &tls)
        );
        assert!(!shown.contains("BEGIN"), "material never printed: {shown}");
    }
}
