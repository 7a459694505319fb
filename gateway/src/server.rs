//! The HTTP listener, in place of `axum::serve`, because the defences against slow and greedy
//! clients live at the connection, below the router (issue 9):
//!
//! - a header-read timeout: a connection gets this long to send a request's headers, counted
//!   from when it is ready for the request, so a client dripping one header byte a second is
//!   cut off, and a kept-alive connection that sends nothing is closed after the same time
//!   (hyper starts the timer when it waits for the next request: it is the idle timeout too);
//! - a cap on open connections per client address (trusted proxies are exempt: their
//!   connections carry many clients); over it, the new connection is answered
//!   `429 rate_limited` with `Connection: close` and closed before anything is read;
//! - graceful shutdown: stop accepting, let in-flight requests finish, close idle
//!   connections.
//!
//! The body read has its own total time bound in the strict extractor, and every request its
//! overall timeout in [`crate::limits`].

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::Service;

use crate::client_addr::{self, Cidr};

/// Connection-level settings.
#[derive(Debug, Clone)]
pub struct ConnectionPolicy {
    /// Time to send a request's headers (and most a kept-alive connection may sit idle).
    pub header_read_timeout: Duration,
    /// Most connections one client address may hold open at once.
    pub max_connections_per_client: usize,
    /// Peers whose connections are not capped (load balancers).
    pub trusted_proxies: Arc<Vec<Cidr>>,
}

/// Whether a new connection is admitted, given what its client already holds.
pub fn admit(open: usize, cap: usize, trusted: bool) -> bool {
    trusted || open < cap
}

/// Open connections per client address.
#[derive(Debug, Default)]
struct OpenConnections(Mutex<HashMap<IpAddr, usize>>);

impl OpenConnections {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One admitted connection; its count is given back on drop.
struct Admitted {
    open: Arc<OpenConnections>,
    client: IpAddr,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut open = self.open.lock();
        if let Some(count) = open.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.client);
            }
        }
    }
}

fn try_admit(
    open: &Arc<OpenConnections>,
    client: IpAddr,
    policy: &ConnectionPolicy,
) -> Option<Admitted> {
    let trusted = policy
        .trusted_proxies
        .iter()
        .any(|block| block.contains(client));
    let mut counts = open.lock();
    let count = counts.entry(client).or_insert(0);
    if !admit(*count, policy.max_connections_per_client, trusted) {
        return None;
    }
    *count += 1;
    drop(counts);
    Some(Admitted {
        open: open.clone(),
        client,
    })
}

/// The answer to a connection over its client's cap, written before anything is read.
pub fn refusal_bytes() -> Vec<u8> {
    let body = r#"{"error":"rate_limited","detail":"too many open connections from this client"}"#;
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn refuse(mut stream: TcpStream) {
    let write = async {
        stream.write_all(&refusal_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    policy: ConnectionPolicy,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let open = Arc::new(OpenConnections::default());
    let (stop_sender, stop_receiver) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let client = client_addr::client_address(peer.ip(), None, &[]);
        let Some(admitted) = try_admit(&open, client, &policy) else {
            tracing::debug!(client = %client, "connection refused: per-client cap");
            tokio::spawn(refuse(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection = serve_connection(
            stream,
            peer,
            app.clone(),
            policy.header_read_timeout,
            stop_receiver.clone(),
        );
        tokio::spawn(async move {
            let _admitted = admitted;
            connection.await;
        });
    }
    drop(listener);
    let _ = stop_sender.send(true);
    drop(stop_receiver);
    // Every connection holds a receiver: closed() resolves when the last one is done.
    stop_sender.closed().await;
    Ok(())
}

async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    header_read_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        let mut app = app.clone();
        async move { app.call(request).await }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let stopped = async move {
        // The guard `wait_for` returns is not `Send`: drop it before anything else awaits.
        let _ = stop.wait_for(|stopped| *stopped).await.map(|_| ());
    };
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(error = %error, "connection ended with an error");
            }
        }
        () = stopped => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_capped_per_client_except_trusted_proxies() {
        // (open, cap, trusted, admitted)
        let table = [
            (0, 2, false, true),
            (1, 2, false, true),
            (2, 2, false, false),
            (9, 2, true, true),
        ];
        for (open, cap, trusted, admitted) in table {
            assert_eq!(
                admit(open, cap, trusted),
                admitted,
                "{open} {cap} {trusted}"
            );
        }
    }

    #[test]
    fn admitted_connections_are_counted_and_given_back() {
        let policy = ConnectionPolicy {
            header_read_timeout: Duration::from_secs(1),
            max_connections_per_client: 2,
            trusted_proxies: Arc::new(vec![]),
        };
        let open = Arc::new(OpenConnections::default());
        let client: IpAddr = "192.0.2.1".parse().expect("address");
        let first = try_admit(&open, client, &policy).expect("first");
        let second = try_admit(&open, client, &policy).expect("second");
        assert!(
            try_admit(&open, client, &policy).is_none(),
            "third is over the cap"
        );
        drop(first);
        let third = try_admit(&open, client, &policy).expect("a slot came back");
        drop((second, third));
        assert!(open.lock().is_empty(), "no count left behind");
    }

    #[test]
    fn the_refusal_is_a_complete_closing_response() {
        let text = String::from_utf8(refusal_bytes()).expect("ascii");
        assert!(text.starts_with("HTTP/1.1 429 "));
        assert!(text.contains("connection: close\r\n"));
        assert!(text.ends_with(
            "\r\n\r\n{\"error\":\"rate_limited\",\"detail\":\"too many open connections from this client\"}"
        ));
    }
}
