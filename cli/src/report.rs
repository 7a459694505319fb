//! `baton report closer [--tenant ID] [--since INSTANT] [--json]`: the validation bar from
//! real use, from the closer's `Report` RPC (which gathers each figure from its owner over
//! gRPC). Without `--tenant`, every live tenant's counts are added up. `--since` defaults to
//! 30 days ago. The service token comes from `BATON_SERVICE_TOKEN`, the closer's address from
//! `BATON_CLOSER__ADDR`.

use anyhow::Context;
use chrono::{DateTime, Duration, Utc};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use baton_closer::report::{Rates, add};
use baton_gateway::config::GatewaySettings;
use baton_kit::clock::{iso, parse_instant, to_timestamp};
use baton_kit::config::peers::CloserPeer;
use baton_kit::config::{CommonConfig, CommonSettings, Env, SecretUrl, Settings, load};
use baton_kit::db;
use baton_kit::grpc::{Outbound, OutboundCall};
use baton_proto::closer::v1 as proto;
use baton_proto::closer::v1::closer_client::CloserClient;

/// The default window.
const DEFAULT_DAYS: i64 = 30;

/// Parses `--since` (RFC 3339), or 30 days before `now`.
pub fn window_start(since: Option<&str>, now: DateTime<Utc>) -> anyhow::Result<DateTime<Utc>> {
    match since {
        None => Ok(now - Duration::days(DEFAULT_DAYS)),
        Some(text) => parse_instant(text)
            .with_context(|| format!("--since {text:?} is not an RFC 3339 instant")),
    }
}

async fn tenants(env: &Env, tenant: Option<&str>) -> anyhow::Result<Vec<Uuid>> {
    if let Some(tenant) = tenant {
        let id = Uuid::parse_str(tenant.trim())
            .with_context(|| format!("--tenant {tenant:?} is not a tenant id"))?;
        return Ok(vec![id]);
    }
    let common: CommonSettings = load(env)?;
    let gateway: GatewaySettings = load(env)?;
    let pool = db::connect_runtime(
        common.database_url.0.expose(),
        gateway.database_url.as_ref().map(SecretUrl::expose),
        &baton_gateway::DB,
        1,
    )
    .await
    .context("connecting to the gateway database to list tenants")?;
    baton_gateway::tenants::live_tenants(&pool)
        .await
        .context("listing tenants")
}

fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_string(), |rate| format!("{:.1}%", rate * 100.0))
}

fn table(report: &proto::ReportResponse, rates: &Rates) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header(vec!["figure", "count", "rate"]);
    let rows: Vec<(&str, String, String)> = vec![
        (
            "closer resolves",
            report.closer_resolves.to_string(),
            String::new(),
        ),
        (
            "  undone by a user (observed spurious)",
            report.closer_resolves_undone.to_string(),
            percent(rates.spurious),
        ),
        (
            "commitments briefed",
            report.briefed.to_string(),
            String::new(),
        ),
        (
            "  resolved by the agent",
            report.briefed_resolved_by_agent.to_string(),
            percent(rates.recall_agent),
        ),
        (
            "  resolved by the closer",
            report.briefed_resolved_by_closer.to_string(),
            percent(rates.recall_closer),
        ),
        (
            "  still open",
            report.briefed_still_open.to_string(),
            percent(rates.still_open),
        ),
        (
            "  otherwise",
            report.briefed_other.to_string(),
            String::new(),
        ),
        (
            "nudges armed",
            report.nudges_armed.to_string(),
            String::new(),
        ),
        (
            "  completed",
            report.nudges_completed.to_string(),
            String::new(),
        ),
        (
            "  expired (ignore rate)",
            report.nudges_expired.to_string(),
            percent(rates.ignore),
        ),
        (
            "  overflowed",
            report.nudges_overflowed.to_string(),
            String::new(),
        ),
        (
            "  extra turns",
            report.nudge_extra_turns.to_string(),
            String::new(),
        ),
        (
            "runs nudged / more than once (repeated trigger)",
            format!("{} / {}", report.nudged_runs, report.nudged_runs_repeated),
            percent(rates.repeated_trigger),
        ),
        (
            "memory writes / attributed to a run",
            format!(
                "{} / {}",
                report.memory_writes, report.memory_writes_attributed
            ),
            percent(rates.attributed),
        ),
        (
            "memories created / sessions opened (growth per session)",
            format!("{} / {}", report.memories_created, report.sessions_opened),
            rates
                .growth_per_session
                .map_or_else(|| "-".to_string(), |rate| format!("{rate:.2}")),
        ),
    ];
    for (name, count, rate) in rows {
        table.add_row(vec![name.to_string(), count, rate]);
    }
    table
}

