//! Values that must never be printed: a [`Secret`], and a [`SecretUrl`] printed with its
//! password replaced.

use std::fmt;

/// A value that must never be printed: its `Debug` and `Display` are redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The value, for the one place that needs it (a header, a comparison).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Secret(<redacted>)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("<redacted>")
    }
}

/// A connection URL (database, broker) whose password must never be printed.
///
/// `Debug` and `Display` show the URL with its password replaced by `***`, so a redacted URL
/// still says which host, port, user and database a process uses; a value that does not parse
/// as a URL prints as `<unparseable url>`, because whatever it holds could be a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretUrl(String);

impl SecretUrl {
    pub fn new(value: String) -> SecretUrl {
        SecretUrl(value)
    }

    /// The full URL, for the one place that connects with it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with any password replaced by `***`.
    pub fn redacted(&self) -> String {
        match url::Url::parse(&self.0) {
            Ok(mut parsed) => {
                if parsed.password().is_some() && parsed.set_password(Some("***")).is_err() {
                    return "<unparseable url>".to_string();
                }
                parsed.to_string()
            }
            Err(_) => "<unparseable url>".to_string(),
        }
    }
}

impl fmt::Debug for SecretUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "SecretUrl({})", self.redacted())
    }
}

impl fmt::Display for SecretUrl {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.redacted())
    }
}

// Settings deserialize secrets from a variable's text and serialize them only redacted, so
// printing a settings struct (or documenting its defaults) never shows one.

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Secret, D::Error> {
        <String as serde::Deserialize>::deserialize(deserializer).map(Secret::new)
    }
}

impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for SecretUrl {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<SecretUrl, D::Error> {
        <String as serde::Deserialize>::deserialize(deserializer).map(SecretUrl::new)
    }
}

impl serde::Serialize for SecretUrl {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}
