//! `make bench`: each benchmark measures a Baton path and a baseline in the same run and prints
//! both, with the ratio. Nothing here asserts a timing; the figures are for the closing notes.

mod events;
mod heartbeat;
mod hook;
mod judge;
mod stats;
mod transcripts;
mod usage;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".to_string());
    let all = which == "all";
    if which == transcripts::CHILD_COMMAND {
        return transcripts::child_main(std::env::args().skip(2).collect());
    }
    if all || which == "heartbeat" {
        heartbeat::run().await?;
    }
    if all || which == "events" {
        events::run().await?;
    }
    if all || which == "hook" {
        hook::run().await?;
    }
    if all || which == "judge" {
        judge::run()?;
    }
    if all || which == "transcripts" {
        transcripts::run().await?;
    }
    if all || which == "usage" {
        usage::run().await?;
    }
    Ok(())
}
