//! `baton serve <target>`: bind every listener first, announce the bound addresses (so a test
//! can ask for port 0), then run until SIGTERM or Ctrl-C and drain.

use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use baton_gateway::GatewayConfig;
use baton_kit::config::Env;
use baton_kit::shutdown::{self, Shutdown};
use baton_provenance::ProvenanceConfig;
use baton_registry::RegistryConfig;
use baton_triage::TriageConfig;

use crate::migrate;

/// Which services this process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    All,
    Registry,
    Provenance,
    Triage,
    Gateway,
}

/// How long in-flight work may take to drain after a stop signal.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);

async fn bind(service: &str, address: std::net::SocketAddr) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("binding {service} on {address}"))?;
    let bound = listener.local_addr()?;
    tracing::info!(service, addr = %bound, "listening");
    Ok(listener)
}

pub async fn run(env: &Env, target: Target, migrate_first: bool) -> anyhow::Result<()> {
    let telemetry = baton_kit::telemetry::init("baton").context("starting telemetry")?;
    let result = run_services(env, target, migrate_first).await;
    if let Err(error) = &result {
        tracing::error!(error = format!("{error:#}"), "baton stopped with an error");
    }
    telemetry.shutdown();
    result
}

async fn run_services(env: &Env, target: Target, migrate_first: bool) -> anyhow::Result<()> {
    let wants = |service: Target| target == Target::All || target == service;
    // Validate every configuration before touching the network or the database.
    let registry_config = if wants(Target::Registry) {
        Some(RegistryConfig::from_env(env)?)
    } else {
        None
    };
    let mut provenance_config = if wants(Target::Provenance) {
        Some(ProvenanceConfig::from_env(env)?)
    } else {
        None
    };
    let mut triage_config = if wants(Target::Triage) {
        Some(TriageConfig::from_env(env)?)
    } else {
        None
    };
    let mut gateway_config = if wants(Target::Gateway) {
        Some(GatewayConfig::from_env(env)?)
    } else {
        None
    };
    if migrate_first {
        migrate::migrate_all(&migrate::admin_url(env)).await?;
        tracing::info!("migrations applied");
    }
    let (trigger, stop) = shutdown::channel();
    let mut services = JoinSet::new();
    if let Some(config) = registry_config {
        let listener = bind("registry", config.listen).await?;
        // In one process every service talks to the registry it just bound.
        let bound = listener.local_addr()?.to_string();
        if let Some(gateway) = gateway_config.as_mut() {
            gateway.registry_addr = bound.clone();
        }
        if let Some(provenance) = provenance_config.as_mut() {
            provenance.registry_addr = bound.clone();
        }
        if let Some(triage) = triage_config.as_mut() {
            triage.registry_addr = bound;
        }
        let stop = stop.clone();
        services.spawn(async move {
            baton_registry::serve(config, listener, stop)
                .await
                .context("registry")
        });
    }
    if let Some(config) = provenance_config {
        let listener = bind("provenance", config.listen).await?;
        let bound = listener.local_addr()?.to_string();
        if let Some(gateway) = gateway_config.as_mut() {
            gateway.provenance_addr = bound.clone();
        }
        if let Some(triage) = triage_config.as_mut() {
            triage.provenance_addr = bound;
        }
        let stop = stop.clone();
        services.spawn(async move {
            baton_provenance::serve(config, listener, stop.wait())
                .await
                .context("provenance")
        });
    }
    if let Some(config) = triage_config {
        let listener = bind("triage", config.listen).await?;
        if let Some(gateway) = gateway_config.as_mut() {
            gateway.triage_addr = listener.local_addr()?.to_string();
        }
        let stop = stop.clone();
        services.spawn(async move {
            baton_triage::serve(config, listener, stop.wait())
                .await
                .context("triage")
        });
    }
    if let Some(config) = gateway_config {
        let listener = bind("gateway", config.listen).await?;
        let stop = stop.clone();
        services.spawn(async move {
            baton_gateway::serve(config, listener, stop.wait())
                .await
                .context("gateway")
        });
    }
    wait(services, trigger, stop).await
}

/// Runs until a signal or the first service failure, then stops everything within the drain
/// timeout.
async fn wait(
    mut services: JoinSet<anyhow::Result<()>>,
    trigger: shutdown::ShutdownTrigger,
    stop: Shutdown,
) -> anyhow::Result<()> {
    let mut outcome = Ok(());
    tokio::select! {
        () = shutdown::os_signal() => tracing::info!("stop signal received, draining"),
        Some(joined) = services.join_next() => {
            outcome = flatten(joined);
        }
    }
    trigger.trigger();
    drop(stop);
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while let Some(joined) = services.join_next().await {
            if let Err(error) = flatten(joined) {
                tracing::error!(
                    error = format!("{error:#}"),
                    "service stopped with an error"
                );
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!("drain timed out; stopping anyway");
    }
    outcome
}

fn flatten(joined: Result<anyhow::Result<()>, tokio::task::JoinError>) -> anyhow::Result<()> {
    joined.context("service task panicked")?
}
