//! The repository stands alone: no code, test, script or benchmark reads anything outside the
//! checkout. Fixtures a test or benchmark needs live in `fixtures/` with their provenance; the
//! folder beside the checkout that the team's own machines have (`shared/`) is not there on a
//! newcomer's fresh clone. This test reads the tracked files and fails on any path that climbs out
//! of the repository into that folder.

use std::path::Path;
use std::process::Command;

/// What a path into the team's folder beside the checkout looks like (split so this file does
/// not match itself).
fn outside_markers() -> [String; 2] {
    [
        format!("../{}", "shared/"),
        format!("{}/fixtures", "shared"),
    ]
}

/// Tracked files that run: code, build and test scripts, CI and the Makefile.
fn is_executable_source(path: &str) -> bool {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    path.ends_with(".rs")
        || path.ends_with(".sh")
        || path.ends_with(".toml")
        || path.ends_with(".py")
        || name == "Makefile"
        || path.starts_with(".ci/")
}

#[test]
fn no_code_or_script_reads_outside_the_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .expect("git ls-files runs in the checkout");
    assert!(listed.status.success(), "git ls-files failed");
    let markers = outside_markers();
    let mut offenders = Vec::new();
    for path in listed.stdout.split(|b| *b == 0) {
        let path = String::from_utf8_lossy(path);
        if path.is_empty() || !is_executable_source(&path) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(path.as_ref())) else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            if markers.iter().any(|marker| line.contains(marker.as_str())) {
                offenders.push(format!("{path}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these lines read outside the checkout; copy the data into fixtures/ instead:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn every_fixture_folder_states_its_provenance() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let provenance = std::fs::read_to_string(fixtures.join("PROVENANCE.md"))
        .expect("fixtures/PROVENANCE.md exists");
    for entry in std::fs::read_dir(&fixtures).expect("fixtures/ exists") {
        let entry = entry.expect("entry");
        if !entry.file_type().expect("type").is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().to_string();
        assert!(
            provenance.contains(&format!("{name}/")),
            "fixtures/{name} is not named in fixtures/PROVENANCE.md"
        );
    }
}
