//! A private RabbitMQ node for one test: its own node name, AMQP port, distribution port,
//! configuration and data in a temporary folder, killed with SIGKILL and started again on the
//! same port and data at will, removed on drop. Tests that take the broker down use this and
//! never touch the shared node on 5672, which other tests use at the same time.
//!
//! Nothing is read from `/etc/rabbitmq`: the shared node's `rabbitmq-env.conf` (its node name),
//! `rabbitmq.conf` (its port) and enabled plugins (management on 15672, prometheus on 15692)
//! would make this node collide with it (`eaddrinuse`), so every one of those files is one of
//! ours. The Erlang cookie is created by the VM in the folder's own `HOME`.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use baton_kit::bus::{BusConfig, connect};
use baton_kit::config::SecretUrl;

/// How long a start may take before the test gives up (a cold boot takes about 10 s on two
/// busy cores).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running (or killed, until restarted) private node.
pub struct PrivateRabbitmq {
    /// The folder holding configuration, data, logs and `HOME`.
    root: PathBuf,
    /// `baton-<uuid>@localhost`: the same across restarts, since quorum queues belong to it.
    node_name: String,
    pub amqp_port: u16,
    /// Erlang distribution port (the node's own, so it never meets the shared node's 25672).
    dist_port: u16,
    /// The start script, leader of its own process group (the group holds the VM).
    server: Option<Child>,
    /// Set when a start failed, so the logs the panic names survive the drop.
    keep_folder: bool,
}

/// The real start script. Debian's `/usr/sbin/rabbitmq-server` (what `scripts/services-up.sh`
/// starts the shared node with) is a wrapper that switches to the `rabbitmq` user, changes to
/// `/var/lib/rabbitmq` and sends output to `/var/log/rabbitmq`; the script behind it runs as
/// the caller and honours the environment given here. Elsewhere (a generic install) the script
/// on the `PATH` is the real one.
fn server_script() -> PathBuf {
    let debian = PathBuf::from("/usr/lib/rabbitmq/bin/rabbitmq-server");
    if debian.is_file() {
        return debian;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("rabbitmq-server"))
        .find(|candidate| candidate.is_file());
    on_path.unwrap_or_else(|| {
        panic!("rabbitmq-server is missing: run scripts/services-up.sh (it installs RabbitMQ)")
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

impl PrivateRabbitmq {
    /// Creates the node's folder and starts it; returns once it accepts an AMQP connection.
    pub async fn start() -> PrivateRabbitmq {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let root = std::env::temp_dir().join(format!("baton-rabbitmq-{id}"));
        std::fs::create_dir_all(root.join("home")).expect("node folder");
        let amqp_port = free_port();
        // Loopback only, guest allowed from loopback (the default, written out).
        let config = format!(
            "listeners.tcp.local = 127.0.0.1:{amqp_port}\n\
             loopback_users.guest = true\n\
             log.file.level = info\n"
        );
        std::fs::write(root.join("rabbitmq.conf"), config).expect("rabbitmq.conf");
        std::fs::write(root.join("advanced.config"), "[].\n").expect("advanced.config");
        std::fs::write(root.join("enabled_plugins"), "[].\n").expect("enabled_plugins");
        std::fs::write(root.join("rabbitmq-env.conf"), "").expect("rabbitmq-env.conf");
        let mut node = PrivateRabbitmq {
            root,
            node_name: format!("baton-{id}@localhost"),
            amqp_port,
            dist_port: free_port(),
            server: None,
            keep_folder: false,
        };
        node.boot().await;
        node
    }

    /// `amqp://guest:guest@127.0.0.1:<port>/%2f`, for `BATON_AMQP_URL`.
    pub fn amqp_url(&self) -> String {
        format!("amqp://guest:guest@127.0.0.1:{}/%2f", self.amqp_port)
    }

    /// The node's own log file (named in every start failure).
    pub fn log_file(&self) -> PathBuf {
        self.root
            .join("log")
            .join(format!("{}.log", self.node_name))
    }

    /// The folder the node lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// SIGKILL to the whole process group (script and VM): no shutdown, no flush, no goodbye
    /// to clients; whatever was in flight is cut. Returns once the AMQP port refuses
    /// connections.
    pub async fn kill(&mut self) {
        self.kill_now();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.amqp_port))
            .await
            .is_ok()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the killed node still accepts connections on {}",
                self.amqp_port
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Starts the node again with the same name, port and data: durable queues and the
    /// persistent messages they held are back.
    pub async fn restart(&mut self) {
        assert!(self.server.is_none(), "restart a node that was killed");
        self.boot().await;
    }

    fn kill_now(&mut self) {
        let Some(mut server) = self.server.take() else {
            return;
        };
        let group = Pid::from_raw(i32::try_from(server.id()).expect("pid"));
        let _ = killpg(group, Signal::SIGKILL);
        let _ = server.wait();
    }

    async fn boot(&mut self) {
        let output = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("stdout.log"))
            .expect("stdout.log");
        let errors = output.try_clone().expect("stdout.log");
        let path = |name: &str| self.root.join(name).to_string_lossy().into_owned();
        let mut command = Command::new(server_script());
        // Nothing of the caller's broker settings leaks in (ERL_FLAGS, RABBITMQ_NODENAME, ...).
        for (key, _) in std::env::vars() {
            if key.starts_with("RABBITMQ_") || key.starts_with("ERL_") {
                command.env_remove(&key);
            }
        }
        command
            .current_dir(&self.root)
            .env("HOME", path("home"))
            .env("RABBITMQ_NODENAME", &self.node_name)
            .env("RABBITMQ_CONF_ENV_FILE", path("rabbitmq-env.conf"))
            .env("RABBITMQ_CONFIG_FILE", path("rabbitmq.conf"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", path("advanced.config"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", path("enabled_plugins"))
            .env("RABBITMQ_MNESIA_BASE", path("mnesia"))
            .env("RABBITMQ_LOG_BASE", path("log"))
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            // epmd and the distribution listener on loopback only, like the shared node.
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            .env(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "-kernel inet_dist_use_interface {127,0,0,1}",
            )
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            // Its own group, so one killpg reaches the VM the script starts.
            .process_group(0);
        self.server = Some(command.spawn().expect("spawn rabbitmq-server"));
        self.wait_until_accepting().await;
    }

    async fn wait_until_accepting(&mut self) {
        let bus = BusConfig {
            url: SecretUrl::new(self.amqp_url()),
            namespace: "baton".to_string(),
            tls: Default::default(),
        };
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            // A plain TCP probe first: lapin retries a refused connection inside `connect` for
            // up to its timeout, which would blur the deadline.
            let listening = tokio::net::TcpStream::connect(("127.0.0.1", self.amqp_port))
                .await
                .is_ok();
            if listening && let Ok(connection) = connect(&bus, "private broker probe").await {
                let _ = connection.close(200, "up".into()).await;
                return;
            }
            let exited = self
                .server
                .as_mut()
                .and_then(|server| server.try_wait().ok().flatten());
            if exited.is_some() || tokio::time::Instant::now() >= deadline {
                self.kill_now();
                // The logs stay for whoever reads the panic.
                self.keep_folder = true;
                panic!(
                    "private RabbitMQ {} did not accept AMQP on 127.0.0.1:{} within {:?} \
                     (exit: {exited:?}); see {} and {}",
                    self.node_name,
                    self.amqp_port,
                    START_TIMEOUT,
                    self.log_file().display(),
                    self.root.join("stdout.log").display()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for PrivateRabbitmq {
    fn drop(&mut self) {
        self.kill_now();
        if !self.keep_folder {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}
