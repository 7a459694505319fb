//! The usage service against a real database: the gRPC handlers called in-process, one fresh
//! Postgres database per test, migrated as `baton migrate` does, "now" set per call.

mod agent_merges;
mod budgets;
mod members;
mod periods;
mod pricing;
mod reads;
mod retention;
mod server_tools;
mod session_figures;
mod session_merges;
mod session_order;
mod upload;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tonic::Request;
use uuid::Uuid;

use baton_kit::clock::{Clock, TEST_NOW_KEY, to_timestamp};
use baton_kit::db;
use baton_kit::grpc::TENANT_KEY;
use baton_kit::testing::{TestDatabase, init_logging};
use baton_proto::Timestamp;
use baton_proto::usage::v1 as proto;
use baton_proto::usage::v1::usage_server::Usage;
use baton_usage::grpc::UsageGrpc;

pub const AGENT: &str = "claude-code";

pub struct Harness {
    pub database: TestDatabase,
    pub admin: PgPool,
    pub runtime: PgPool,
    pub grpc: UsageGrpc,
}

impl Harness {
    /// A harness and a fresh tenant id: the start of most tests.
    pub async fn with_tenant() -> (Harness, Uuid) {
        (Harness::new().await, Uuid::new_v4())
    }

    pub async fn new() -> Harness {
        init_logging();
        let database =
            TestDatabase::migrated(vec![(&baton_usage::DB, baton_usage::migrator())]).await;
        let admin = PgPool::connect(database.url()).await.expect("admin");
        baton_usage::pricing::import(&admin, baton_usage_model::pricing::BUNDLED)
            .await
            .expect("bundled prices");
        let runtime = db::connect_runtime(database.url(), None, &baton_usage::DB, 4)
            .await
            .expect("runtime pool");
        let grpc = UsageGrpc::new(
            runtime.clone(),
            Clock::new(true),
            std::time::Duration::from_secs(600),
        );
        Harness {
            database,
            admin,
            runtime,
            grpc,
        }
    }

    /// Uploads `request` for `tenant` at `now`; the upload must succeed.
    pub async fn upload(
        &self,
        tenant: Uuid,
        now: &str,
        request: proto::UploadBatchRequest,
    ) -> proto::UploadBatchResponse {
        self.grpc
            .upload_batch(call(tenant, now, request))
            .await
            .unwrap_or_else(|status| panic!("upload at {now}: {status}"))
            .into_inner()
    }

    /// `QueryUsage` for `tenant` at `NOW`.
    pub async fn query(
        &self,
        tenant: Uuid,
        request: proto::QueryUsageRequest,
    ) -> Result<proto::QueryUsageResponse, tonic::Status> {
        self.grpc
            .query_usage(call(tenant, NOW, request))
            .await
            .map(tonic::Response::into_inner)
    }

    /// `SessionFigures` of `refs` for `tenant` at `NOW`: the summaries answered.
    pub async fn figures(
        &self,
        tenant: Uuid,
        refs: Vec<proto::SessionRef>,
    ) -> Result<Vec<proto::SessionSummary>, tonic::Status> {
        let request = proto::SessionFiguresRequest { sessions: refs };
        Ok(self
            .grpc
            .session_figures(call(tenant, NOW, request))
            .await?
            .into_inner()
            .sessions)
    }

    /// `GetTree` of the test agent's session `s-1`, for `tenant` at `now`.
    pub async fn tree(
        &self,
        tenant: Uuid,
        now: &str,
    ) -> Result<proto::GetTreeResponse, tonic::Status> {
        let request = proto::GetTreeRequest {
            agent: AGENT.to_string(),
            session_id: "s-1".to_string(),
        };
        self.grpc
            .get_tree(call(tenant, now, request))
            .await
            .map(tonic::Response::into_inner)
    }
}

pub fn at(text: &str) -> DateTime<Utc> {
    text.parse().expect("instant")
}

pub fn ts(text: &str) -> Option<Timestamp> {
    Some(to_timestamp(at(text)))
}

/// A request for `tenant` at `now`.
pub fn call<T>(tenant: Uuid, now: &str, message: T) -> Request<T> {
    let mut request = Request::new(message);
    request
        .metadata_mut()
        .insert(TENANT_KEY, tenant.to_string().parse().expect("metadata"));
    request
        .metadata_mut()
        .insert(TEST_NOW_KEY, now.parse().expect("metadata"));
    request
}

pub fn session(id: &str) -> proto::SessionFact {
    proto::SessionFact {
        agent: AGENT.to_string(),
        session_id: id.to_string(),
        project_slug: "-home-me-repo".to_string(),
        client_versions: vec!["2.1.100".to_string()],
        output_under_reported: false,
        first_activity_at: ts("2026-03-01T10:00:00Z"),
        last_activity_at: ts("2026-03-01T10:20:00Z"),
    }
}

pub fn subagent(session: &str, id: &str, model: &str) -> proto::AgentFact {
    proto::AgentFact {
        agent: AGENT.to_string(),
        session_id: session.to_string(),
        agent_id: Some(id.to_string()),
        kind: "subagent".to_string(),
        parent_agent_id: None,
        subagent_type: Some("Explore".to_string()),
        spawn_tool: Some("Task".to_string()),
        model: Some(model.to_string()),
        first_activity_at: ts("2026-03-01T10:05:00Z"),
        last_activity_at: ts("2026-03-01T10:10:00Z"),
        ended: None,
        ended_at: None,
    }
}

