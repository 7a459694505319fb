//! What install created in one settings file, so uninstall can take exactly that back.
//!
//! Baton's own entries are recognised by their command, but a container cannot be: an empty
//! `"Stop": []` may be Baton's leftover or something the person wrote. The manifest records the
//! file, directories and members install created, and the inside of each pre-existing empty
//! container it filled (so `{ }` comes back as `{ }`, not `{}`). One manifest per settings file,
//! at `<state_dir>/installs/<first 16 hex of sha256(absolute settings path)>.json`.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::InstallError;
use super::files;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Manifest {
    pub settings_path: PathBuf,
    /// The settings file did not exist before install.
    pub created_file: bool,
    /// Directories install created for a new file, deepest first.
    pub created_directories: Vec<PathBuf>,
    /// Key paths of the members install added (`["hooks"]`, `["hooks", "Stop"]`), oldest first.
    pub created_members: Vec<Vec<String>>,
    pub empty_insides: Vec<EmptyInside>,
}

/// The text between the brackets of a container that was empty before install filled it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EmptyInside {
    /// Key path of the container; `[]` is the top-level object.
    pub container: Vec<String>,
    pub inside: String,
}

impl Manifest {
    pub fn new(settings_path: &Path, created_file: bool) -> Manifest {
        Manifest {
            settings_path: absolute(settings_path),
            created_file,
            ..Manifest::default()
        }
    }

    pub fn created(&self, path: &[&str]) -> bool {
        self.created_members
            .iter()
            .any(|created| same_path(created, path))
    }

    pub fn record_created(&mut self, path: &[&str]) {
        if !self.created(path) {
            self.created_members.push(owned(path));
        }
    }

    /// The recorded inside of `container`, or nothing when install did not fill it from empty.
    pub fn empty_inside(&self, container: &[&str]) -> &str {
        self.empty_insides
            .iter()
            .find(|recorded| same_path(&recorded.container, container))
            .map_or("", |recorded| recorded.inside.as_str())
    }

    /// Remembers the inside of an empty container about to be filled, unless Baton created the
    /// container (its removal takes the whole member) or an earlier install already recorded it.
    pub fn record_empty_inside(&mut self, container: &[&str], inside: &str) {
        let recorded = self
            .empty_insides
            .iter()
            .any(|known| same_path(&known.container, container));
        if !recorded && !self.created(container) {
            self.empty_insides.push(EmptyInside {
                container: owned(container),
                inside: inside.to_string(),
            });
        }
    }
}

/// Where the manifest for `settings_path` lives under `state_dir`.
pub fn location(state_dir: &Path, settings_path: &Path) -> PathBuf {
    let absolute_path = absolute(settings_path);
    let digest = Sha256::digest(absolute_path.as_os_str().as_encoded_bytes());
    let name = hex::encode(digest);
    state_dir
        .join("installs")
        .join(format!("{}.json", &name[..16]))
}

/// The manifest at `location`. A missing or unreadable one is treated as absent: uninstall
/// then still removes Baton's entries by their command and only leaves empty containers behind.
pub fn load(location: &Path) -> Result<Option<Manifest>, InstallError> {
    match std::fs::read(location) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(InstallError::io(location, error)),
    }
}

/// Writes the manifest privately (0600 in a 0700 directory): it maps the person's projects.
pub fn save(location: &Path, manifest: &Manifest) -> Result<(), InstallError> {
    if let Some(directory) = location.parent() {
        files::create_private_dir(directory)?;
    }
    let mut text = serde_json::to_string_pretty(manifest)
        .map_err(|error| InstallError::io(location, io::Error::other(error)))?;
    text.push('\n');
    files::write_atomic(location, &text, files::PRIVATE_MODE)
}

pub fn delete(location: &Path) -> Result<(), InstallError> {
    match std::fs::remove_file(location) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            Err(InstallError::io(location, error))
        }
        _ => Ok(()),
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn same_path(recorded: &[String], path: &[&str]) -> bool {
    recorded.len() == path.len() && recorded.iter().zip(path).all(|(a, b)| a == b)
}

fn owned(path: &[&str]) -> Vec<String> {
    path.iter().map(|key| key.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_hashes_the_absolute_path() {
        let state = Path::new("/state");
        let one = location(state, Path::new("/home/a/.claude/settings.json"));
        let two = location(state, Path::new("/home/b/.claude/settings.json"));
        assert_ne!(one, two);
        assert!(one.starts_with("/state/installs"));
        let name = one.file_name().unwrap().to_str().unwrap();
        assert_eq!(name.len(), "0123456789abcdef.json".len());
        assert!(
            name.trim_end_matches(".json")
                .bytes()
                .all(|b| b.is_ascii_hexdigit())
        );
    }

    #[test]
    fn empty_insides_are_recorded_once_and_never_for_created_containers() {
        let mut manifest = Manifest::new(Path::new("/x/settings.json"), false);
        manifest.record_empty_inside(&[], " ");
        manifest.record_empty_inside(&[], "\n");
        manifest.record_created(&["hooks"]);
        manifest.record_empty_inside(&["hooks"], " ");
        assert_eq!(manifest.empty_inside(&[]), " ");
        assert_eq!(manifest.empty_inside(&["hooks"]), "");
        assert!(manifest.created(&["hooks"]));
        assert!(!manifest.created(&["hooks", "Stop"]));
    }

    #[test]
    fn save_and_load_round_trip() {
        let directory = tempfile::tempdir().unwrap();
        let place = location(directory.path(), Path::new("/p/.codex/hooks.json"));
        let mut manifest = Manifest::new(Path::new("/p/.codex/hooks.json"), true);
        manifest.record_created(&["hooks", "Stop"]);
        save(&place, &manifest).unwrap();
        assert_eq!(load(&place).unwrap(), Some(manifest));
        delete(&place).unwrap();
        assert_eq!(load(&place).unwrap(), None);
        delete(&place).unwrap();
    }
}
