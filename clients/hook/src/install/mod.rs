//! `baton-hook install` and `uninstall`: add Baton's hook entries to a harness's settings file
//! and take them out again, leaving every other byte as it was.
//!
//! Decisions:
//! - The file is edited as text, never re-serialized ([`document`], [`edit`]), so other tools'
//!   entries, key order, indentation and line endings survive byte for byte.
//! - Install is idempotent (an installed file is left untouched, byte for byte) and uninstall
//!   is its exact inverse; a manifest under the state directory ([`manifest`]) remembers what
//!   install created, because an empty container does not say who made it.
//! - A file that is not JSON, or not in the documented shape, is refused, never rewritten.
//! - Baton never writes trust state; [`trust_step`] tells the person what to approve.

mod document;
mod edit;
mod entries;
mod error;
mod files;
mod json_text;
mod layout;
mod manifest;
mod shape;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use entries::nudge_needs_asking;
pub use error::InstallError;

use crate::harness::Harness;
use manifest::Manifest;

/// Whose settings file: the person's (every project) or one project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
}

/// One settings file of one harness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub harness: Harness,
    pub scope: Scope,
    pub settings_path: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallOptions {
    /// Absolute path of the `baton-hook` binary, already shell-quoted if it needs to be.
    pub command: String,
    /// The install's `--nudge`: register the Stop hook of a harness without a continuation cap
    /// of its own (Codex, Gemini CLI) with `--nudge` (the other harnesses ignore this).
    pub nudge: bool,
    /// Baton's state directory; manifests go under `installs/`.
    pub state_dir: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Installed,
    /// Baton's entries were already exactly as wanted; nothing was written.
    AlreadyInstalled,
    Uninstalled,
    /// No Baton entry was found; nothing was written.
    NotInstalled,
}

/// The variable that moves a harness's user-level folder, read by [`settings_path`]: Codex's
/// `CODEX_HOME` replaces `~/.codex`, Copilot CLI's `COPILOT_HOME` `~/.copilot`; Gemini CLI's
/// `GEMINI_CLI_HOME` replaces `~` (its `.gemini` folder goes inside it).
pub fn home_variable(harness: Harness) -> Option<&'static str> {
    match harness {
        Harness::Codex => Some("CODEX_HOME"),
        Harness::Gemini => Some("GEMINI_CLI_HOME"),
        Harness::Copilot => Some("COPILOT_HOME"),
        Harness::ClaudeCode | Harness::Cursor => None,
    }
}

/// The settings file for a harness and scope: user scope under `home`, project scope under
/// `project_dir`. `moved_home` is the value of the harness's [`home_variable`], when set.
pub fn settings_path(
    harness: Harness,
    scope: Scope,
    home: &Path,
    project_dir: &Path,
    moved_home: Option<&Path>,
) -> PathBuf {
    let codex_home = moved_home.filter(|_| harness == Harness::Codex);
    let gemini_home = moved_home.filter(|_| harness == Harness::Gemini);
    let copilot_home = moved_home.filter(|_| harness == Harness::Copilot);
    match (harness, scope) {
        (Harness::ClaudeCode, Scope::User) => home.join(".claude/settings.json"),
        (Harness::ClaudeCode, Scope::Project) => project_dir.join(".claude/settings.json"),
        (Harness::Codex, Scope::User) => codex_home
            .map_or_else(|| home.join(".codex"), Path::to_path_buf)
            .join("hooks.json"),
        (Harness::Codex, Scope::Project) => project_dir.join(".codex/hooks.json"),
        (Harness::Cursor, Scope::User) => home.join(".cursor/hooks.json"),
        (Harness::Cursor, Scope::Project) => project_dir.join(".cursor/hooks.json"),
        (Harness::Gemini, Scope::User) => gemini_home.unwrap_or(home).join(".gemini/settings.json"),
        (Harness::Gemini, Scope::Project) => project_dir.join(".gemini/settings.json"),
        // Copilot CLI combines every file in its hooks folders: Baton keeps a file of its own.
        (Harness::Copilot, Scope::User) => copilot_home
            .map_or_else(|| home.join(".copilot"), Path::to_path_buf)
            .join("hooks/baton.json"),
        (Harness::Copilot, Scope::Project) => project_dir.join(".github/hooks/baton.json"),
    }
}

