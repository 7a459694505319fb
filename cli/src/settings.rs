//! The settings the composition root reads itself, beside each service's: how co-located
//! services call each other, and the URLs `baton migrate` connects with.

use baton_kit::config::values::Flag;
use baton_kit::config::{SecretUrl, Settings};
use serde::{Deserialize, Serialize};

#[cfg(test)]
mod documented;

/// `baton serve`'s own setting, process-wide (`BATON_<FIELD>`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ServeSettings {
    /// When one process runs a caller and its callee (`serve all`), their gRPC calls skip
    /// loopback TCP and HTTP/2 and enter the callee's call stack directly (same service-token
    /// check, deadline, load shedding and spans; see `baton_kit::grpc::local`).
    pub grpc_in_process: Flag<true>,
}

impl Settings for ServeSettings {
    const SECTION: &'static str = "";
}

/// `baton migrate`'s own setting, process-wide like the base URL it falls back to.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct MigrateSettings {
    /// Admin URL for migrations (creates roles, schemas, runs migrations); the base URL
    /// (`BATON_DATABASE_URL`) when unset.
    pub migrate_database_url: Option<SecretUrl>,
}

impl Settings for MigrateSettings {
    const SECTION: &'static str = "";
}

/// Each context's own database URL (`BATON_<CONTEXT>__DATABASE_URL`), which `migrate --check`
/// reads that context's schema version with: a pod's init container has only its service's
/// credentials.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ContextUrls {
    pub registry: ContextUrl,
    pub provenance: ContextUrl,
    pub triage: ContextUrl,
    pub closer: ContextUrl,
    pub usage: ContextUrl,
    pub notify: ContextUrl,
    pub gateway: ContextUrl,
}

impl Settings for ContextUrls {
    const SECTION: &'static str = "";
}

/// One context's section as `migrate --check` reads it.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct ContextUrl {
    /// Full database URL of the context's runtime role; the admin URL when unset.
    pub database_url: Option<SecretUrl>,
}
