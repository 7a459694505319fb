//! `baton serve <target>...`: bind every listener first and announce the bound addresses (so a
//! test can ask for port 0), wire co-located services to each other's bound addresses (their
//! calls then stay in process unless `BATON_GRPC_IN_PROCESS=false`), then run until SIGTERM or
//! Ctrl-C and drain.

use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use baton_closer::CloserConfig;
use baton_gateway::GatewayConfig;
use baton_kit::config::{Env, load};
use baton_kit::shutdown::{self, Shutdown};
use baton_kit::telemetry::Component;
use baton_kit::telemetry::component::within;
use baton_notify::NotifyConfig;
use baton_provenance::ProvenanceConfig;
use baton_registry::RegistryConfig;
use baton_triage::TriageConfig;
use baton_usage::UsageConfig;

use crate::migrate;
use crate::settings::ServeSettings;
use crate::target::Target;

/// The components `targets` name, each reporting its own `service.name`.
pub fn components(targets: &[Target]) -> Vec<Component> {
    let all = targets.contains(&Target::All);
    Component::ALL
        .into_iter()
        .filter(|component| {
            all || targets.contains(&match component {
                Component::Gateway => Target::Gateway,
                Component::Registry => Target::Registry,
                Component::Provenance => Target::Provenance,
                Component::Triage => Target::Triage,
                Component::Closer => Target::Closer,
                Component::Usage => Target::Usage,
                Component::Notify => Target::Notify,
            })
        })
        .collect()
}

/// How long in-flight work may take to drain after a stop signal.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(20);

/// Binds `service`'s listener and announces the bound address; nothing when this process does
/// not run `service` (no planned `address`).
async fn bind(
    service: &str,
    address: Option<std::net::SocketAddr>,
) -> anyhow::Result<Option<(TcpListener, String)>> {
    let Some(address) = address else {
        return Ok(None);
    };
    let listener = TcpListener::bind(address)
        .await
        .with_context(|| format!("binding {service} on {address}"))?;
    let bound = listener.local_addr()?;
    tracing::info!(service, addr = %bound, "listening");
    Ok(Some((listener, bound.to_string())))
}

pub async fn run(env: &Env, targets: &[Target], migrate_first: bool) -> anyhow::Result<()> {
    let telemetry =
        baton_kit::telemetry::init(&components(targets)).context("starting telemetry")?;
    let result = run_services(env, targets, migrate_first).await;
    if let Err(error) = &result {
        tracing::error!(error = format!("{error:#}"), "baton stopped with an error");
    }
    telemetry.shutdown();
    result
}

/// The configurations of the services this process runs, validated before anything starts.
pub(crate) struct Plan {
    registry: Option<RegistryConfig>,
    provenance: Option<ProvenanceConfig>,
    triage: Option<TriageConfig>,
    closer: Option<CloserConfig>,
    usage: Option<UsageConfig>,
    notify: Option<NotifyConfig>,
    gateway: Option<GatewayConfig>,
    /// Calls between co-located services skip the socket and go straight to the callee's call
    /// stack (`BATON_GRPC_IN_PROCESS`, default on; see `baton_kit::grpc::local`).
    grpc_in_process: bool,
}

pub(crate) fn plan(env: &Env, targets: &[Target]) -> anyhow::Result<Plan> {
    let wants = |service: Target| targets.contains(&Target::All) || targets.contains(&service);
    Ok(Plan {
        registry: wants(Target::Registry)
            .then(|| RegistryConfig::from_env(env))
            .transpose()?,
        provenance: wants(Target::Provenance)
            .then(|| ProvenanceConfig::from_env(env))
            .transpose()?,
        triage: wants(Target::Triage)
            .then(|| TriageConfig::from_env(env))
            .transpose()?,
        closer: wants(Target::Closer)
            .then(|| CloserConfig::from_env(env))
            .transpose()?,
        usage: wants(Target::Usage)
            .then(|| UsageConfig::from_env(env))
            .transpose()?,
        notify: wants(Target::Notify)
            .then(|| NotifyConfig::from_env(env))
            .transpose()?,
        gateway: wants(Target::Gateway)
            .then(|| GatewayConfig::from_env(env))
            .transpose()?,
        grpc_in_process: load::<ServeSettings>(env)?.grpc_in_process.get(),
    })
}

/// Points each co-located caller's address setting for `callee` at the address just bound,
/// and names the hop (`caller→callee`) for the start-up line.
fn wire<'a>(
    callee: &str,
    address: &str,
    callers: impl IntoIterator<Item = (&'static str, Option<&'a mut String>)>,
    hops: &mut Vec<String>,
) {
    for (caller, setting) in callers {
        if let Some(setting) = setting {
            address.clone_into(setting);
            hops.push(format!("{caller}→{callee}"));
        }
    }
}

