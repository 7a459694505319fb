//! A TLS terminator in front of a plaintext TCP service (what stunnel does), so a test can
//! make a client speak real TLS to a server that has none here: the shared RabbitMQ listens on
//! plaintext 5672 only. It serves a certificate a test CA issued, optionally requires a client
//! certificate that CA signed, and counts handshakes that succeeded and failed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{RootCertStore, ServerConfig, crypto};

/// A running terminator; stops when dropped.
pub struct TlsProxy {
    pub port: u16,
    pub handshakes: Arc<AtomicU64>,
    pub refused: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TlsProxy {
    /// Terminates TLS on a free port and forwards to `target` (`host:port`). With
    /// `client_ca`, a client must present a certificate that CA signed.
    pub async fn start(
        cert: &Path,
        key: &Path,
        client_ca: Option<&Path>,
        target: &str,
    ) -> TlsProxy {
        let provider = Arc::new(crypto::ring::default_provider());
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .expect("server certificate")
            .collect::<Result<_, _>>()
            .expect("server certificate PEM");
        let key = PrivateKeyDer::from_pem_file(key).expect("server key PEM");
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("protocol versions");
        let config = match client_ca {
            Some(ca) => {
                let mut roots = RootCertStore::empty();
                for der in CertificateDer::pem_file_iter(ca).expect("client CA") {
                    roots.add(der.expect("client CA PEM")).expect("client CA");
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .expect("client verifier");
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        }
        .with_single_cert(chain, key)
        .expect("server certificate and key");
        let acceptor = TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let (handshakes, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (ok, bad) = (handshakes.clone(), refused.clone());
        let target = target.to_string();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (acceptor, target, ok, bad) =
                    (acceptor.clone(), target.clone(), ok.clone(), bad.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        bad.fetch_add(1, Ordering::SeqCst);
                        return;
                    };
                    ok.fetch_add(1, Ordering::SeqCst);
                    if let Ok(mut upstream) = TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut upstream).await;
                    }
                });
            }
        });
        TlsProxy {
            port,
            handshakes,
            refused,
            task,
        }
    }

    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::SeqCst)
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }
}
