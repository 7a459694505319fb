//! What a settings struct declares ([`Settings`]: its section, its renamed variables, its
//! cross-field rules) and how a field's variable is named ([`variable`]); read by the `load`
//! module and described by the `describe` module.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::env::ConfigError;

/// A struct of settings read from `BATON_` variables, each field's default and bounds declared
/// by its type (see [`super::values`]).
pub trait Settings: DeserializeOwned + Serialize + Default {
    /// The component whose settings these are: its fields are `BATON_<SECTION>__<FIELD>`
    /// (`closer` → `BATON_CLOSER__SWEEP_INTERVAL`). Empty for settings the whole process
    /// shares, which are `BATON_<FIELD>` (`BATON_DATABASE_URL`).
    const SECTION: &'static str;
    /// Variables that had another name before this scheme; see [`Renamed`].
    const RENAMED: &'static [Renamed] = &[];

    /// Rules between fields (a maximum not below its base), checked after each field's own.
    fn check(&self) -> Result<(), ConfigError> {
        Ok(())
    }
}

/// A field's variable under its old name. The old name keeps working: its value is used and
/// one warning line names the old and the new variable; both set to different values refuse
/// to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Renamed {
    pub old: &'static str,
    pub field: &'static str,
}

impl Renamed {
    pub const fn new(old: &'static str, field: &'static str) -> Renamed {
        Renamed { old, field }
    }
}

/// The variable of a field: `BATON_`, the section and the path joined by `__`, in capitals.
pub fn variable<S: AsRef<str>>(section: &str, path: &[S]) -> String {
    let parts: Vec<String> = std::iter::once(section)
        .filter(|section| !section.is_empty())
        .chain(path.iter().map(AsRef::as_ref))
        .map(str::to_ascii_uppercase)
        .collect();
    format!("BATON_{}", parts.join("__"))
}
