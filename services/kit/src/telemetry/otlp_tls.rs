//! OTLP over TLS, configured by the standard OpenTelemetry exporter variables.
//!
//! An `https://` endpoint is verified against the public web roots plus
//! `OTEL_EXPORTER_OTLP_CERTIFICATE` (a PEM file: the private CA that signs the collector's
//! certificate). `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE` and `OTEL_EXPORTER_OTLP_CLIENT_KEY`
//! (PEM) present a client certificate to a collector that requires one; both or neither.
//! The per-signal forms (`OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE`, `..._METRICS_...`) take
//! precedence for their signal, as the specification says. An `http://` endpoint stays
//! plaintext; TLS material beside one is refused at start, because the operator believes the
//! link is encrypted when it is not.

use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::config::{ConfigError, Env};

/// The variables for one signal (`TRACES` or `METRICS`), the per-signal form first.
fn lookup<'a>(env: &'a Env, signal: &str, name: &str) -> Option<(String, &'a str)> {
    let specific = format!("OTEL_EXPORTER_OTLP_{signal}_{name}");
    if let Some(value) = env.raw(&specific).filter(|value| !value.trim().is_empty()) {
        return Some((specific, value));
    }
    let general = format!("OTEL_EXPORTER_OTLP_{name}");
    env.raw(&general)
        .filter(|value| !value.trim().is_empty())
        .map(|value| (general, value))
}

/// The TLS configuration for one signal's exporter: `None` for a plaintext endpoint.
pub fn client_tls(env: &Env, signal: &str) -> Result<Option<ClientTlsConfig>, ConfigError> {
    let endpoint = lookup(env, signal, "ENDPOINT").map(|(_, value)| value.trim().to_string());
    let ca = lookup(env, signal, "CERTIFICATE");
    let cert = lookup(env, signal, "CLIENT_CERTIFICATE");
    let key = lookup(env, signal, "CLIENT_KEY");
    let https = endpoint
        .as_deref()
        .is_some_and(|endpoint| endpoint.to_ascii_lowercase().starts_with("https://"));
    if !https {
        if let Some((name, _)) = ca.or(cert).or(key) {
            return Err(ConfigError::new(
                &name,
                "TLS material given but the OTLP endpoint is not https://",
            ));
        }
        return Ok(None);
    }
    let mut tls = ClientTlsConfig::new().with_webpki_roots();
    if let Some((name, path)) = ca {
        tls = tls.ca_certificate(Certificate::from_pem(crate::grpc_tls::read_pem(
            &name, path,
        )?));
    }
    match (cert, key) {
        (None, None) => {}
        (Some((cert_name, cert)), Some((key_name, key))) => {
            tls = tls.identity(Identity::from_pem(
                crate::grpc_tls::read_pem(&cert_name, cert)?,
                crate::grpc_tls::read_pem(&key_name, key)?,
            ));
        }
        (Some(_), None) => {
            return Err(ConfigError::new(
                "OTEL_EXPORTER_OTLP_CLIENT_KEY",
                "needed with OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
            ));
        }
        (None, Some(_)) => {
            return Err(ConfigError::new(
                "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE",
                "needed with OTEL_EXPORTER_OTLP_CLIENT_KEY",
            ));
        }
    }
    Ok(Some(tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_follows_the_endpoint_scheme_and_the_per_signal_variables_win() {
        let dir = std::env::temp_dir().join(format!("baton-otlp-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let pem = dir.join("ca.pem");
        std::fs::write(
            &pem,
            "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n",
        )
        .expect("pem");
        let pem = pem.to_string_lossy().into_owned();
        type Case<'a> = (Vec<(&'a str, &'a str)>, Result<bool, &'a str>);
        let table: Vec<Case<'_>> = vec![
            (vec![], Ok(false)),
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")],
                Ok(false),
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4317")],
                Ok(true),
            ),
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4317"),
                    ("OTEL_EXPORTER_OTLP_CERTIFICATE", &pem),
                ],
                Ok(true),
            ),
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                    ("OTEL_EXPORTER_OTLP_CERTIFICATE", &pem),
                ],
                Err("OTEL_EXPORTER_OTLP_CERTIFICATE"),
            ),
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
                    ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t:4317"),
                ],
                Ok(true),
            ),
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4317"),
                    ("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", &pem),
                ],
                Err("OTEL_EXPORTER_OTLP_CLIENT_KEY"),
            ),
            (
                vec![
                    ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4317"),
                    ("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "/nonexistent.pem"),
                ],
                Err("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"),
            ),
        ];
        for (pairs, expected) in table {
            let got = client_tls(&Env::from_pairs(pairs.clone()), "TRACES")
                .map(|tls| tls.is_some())
                .map_err(|error| error.key);
            assert_eq!(got, expected.map_err(str::to_string), "{pairs:?}");
        }
    }
}
