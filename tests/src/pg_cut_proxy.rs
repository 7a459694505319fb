//! A TCP proxy in front of Postgres that lets a transaction commit and loses the answer: the
//! case "the database stored it, the service never heard" that a restart only produces by
//! luck. It speaks just enough of the v3 wire protocol to find one transaction's `COMMIT`.
//!
//! Armed with a marker (text of the statement the targeted write runs) and a count, a
//! connection whose client sent that statement has its next `COMMIT` forwarded, the server's
//! answer read up to ReadyForQuery and thrown away, and both sockets closed. The commit is
//! durable; the client sees its connection die while waiting for the answer.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// SSLRequest and GSSENCRequest codes: the first 8 bytes a client may send instead of a startup.
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;
/// Larger than any message a test sends; a longer length means the stream is out of step.
const MAX_MESSAGE: usize = 64 << 20;

/// A running proxy; stops accepting when dropped.
pub struct PgCutProxy {
    /// Local port clients connect to.
    pub port: u16,
    /// The proxied database's name, for [`PgCutProxy::url_as`].
    database: String,
    arming: Arc<Mutex<Arming>>,
    cuts: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

/// What to cut: commits still to lose, of transactions that sent `marker`.
#[derive(Debug, Default)]
struct Arming {
    marker: String,
    remaining: u32,
}

impl Drop for PgCutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PgCutProxy {
    /// Starts a proxy on a free port in front of the server and database `database_url` names
    /// (`postgres://user@host:port/database`); it forwards everything until armed.
    pub async fn start(database_url: &str) -> PgCutProxy {
        let without_scheme = database_url
            .split_once("://")
            .map_or(database_url, |(_, rest)| rest);
        let (authority, path) = without_scheme
            .split_once('/')
            .expect("a database in the URL");
        let host_port = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let upstream = if host_port.contains(':') {
            host_port.to_string()
        } else {
            format!("{host_port}:5432")
        };
        let database = path.split('?').next().unwrap_or(path).to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        let arming = Arc::new(Mutex::new(Arming::default()));
        let cuts = Arc::new(AtomicU64::new(0));
        let (shared_arming, shared_cuts) = (arming.clone(), cuts.clone());
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&upstream).await else {
                    continue;
                };
                tokio::spawn(proxy_connection(
                    client,
                    server,
                    shared_arming.clone(),
                    shared_cuts.clone(),
                ));
            }
        });
        PgCutProxy {
            port,
            database,
            arming,
            cuts,
            task,
        }
    }

    /// The proxied database's URL through this proxy, logging in as `role` (trust auth).
    pub fn url_as(&self, role: &str) -> String {
        format!(
            "postgres://{role}@127.0.0.1:{}/{}",
            self.port, self.database
        )
    }

    /// Loses the answer of the next `count` commits of transactions that sent a statement
    /// containing `marker`.
    pub fn arm(&self, marker: &str, count: u32) {
        *self.arming.lock().expect("arming") = Arming {
            marker: marker.to_string(),
            remaining: count,
        };
    }

    /// Commits whose answer was read and thrown away so far.
    pub fn cuts(&self) -> u64 {
        self.cuts.load(Ordering::SeqCst)
    }
}

/// One client connection: the startup exchange, then both directions message by message.
async fn proxy_connection(
    client: TcpStream,
    server: TcpStream,
    arming: Arc<Mutex<Arming>>,
    cuts: Arc<AtomicU64>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (server_read, mut server_write) = server.into_split();
    if startup(&mut client_read, &mut client_write, &mut server_write)
        .await
        .is_err()
    {
        return;
    }
    // The client→server side tells the server→client side to swallow the next answer; that
    // side reports back once it has read ReadyForQuery, and both drop their sockets.
    let (swallow_sender, swallow) = oneshot::channel::<oneshot::Sender<()>>();
    tokio::spawn(server_to_client(server_read, client_write, swallow, cuts));
    let mut watch = Watch::default();
    let mut swallow_sender = Some(swallow_sender);
    while let Ok((kind, body)) = read_message(&mut client_read).await {
        let cut = watch.observe(kind, &body, &arming);
        if cut && let Some(sender) = swallow_sender.take() {
            let (done_sender, done) = oneshot::channel();
            // Asked before the COMMIT leaves: the server cannot answer it any sooner.
            let _ = sender.send(done_sender);
            if write_message(&mut server_write, kind, &body).await.is_ok() {
                let _ = done.await;
            }
            return;
        }
        if write_message(&mut server_write, kind, &body).await.is_err() {
            return;
        }
    }
}

