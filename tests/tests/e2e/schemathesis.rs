//! Schemathesis against the running stack, from the served OpenAPI document: every operation,
//! every check (server errors, status codes, content types, response headers, response
//! schemas, negative-data rejection, ignored auth), a fixed seed and a bounded number of
//! examples per operation, so the run is repeatable and takes about a minute.
//!
//! Schemathesis comes from PyPI into a virtual environment (`.ci/schemathesis-venv`, run by
//! `make test` and `.ci/run`); `BATON_SCHEMATHESIS` names its `st` when it lives elsewhere.

use std::path::PathBuf;

use baton_tests::Baton;

/// Examples per operation and the seed: fixed, so a failure reproduces.
const MAX_EXAMPLES: &str = "50";
const SEED: &str = "9";

fn schemathesis() -> PathBuf {
    let path = std::env::var_os("BATON_SCHEMATHESIS").map_or_else(
        || PathBuf::from("/var/tmp/baton-venv/bin/st"),
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "schemathesis is missing at {}: run .ci/schemathesis-venv (make test does)",
        path.display()
    );
    path
}

#[tokio::test]
async fn schemathesis_finds_no_failure_in_any_operation() {
    let st = schemathesis();
    // Fuzzing is many requests from one key: lift the per-key limit, keep everything else.
    let baton = Baton::unthrottled().await;
    let (tenant, client) = baton.tenant_client("schemathesis").await;
    // Something to find: a session and a memory, so not every read is a miss.
    client.open(&crate::startup("fuzz")).await;
    let output = tokio::process::Command::new(&st)
        .arg("run")
        .arg(format!("{}/api/v1/openapi.json", baton.base_url))
        .args(["--base-url", &baton.base_url])
        .args(["--header", &format!("X-API-Key: {}", tenant.api_key)])
        .args(["--checks", "all"])
        // Valid data only: negated query types ("0" for a string) are still strings on the
        // wire, so negative generation reports valid queries as "accepted negative data".
        .args(["--data-generation-method", "positive"])
        .args(["--hypothesis-max-examples", MAX_EXAMPLES])
        .args(["--hypothesis-seed", SEED])
        .args(["--hypothesis-derandomize"])
        .args(["--hypothesis-suppress-health-check", "all"])
        .args(["--workers", "2"])
        .args(["--request-timeout", "10000"])
        .args(["--no-color"])
        .env("SCHEMATHESIS_TELEMETRY", "false")
        // Hypothesis keeps a cache folder in the working directory: never in the clone.
        .current_dir(std::env::temp_dir())
        .output()
        .await
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "schemathesis reported failures (output above)"
    );
    let operations = crate::openapi_contract::operation_count(&client).await;
    assert!(
        stdout.contains(&format!("{operations} passed")),
        "all {operations} operations ran and passed"
    );
}
