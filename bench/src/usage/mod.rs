//! The usage context's two figures (issue 16): upload throughput of usage rows through the
//! gateway against the same rows inserted directly with sqlx in batches of the same size, and
//! the latency of a 30-day `groupBy=day` read for one tenant among many, against the same
//! figures computed straight from `token_usage` without the rollups.

mod read;
mod upload;

use baton_tests::Baton;

pub async fn run() -> anyhow::Result<()> {
    let baton = Baton::start_with(&[
        ("BATON_RATE_LIMIT__REQUESTS", "10000000"),
        ("BATON_LOG", "warn,baton=info"),
    ])
    .await;
    upload::run(&baton).await?;
    read::run(&baton).await?;
    baton.stop().await;
    Ok(())
}