pub fn row(
    session: &str,
    agent_id: Option<&str>,
    key: &str,
    model: &str,
    when: &str,
    output: u64,
) -> proto::UsageFact {
    proto::UsageFact {
        agent: AGENT.to_string(),
        session_id: session.to_string(),
        agent_id: agent_id.map(str::to_string),
        dedup_key: key.to_string(),
        model: Some(model.to_string()),
        at: ts(when),
        input: 1000,
        output,
        cache_read: 200,
        cache_write_5m: 30,
        cache_write_1h: 4,
        service_tier: None,
        speed: None,
        inference_geo: None,
        sidechain: agent_id.is_some(),
        reasoning: 0,
        web_search_requests: 0,
        web_fetch_requests: 0,
    }
}

/// A lead-agent usage row of session `s-1`.
pub fn lead(key: &str, model: &str, when: &str, output: u64) -> proto::UsageFact {
    row("s-1", None, key, model, when, output)
}

/// A sidechain usage row of subagent `agent_id` in session `s-1`.
pub fn sidechain(
    agent_id: &str,
    key: &str,
    model: &str,
    when: &str,
    output: u64,
) -> proto::UsageFact {
    row("s-1", Some(agent_id), key, model, when, output)
}

/// A hook delivery of `event` in `session`, observed at `when`.
pub fn delivery(session: &str, event: &str, when: &str) -> proto::DeliveryFact {
    proto::DeliveryFact {
        delivery_id: Uuid::new_v4().to_string(),
        agent: AGENT.to_string(),
        session_id: session.to_string(),
        event: event.to_string(),
        observed_at: ts(when),
    }
}

/// An orchestration edge from `session`'s lead agent to `child`, proved by `join_path`.
pub fn edge(session: &str, child: &str, join_path: &str) -> proto::EdgeFact {
    proto::EdgeFact {
        agent: AGENT.to_string(),
        session_id: session.to_string(),
        parent_agent_id: None,
        child_agent_id: child.to_string(),
        join_path: join_path.to_string(),
    }
}

/// A `QueryUsage` request over `from..to` grouped by `group_by`, in UTC, not split by model.
pub fn usage_query(from: &str, to: &str, group_by: &str) -> proto::QueryUsageRequest {
    proto::QueryUsageRequest {
        from: ts(from),
        to: ts(to),
        group_by: group_by.to_string(),
        timezone: None,
        split_by_model: false,
    }
}

/// A reference to `agent`'s session `session_id`.
pub fn reference(agent: &str, session_id: &str) -> proto::SessionRef {
    proto::SessionRef {
        agent: agent.to_string(),
        session_id: session_id.to_string(),
    }
}

pub fn batch(host: &str) -> proto::UploadBatchRequest {
    proto::UploadBatchRequest {
        host_id: host.to_string(),
        hostname: None,
        client_version: Some("0.1.0".to_string()),
        ..proto::UploadBatchRequest::default()
    }
}

/// Host `h`'s upload of session `s-1` with `usage`.
pub fn session_usage(usage: Vec<proto::UsageFact>) -> proto::UploadBatchRequest {
    let mut request = batch("h");
    request.sessions = vec![session("s-1")];
    request.usage = usage;
    request
}

pub const NOW: &str = "2026-03-01T10:30:00Z";

/// The whole of one tenant's stored usage, for before/after comparisons.
pub async fn snapshot(admin: &PgPool, tenant: Uuid) -> Vec<String> {
    let mut lines: Vec<String> = sqlx::query_scalar(
        "SELECT t::text FROM usage.token_usage t WHERE tenant_id = $1 \
         UNION ALL SELECT r::text FROM usage.rollups r WHERE tenant_id = $1 \
         UNION ALL SELECT s::text FROM usage.sessions s WHERE tenant_id = $1 \
         UNION ALL SELECT a::text FROM usage.agents a WHERE tenant_id = $1 \
         UNION ALL SELECT e::text FROM usage.orchestration_edges e WHERE tenant_id = $1 \
         UNION ALL SELECT d::text FROM usage.hook_deliveries d WHERE tenant_id = $1",
    )
    .bind(tenant)
    .fetch_all(admin)
    .await
    .expect("snapshot");
    lines.sort();
    lines
}

/// The rollups agree with the rows they sum (tokens, reasoning, requests, cost, unpriced
/// tokens, server-tool calls, their cost and the unpriced calls).
pub async fn assert_rollups_consistent(admin: &PgPool, tenant: Uuid) {
    let (from_rows, from_rollups): (String, String) = sqlx::query_as(
        "SELECT \
           (SELECT concat_ws(',', sum(input), sum(output), sum(cache_read), sum(cache_write_5m), \
              sum(cache_write_1h), count(*), sum(cost), \
              sum(CASE WHEN priced THEN 0 ELSE input + output + cache_read + cache_write_5m + cache_write_1h END), \
              sum(reasoning), sum(web_search_requests), sum(web_fetch_requests), \
              sum(server_tool_cost), sum(unpriced_calls)) \
            FROM usage.token_usage WHERE tenant_id = $1), \
           (SELECT concat_ws(',', sum(input), sum(output), sum(cache_read), sum(cache_write_5m), \
              sum(cache_write_1h), sum(requests), sum(cost), sum(unpriced_tokens), \
              sum(reasoning), sum(web_search_requests), sum(web_fetch_requests), \
              sum(server_tool_cost), sum(unpriced_calls)) \
            FROM usage.rollups WHERE tenant_id = $1)",
    )
    .bind(tenant)
    .fetch_one(admin)
    .await
    .expect("consistency");
    assert_eq!(from_rows, from_rollups, "rollups drifted from token_usage");
}
