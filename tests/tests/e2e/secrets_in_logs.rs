//! Passwords in connection URLs never reach the logs: the real `baton` binary, logging at
//! `debug`, run against a database URL and a broker URL that both carry a password, through
//! the paths that log connection trouble (a broker that cannot be reached, a database that
//! cannot be reached).

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

use baton_kit::testing::TestDatabase;
use baton_tests::{SERVICE_TOKEN, binary};

const DB_PASSWORD: &str = "db-pw-7f3a91c2";
const AMQP_PASSWORD: &str = "amqp-pw-52be0d17";

/// `url` with `password` set for its user (local trust authentication ignores it).
fn with_password(url: &str, password: &str) -> String {
    let mut parsed = url::Url::parse(url).expect("url");
    if parsed.username().is_empty() {
        parsed.set_username("postgres").expect("user");
    }
    parsed.set_password(Some(password)).expect("password");
    parsed.to_string()
}

fn command(database_url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(binary("baton"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("BATON_DATABASE_URL", database_url)
        .env(
            "BATON_AMQP_URL",
            format!("amqp://guest:{AMQP_PASSWORD}@127.0.0.1:1/%2f"),
        )
        .env(
            "BATON_BUS_NAMESPACE",
            format!("t{}", uuid::Uuid::new_v4().simple()),
        )
        .env("BATON_SERVICE_TOKEN", SERVICE_TOKEN)
        .env("BATON_LOG", "debug")
        .env("BATON_CLOSER__ENABLED", "true")
        .env("BATON_DATABASE_MAX_CONNECTIONS", "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for service in ["GATEWAY", "REGISTRY", "PROVENANCE", "TRIAGE", "CLOSER"] {
        command.env(format!("BATON_{service}__LISTEN"), "127.0.0.1:0");
    }
    command
}

fn forward(stream: impl AsyncRead + Unpin + Send + 'static, lines: mpsc::UnboundedSender<String>) {
    tokio::spawn(async move {
        let mut reader = BufReader::new(stream).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
}

/// Runs `command` until a line containing `until` appeared (or 30 s passed, or it exited);
/// returns everything it printed on both streams.
async fn output_until(mut command: Command, until: &str) -> String {
    let mut child = command.spawn().expect("spawn baton");
    let (sender, mut lines) = mpsc::unbounded_channel();
    forward(child.stdout.take().expect("stdout"), sender.clone());
    forward(child.stderr.take().expect("stderr"), sender);
    let mut printed = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while let Ok(Some(line)) = tokio::time::timeout_at(deadline, lines.recv()).await {
        printed.push_str(&line);
        printed.push('\n');
        if line.contains(until) {
            break;
        }
    }
    let _ = child.kill().await;
    printed
}

#[tokio::test]
async fn a_broker_that_cannot_be_reached_is_logged_without_either_password() {
    let database = TestDatabase::create().await;
    let url = with_password(database.url(), DB_PASSWORD);
    let printed = output_until(
        command(&url, &["serve", "all"]),
        "outbox relay cannot reach the broker",
    )
    .await;
    assert!(
        printed.contains("outbox relay cannot reach the broker"),
        "the broker failure was logged: {printed}"
    );
    assert!(
        printed.contains("listening"),
        "the services started: {printed}"
    );
    assert!(
        !printed.contains(DB_PASSWORD),
        "database password leaked: {printed}"
    );
    assert!(
        !printed.contains(AMQP_PASSWORD),
        "broker password leaked: {printed}"
    );
}

#[tokio::test]
async fn a_database_that_cannot_be_reached_is_reported_without_its_password() {
    let url = format!("postgres://baton:{DB_PASSWORD}@127.0.0.1:1/baton");
    for args in [&["serve", "all"][..], &["migrate"][..]] {
        // Until it gives up and exits (or 30 s of retrying).
        let printed = output_until(command(&url, args), "\u{0}").await;
        assert!(!printed.trim().is_empty(), "{args:?} says what failed");
        assert!(
            !printed.contains(DB_PASSWORD),
            "{args:?} leaked the password: {printed}"
        );
        assert!(!printed.contains(AMQP_PASSWORD), "{args:?}: {printed}");
    }
}
