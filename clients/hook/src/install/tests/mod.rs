//! Install and uninstall against real files in temporary directories.

mod refusals;
mod round_trip;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tempfile::TempDir;

use super::entries::{self, Entry};
use super::{InstallOptions, Scope, Target, manifest, settings_path};
use crate::harness::Harness;

const COMMAND: &str = "/opt/baton/bin/baton-hook";

/// A home, a project and a state directory, and one harness's project settings file in it.
struct Fixture {
    _directory: TempDir,
    target: Target,
    options: InstallOptions,
}

impl Fixture {
    fn new(harness: Harness, original: Option<&str>) -> Fixture {
        let directory = tempfile::tempdir().unwrap();
        let project = directory.path().join("project");
        fs::create_dir(&project).unwrap();
        let home = directory.path().join("home");
        let path = settings_path(harness, Scope::Project, &home, &project, None);
        if let Some(text) = original {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, text).unwrap();
        }
        Fixture {
            target: Target {
                harness,
                scope: Scope::Project,
                settings_path: path,
            },
            options: InstallOptions {
                command: COMMAND.to_string(),
                nudge: false,
                state_dir: directory.path().join("state"),
            },
            _directory: directory,
        }
    }

    fn path(&self) -> &Path {
        &self.target.settings_path
    }

    fn text(&self) -> Option<String> {
        fs::read_to_string(self.path()).ok()
    }

    fn manifest_path(&self) -> PathBuf {
        manifest::location(&self.options.state_dir, self.path())
    }

    fn wanted(&self) -> Vec<Entry> {
        entries::desired(self.target.harness, COMMAND, self.options.nudge)
    }
}

/// The Baton elements under `hooks.<event>` of a parsed file.
fn baton_elements(harness: Harness, file: &Value, event: &str) -> Vec<Value> {
    file["hooks"][event]
        .as_array()
        .map(|elements| {
            elements
                .iter()
                .filter(|element| entries::is_baton_element(harness, element))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}