fn json_of(
    report: &proto::ReportResponse,
    rates: &Rates,
    since: DateTime<Utc>,
) -> serde_json::Value {
    json!({
        "since": iso(since),
        "truncated": report.truncated,
        "closerResolves": report.closer_resolves,
        "closerResolvesUndone": report.closer_resolves_undone,
        "briefed": report.briefed,
        "briefedResolvedByAgent": report.briefed_resolved_by_agent,
        "briefedResolvedByCloser": report.briefed_resolved_by_closer,
        "briefedStillOpen": report.briefed_still_open,
        "briefedOther": report.briefed_other,
        "nudgesArmed": report.nudges_armed,
        "nudgesCompleted": report.nudges_completed,
        "nudgesExpired": report.nudges_expired,
        "nudgesOverflowed": report.nudges_overflowed,
        "nudgeExtraTurns": report.nudge_extra_turns,
        "nudgedRuns": report.nudged_runs,
        "nudgedRunsRepeated": report.nudged_runs_repeated,
        "memoryWrites": report.memory_writes,
        "memoryWritesAttributed": report.memory_writes_attributed,
        "memoriesCreated": report.memories_created,
        "sessionsOpened": report.sessions_opened,
        "rates": {
            "spurious": rates.spurious,
            "recallAgent": rates.recall_agent,
            "recallCloser": rates.recall_closer,
            "stillOpen": rates.still_open,
            "ignore": rates.ignore,
            "attributed": rates.attributed,
            "repeatedTrigger": rates.repeated_trigger,
            "growthPerSession": rates.growth_per_session,
        },
    })
}

/// The service the report calls (`BATON_CLOSER__ADDR`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
struct ReportCalls {
    closer: CloserPeer,
}

impl Settings for ReportCalls {
    const SECTION: &'static str = "";
}

/// Runs the report and prints it.
pub async fn closer(
    env: &Env,
    tenant: Option<&str>,
    since: Option<&str>,
    as_json: bool,
) -> anyhow::Result<()> {
    let since = window_start(since, Utc::now())?;
    let common = CommonConfig::from_env(env).context("reading BATON_SERVICE_TOKEN")?;
    let calls: ReportCalls = load(env)?;
    let address = calls.closer.addr();
    let channel = baton_kit::grpc::channel(&address).context("the closer's address")?;
    let mut client = CloserClient::new(channel);
    let outbound = Outbound::new(&common.service_token);
    let mut total = proto::ReportResponse::default();
    let tenants = tenants(env, tenant).await?;
    for tenant_id in &tenants {
        let call = OutboundCall {
            tenant_id: *tenant_id,
            test_now: None,
        };
        let request = proto::ReportRequest {
            since: Some(to_timestamp(since)),
        };
        let report = client
            .report(outbound.request(&call, request))
            .await
            .map_err(|status| anyhow::anyhow!("{}: {}", status.code(), status.message()))
            .with_context(|| format!("the closer's report for tenant {tenant_id} (at {address})"))?
            .into_inner();
        add(&mut total, &report);
    }
    let rates = Rates::of(&total);
    if as_json {
        let mut value = json_of(&total, &rates, since);
        value["tenants"] = json!(tenants.len());
        println!("{value}");
    } else {
        println!(
            "closer report since {} over {} tenant(s){}",
            iso(since),
            tenants.len(),
            if total.truncated {
                " (truncated: a bounded read stopped early)"
            } else {
                ""
            }
        );
        println!("{}", table(&total, &rates));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_starts_at_since_or_thirty_days_back() {
        let now = parse_instant("2026-03-31T00:00:00.000Z").expect("now");
        assert_eq!(
            window_start(None, now).expect("default"),
            parse_instant("2026-03-01T00:00:00.000Z").expect("start")
        );
        assert_eq!(
            window_start(Some("2026-01-02T03:04:05Z"), now).expect("given"),
            parse_instant("2026-01-02T03:04:05.000Z").expect("start")
        );
        assert!(window_start(Some("yesterday"), now).is_err());
    }
}
