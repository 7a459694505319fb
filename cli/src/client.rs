//! `baton client create` / `baton client revoke`: internal clients' credentials
//! (`baton_kit::internal_clients`). The token is printed once and never stored; the clients
//! file holds its SHA-256.

use std::path::Path;

use anyhow::Context;
use rand::Rng;

use baton_kit::internal_clients::{self, ClientEntry};

const TOKEN_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(str::to_string)
        .collect()
}

/// Mints a client: prints `{"name", "token", "entry"}` (one JSON line); with `--file`, also
/// appends the entry to the clients file.
pub fn create(
    name: &str,
    services: &str,
    methods: &str,
    read_only: bool,
    file: Option<&Path>,
) -> anyhow::Result<()> {
    let mut rng = rand::rng();
    let secret: String = (0..40)
        .map(|_| TOKEN_ALPHABET[rng.random_range(0..TOKEN_ALPHABET.len())] as char)
        .collect();
    let token = format!("bic_{name}_{secret}");
    let entry = ClientEntry {
        name: name.to_string(),
        token_sha256: internal_clients::token_hash(&token),
        services: list(services),
        methods: list(methods),
        read_only,
        revoked: false,
    };
    internal_clients::validate(&entry)
        .map_err(|error| anyhow::anyhow!("invalid client: {error}"))?;
    if let Some(file) = file {
        let existing = std::fs::read_to_string(file).unwrap_or_default();
        let entries = internal_clients::parse(&existing)
            .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
        anyhow::ensure!(
            entries.iter().all(|other| other.name != entry.name),
            "a client named {name} already exists in {}",
            file.display()
        );
        let mut text = existing;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&serde_json::to_string(&entry)?);
        text.push('\n');
        replace(file, &text)?;
    }
    let line = serde_json::json!({"name": name, "token": token, "entry": entry});
    println!("{line}");
    Ok(())
}

/// Marks the client revoked in the clients file (its line stays, for the record).
pub fn revoke(name: &str, file: &Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let mut entries = internal_clients::parse(&text)
        .map_err(|error| anyhow::anyhow!("{}: {error}", file.display()))?;
    let entry = entries
        .iter_mut()
        .find(|entry| entry.name == name)
        .ok_or_else(|| anyhow::anyhow!("no client named {name} in {}", file.display()))?;
    entry.revoked = true;
    let mut out = String::new();
    for entry in &entries {
        out.push_str(&serde_json::to_string(entry)?);
        out.push('\n');
    }
    replace(file, &out)?;
    eprintln!("client {name} revoked; servers stop accepting it at their next reload");
    Ok(())
}

/// Writes through a temporary file and a rename (a reader never sees half a file).
fn replace(file: &Path, text: &str) -> anyhow::Result<()> {
    let temporary = file.with_extension("tmp");
    std::fs::write(&temporary, text).with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, file).with_context(|| format!("replacing {}", file.display()))?;
    Ok(())
}
