//! A private Postgres cluster for one test: `initdb` into a temporary folder, started on a
//! free port, restartable at will, removed on drop. Tests that restart Postgres use this and
//! never touch the shared cluster on 5432, which other tests use at the same time.
//!
//! initdb refuses to run as root; as root the cluster runs as the `postgres` user.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running private cluster.
pub struct PrivatePostgres {
    bin: PathBuf,
    data: PathBuf,
    root: PathBuf,
    pub port: u16,
    as_postgres: bool,
    /// Extra `-c` settings (TLS).
    extra_options: String,
}

fn postgres_bin() -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("Postgres binaries under /usr/lib/postgresql")
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .collect();
    candidates.sort();
    candidates
        .pop()
        .expect("an initdb under /usr/lib/postgresql/*/bin")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

impl PrivatePostgres {
    /// initdb and start.
    pub fn start() -> PrivatePostgres {
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|output| output.stdout.trim_ascii() == b"0");
        let root = std::env::temp_dir().join(format!("baton-pg-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&root).expect("cluster folder");
        if as_postgres {
            let status = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&root)
                .status()
                .expect("chown");
            assert!(status.success(), "chown the cluster folder to postgres");
        }
        let cluster = PrivatePostgres {
            bin: postgres_bin(),
            data: root.join("data"),
            root,
            port: free_port(),
            as_postgres,
            extra_options: String::new(),
        };
        cluster.run(
            "initdb",
            &[
                "-D",
                &cluster.data.to_string_lossy(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        );
        cluster.pg_ctl(&["start"]);
        cluster
    }

    /// initdb and start with TLS only: a CA made here signs a server certificate for
    /// 127.0.0.1, and `pg_hba.conf` rejects every TCP connection that is not TLS. Returns the
    /// cluster and the CA file a client verifies the server with.
    pub fn start_with_tls() -> (PrivatePostgres, PathBuf) {
        let mut cluster = PrivatePostgres::start();
        cluster.stop();
        let tls = cluster.root.join("tls");
        let ca = crate::tls::TestCa::new(&tls);
        let server = ca.issue("server");
        if cluster.as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&tls)
                .status()
                .expect("chown");
            assert!(status.success(), "chown the TLS files to postgres");
        }
        let hba = "local all all trust\n\
                   hostssl all all 127.0.0.1/32 trust\n\
                   hostnossl all all 127.0.0.1/32 reject\n";
        let hba_path = cluster.data.join("pg_hba.conf");
        std::fs::write(&hba_path, hba).expect("pg_hba.conf");
        if cluster.as_postgres {
            let _ = Command::new("chown")
                .args(["postgres:postgres"])
                .arg(&hba_path)
                .status();
        }
        cluster.extra_options = format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            server.cert.display(),
            server.key.display()
        );
        cluster.start_again();
        (cluster, ca.cert())
    }

    fn run(&self, program: &str, args: &[&str]) {
        let executable = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&executable);
            command
        } else {
            Command::new(&executable)
        };
        let output = command.args(args).output().expect("run a Postgres binary");
        assert!(
            output.status.success(),
            "{program} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn pg_ctl(&self, action: &[&str]) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=60 -c fsync=off{}",
            self.port,
            self.root.display(),
            self.extra_options
        );
        let data = self.data.to_string_lossy().to_string();
        let log = self.root.join("log").to_string_lossy().to_string();
        let mut args = vec![
            "-D",
            data.as_str(),
            "-l",
            log.as_str(),
            "-o",
            options.as_str(),
            "-w",
        ];
        args.extend_from_slice(&["-m", "fast"]);
        args.extend_from_slice(action);
        self.run("pg_ctl", &args);
    }

    /// Admin URL (superuser `postgres`, database `postgres`).
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server (fast: open connections are terminated).
    pub fn stop(&self) {
        self.pg_ctl(&["stop"]);
    }

    /// Starts it again on the same port and data.
    pub fn start_again(&self) {
        self.pg_ctl(&["start"]);
    }

    /// The folder the cluster lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.data.to_string_lossy().to_string();
        let stop = ["-D", data.as_str(), "-m", "immediate", "-w", "stop"];
        let executable = self.bin.join("pg_ctl");
        let _ = if self.as_postgres {
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&executable)
                .args(stop)
                .output()
        } else {
            Command::new(&executable).args(stop).output()
        };
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
