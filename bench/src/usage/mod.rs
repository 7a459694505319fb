//! The usage context's two figures (issue 16): upload throughput of usage rows through the
//! gateway against the same rows inserted directly with sqlx in batches of the same size, and
//! the latency of a 30-day `groupBy=day` read for one tenant among many, against the same
//! figures computed straight from `token_usage` without the rollups.

mod read;
mod upload;

use baton_tests::Baton;

pub async fn run() -> anyhow::Result<()> {
    let baton = Baton::start_with(&[
        ("BATON_GATEWAY__RATE_LIMIT_REQUESTS", "10000000"),
        ("BATON_LOG", "warn,baton=info"),
    ])
    .await;
    upload::run(&baton).await?;
    for line in baton.logs.raw() {
        if line.contains("\"WARN\"") || line.contains("\"ERROR\"") {
            eprintln!("  log: {line}");
        }
    }
    if std::env::var("BATON_BENCH_USAGE_UPLOAD_ONLY").is_ok() {
        baton.stop().await;
        return Ok(());
    }
    read::run(&baton).await?;
    baton.stop().await;
    Ok(())
}