async fn run_services(env: &Env, targets: &[Target], migrate_first: bool) -> anyhow::Result<()> {
    let mut plan = plan(env, targets)?;
    if migrate_first {
        migrate::migrate_all(&migrate::admin_url(env)?).await?;
        tracing::info!("migrations applied");
    }
    // Bind everything first; co-located services then talk to the addresses just bound.
    let registry = bind(
        "registry",
        plan.registry.as_ref().map(|config| config.listen),
    )
    .await?;
    let provenance = bind(
        "provenance",
        plan.provenance.as_ref().map(|config| config.listen),
    )
    .await?;
    let triage = bind("triage", plan.triage.as_ref().map(|config| config.listen)).await?;
    let closer = bind("closer", plan.closer.as_ref().map(|config| config.listen)).await?;
    let usage = bind("usage", plan.usage.as_ref().map(|config| config.listen)).await?;
    let notify = bind("notify", plan.notify.as_ref().map(|config| config.listen)).await?;
    // Each hop between co-located services: its caller's address setting, then its name.
    let mut hops = Vec::new();
    if let Some((_, address)) = &notify {
        // The gateway calls notify for webhooks and the delivery log.
        let callers = [(
            "gateway",
            plan.gateway.as_mut().map(|config| &mut config.notify_addr),
        )];
        wire("notify", address, callers, &mut hops);
    }
    if let Some((_, address)) = &usage {
        let callers = [(
            "gateway",
            plan.gateway.as_mut().map(|config| &mut config.usage_addr),
        )];
        wire("usage", address, callers, &mut hops);
    }
    if let Some((_, address)) = &registry {
        let callers = [
            (
                "provenance",
                plan.provenance
                    .as_mut()
                    .map(|config| &mut config.registry_addr),
            ),
            (
                "triage",
                plan.triage.as_mut().map(|config| &mut config.registry_addr),
            ),
            (
                "closer",
                plan.closer.as_mut().map(|config| &mut config.registry_addr),
            ),
            (
                "gateway",
                plan.gateway
                    .as_mut()
                    .map(|config| &mut config.registry_addr),
            ),
        ];
        wire("registry", address, callers, &mut hops);
    }
    if let Some((_, address)) = &provenance {
        let callers = [
            (
                "triage",
                plan.triage
                    .as_mut()
                    .map(|config| &mut config.provenance_addr),
            ),
            (
                "closer",
                plan.closer
                    .as_mut()
                    .map(|config| &mut config.provenance_addr),
            ),
            (
                "gateway",
                plan.gateway
                    .as_mut()
                    .map(|config| &mut config.provenance_addr),
            ),
        ];
        wire("provenance", address, callers, &mut hops);
    }
    if let Some((_, address)) = &triage {
        let callers = [
            (
                "closer",
                plan.closer.as_mut().map(|config| &mut config.triage_addr),
            ),
            (
                "gateway",
                plan.gateway.as_mut().map(|config| &mut config.triage_addr),
            ),
        ];
        wire("triage", address, callers, &mut hops);
    }
    if let Some((_, address)) = &closer {
        let callers = [(
            "gateway",
            plan.gateway.as_mut().map(|config| &mut config.closer_addr),
        )];
        wire("closer", address, callers, &mut hops);
    }
    if plan.grpc_in_process {
        // Before any client is built: a client to an offered address calls in process.
        for (listener, _) in [&registry, &provenance, &triage, &closer, &usage, &notify]
            .into_iter()
            .flatten()
        {
            baton_kit::grpc::local::offer(listener.local_addr()?);
        }
    }
    if !hops.is_empty() {
        if plan.grpc_in_process {
            tracing::info!(
                hops = hops.join(", "),
                "grpc calls between co-located services stay in process"
            );
        } else {
            tracing::info!(
                hops = hops.join(", "),
                "grpc calls between co-located services go over the network \
                 (BATON_GRPC_IN_PROCESS=false)"
            );
        }
    }
    let gateway = bind("gateway", plan.gateway.as_ref().map(|config| config.listen)).await?;

    let (trigger, stop) = shutdown::channel();
    let mut services = JoinSet::new();
    start(
        &mut services,
        Component::Registry,
        plan.registry,
        registry,
        |config, listener| baton_registry::serve(config, listener, stop.clone()),
    );
    start(
        &mut services,
        Component::Provenance,
        plan.provenance,
        provenance,
        |config, listener| baton_provenance::serve(config, listener, stop.clone().wait()),
    );
    start(
        &mut services,
        Component::Triage,
        plan.triage,
        triage,
        |config, listener| baton_triage::serve(config, listener, stop.clone().wait()),
    );
    start(
        &mut services,
        Component::Closer,
        plan.closer,
        closer,
        |config, listener| baton_closer::serve(config, listener, stop.clone()),
    );
    start(
        &mut services,
        Component::Usage,
        plan.usage,
        usage,
        |config, listener| baton_usage::serve(config, listener, stop.clone()),
    );
    start(
        &mut services,
        Component::Notify,
        plan.notify,
        notify,
        |config, listener| baton_notify::serve(config, listener, stop.clone()),
    );
    start(
        &mut services,
        Component::Gateway,
        plan.gateway,
        gateway,
        |config, listener| baton_gateway::serve(config, listener, stop.clone().wait()),
    );
    wait(services, trigger, stop).await
}

/// Spawns a service this process runs (planned and bound) under its component's context; its
/// failure names the service.
fn start<C, F, E>(
    services: &mut JoinSet<anyhow::Result<()>>,
    component: Component,
    config: Option<C>,
    bound: Option<(TcpListener, String)>,
    serve: impl FnOnce(C, TcpListener) -> F,
) where
    F: std::future::Future<Output = Result<(), E>> + Send + 'static,
    E: Into<anyhow::Error>,
{
    if let (Some(config), Some((listener, _))) = (config, bound) {
        let served = serve(config, listener);
        // "registry", not "baton-registry": the name the start-up errors have always used.
        let name = component.service_name().trim_start_matches("baton-");
        services.spawn(within(component, async move {
            served.await.map_err(|error| error.into().context(name))
        }));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_reports_its_own_component_and_all_reports_every_one() {
        for (targets, expected) in [
            (vec![Target::All], Component::ALL.to_vec()),
            (vec![Target::Registry], vec![Component::Registry]),
            (
                vec![Target::Closer, Target::Gateway],
                vec![Component::Gateway, Component::Closer],
            ),
        ] {
            assert_eq!(components(&targets), expected, "{targets:?}");
        }
    }
}
