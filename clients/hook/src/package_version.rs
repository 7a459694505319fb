//! The version of a node-hosted client, read from the npm package that ships it.
//!
//! Gemini CLI, Codex's npm launcher and Copilot CLI run as `node <script>`; asking the script
//! for `--version` starts the whole CLI (seconds of CPU: about 2 s for Gemini CLI 0.61.0, over
//! 10 s on a loaded machine, past any sensible probe timeout). The package that installed the
//! script states its version in its `package.json`. The rule, from npm's layout: the nearest
//! `package.json` above the script's real path whose `bin` (a path, or a map of names to paths)
//! names that same file is the script's package, and its `version` is the client's. Anything
//! else (no such package, a `bin` naming another file, no dotted version) is no answer, and the
//! caller falls back to `--version`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// How many folders up from the script a package root may be (`<pkg>/bundle/cli.js` is one,
/// `<pkg>/dist/src/bin/cli.js` three).
const MAX_DEPTH: usize = 5;

/// The version of the npm package whose `bin` is `script` (symlinks resolved).
pub fn of_script(script: &Path) -> Option<String> {
    let real = std::fs::canonicalize(script).ok()?;
    for folder in real.ancestors().skip(1).take(MAX_DEPTH) {
        let Ok(text) = std::fs::read_to_string(folder.join("package.json")) else {
            continue;
        };
        let manifest: Value = serde_json::from_str(&text).ok()?;
        // The nearest package.json decides: a script inside a package that does not declare
        // it is not that package's client.
        if !bins(&manifest)
            .iter()
            .any(|bin| std::fs::canonicalize(folder.join(bin)).ok().as_ref() == Some(&real))
        {
            return None;
        }
        return manifest["version"]
            .as_str()
            .and_then(crate::dotted_version::parse_version);
    }
    None
}

fn bins(manifest: &Value) -> Vec<PathBuf> {
    match &manifest["bin"] {
        Value::String(path) => vec![PathBuf::from(path)],
        Value::Object(map) => map
            .values()
            .filter_map(Value::as_str)
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `root/node_modules/<name>/` with `files` and `package.json`, and `.bin/<link>` →
    /// the package's `target`.
    fn package(root: &Path, manifest: &str, target: &str) -> PathBuf {
        let package = root.join("node_modules/@acme/cli");
        std::fs::create_dir_all(package.join("bundle")).expect("package");
        std::fs::write(package.join("package.json"), manifest).expect("manifest");
        std::fs::write(package.join("bundle/cli.js"), "#!/usr/bin/env node\n").expect("script");
        std::fs::write(package.join("bundle/other.js"), "").expect("other");
        let bin = root.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).expect("bin");
        let link = bin.join("acme");
        std::os::unix::fs::symlink(format!("../@acme/cli/{target}"), &link).expect("link");
        link
    }

    #[test]
    fn the_package_declaring_the_script_as_its_bin_gives_the_version() {
        let table = [
            (
                r#"{"name":"@acme/cli","version":"0.61.0","bin":{"acme":"bundle/cli.js"}}"#,
                "bundle/cli.js",
                Some("0.61.0"),
            ),
            (
                r#"{"name":"@acme/cli","version":"1.0.102","bin":"./bundle/cli.js"}"#,
                "bundle/cli.js",
                Some("1.0.102"),
            ),
            (
                r#"{"name":"@acme/cli","version":"2.0.0","bin":{"acme":"bundle/cli.js"}}"#,
                "bundle/other.js",
                None,
            ),
            (
                r#"{"name":"@acme/cli","version":"2.0.0"}"#,
                "bundle/cli.js",
                None,
            ),
            (
                r#"{"name":"@acme/cli","version":"latest","bin":{"acme":"bundle/cli.js"}}"#,
                "bundle/cli.js",
                None,
            ),
            (r#"not json"#, "bundle/cli.js", None),
        ];
        for (manifest, target, expected) in table {
            let dir = tempfile::tempdir().expect("dir");
            let link = package(dir.path(), manifest, target);
            assert_eq!(of_script(&link).as_deref(), expected, "{manifest} {target}");
        }
    }

    #[test]
    fn a_script_outside_any_package_has_no_package_version() {
        let dir = tempfile::tempdir().expect("dir");
        let script = dir.path().join("loose.js");
        std::fs::write(&script, "").expect("script");
        assert_eq!(of_script(&script), None);
        assert_eq!(of_script(&dir.path().join("missing.js")), None);
    }
}
