//! Credentials for internal clients: programs that call Baton's gRPC services directly
//! (dashboards, back-office jobs, other teams' services), distinct from the token the services
//! use among themselves.
//!
//! Each client is **named**, **scoped** (which services, which methods or `*`, read-only or
//! not) and **revocable**. `baton client create` mints one: it prints the token once and the
//! entry to add to the clients file, which stores only the token's SHA-256. The file
//! (`BATON_GRPC_CLIENTS_FILE`, JSON lines, typically a mounted Secret) is read again with the
//! service tokens (`BATON_SERVICE_TOKEN_RELOAD`), so adding, narrowing or revoking a client
//! (`"revoked": true`, or removing its line; `baton client revoke` does the former) takes
//! effect without a restart.
//!
//! Decisions, in order, for a call whose bearer token is not a service token:
//! 1. no entry has the token's hash, or the entry is revoked: UNAUTHENTICATED;
//! 2. reflection (`grpc.reflection.*`) is allowed to every valid client (grpcurl needs it);
//! 3. the method's service must be in `services` and the method in `methods` (or `*`);
//! 4. a read-only client may call only the methods in [`READ_ONLY`]; any method not listed
//!    there is treated as a write.
//!
//! Otherwise PERMISSION_DENIED. A refusal is logged with the client's name, never its token.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Methods that change nothing, by service short name (`baton.<service>.v1`).
pub const READ_ONLY: &[(&str, &[&str])] = &[
    (
        "registry",
        &["GetSession", "SoleOpenSession", "GetLiveness"],
    ),
    (
        "provenance",
        &["GetMemory", "History", "ListRunEvents", "ListRunEventIds"],
    ),
    ("triage", &["GetState", "ListAttempts", "RenderDebrief"]),
    ("closer", &["ListPasses", "Report"]),
    ("usage", &["QueryUsage", "GetTree", "ListSessions"]),
];

/// The services a client may be scoped to.
pub const SERVICES: &[&str] = &["registry", "provenance", "triage", "closer", "usage"];

/// One line of the clients file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientEntry {
    pub name: String,
    /// Hex SHA-256 of the token.
    pub token_sha256: String,
    pub services: Vec<String>,
    /// Method names, or `*` for all of the services' methods.
    pub methods: Vec<String>,
    #[serde(default)]
    pub read_only: bool,
    #[serde(default)]
    pub revoked: bool,
}

/// What a presented client token may do with one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allowed {
        client: String,
    },
    Denied {
        client: String,
        reason: &'static str,
    },
    Unknown,
}

/// Hex SHA-256 of a token.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// `(service, method)` of a gRPC path `/baton.<service>.v1.<Name>/<Method>`; reflection as
/// `("reflection", ...)`.
pub fn route(path: &str) -> Option<(String, String)> {
    let (full_service, method) = path.trim_start_matches('/').split_once('/')?;
    if full_service.starts_with("grpc.reflection.") {
        return Some(("reflection".into(), method.into()));
    }
    let mut parts = full_service.split('.');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("baton"), Some(service), Some(_version)) => Some((service.into(), method.into())),
        _ => None,
    }
}

fn is_read_only(service: &str, method: &str) -> bool {
    READ_ONLY
        .iter()
        .any(|(name, methods)| *name == service && methods.contains(&method))
}

/// The decision for `token` calling `path`, against `entries`.
pub fn decide(entries: &[ClientEntry], token: &str, path: &str) -> Decision {
    let hash = token_hash(token);
    let found = entries
        .iter()
        .find(|entry| bool::from(entry.token_sha256.as_bytes().ct_eq(hash.as_bytes())));
    let Some(entry) = found.filter(|entry| !entry.revoked) else {
        return Decision::Unknown;
    };
    let client = entry.name.clone();
    let Some((service, method)) = route(path) else {
        return Decision::Denied {
            client,
            reason: "not a Baton method",
        };
    };
    if service == "reflection" {
        return Decision::Allowed { client };
    }
    if !entry.services.contains(&service) {
        return Decision::Denied {
            client,
            reason: "service not in scope",
        };
    }
    if !entry
        .methods
        .iter()
        .any(|allowed| allowed == "*" || *allowed == method)
    {
        return Decision::Denied {
            client,
            reason: "method not in scope",
        };
    }
    if entry.read_only && !is_read_only(&service, &method) {
        return Decision::Denied {
            client,
            reason: "read-only client",
        };
    }
    Decision::Allowed { client }
}

