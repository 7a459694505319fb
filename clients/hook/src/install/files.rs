//! The file system side of install: symlink refusal, atomic writes, created directories.
//!
//! Settings files are replaced atomically (temp file in the same directory, fsync, rename), so
//! a harness starting mid-install reads either the old file or the new one, never half. An
//! existing file keeps its permissions; a new one gets 0644 (settings are not secret).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::InstallError;

/// Permissions of a settings file Baton creates.
pub const SETTINGS_MODE: u32 = 0o644;
/// Permissions of Baton's own state files.
pub const PRIVATE_MODE: u32 = 0o600;

/// Refuses a settings path that is a symbolic link, or, when the file does not exist yet,
/// whose directory is one: writing through a link edits a file the person did not name.
pub fn refuse_symlinks(path: &Path) -> Result<(), InstallError> {
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            Err(InstallError::Symlink(path.to_path_buf()))
        }
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            let Some(directory) = parent(path) else {
                return Ok(());
            };
            match fs::symlink_metadata(directory) {
                Ok(metadata) if metadata.file_type().is_symlink() => {
                    Err(InstallError::Symlink(directory.to_path_buf()))
                }
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    Err(InstallError::io(directory, error))
                }
                _ => Ok(()),
            }
        }
        Err(error) => Err(InstallError::io(path, error)),
    }
}

/// The file's text, or `None` when it does not exist.
pub fn read_existing(path: &Path) -> Result<Option<String>, InstallError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(InstallError::io(path, error)),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| InstallError::NotJson {
            path: path.to_path_buf(),
            detail: "the file is not UTF-8 text".to_string(),
        })
}

/// Creates `directory` and any missing ancestors; returns the ones it created, deepest first.
pub fn create_missing_dirs(directory: &Path) -> Result<Vec<PathBuf>, InstallError> {
    let missing: Vec<PathBuf> = directory
        .ancestors()
        .take_while(|ancestor| !ancestor.as_os_str().is_empty())
        .take_while(|ancestor| fs::symlink_metadata(ancestor).is_err())
        .map(Path::to_path_buf)
        .collect();
    fs::create_dir_all(directory).map_err(|error| InstallError::io(directory, error))?;
    Ok(missing)
}

/// Removes the directories install created (deepest first) while they are empty.
pub fn remove_empty_dirs(directories: &[PathBuf]) -> Result<(), InstallError> {
    for directory in directories {
        let is_empty = match fs::read_dir(directory) {
            Ok(mut entries) => entries.next().is_none(),
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(InstallError::io(directory, error)),
        };
        if !is_empty {
            return Ok(());
        }
        fs::remove_dir(directory).map_err(|error| InstallError::io(directory, error))?;
    }
    Ok(())
}

/// Creates Baton's state directory readable by its owner only.
pub fn create_private_dir(directory: &Path) -> Result<(), InstallError> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(directory)
        .map_err(|error| InstallError::io(directory, error))
}

pub fn remove_file(path: &Path) -> Result<(), InstallError> {
    fs::remove_file(path).map_err(|error| InstallError::io(path, error))
}

/// Replaces `path` with `contents` atomically. An existing file keeps its permissions; a new
/// one gets `new_mode`. The temp file is created with `new_mode` from the start, so a private
/// file is never readable by others, even for a moment.
pub fn write_atomic(path: &Path, contents: &str, new_mode: u32) -> Result<(), InstallError> {
    let directory = parent(path).unwrap_or(Path::new("."));
    let file_name = path.file_name().map_or_else(
        || "settings".into(),
        |name| name.to_string_lossy().into_owned(),
    );
    let suffix = uuid::Uuid::new_v4().simple();
    let temp = directory.join(format!(".{file_name}.{suffix}.baton-tmp"));
    let existing_permissions = match fs::metadata(path) {
        Ok(metadata) => Some(metadata.permissions()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(error) => return Err(InstallError::io(path, error)),
    };
    let written = write_then_rename(&temp, path, contents, new_mode, existing_permissions);
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(InstallError::io(path, error));
    }
    // Persist the rename itself. Some file systems refuse to fsync a directory; the rename has
    // happened either way, so that refusal is not a failed install.
    if let Ok(handle) = fs::File::open(directory) {
        let _ = handle.sync_all();
    }
    Ok(())
}

fn write_then_rename(
    temp: &Path,
    path: &Path,
    contents: &str,
    new_mode: u32,
    existing_permissions: Option<fs::Permissions>,
) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, new_mode);
    let mut file = options.open(temp)?;
    file.write_all(contents.as_bytes())?;
    match existing_permissions {
        Some(permissions) => file.set_permissions(permissions)?,
        None => set_mode(&file, new_mode)?,
    }
    file.sync_all()?;
    drop(file);
    fs::rename(temp, path)
}

/// Sets the exact mode, past the umask that narrowed it at creation.
#[cfg(unix)]
fn set_mode(file: &fs::File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &fs::File, _mode: u32) -> io::Result<()> {
    Ok(())
}

fn parent(path: &Path) -> Option<&Path> {
    path.parent()
        .filter(|directory| !directory.as_os_str().is_empty())
}
