//! Undo a closer resolve: the console's one write. It reopens the commitment through
//! provenance as a `user_dashboard` action (so the closer's pass reads it as undone and the
//! report counts it), after checking the origin, the session's CSRF token, and that the
//! commitment really is a live resolve of this run's passes.

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use baton_proto::closer::v1 as closer;
use baton_proto::provenance::v1 as provenance;

use crate::console::csrf;
use crate::console::page::{self, Chrome};
use crate::console::sign_in::cross_site_refusal;
use crate::console::viewer::Viewer;
use crate::rpc::rpc;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoForm {
    csrf: Option<String>,
    memory_id: String,
}

fn refused(viewer: &Viewer, status: StatusCode, heading: &str, detail: &str) -> Response {
    page::problem(
        Chrome::new(viewer, "sessions", heading),
        status,
        heading,
        detail,
    )
}

/// `POST /console/sessions/{run_id}/undo`.
pub async fn undo(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    form: Result<Form<UndoForm>, FormRejection>,
) -> Response {
    if let Some(refusal) = cross_site_refusal(&headers) {
        return refusal;
    }
    let Ok(Form(form)) = form else {
        return refused(
            &viewer,
            StatusCode::BAD_REQUEST,
            "Not undone",
            "The form was incomplete.",
        );
    };
    if csrf::token_matches(form.csrf.as_deref(), &viewer.session.csrf_token).is_err() {
        return refused(
            &viewer,
            StatusCode::FORBIDDEN,
            "Not undone",
            "That form is out of date. Reload the session page and try again.",
        );
    }
    let (Ok(run_id), Ok(memory_id)) = (
        baton_kit::text::session_run_id("sessionRunId", &run_id),
        uuid::Uuid::parse_str(form.memory_id.trim()),
    ) else {
        return page::not_found(&viewer);
    };
    let passes = match rpc!(state.closer.list_passes(
        &viewer.call,
        closer::ListPassesRequest {
            session_run_id: run_id.to_string(),
        },
    )) {
        Ok(answer) => answer.passes,
        Err(status) => return page::from_status(&viewer, "closer", &status),
    };
    let memory = memory_id.to_string();
    let verdicts: Vec<&closer::Verdict> = passes
        .iter()
        .flat_map(|pass| &pass.verdicts)
        .filter(|verdict| verdict.memory_id == memory && verdict.verdict == "resolved")
        .collect();
    if verdicts.is_empty() {
        return page::not_found(&viewer);
    }
    if verdicts.iter().all(|verdict| verdict.undone) {
        return refused(
            &viewer,
            StatusCode::CONFLICT,
            "Already undone",
            "That resolve was already undone: the commitment is open.",
        );
    }
    let request = provenance::TransitionRequest {
        memory_id: memory.clone(),
        target_status: "open".to_string(),
        actor: provenance::ActorKind::UserDashboard.into(),
        provenance: None,
    };
    if let Err(status) = rpc!(state.provenance.transition(&viewer.call, request)) {
        return page::from_status(&viewer, "provenance", &status);
    }
    tracing::info!(tenant_id = %viewer.call.tenant_id, "console: closer resolve undone");
    let location = format!("/console/sessions/{run_id}?undone={memory}#passes");
    match HeaderValue::from_str(&location) {
        Ok(location) => (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response(),
        Err(_) => page::unavailable("the page renderer"),
    }
}
