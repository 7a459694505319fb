//! Loading one settings struct from a snapshot of the environment with figment.
//!
//! Why figment: it merges the environment over the declared defaults keeping, for each value,
//! which provider and key supplied it, so a bad value is reported by the variable that set it
//! (`BATON_CLOSER__SWEEP_INTERVAL: must be between 1s and 1day`), and it deserializes into
//! plain serde structs. Two things are ours rather than figment's, each for a reason:
//!
//! - The provider ([`Variables`]) reads an [`Env`] snapshot, not the process: figment's `Env`
//!   provider only reads `std::env`, and tests (and `serve all`, which loads several structs
//!   from one snapshot after `_FILE` secrets and database TLS were applied to it) need a given
//!   set. It maps names the way `Env::prefixed("BATON_").split("__")` does, but hands every
//!   value over as text (figment's would turn `0123` into a number), so each field's type
//!   parses it exactly as before.
//! - Defaults come from each field's type through `#[serde(default)]`, not from a
//!   `Serialized::defaults` provider: secrets serialize redacted, so a serialized default
//!   would not read back as the value it came from.

use std::collections::BTreeSet;
use std::sync::Mutex;

use figment::value::{Dict, Map, Value};
use figment::{Figment, Metadata, Profile, Provider};

use super::env::{ConfigError, Env};
use super::settings::{Renamed, Settings, variable};

/// Reads `S` from `env`: its section's variables over its declared defaults, old names
/// resolved, each field parsed and bounded by its type, then [`Settings::check`].
pub fn load<S: Settings>(env: &Env) -> Result<S, ConfigError> {
    super::describe::note::<S>();
    let (resolved, moved) = resolve_renamed(env, S::SECTION, S::RENAMED)?;
    let figment = Figment::new().merge(Variables(&resolved));
    let figment = match S::SECTION {
        "" => figment,
        section => figment.focus(section),
    };
    // An error names the variable the operator set, the old name when the value came from it.
    let named = |mut error: ConfigError| {
        if let Some(rename) = moved.iter().find(|rename| error.key == rename.new) {
            error.key = rename.old.to_string();
        }
        error
    };
    let settings: S = figment
        .extract()
        .map_err(|error| named(config_error(S::SECTION, error)))?;
    settings.check().map_err(named)?;
    Ok(settings)
}

/// An old name whose value was moved to the new one.
struct Moved {
    old: &'static str,
    new: String,
}

/// The snapshot with each old name's value moved to its new name.
fn resolve_renamed(
    env: &Env,
    section: &str,
    renamed: &[Renamed],
) -> Result<(Env, Vec<Moved>), ConfigError> {
    let mut resolved = env.clone();
    let mut moved = Vec::new();
    for rename in renamed {
        let Some(old_value) = env.raw(rename.old) else {
            continue;
        };
        let new = variable(section, &[rename.field]);
        if env
            .raw(&new)
            .is_some_and(|new_value| new_value != old_value)
        {
            return Err(ConfigError::new(
                &new,
                format!(
                    "{} (its old name) is set too, to another value: set only {new}",
                    rename.old
                ),
            ));
        }
        warn_once(rename.old, &new);
        resolved = resolved.with(&new, old_value);
        moved.push(Moved {
            old: rename.old,
            new,
        });
    }
    Ok((resolved, moved))
}

/// One line per old name per process, however many structs read it.
fn warn_once(old: &'static str, new: &str) {
    static WARNED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let first = WARNED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(old);
    if first {
        tracing::warn!(
            old,
            new,
            "deprecated configuration variable: rename it, the old name will go"
        );
    }
}

/// figment's error as ours: the variable that supplied the value and what is wrong with it,
/// without the value (a type mismatch would otherwise repeat it, and it may be a secret).
fn config_error(section: &str, error: figment::Error) -> ConfigError {
    use figment::error::Kind;
    let error = error.into_iter().next().expect("an error has a first");
    let key = variable(section, &error.path);
    let message = match &error.kind {
        Kind::Message(message) => message.clone(),
        Kind::InvalidType(_, expected) | Kind::InvalidValue(_, expected) => {
            format!("expected {expected}")
        }
        Kind::UnknownVariant(_, expected) => format!("must be one of {}", expected.join(", ")),
        other => other.to_string(),
    };
    ConfigError::new(&key, message)
}

/// figment's view of an [`Env`] snapshot: `BATON_A__B_C=v` is `{a: {b_c: "v"}}`.
struct Variables<'a>(&'a Env);

impl Provider for Variables<'_> {
    fn metadata(&self) -> Metadata {
        Metadata::named("environment variable")
            .interpolater(|_: &Profile, path: &[&str]| variable("", path))
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        let mut root = Dict::new();
        for (key, value) in self.0.set() {
            let Some(rest) = key.strip_prefix("BATON_") else {
                continue;
            };
            let well_formed = rest
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
            if !well_formed || path.iter().any(String::is_empty) {
                continue;
            }
            insert(&mut root, &path, value.to_string());
        }
        Ok(Profile::Default.collect(root))
    }
}

/// Puts `value` at `path`; where a name is both a value and a section (`BATON_CLOSER` and
/// `BATON_CLOSER__LISTEN`), the section wins, as no settings field is named after a section.
fn insert(dict: &mut Dict, path: &[String], value: String) {
    let (first, rest) = path.split_first().expect("a path has a first name");
    if rest.is_empty() {
        if !matches!(dict.get(first), Some(Value::Dict(..))) {
            dict.insert(first.clone(), Value::from(value));
        }
        return;
    }
    let entry = dict
        .entry(first.clone())
        .or_insert_with(|| Value::from(Dict::new()));
    if !matches!(entry, Value::Dict(..)) {
        *entry = Value::from(Dict::new());
    }
    if let Value::Dict(_, inner) = entry {
        insert(inner, rest, value);
    }
}