/// Answers SSLRequest and GSSENCRequest with `N` (so the stream stays plain and readable) and
/// forwards the startup packet, which has a length but no type byte.
async fn startup(
    client_read: &mut OwnedReadHalf,
    client_write: &mut OwnedWriteHalf,
    server_write: &mut OwnedWriteHalf,
) -> std::io::Result<()> {
    loop {
        let length = client_read.read_u32().await? as usize;
        if !(8..=MAX_MESSAGE).contains(&length) {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let mut body = vec![0; length - 4];
        client_read.read_exact(&mut body).await?;
        let code = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        if length == 8 && (code == SSL_REQUEST || code == GSSENC_REQUEST) {
            client_write.write_all(b"N").await?;
            continue;
        }
        server_write.write_u32(length as u32).await?;
        return server_write.write_all(&body).await;
    }
}

/// Forwards the server's messages until told to swallow an answer: then reads up to and
/// including ReadyForQuery, forwards none of it, and returns (closing the client's socket).
async fn server_to_client(
    mut server_read: OwnedReadHalf,
    mut client_write: OwnedWriteHalf,
    mut swallow: oneshot::Receiver<oneshot::Sender<()>>,
    cuts: Arc<AtomicU64>,
) {
    while let Ok((kind, body)) = read_message(&mut server_read).await {
        // Every answer before the COMMIT was read by the client before it sent the COMMIT
        // (sqlx waits for ReadyForQuery first), so the request is here before its answer is.
        if let Ok(done) = swallow.try_recv() {
            let mut answer = kind;
            while answer != b'Z' {
                let Ok((next, _)) = read_message(&mut server_read).await else {
                    return;
                };
                answer = next;
            }
            cuts.fetch_add(1, Ordering::SeqCst);
            let _ = done.send(());
            return;
        }
        if write_message(&mut client_write, kind, &body).await.is_err() {
            return;
        }
    }
}

/// What one connection's client sent so far, as far as cutting is concerned.
#[derive(Debug, Default)]
struct Watch {
    /// The open transaction sent the marker.
    marked: bool,
    /// Prepared statements whose text holds the marker: sqlx sends a cached statement as
    /// Bind with its name only, so a reused connection names it instead of repeating it.
    marked_statements: HashSet<Vec<u8>>,
}

impl Watch {
    /// Notes a client message; true when it is a COMMIT whose answer must be lost (and the
    /// arming has a cut left, which this takes).
    fn observe(&mut self, kind: u8, body: &[u8], arming: &Mutex<Arming>) -> bool {
        let mut arming = arming.lock().expect("arming");
        let marker = arming.marker.clone().into_bytes();
        let holds_marker = |text: &[u8]| {
            !marker.is_empty() && text.windows(marker.len()).any(|window| window == marker)
        };
        let mut fields = body.split(|byte| *byte == 0);
        match kind {
            // Query: one statement text (sqlx sends COMMIT and ROLLBACK this way).
            b'Q' => {
                let text = fields.next().unwrap_or_default();
                let statement = String::from_utf8_lossy(text).trim().to_ascii_uppercase();
                if holds_marker(text) {
                    self.marked = true;
                } else if statement == "ROLLBACK" {
                    self.marked = false;
                } else if statement == "COMMIT" && self.marked {
                    self.marked = false;
                    if arming.remaining > 0 {
                        arming.remaining -= 1;
                        return true;
                    }
                }
            }
            // Parse: statement name, then its text.
            b'P' => {
                let name = fields.next().unwrap_or_default().to_vec();
                if holds_marker(fields.next().unwrap_or_default()) {
                    self.marked = true;
                    self.marked_statements.insert(name);
                } else {
                    self.marked_statements.remove(&name);
                }
            }
            // Bind: portal name, then the statement it runs.
            b'B' => {
                let _portal = fields.next();
                let statement = fields.next().unwrap_or_default();
                if self.marked_statements.contains(statement) {
                    self.marked = true;
                }
            }
            _ => {}
        }
        false
    }
}

/// One typed message: the type byte and the body after the length.
async fn read_message(reader: &mut OwnedReadHalf) -> std::io::Result<(u8, Vec<u8>)> {
    let kind = reader.read_u8().await?;
    let length = reader.read_u32().await? as usize;
    if !(4..=MAX_MESSAGE).contains(&length) {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    let mut body = vec![0; length - 4];
    reader.read_exact(&mut body).await?;
    Ok((kind, body))
}

async fn write_message(writer: &mut OwnedWriteHalf, kind: u8, body: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(body.len() + 5);
    frame.push(kind);
    frame.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    frame.extend_from_slice(body);
    writer.write_all(&frame).await
}
