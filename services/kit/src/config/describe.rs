//! The variables a settings struct declares, with their defaults, as documentation lists them:
//! the README's configuration table and the deploy check's list are compared with these.

use std::cell::RefCell;

use super::settings::{Settings, variable};

/// One variable of a settings struct.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub name: String,
    /// The default as text (`20m`, `127.0.0.1:50051`, a URL with its password as `***`);
    /// `None` when unset means "not set" (an optional setting or a required one).
    pub default: Option<String>,
    /// The name it had before `BATON_<COMPONENT>__<FIELD>`, still accepted.
    pub replaces: Option<&'static str>,
}

/// `S`'s variables in declaration order (nested structs, as `Peer`, by their path).
pub fn variables<S: Settings>() -> Vec<Variable> {
    let defaults = serde_json::to_value(S::default()).expect("settings serialize");
    let mut found = Vec::new();
    flatten(&defaults, &mut Vec::new(), &mut found);
    found
        .into_iter()
        .map(|(path, default)| Variable {
            name: variable(S::SECTION, &path),
            default,
            replaces: S::RENAMED
                .iter()
                .find(|rename| path == [rename.field])
                .map(|rename| rename.old),
        })
        .collect()
}

fn flatten(
    value: &serde_json::Value,
    path: &mut Vec<String>,
    found: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let default = match value {
        serde_json::Value::Object(fields) => {
            for (name, field) in fields {
                path.push(name.clone());
                flatten(field, path, found);
                path.pop();
            }
            return;
        }
        serde_json::Value::Null => None,
        serde_json::Value::String(text) if text.is_empty() => None,
        serde_json::Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    };
    found.push((path.clone(), default));
}

/// Two defaults agree when written alike, or as the same duration (`120s` and `2m`).
pub fn same_default(documented: Option<&str>, declared: Option<&str>) -> bool {
    match (documented, declared) {
        (Some(documented), Some(declared)) if documented != declared => {
            match (
                humantime::parse_duration(documented),
                humantime::parse_duration(declared),
            ) {
                (Ok(left), Ok(right)) => left == right,
                _ => false,
            }
        }
        (documented, declared) => documented == declared,
    }
}

thread_local! {
    /// The variables of every struct loaded on this thread while [`variables_read`] runs.
    static READ: RefCell<Option<Vec<Variable>>> = const { RefCell::new(None) };
}

/// Called by `load`: records `S`'s variables when [`variables_read`] is listening.
pub(super) fn note<S: Settings>() {
    READ.with(|read| {
        if let Some(read) = read.borrow_mut().as_mut() {
            for found in variables::<S>() {
                if !read.contains(&found) {
                    read.push(found);
                }
            }
        }
    });
}

/// The variables of every settings struct `load` reads while `run` runs (on this thread), so a
/// program's list is what its configuration code reads, not a second list kept by hand.
pub fn variables_read<T>(run: impl FnOnce() -> T) -> (T, Vec<Variable>) {
    READ.with(|read| *read.borrow_mut() = Some(Vec::new()));
    let result = run();
    let read = READ.with(|read| read.borrow_mut().take().unwrap_or_default());
    (result, read)
}

/// Variables read outside the settings structs, with their default as documentation writes
/// it: telemetry starts before any configuration is loaded and reads these itself
/// (`telemetry.rs`, `telemetry/resource.rs`).
pub const TELEMETRY: [(&str, Option<&str>); 3] = [
    ("BATON_LOG", Some("info,…=warn")),
    ("BATON_LOG_SQL", Some("false")),
    (
        super::service::DEPLOYMENT_ENVIRONMENT_KEY,
        Some(crate::telemetry::resource::DEFAULT_ENVIRONMENT),
    ),
];
