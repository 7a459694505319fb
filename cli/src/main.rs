//! `baton`: serve any Baton service (or all of them in one process), migrate the database, and
//! administer tenants. This is the only place services are composed.

mod client;
mod eval;
mod migrate;
mod report;
mod serve;
mod settings;
mod target;
mod tenant;
mod usage;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc's allocator: the services allocate and free many small strings
/// per request (decoded bodies, protobuf fields, bind arrays), and glibc's malloc/free were a
/// third of the process's CPU on the usage upload path (`make bench`, issue 25).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Run services: `all`, or one or more of registry, provenance, triage, closer, usage, gateway.
    Serve {
        #[arg(value_enum, required = true, num_args = 1..)]
        targets: Vec<target::Target>,
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
        targets: Vec<target::Target>,
    },
    /// Run the closer's judges over the labelled corpora and print recall, precision and the
    /// spurious-resolve rate per kind and overall, and the curve over abstention thresholds
    /// with 95% Wilson intervals (the evidence judge; the openai one too when
    /// `BATON_CLOSER__JUDGE_URL` is set).
    EvalCloser {
        /// Corpus files (JSON lines); default: the development corpora.
        files: Vec<std::path::PathBuf>,
        /// Also report the held-out corpora (eval/closer/holdout, eval/closer/real/heldout).
        #[arg(long)]
        holdout: bool,
        /// Print every miss and spurious resolve.
        #[arg(long)]
        verbose: bool,
    },
    /// Credentials for internal clients calling the gRPC services directly.
    Client {
        #[command(subcommand)]
        command: ClientCommand,
    },
    /// Reports from real use (what the seed asks to measure before default-on).
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// Model prices (the usage context's reference data).
    Pricing {
        #[command(subcommand)]
        command: PricingCommand,
    },
    /// Usage context maintenance.
    Usage {
        #[command(subcommand)]
        command: UsageCommand,
    },
    /// Administer tenants.
    Tenant {
        #[command(subcommand)]
        command: TenantCommand,
    },
    /// Administer a tenant's keys.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Mint one more key for a tenant and print `{"tenantId", "scope", "apiKey"}` once.
    /// `ingest` keys call the hook-facing API; `console` keys only sign in to `/console`.
    /// `--member` names the person an ingest key speaks for: what it reports is attributed to
    /// them (`groupBy=member`); without it, to "unattributed".
    Create {
        #[arg(long)]
        tenant: String,
        #[arg(long, value_parser = ["ingest", "console"])]
        scope: String,
        #[arg(long)]
        member: Option<String>,
    },
    /// List a tenant's keys, one JSON line each: prefix, scope, member, created, last used,
    /// revoked. Never a secret.
    List {
        #[arg(long)]
        tenant: String,
    },
}

#[derive(Debug, Subcommand)]
enum ClientCommand {
    /// Mint a client: prints `{"name", "token", "entry"}` once (the token is never stored).
    Create {
        #[arg(long)]
        name: String,
        /// Comma-separated: registry, provenance, triage, closer.
        #[arg(long)]
        services: String,
        /// Comma-separated method names, or `*`.
        #[arg(long, default_value = "*")]
        methods: String,
        /// Only methods that change nothing.
        #[arg(long)]
        read_only: bool,
        /// Append the entry to this clients file (BATON_GRPC_CLIENTS_FILE).
        #[arg(long)]
        file: Option<std::path::PathBuf>,
    },
    /// Mark a client revoked in the clients file.
    Revoke {
        #[arg(long)]
        name: String,
        #[arg(long)]
        file: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// The closer's validation bar: its resolves and how many a user undid, what became of
    /// briefed commitments, nudges completed versus expired and their extra turns, memory
    /// writes attributed to a run, repeated triggers, corpus growth per session.
    Closer {
        /// One tenant's figures; without it, every live tenant's added up.
        #[arg(long)]
        tenant: Option<String>,
        /// Start of the window (RFC 3339); default 30 days ago.
        #[arg(long)]
        since: Option<String>,
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum PricingCommand {
    /// Add the rows of a price file (schema of `usage-model/pricing/prices.json`);
    /// re-prices the stored usage they affect. Prints `{"rowsChanged", "usageRepriced"}`.
    Import { file: std::path::PathBuf },
}

#[derive(Debug, Subcommand)]
enum UsageCommand {
    /// Delete hook deliveries past `BATON_USAGE__RETENTION_DAYS` once, in windows of
    /// `BATON_USAGE__RETENTION_BATCH`, and print the run's journal line.
    Retention,
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
        Command::EvalCloser {
            files,
            holdout,
            verbose,
        } => {
            // One line, no backtrace: a malformed corpus is an input error, not a crash.
            if let Err(error) = eval::run(&env, files, holdout, verbose).await {
                eprintln!("baton eval-closer: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Report {
            command:
                ReportCommand::Closer {
                    tenant,
                    since,
                    json,
                },
        } => {
            if let Err(error) =
                report::closer(&env, tenant.as_deref(), since.as_deref(), json).await
            {
                eprintln!("baton report closer: {error:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Pricing {
            command: PricingCommand::Import { file },
        } => usage::pricing_import(&env, &file).await,
        Command::Usage {
            command: UsageCommand::Retention,
        } => usage::retention(&env).await,
        Command::Tenant {
            command: TenantCommand::Create { name },
        } => tenant::create(&env, &name).await,
        Command::Key {
            command:
                KeyCommand::Create {
                    tenant,
                    scope,
                    member,
                },
        } => tenant::create_key(&env, &tenant, &scope, member.as_deref()).await,
        Command::Key {
            command: KeyCommand::List { tenant },
        } => tenant::list_keys(&env, &tenant).await,
        Command::Client {
            command:
                ClientCommand::Create {
                    name,
                    services,
                    methods,
                    read_only,
                    file,
                },
        } => client::create(&name, &services, &methods, read_only, file.as_deref()),
        Command::Client {
            command: ClientCommand::Revoke { name, file },
        } => client::revoke(&name, &file),
    }
}
