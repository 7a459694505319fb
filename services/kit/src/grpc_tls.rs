//! TLS with client certificates on the internal gRPC hops (optional).
//!
//! Set all three of `BATON_GRPC_TLS_CERT`, `BATON_GRPC_TLS_KEY` (this process's certificate
//! and key, PEM files) and `BATON_GRPC_TLS_CA` (the CA that signs every Baton process's
//! certificate) and every gRPC server of the process serves TLS only and requires a client
//! certificate signed by that CA, while every outgoing gRPC call presents this process's
//! certificate and verifies the server's against the CA. `BATON_GRPC_TLS_DOMAIN` names the
//! server name to verify when it differs from the host in the service address. None of the
//! three set: plaintext, as before. Some but not all: the process refuses to start.
//!
//! The service token is still required on top: a certificate says which process calls, the
//! token that it belongs to this deployment.

use std::fmt;

use serde::{Deserialize, Serialize};
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};

use crate::config::Settings;
use crate::config::env::{ConfigError, Env};

/// The process's gRPC TLS material.
#[derive(Clone)]
pub struct GrpcTls {
    cert: Vec<u8>,
    key: Vec<u8>,
    ca: Vec<u8>,
    domain: Option<String>,
}

impl fmt::Debug for GrpcTls {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("GrpcTls")
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

const KEYS: [&str; 3] = [
    "BATON_GRPC_TLS_CERT",
    "BATON_GRPC_TLS_KEY",
    "BATON_GRPC_TLS_CA",
];

/// mTLS on the internal gRPC hops, process-wide (`BATON_GRPC_TLS_*`): all three files or none.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct GrpcTlsSettings {
    /// This process's certificate (PEM file).
    pub grpc_tls_cert: Option<String>,
    /// Its private key (PEM file).
    pub grpc_tls_key: Option<String>,
    /// The CA that signs every Baton process's certificate (PEM file).
    pub grpc_tls_ca: Option<String>,
    /// The name servers' certificates are checked against, instead of each address's host.
    pub grpc_tls_domain: Option<String>,
}

impl Settings for GrpcTlsSettings {
    const SECTION: &'static str = "";
}

/// Reads a PEM file named by `key`, or says which variable points at what.
pub(crate) fn read_pem(key: &str, path: &str) -> Result<Vec<u8>, ConfigError> {
    let bytes = std::fs::read(path)
        .map_err(|error| ConfigError::new(key, format!("cannot read {path}: {error}")))?;
    if !String::from_utf8_lossy(&bytes).contains("-----BEGIN ") {
        return Err(ConfigError::new(key, format!("{path} is not a PEM file")));
    }
    Ok(bytes)
}

impl GrpcTls {
    /// `None` when none of the variables is set.
    pub fn from_env(env: &Env) -> Result<Option<GrpcTls>, ConfigError> {
        let settings: GrpcTlsSettings = crate::config::load(env)?;
        let paths = [
            settings.grpc_tls_cert.as_deref(),
            settings.grpc_tls_key.as_deref(),
            settings.grpc_tls_ca.as_deref(),
        ];
        match paths {
            [None, None, None] => Ok(None),
            [Some(cert), Some(key), Some(ca)] => Ok(Some(GrpcTls {
                cert: read_pem(KEYS[0], cert)?,
                key: read_pem(KEYS[1], key)?,
                ca: read_pem(KEYS[2], ca)?,
                domain: settings.grpc_tls_domain,
            })),
            _ => {
                let missing = KEYS
                    .iter()
                    .zip(&paths)
                    .find(|(_, path)| path.is_none())
                    .map(|(key, _)| *key)
                    .unwrap_or(KEYS[0]);
                Err(ConfigError::new(
                    missing,
                    "gRPC TLS needs all of BATON_GRPC_TLS_CERT, _KEY and _CA",
                ))
            }
        }
    }

    /// Serves TLS only and requires a client certificate the CA signed.
    pub fn server(&self) -> ServerTlsConfig {
        ServerTlsConfig::new()
            .identity(Identity::from_pem(&self.cert, &self.key))
            .client_ca_root(Certificate::from_pem(&self.ca))
    }

    /// Verifies the server against the CA and presents this process's certificate.
    pub fn client(&self, host: &str) -> ClientTlsConfig {
        let domain = self.domain.clone().unwrap_or_else(|| host.to_string());
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca))
            .identity(Identity::from_pem(&self.cert, &self.key))
            .domain_name(domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_three_or_none_and_each_must_be_a_readable_pem() {
        assert!(matches!(GrpcTls::from_env(&Env::default()), Ok(None)));
        let partial = Env::from_pairs([("BATON_GRPC_TLS_CERT", "/tmp/x.crt")]);
        assert_eq!(
            GrpcTls::from_env(&partial).expect_err("partial").key,
            "BATON_GRPC_TLS_KEY"
        );
        let missing = Env::from_pairs([
            ("BATON_GRPC_TLS_CERT", "/nonexistent/a.crt"),
            ("BATON_GRPC_TLS_KEY", "/nonexistent/a.key"),
            ("BATON_GRPC_TLS_CA", "/nonexistent/ca.crt"),
        ]);
        assert_eq!(
            GrpcTls::from_env(&missing).expect_err("unreadable").key,
            "BATON_GRPC_TLS_CERT"
        );
    }
}
