//! What every model-API stand-in does the same way: serve its router on a free loopback port
//! until dropped, and hold a scripted answer until the test lets it go.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Serves `app` on 127.0.0.1 at a free port; the handle stops it when aborted.
pub async fn serve(app: Router) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a stand-in");
    let address = listener.local_addr().expect("address");
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (address, server)
}

/// Waits until the file `gate` exists (the test releases a held answer by creating it).
pub async fn until_released(gate: &Path) {
    while !gate.exists() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