/// Adds Baton's entries to the target's settings file, creating the file if needed.
pub fn install(target: &Target, options: &InstallOptions) -> Result<Outcome, InstallError> {
    let path = &target.settings_path;
    files::refuse_symlinks(path)?;
    let existing = files::read_existing(path)?;
    let manifest_path = manifest::location(&options.state_dir, path);
    // A manifest describes the file it was written for; a file that is gone starts afresh.
    let mut manifest = match &existing {
        Some(_) => manifest::load(&manifest_path)?.unwrap_or_else(|| Manifest::new(path, false)),
        None => Manifest::new(path, true),
    };
    let original = existing.as_deref().unwrap_or(document::NEW_FILE);
    let wanted = entries::desired(target.harness, &options.command, options.nudge);
    let updated = document::install(original, target.harness, &wanted, &mut manifest, path)?;
    if existing.as_deref() == Some(updated.as_str()) {
        return Ok(Outcome::AlreadyInstalled);
    }
    if existing.is_none()
        && let Some(directory) = path.parent()
    {
        manifest.created_directories = files::create_missing_dirs(directory)?;
    }
    // The manifest goes first: if the settings write then fails, it only over-claims, and
    // uninstall removes a claimed container only when it is empty.
    manifest::save(&manifest_path, &manifest)?;
    files::write_atomic(path, &updated, files::SETTINGS_MODE)?;
    Ok(Outcome::Installed)
}

/// Removes Baton's entries from the target's settings file, and the file, directories and
/// containers install created once nothing else is in them.
pub fn uninstall(target: &Target, state_dir: &Path) -> Result<Outcome, InstallError> {
    let path = &target.settings_path;
    files::refuse_symlinks(path)?;
    let manifest_path = manifest::location(state_dir, path);
    let manifest = manifest::load(&manifest_path)?;
    let Some(original) = files::read_existing(path)? else {
        manifest::delete(&manifest_path)?;
        return Ok(Outcome::NotInstalled);
    };
    let updated = document::uninstall(&original, target.harness, manifest.as_ref(), path)?;
    let created_file = manifest.as_ref().is_some_and(|known| known.created_file);
    let outcome = if created_file && document::is_empty_object(&updated) {
        files::remove_file(path)?;
        let directories = manifest
            .as_ref()
            .map(|known| known.created_directories.as_slice());
        files::remove_empty_dirs(directories.unwrap_or_default())?;
        Outcome::Uninstalled
    } else if updated != original {
        files::write_atomic(path, &updated, files::SETTINGS_MODE)?;
        Outcome::Uninstalled
    } else {
        Outcome::NotInstalled
    };
    manifest::delete(&manifest_path)?;
    Ok(outcome)
}

/// The step the person must take before the harness runs Baton's hooks. Baton never writes
/// trust state itself: trusting code to run is the person's decision.
pub fn trust_step(target: &Target) -> String {
    let path = target.settings_path.display();
    match (target.harness, target.scope) {
        (Harness::Codex, _) => format!(
            "Open the Codex TUI, run /hooks and trust Baton's entries from {path}. Codex trusts \
             each hook by the hash of its definition, so any edit to these entries (including a \
             reinstall that changes them) needs trusting again; untrusted hooks are skipped \
             silently."
        ),
        (Harness::ClaudeCode, _) => format!(
            "Trust the folder when Claude Code asks: interactive sessions hold back hooks, \
             including Baton's in {path}, until the folder is trusted."
        ),
        (Harness::Cursor, Scope::Project) => format!(
            "Trust this workspace in Cursor: project hooks such as Baton's in {path} run only in \
             a trusted workspace."
        ),
        (Harness::Cursor, Scope::User) => {
            format!("Trust your workspaces in Cursor when asked; Baton's hooks are in {path}.")
        }
        (Harness::Gemini, Scope::Project) => format!(
            "Trust this folder in Gemini CLI when it asks: project settings, Baton's hooks in \
             {path} among them, load only in a trusted folder, and Gemini CLI warns once \
             before it runs a project hook it has not seen."
        ),
        (Harness::Copilot, Scope::Project) => format!(
            "Trust this folder in Copilot CLI when it asks: repository hooks such as Baton's in \
             {path} load only in a trusted folder (in `copilot -p`, with --trust-folder)."
        ),
        (Harness::Copilot, Scope::User) => format!(
            "Nothing to approve: Copilot CLI runs user hooks such as Baton's in {path} in every \
             session, prompt mode included."
        ),
        (Harness::Gemini, Scope::User) => format!(
            "Nothing to approve for user settings; Gemini CLI runs Baton's hooks from {path} \
             (`/hooks panel` lists them). Its folder trust still decides which projects run."
        ),
    }
}
