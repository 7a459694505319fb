//! Why install or uninstall refused, or failed, with the settings file left as it was.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Every variant means nothing was written to the settings file.
#[derive(Debug)]
pub enum InstallError {
    /// The settings file, or the directory a new one would go in, is a symbolic link.
    Symlink(PathBuf),
    NotJson {
        path: PathBuf,
        detail: String,
    },
    /// Valid JSON in a shape Baton cannot edit without guessing (`detail` names the key path).
    UnexpectedShape {
        path: PathBuf,
        detail: String,
    },
    Io {
        path: PathBuf,
        source: io::Error,
    },
}

impl InstallError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> InstallError {
        InstallError::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for InstallError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::Symlink(path) => write!(
                formatter,
                "{} is a symbolic link; Baton does not write through links, so run the \
                 install against the real location instead",
                path.display()
            ),
            InstallError::NotJson { path, detail } => write!(
                formatter,
                "{} is not valid JSON ({detail}); fix it first, Baton left it unchanged",
                path.display()
            ),
            InstallError::UnexpectedShape { path, detail } => write!(
                formatter,
                "{}: {detail}; Baton edits only the documented hook layout and left the file \
                 unchanged",
                path.display()
            ),
            InstallError::Io { path, source } => write!(formatter, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for InstallError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InstallError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
