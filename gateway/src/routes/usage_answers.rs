//! The answers of the usage reads that both JSON and CSV give (figures, a `GET /usage`
//! answer, a session of `GET /usage/sessions`), and their making from `baton.usage.v1`.

use serde::Serialize;
use utoipa::{PartialSchema, ToSchema};

use baton_proto::usage::v1 as proto;

use crate::api_schema::enums::RunawayReason;
use crate::api_schema::text::Timestamp;
use crate::api_schema::{List, Nullable};
use crate::routes::{iso_of, optional_iso};

/// Tokens by kind.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokensAnswer {
    #[schema(maximum = 1_000_000_000_000u64)]
    pub input: u64,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub output: u64,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub cache_read: u64,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub cache_write_5m: u64,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub cache_write_1h: u64,
    /// The five kinds summed (reasoning is inside output).
    #[schema(maximum = 1_000_000_000_000u64)]
    pub total: u64,
    /// The part of output that was reasoning.
    #[schema(maximum = 1_000_000_000_000u64)]
    pub reasoning: u64,
}

/// Server-side tool calls, billed per call; their priced cost is inside `costUsd`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerToolsAnswer {
    #[schema(maximum = 1_000_000_000_000u64)]
    pub web_search_requests: u64,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub web_fetch_requests: u64,
    /// What the priced calls cost (inside costUsd).
    #[schema(minimum = 0.0)]
    pub cost_usd: f64,
    /// Calls without a price row for their provider and date (never $0).
    #[schema(maximum = 1_000_000_000_000u64)]
    pub unpriced_calls: u64,
}

/// The tokens of a model without a price.
#[derive(Debug, Serialize, ToSchema)]
pub struct UnpricedAnswer {
    pub model: String,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub tokens: u64,
}

/// Tokens by kind, their cost, and what could not be priced.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = UsageFigures)]
pub struct FiguresAnswer {
    #[schema(inline)]
    pub tokens: TokensAnswer,
    /// Tokens and server-tool calls, priced.
    #[schema(minimum = 0.0)]
    pub cost_usd: f64,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub unpriced_tokens: u64,
    #[schema(inline)]
    pub unpriced: Vec<UnpricedAnswer>,
    #[schema(maximum = 1_000_000_000_000u64)]
    pub requests: u64,
    #[schema(inline)]
    pub server_tools: ServerToolsAnswer,
}

pub(super) fn figures(figures: Option<proto::Figures>) -> FiguresAnswer {
    let figures = figures.unwrap_or_default();
    let tokens = figures.tokens.unwrap_or_default();
    let server_tools = figures.server_tools.unwrap_or_default();
    FiguresAnswer {
        tokens: TokensAnswer {
            input: tokens.input,
            output: tokens.output,
            cache_read: tokens.cache_read,
            cache_write_5m: tokens.cache_write_5m,
            cache_write_1h: tokens.cache_write_1h,
            total: tokens.total,
            reasoning: tokens.reasoning,
        },
        cost_usd: figures.cost_usd,
        unpriced_tokens: figures.unpriced_tokens,
        unpriced: figures
            .unpriced
            .into_iter()
            .map(|m| UnpricedAnswer {
                model: m.model,
                tokens: m.tokens,
            })
            .collect(),
        requests: figures.requests,
        server_tools: ServerToolsAnswer {
            web_search_requests: server_tools.web_search_requests,
            web_fetch_requests: server_tools.web_fetch_requests,
            cost_usd: server_tools.cost_usd,
            unpriced_calls: server_tools.unpriced_calls,
        },
    }
}

/// One group's figures.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupAnswer {
    pub key: String,
    pub figures: FiguresAnswer,
}

/// `GET /usage` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryAnswer {
    pub group_by: String,
    pub timezone: String,
    #[schema(schema_with = Timestamp::schema)]
    pub from: String,
    #[schema(schema_with = Timestamp::schema)]
    pub to: String,
    #[schema(inline)]
    pub groups: Vec<GroupAnswer>,
    pub total: FiguresAnswer,
}

/// The REST shape of a QueryUsage answer.
pub(crate) fn query_answer(answer: proto::QueryUsageResponse) -> QueryAnswer {
    QueryAnswer {
        group_by: answer.group_by,
        timezone: answer.timezone,
        from: iso_of(answer.from.as_ref()),
        to: iso_of(answer.to.as_ref()),
        groups: answer
            .groups
            .into_iter()
            .map(|group| GroupAnswer {
                key: group.key,
                figures: figures(group.figures),
            })
            .collect(),
        total: figures(answer.total),
    }
}

/// A session's usage summary.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = UsageSession)]
pub struct SessionAnswer {
    pub agent: String,
    pub session_id: String,
    pub project_slug: String,
    pub host_ids: Vec<String>,
    /// The members whose keys uploaded the session's facts (empty: none had a member).
    pub members: Vec<String>,
    /// Why it is flagged as running away now (`spend`, `unattended`); empty when not.
    #[schema(schema_with = List::<RunawayReason, 2>::schema)]
    pub runaway: Vec<String>,
    pub client_versions: Vec<String>,
    pub output_under_reported: bool,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub first_activity_at: Option<String>,
    #[schema(schema_with = Nullable::<Timestamp>::schema, required = true)]
    pub last_activity_at: Option<String>,
    pub agent_count: u32,
    pub figures: FiguresAnswer,
}

pub(super) fn session(summary: proto::SessionSummary) -> SessionAnswer {
    SessionAnswer {
        first_activity_at: optional_iso(summary.first_activity_at.as_ref()),
        last_activity_at: optional_iso(summary.last_activity_at.as_ref()),
        agent: summary.agent,
        session_id: summary.session_id,
        project_slug: summary.project_slug,
        host_ids: summary.host_ids,
        members: summary.members,
        runaway: summary.runaway,
        client_versions: summary.client_versions,
        output_under_reported: summary.output_under_reported,
        agent_count: summary.agent_count,
        figures: figures(summary.figures),
    }
}
