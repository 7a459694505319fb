//! The tenant's keys and members: every key's prefix, scope, member, creation, last use and
//! revocation, newest first. Never a secret (the store keeps only its SHA-256). Keys are minted
//! and revoked by an operator with `baton key`; this page only reads.

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use crate::console::page::{self, Chrome};
use crate::console::view::{self, Moment};
use crate::console::viewer::Viewer;
use crate::state::AppState;
use crate::tenants::{self, Scope};

pub struct KeyRow {
    pub prefix: String,
    pub scope: &'static str,
    pub member: String,
    pub created: Moment,
    pub last_used: Option<Moment>,
    pub revoked: Option<Moment>,
}

#[derive(Template)]
#[template(path = "console/keys.html")]
pub struct KeysPage {
    pub chrome: Chrome,
    pub keys: Vec<KeyRow>,
    /// Distinct members of live ingest keys, sorted.
    pub members: Vec<String>,
}

/// `GET /console/keys`.
pub async fn page(State(state): State<AppState>, viewer: Viewer) -> Response {
    let listed = match tenants::list_keys(&state.pool, viewer.call.tenant_id).await {
        Ok(listed) => listed,
        Err(error) => {
            tracing::warn!(error = %error, "console: key list unavailable");
            return page::unavailable("the key store");
        }
    };
    let moment = |at| view::moment(at, viewer.zone);
    let mut members: Vec<String> = listed
        .iter()
        .filter(|key| key.revoked_at.is_none() && key.scope() == Scope::Ingest)
        .filter_map(|key| key.member.clone())
        .collect();
    members.sort();
    members.dedup();
    let keys = listed
        .into_iter()
        .map(|key| KeyRow {
            scope: key.scope().as_str(),
            member: match (&key.member, key.scope()) {
                (Some(member), _) => member.clone(),
                (None, Scope::Ingest) => baton_kit::member::UNATTRIBUTED.to_string(),
                (None, Scope::Console) => "—".to_string(),
            },
            created: moment(key.created_at),
            last_used: key.last_used_at.map(moment),
            revoked: key.revoked_at.map(moment),
            prefix: key.prefix,
        })
        .collect();
    let page = KeysPage {
        chrome: Chrome::new(&viewer, "keys", "Keys"),
        keys,
        members,
    };
    page::render(StatusCode::OK, &page)
}
