//! Rotating the service token under load, across two processes, with zero failed calls.
//!
//! The gateway runs in one process and the services behind it in another, each reading its
//! tokens from files it reloads (`BATON_SERVICE_TOKEN_FILE`, `..._ACCEPTED_FILE`), the way a
//! mounted Kubernetes Secret is rotated. Hook-facing calls run without pause while the files
//! move through the three steps of `baton_kit::service_tokens`. A last, wrong step (the gateway
//! sending a token nobody accepts) must fail calls: the load can see a failure.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::process::Command;

use baton_kit::testing::TestDatabase;
use baton_tests::{base_env, binary, spawn};

const OLD: &str = "rotation-old-token-0001";
const NEW: &str = "rotation-new-token-0002";
const STRAY: &str = "rotation-stray-token-0003";
/// Longer than the reload interval, so a step is in force in both processes. This pause is
/// the rotation procedure itself, not a test's guess: the operator (or the kubelet's sync)
/// cannot see when each replica re-read its files either, and the documented rule is to wait
/// longer than `BATON_SERVICE_TOKEN_RELOAD` between steps. The test runs exactly that rule.
const SETTLE: Duration = Duration::from_millis(600);

struct Files {
    send: PathBuf,
    accepted: PathBuf,
}

impl Files {
    fn new(dir: &Path, name: &str) -> Files {
        let files = Files {
            send: dir.join(format!("{name}-send")),
            accepted: dir.join(format!("{name}-accepted")),
        };
        files.set(OLD, "");
        files
    }

    /// Writes through a rename, as the kubelet swaps a Secret volume; the accepted list first,
    /// so a widened set is in place before the sent token changes.
    fn set(&self, send: &str, accepted: &str) {
        for (path, text) in [(&self.accepted, accepted), (&self.send, send)] {
            let temporary = path.with_extension("tmp");
            std::fs::write(&temporary, text).expect("write");
            std::fs::rename(&temporary, path).expect("rename");
        }
    }

    fn env(&self, base: &[(String, String)]) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = base
            .iter()
            .filter(|(key, _)| key != "BATON_SERVICE_TOKEN")
            .cloned()
            .collect();
        for (key, value) in [
            ("BATON_SERVICE_TOKEN_FILE", self.send.display().to_string()),
            (
                "BATON_SERVICE_TOKENS_ACCEPTED_FILE",
                self.accepted.display().to_string(),
            ),
            ("BATON_SERVICE_TOKEN_RELOAD", "100ms".to_string()),
            ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "1000000".to_string()),
        ] {
            env.push((key.to_string(), value));
        }
        env
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_token_rotates_under_load_without_a_failed_call() {
    let database = TestDatabase::create().await;
    let namespace = format!("t{}", uuid::Uuid::new_v4().simple());
    let base = base_env(database.url(), &namespace);
    let dir = std::env::temp_dir().join(format!("baton-rotation-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("dir");
    let services = Files::new(&dir, "services");
    let gateway = Files::new(&dir, "gateway");

    let (_backend, addresses) = spawn(
        &["registry", "provenance", "triage", "closer"],
        &services.env(&base),
        "closer",
    )
    .await;
    let mut gateway_env = gateway.env(&base);
    for (service, key) in [
        ("registry", "BATON_REGISTRY__ADDR"),
        ("provenance", "BATON_PROVENANCE__ADDR"),
        ("triage", "BATON_TRIAGE__ADDR"),
        ("closer", "BATON_CLOSER__ADDR"),
    ] {
        gateway_env.push((key.to_string(), addresses[service].clone()));
    }
    let (_front, front) = spawn(&["gateway", "--no-migrate"], &gateway_env, "gateway").await;
    let base_url = format!("http://{}", front["gateway"]);

    let created = Command::new(binary("baton"))
        .args(["tenant", "create", "--name", "rotation"])
        .envs(base.iter().cloned())
        .output()
        .await
        .expect("tenant create");
    assert!(created.status.success(), "{created:?}");
    let tenant: serde_json::Value = serde_json::from_slice(&created.stdout).expect("json");
    let key = tenant["apiKey"].as_str().expect("key").to_string();
    let http = reqwest::Client::new();
    let opened = http
        .post(format!("{base_url}/api/v1/agent-sessions/open"))
        .header("X-API-Key", &key)
        .json(&json!({"agent": "claude-code", "sessionId": "rot", "source": "startup"}))
        .send()
        .await
        .expect("open");
    let status = opened.status();
    assert_eq!(status, 200, "{}", opened.text().await.unwrap_or_default());

    // Load: heartbeats (gateway -> registry) and briefings (gateway -> provenance), nonstop.
    let running = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for worker in 0..4 {
        let (running, calls, failures) = (running.clone(), calls.clone(), failures.clone());
        let (http, key, base_url) = (http.clone(), key.clone(), base_url.clone());
        workers.push(tokio::spawn(async move {
            while running.load(Ordering::SeqCst) {
                let request = if worker % 2 == 0 {
                    http.post(format!("{base_url}/api/v1/agent-sessions/heartbeat"))
                        .json(&json!({"agent": "claude-code", "sessionId": "rot"}))
                } else {
                    http.get(format!("{base_url}/api/v1/briefing?kind=scope&scope=work"))
                };
                let status = request
                    .header("X-API-Key", &key)
                    .send()
                    .await
                    .map(|r| r.status());
                calls.fetch_add(1, Ordering::SeqCst);
                if !matches!(status, Ok(status) if status.is_success()) {
                    failures.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }

    tokio::time::sleep(SETTLE).await;
    // 1. Every server also accepts the new token.
    services.set(OLD, NEW);
    gateway.set(OLD, NEW);
    tokio::time::sleep(SETTLE).await;
    // 2. Every caller sends the new one; the old is still accepted. (Both stay in the accepted
    // list: the two files are replaced one after the other, and a reload between them must not
    // see a set without the token the other process still sends. A Secret volume is swapped
    // whole, so a cluster needs no such care.)
    services.set(NEW, &format!("{OLD},{NEW}"));
    gateway.set(NEW, &format!("{OLD},{NEW}"));
    tokio::time::sleep(SETTLE).await;
    // 3. The old one is dropped.
    services.set(NEW, "");
    gateway.set(NEW, "");
    tokio::time::sleep(SETTLE).await;
    let rotated_calls = calls.load(Ordering::SeqCst);
    let rotated_failures = failures.load(Ordering::SeqCst);

    // The wrong step: the gateway sends a token the services do not accept.
    gateway.set(STRAY, "");
    tokio::time::sleep(SETTLE).await;
    running.store(false, Ordering::SeqCst);
    for worker in workers {
        let _ = worker.await;
    }
    let stray_failures = failures.load(Ordering::SeqCst) - rotated_failures;
    println!(
        "rotation: {rotated_calls} calls, {rotated_failures} failed; wrong token: {stray_failures} failed"
    );
    assert!(rotated_calls > 100, "the load ran: {rotated_calls} calls");
    assert_eq!(
        rotated_failures, 0,
        "no call failed during the rotation ({rotated_calls} calls)"
    );
    assert!(
        stray_failures > 0,
        "a token nobody accepts does fail calls (the load can see a failure)"
    );
    baton_kit::testing::delete_bus_namespace(&namespace);
    let _ = std::fs::remove_dir_all(&dir);
}
