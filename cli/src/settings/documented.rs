//! The configuration as documented, checked against the settings structs: README.md's
//! configuration tables (every variable with its default, and the old names), and the list of
//! each program's variables the deploy check reads (`deploy/checks/settings.tsv`, written by
//! this test with `BATON_WRITE_GENERATED=1`, so that check needs no compiler).
//!
//! A program's variables are what its configuration code loads, recorded while it runs
//! (`describe::variables_read`), not a second list kept by hand. The hook client's variables
//! (`BATON_URL`, `BATON_HOOK_*`, ...) are not here: `clients/hook` reads them, and the README
//! documents them in the hook's own section.

use std::collections::BTreeMap;
use std::path::PathBuf;

use baton_kit::config::describe::{self, Variable};
use baton_kit::config::{Env, load};

use crate::settings::ContextUrls;
use crate::target::Target;
use crate::{migrate, serve};

/// The programs containers run (`deploy/checks/envcheck.py` names them the same way).
const SERVED: [(&str, Target); 7] = [
    ("serve registry", Target::Registry),
    ("serve provenance", Target::Provenance),
    ("serve triage", Target::Triage),
    ("serve closer", Target::Closer),
    ("serve usage", Target::Usage),
    ("serve notify", Target::Notify),
    ("serve gateway", Target::Gateway),
];

/// Every program with the variables it reads: `main`'s database TLS, then its command's.
fn programs() -> Vec<(&'static str, Vec<Variable>)> {
    let start = || {
        Env::from_pairs([("BATON_SERVICE_TOKEN", "a-documentation-token")])
            .with_database_tls()
            .expect("defaults")
    };
    let telemetry = describe::TELEMETRY.map(|(name, default)| Variable {
        name: name.to_string(),
        default: default.map(str::to_string),
        replaces: None,
    });
    let mut programs = Vec::new();
    for (program, target) in SERVED {
        let (planned, mut read) = describe::variables_read(|| serve::plan(&start(), &[target]));
        planned.unwrap_or_else(|error| panic!("{program}: {error:#}"));
        read.extend(telemetry.clone());
        programs.push((program, read));
    }
    let (migrated, read) = describe::variables_read(|| {
        let env = start();
        migrate::admin_url(&env).and_then(|_| load::<ContextUrls>(&env))
    });
    migrated.expect("migrate");
    programs.push(("migrate", read));
    programs
}

/// Every variable once, with its default, checking that each program agrees on it.
fn every_variable() -> BTreeMap<String, Variable> {
    let mut every: BTreeMap<String, Variable> = BTreeMap::new();
    for (program, variables) in programs() {
        for variable in variables {
            if let Some(seen) = every.get(&variable.name) {
                assert_eq!(seen, &variable, "{program} reads {} differently", seen.name);
            }
            every.insert(variable.name.clone(), variable);
        }
    }
    every
}

fn repository_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

/// The rows of README.md's `## Configuration` tables whose header starts with `header`: the
/// first two cells of each.
fn readme_rows(header: &str) -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(repository_file("README.md")).expect("README.md");
    let section = readme
        .split("\n## ")
        .find(|section| section.starts_with("Configuration\n"))
        .expect("a Configuration section");
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in section.lines() {
        if !line.starts_with('|') {
            in_table = false;
            continue;
        }
        if line.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if !in_table {
            in_table = cells[1] == header;
            continue;
        }
        rows.push((cells[1].to_string(), cells[2].to_string()));
    }
    rows
}

/// A cell's leading code span (`` `20m` (`make run`: ...) `` is `20m`); none for the other
/// ways of saying "unset" (`—`, `required (...)`).
fn code(cell: &str) -> Option<String> {
    let rest = cell.strip_prefix('`')?;
    Some(rest[..rest.find('`')?].to_string())
}

/// The variables a row documents, each with its default: a row may name several variables
/// (`` `A` / `B` ``) with one default for all or one each (`` `20m` / `4h` ``). Only `BATON_`
/// variables: the `OTEL_` ones are the OpenTelemetry SDK's.
fn documented_variables(name_cell: &str, default_cell: &str) -> Vec<(String, Option<String>)> {
    let names: Vec<String> = name_cell.split(" / ").filter_map(code).collect();
    let defaults: Vec<Option<String>> = match default_cell.split(" / ").collect::<Vec<_>>() {
        parts if parts.len() == names.len() => parts.into_iter().map(code).collect(),
        _ => vec![code(default_cell); names.len()],
    };
    names
        .into_iter()
        .zip(defaults)
        .filter(|(name, _)| name.starts_with("BATON_"))
        .collect()
}

#[test]
fn the_readme_documents_every_variable_with_its_default() {
    let declared = every_variable();
    let documented: BTreeMap<String, Option<String>> = readme_rows("variable")
        .iter()
        .flat_map(|(names, default)| documented_variables(names, default))
        .collect();
    let undocumented: Vec<&String> = declared
        .keys()
        .filter(|name| !documented.contains_key(*name))
        .collect();
    let unread: Vec<&String> = documented
        .keys()
        .filter(|name| !declared.contains_key(*name))
        .collect();
    assert!(
        undocumented.is_empty(),
        "not in README.md: {undocumented:?}"
    );
    assert!(
        unread.is_empty(),
        "README.md documents what nothing reads: {unread:?}"
    );
    for (name, variable) in &declared {
        let written = documented[name].as_deref();
        assert!(
            describe::same_default(written, variable.default.as_deref()),
            "README.md gives {name} the default {written:?}, the code {:?}",
            variable.default
        );
    }
}

#[test]
fn the_readme_lists_every_old_name_with_its_new_one() {
    let declared: BTreeMap<String, String> = every_variable()
        .into_values()
        .filter_map(|variable| Some((variable.replaces?.to_string(), variable.name)))
        .collect();
    let documented: BTreeMap<String, String> = readme_rows("old name")
        .into_iter()
        .map(|(old, new)| (code(&old).expect("old"), code(&new).expect("new")))
        .collect();
    assert_eq!(documented, declared);
}

/// One line per program and variable: `program<TAB>variable<TAB>default<TAB>old name`.
fn settings_tsv() -> String {
    let mut text = String::from(
        "# Generated by `BATON_WRITE_GENERATED=1 cargo test -p baton-cli settings` from the\n\
         # settings structs; read by envcheck.py. program, variable, default, old name.\n",
    );
    for (program, variables) in programs() {
        for variable in variables {
            let default = variable.default.unwrap_or_default();
            let old = variable.replaces.unwrap_or_default();
            text.push_str(&format!("{program}\t{}\t{default}\t{old}\n", variable.name));
        }
    }
    text
}

#[test]
fn the_deploy_check_reads_the_variables_the_programs_read() {
    let path = repository_file("deploy/checks/settings.tsv");
    let generated = settings_tsv();
    if std::env::var_os("BATON_WRITE_GENERATED").is_some() {
        std::fs::write(&path, &generated).expect("write settings.tsv");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "deploy/checks/settings.tsv is stale: BATON_WRITE_GENERATED=1 cargo test -p baton-cli settings"
    );
}
