//! The OpenAPI document, generated from the handlers' request and response types.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes::{briefing, events, liveness, memories, sessions, triage};

#[derive(OpenApi)]
#[openapi(
    info(title = "Baton", description = "Hook-facing session lifecycle API."),
    paths(sessions::open, sessions::heartbeat, sessions::close, sessions::row, events::list,
        memories::remember, memories::revise, memories::resolve, memories::archive,
        memories::read, memories::history, briefing::briefing, triage::begin, triage::complete,
        triage::attempts, triage::debrief, liveness::pulse, liveness::read),
    components(schemas(
        sessions::OpenBody, sessions::OpenAnswer, sessions::HeartbeatBody,
        sessions::HeartbeatAnswer, sessions::CloseBody, sessions::CloseAnswer,
        sessions::SessionRow, sessions::BriefedRow, sessions::SessionSource,
        sessions::ErrorAnswer, events::RunEventsPage, events::RunEvent,
        memories::RememberBody, memories::RememberAnswer, memories::ReviseBody,
        memories::ReviseAnswer, memories::ResolveBody, memories::ResolveAnswer,
        memories::ArchiveBody, memories::ArchiveAnswer, memories::MemoryView,
        memories::HistoryAnswer, briefing::BriefingAnswer, triage::BeginBody, triage::BeginAnswer,
        triage::CompleteBody, triage::CompleteAnswer, triage::AttemptsAnswer, triage::DebriefAnswer,
        liveness::PulseBody, liveness::PulseAnswer, liveness::LivenessAnswer, liveness::EpisodeView
    )),
    modifiers(&ApiKeyScheme)
)]
pub struct ApiDoc;

struct ApiKeyScheme;

impl Modify for ApiKeyScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
    }
}

/// `GET /api/v1/openapi.json` (public: it documents the API, it serves no data).
pub async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
