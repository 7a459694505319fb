//! Files Baton refuses to edit stay untouched; written files get the right permissions;
//! paths and trust steps per harness.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use super::Fixture;
use crate::harness::Harness;
use crate::install::{
    InstallError, Outcome, Scope, Target, install, settings_path, trust_step, uninstall,
};

#[test]
fn unusable_files_are_refused_and_left_untouched() {
    // (original, what the error says)
    let table = [
        ("{\"hooks\": {", "not valid JSON"),
        ("", "not valid JSON"),
        ("[]", "top level is not a JSON object"),
        ("{\"hooks\": []}", "`hooks` is not an object"),
        (
            "{\"hooks\": {\"Stop\": {}}}",
            "`hooks.Stop` is not an array",
        ),
        (
            "{\"hooks\": {}, \"hooks\": {}}",
            "`hooks` appears more than once",
        ),
        (
            "{\"hooks\": {\"Stop\": [], \"Stop\": []}}",
            "`hooks.Stop` appears more than once",
        ),
    ];
    for (original, message) in table {
        let fixture = Fixture::new(Harness::ClaudeCode, Some(original));
        let error = install(&fixture.target, &fixture.options).unwrap_err();
        let refused = matches!(
            error,
            InstallError::NotJson { .. } | InstallError::UnexpectedShape { .. }
        );
        assert!(refused, "{original:?}: {error:?}");
        let shown = error.to_string();
        assert!(shown.contains(message), "{original:?}: {shown}");
        assert!(shown.contains(".claude/settings.json"), "{shown}");
        assert_eq!(fixture.text().unwrap(), original);
        assert!(!fixture.manifest_path().exists());
    }
    let fixture = Fixture::new(Harness::Codex, Some("{\"hooks\": 3}"));
    let error = uninstall(&fixture.target, &fixture.options.state_dir).unwrap_err();
    assert!(
        matches!(error, InstallError::UnexpectedShape { .. }),
        "{error}"
    );
    assert_eq!(fixture.text().unwrap(), "{\"hooks\": 3}");
}

#[test]
fn a_symlinked_settings_file_is_refused() {
    let fixture = Fixture::new(Harness::Cursor, None);
    let real = fixture.options.state_dir.with_file_name("real-hooks.json");
    fs::write(&real, "{}\n").unwrap();
    fs::create_dir_all(fixture.path().parent().unwrap()).unwrap();
    symlink(&real, fixture.path()).unwrap();
    let error = install(&fixture.target, &fixture.options).unwrap_err();
    assert!(
        matches!(&error, InstallError::Symlink(path) if path == fixture.path()),
        "{error}"
    );
    let error = uninstall(&fixture.target, &fixture.options.state_dir).unwrap_err();
    assert!(matches!(error, InstallError::Symlink(_)));
    assert_eq!(fs::read_to_string(&real).unwrap(), "{}\n");
}

#[test]
fn a_symlinked_directory_is_refused_for_a_new_file() {
    let fixture = Fixture::new(Harness::ClaudeCode, None);
    let elsewhere = fixture.options.state_dir.with_file_name("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    symlink(&elsewhere, fixture.path().parent().unwrap()).unwrap();
    let error = install(&fixture.target, &fixture.options).unwrap_err();
    assert!(matches!(error, InstallError::Symlink(_)), "{error}");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(!fixture.options.state_dir.exists());
}

#[test]
fn permissions_are_kept_and_state_is_private() {
    let fixture = Fixture::new(Harness::ClaudeCode, Some("{}\n"));
    fs::set_permissions(fixture.path(), fs::Permissions::from_mode(0o600)).unwrap();
    install(&fixture.target, &fixture.options).unwrap();
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(fixture.path()), 0o600);
    assert_eq!(mode(&fixture.options.state_dir.join("installs")), 0o700);
    assert_eq!(mode(&fixture.manifest_path()), 0o600);

    let fresh = Fixture::new(Harness::Codex, None);
    assert_eq!(
        install(&fresh.target, &fresh.options).unwrap(),
        Outcome::Installed
    );
    assert_eq!(mode(fresh.path()), 0o644);
    let leftovers = fs::read_dir(fresh.path().parent().unwrap())
        .unwrap()
        .count();
    assert_eq!(leftovers, 1, "only hooks.json, no temp files");
}

#[test]
fn settings_paths_per_harness_and_scope() {
    let home = Path::new("/home/ada");
    let project = Path::new("/work/app");
    let codex_home = Path::new("/srv/codex");
    let table = [
        (
            Harness::ClaudeCode,
            Scope::User,
            None,
            "/home/ada/.claude/settings.json",
        ),
        (
            Harness::ClaudeCode,
            Scope::Project,
            None,
            "/work/app/.claude/settings.json",
        ),
        (
            Harness::Codex,
            Scope::User,
            None,
            "/home/ada/.codex/hooks.json",
        ),
        (
            Harness::Codex,
            Scope::User,
            Some(codex_home),
            "/srv/codex/hooks.json",
        ),
        (
            Harness::Codex,
            Scope::Project,
            Some(codex_home),
            "/work/app/.codex/hooks.json",
        ),
        (
            Harness::Cursor,
            Scope::User,
            None,
            "/home/ada/.cursor/hooks.json",
        ),
        (
            Harness::Cursor,
            Scope::Project,
            None,
            "/work/app/.cursor/hooks.json",
        ),
        (
            Harness::Gemini,
            Scope::User,
            None,
            "/home/ada/.gemini/settings.json",
        ),
        (
            Harness::Gemini,
            Scope::User,
            Some(Path::new("/srv/gemini")),
            "/srv/gemini/.gemini/settings.json",
        ),
        (
            Harness::Gemini,
            Scope::Project,
            Some(Path::new("/srv/gemini")),
            "/work/app/.gemini/settings.json",
        ),
        (
            Harness::Copilot,
            Scope::User,
            None,
            "/home/ada/.copilot/hooks/baton.json",
        ),
        (
            Harness::Copilot,
            Scope::User,
            Some(Path::new("/srv/copilot")),
            "/srv/copilot/hooks/baton.json",
        ),
        (
            Harness::Copilot,
            Scope::Project,
            None,
            "/work/app/.github/hooks/baton.json",
        ),
        // Another harness's moved home is not this one's.
        (
            Harness::ClaudeCode,
            Scope::User,
            Some(codex_home),
            "/home/ada/.claude/settings.json",
        ),
    ];
    for (harness, scope, moved, expected) in table {
        let found = settings_path(harness, scope, home, project, moved);
        assert_eq!(found, Path::new(expected), "{harness:?} {scope:?}");
    }
}

#[test]
fn trust_steps_name_the_file_and_the_action() {
    let table = [
        (Harness::Codex, Scope::User, "/hooks"),
        (Harness::ClaudeCode, Scope::Project, "Trust the folder"),
        (Harness::Cursor, Scope::Project, "trusted workspace"),
        (Harness::Cursor, Scope::User, "Trust"),
        (Harness::Gemini, Scope::Project, "trusted folder"),
        (Harness::Gemini, Scope::User, "/hooks panel"),
        (Harness::Copilot, Scope::Project, "--trust-folder"),
        (Harness::Copilot, Scope::User, "Nothing to approve"),
    ];
    for (harness, scope, action) in table {
        let target = Target {
            harness,
            scope,
            settings_path: "/x/settings-file.json".into(),
        };
        let step = trust_step(&target);
        assert!(step.contains("/x/settings-file.json"), "{step}");
        assert!(step.contains(action), "{step}");
    }
}