/// Parses the clients file: one JSON entry per line, `#` comments and blank lines ignored.
pub fn parse(text: &str) -> Result<Vec<ClientEntry>, String> {
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let entry: ClientEntry =
            serde_json::from_str(line).map_err(|error| format!("line {}: {error}", index + 1))?;
        validate(&entry).map_err(|error| format!("line {}: {error}", index + 1))?;
        entries.push(entry);
    }
    Ok(entries)
}

/// A well-formed entry: a slug name, a 64-hex hash, known services, non-empty scopes.
pub fn validate(entry: &ClientEntry) -> Result<(), String> {
    if !crate::text::is_slug(&entry.name) || entry.name.len() > 64 {
        return Err("name must match ^[a-z0-9][a-z0-9-]*$ (at most 64)".into());
    }
    if entry.token_sha256.len() != 64
        || !entry
            .token_sha256
            .bytes()
            .all(|byte| byte.is_ascii_hexdigit())
    {
        return Err("tokenSha256 must be 64 hex digits".into());
    }
    if entry.services.is_empty() || entry.methods.is_empty() {
        return Err("services and methods must not be empty".into());
    }
    if let Some(unknown) = entry
        .services
        .iter()
        .find(|service| !SERVICES.contains(&service.as_str()))
    {
        return Err(format!("unknown service {unknown}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(
        name: &str,
        token: &str,
        services: &[&str],
        methods: &[&str],
        read_only: bool,
    ) -> ClientEntry {
        ClientEntry {
            name: name.into(),
            token_sha256: token_hash(token),
            services: services.iter().map(|s| s.to_string()).collect(),
            methods: methods.iter().map(|s| s.to_string()).collect(),
            read_only,
            revoked: false,
        }
    }

    #[test]
    fn each_scope_rule_decides_its_own_case() {
        let mut revoked = entry("gone", "gone-token", &["registry"], &["*"], false);
        revoked.revoked = true;
        let entries = vec![
            entry("dash", "dash-token", &["registry", "closer"], &["*"], true),
            entry(
                "ops",
                "ops-token",
                &["registry"],
                &["Open", "GetSession"],
                false,
            ),
            revoked,
        ];
        let allowed = |client: &str| Decision::Allowed {
            client: client.into(),
        };
        let denied = |client: &str, reason| Decision::Denied {
            client: client.into(),
            reason,
        };
        let cases = [
            (
                "dash-token",
                "/baton.registry.v1.SessionRegistry/GetSession",
                allowed("dash"),
            ),
            (
                "dash-token",
                "/baton.closer.v1.Closer/Report",
                allowed("dash"),
            ),
            (
                "dash-token",
                "/baton.registry.v1.SessionRegistry/Open",
                denied("dash", "read-only client"),
            ),
            (
                "dash-token",
                "/baton.provenance.v1.Provenance/GetMemory",
                denied("dash", "service not in scope"),
            ),
            (
                "dash-token",
                "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                allowed("dash"),
            ),
            (
                "ops-token",
                "/baton.registry.v1.SessionRegistry/Open",
                allowed("ops"),
            ),
            (
                "ops-token",
                "/baton.registry.v1.SessionRegistry/Close",
                denied("ops", "method not in scope"),
            ),
            (
                "ops-token",
                "/other.Service/Call",
                denied("ops", "not a Baton method"),
            ),
            (
                "gone-token",
                "/baton.registry.v1.SessionRegistry/GetSession",
                Decision::Unknown,
            ),
            (
                "nobody",
                "/baton.registry.v1.SessionRegistry/GetSession",
                Decision::Unknown,
            ),
        ];
        for (token, path, want) in cases {
            assert_eq!(decide(&entries, token, path), want, "{token} {path}");
        }
    }

    #[test]
    fn the_file_is_strict_and_names_the_bad_line() {
        let good =
            serde_json::to_string(&entry("dash", "t", &["closer"], &["*"], true)).expect("json");
        assert_eq!(
            parse(&format!("# clients\n\n{good}\n"))
                .expect("valid")
                .len(),
            1
        );
        let unknown_field = good.replace("\"revoked\"", "\"revokd\"");
        assert!(
            parse(&unknown_field)
                .expect_err("strict")
                .starts_with("line 1")
        );
        let bad_service = good.replace("closer", "billing");
        assert!(
            parse(&format!("\n{bad_service}"))
                .expect_err("service")
                .contains("line 2")
        );
        let bad_hash = good.replace(&token_hash("t"), "abc");
        assert!(parse(&bad_hash).is_err());
    }

    #[test]
    fn every_read_only_method_names_a_known_service() {
        for (service, _) in READ_ONLY {
            assert!(SERVICES.contains(service), "{service}");
        }
    }
}
