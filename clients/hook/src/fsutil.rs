//! Files only the user can read: the state folder is 0700, every file in it 0600.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` (and parents) as 0700 when missing, and tightens it when it exists.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(metadata) if metadata.is_dir() => {
            if metadata.permissions().mode() & 0o077 != 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
            Ok(())
        }
        Ok(_) => Err(std::io::Error::other("state path is not a directory")),
        Err(_) => DirBuilder::new().recursive(true).mode(0o700).create(dir),
    }
}

/// Opens `path` for appending, creating it 0600.
pub fn private_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// Replaces `path` with `bytes` through a temporary file and a rename, so a process killed at
/// any point leaves the old contents or the new, never an empty or half-written file. Not
/// synced: it survives a kill, not a power cut (callers whose loss is harmless use it).
pub fn replace_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = temporary_beside(path)?;
    let mut file = create_private(&temporary)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&temporary, path)
}

/// Creates (or truncates) `path` for writing as 0600.
fn create_private(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// `.NAME.tmp` in the same folder as `path` (a rename within one folder is atomic).
fn temporary_beside(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent folder"))?;
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| std::io::Error::other("no file name"))?;
    Ok(dir.join(format!(".{name}.tmp")))
}

/// Writes `bytes` durably under `path`: a 0600 temporary file in the same folder, synced, then
/// renamed into place and the folder synced, so a crash leaves the old file or the new one.
pub fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temporary = temporary_beside(path)?;
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent folder"))?;
    let mut file = create_private(&temporary)?;
    file.write_all(bytes)?;
    file.sync_data()?;
    drop(file);
    std::fs::rename(&temporary, path)?;
    File::open(dir)?.sync_all()
}
