//! `baton`: serve any Baton service (or all of them in one process), migrate the database, and
//! administer tenants. This is the only place services are composed.

mod eval;
mod migrate;
mod serve;
mod tenant;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "baton",
    version,
    about = "Baton: session continuity for AI coding agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run services: `all`, or one or more of registry, provenance, triage, closer, gateway.
    Serve {
        #[arg(value_enum, required = true, num_args = 1..)]
        targets: Vec<serve::Target>,
        /// Skip creating roles and schemas and applying migrations at start.
        #[arg(long)]
        no_migrate: bool,
    },
    /// Create roles and schemas and apply every context's migrations (idempotent, safe to run
    /// twice at once). With `--check`, change nothing: exit 0 only when each named context's
    /// schema (all by default) is exactly the version this binary expects.
    Migrate {
        #[arg(long)]
        check: bool,
        /// With `--check`: the contexts to check (`all` by default).
        #[arg(value_enum, requires = "check")]
        targets: Vec<serve::Target>,
    },
    /// Run a closer judge over a labelled corpus and print recall, precision and the
    /// spurious-resolve rate (`BATON_CLOSER_JUDGE` picks the judge; lexical by default).
    EvalCloser {
        /// Corpus files (JSON lines); default: eval/closer/*.jsonl.
        files: Vec<std::path::PathBuf>,
        /// Print every miss and spurious resolve.
        #[arg(long)]
        verbose: bool,
    },
    /// Administer tenants.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
}

#[derive(Debug, Subcommand)]
enum TenantCommand {
    /// Create a tenant and print `{"tenantId": ..., "apiKey": ...}` once; the key is never
    /// stored in clear and cannot be shown again.
    Create {
        #[arg(long)]
        name: String,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let env = baton_kit::config::Env::from_process()
        .with_files()?
        .with_database_tls()?;
    match cli.command {
        Command::Serve {
            targets,
            no_migrate,
        } => serve::run(&env, &targets, !no_migrate).await,
        Command::Migrate { check: false, .. } => migrate::run(&env).await,
        Command::Migrate {
            check: true,
            targets,
        } => migrate::check(&env, &targets).await,
        Command::EvalCloser { files, verbose } => eval::run(&env, files, verbose).await,
        Command::Tenant {
            command: TenantCommand::Create { name },
        } => tenant::create(&env, &name).await,
    }
}
