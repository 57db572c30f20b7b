//! Where `--out FILE` writes, and how, so that nothing at the path is ever
//! destroyed:
//!
//! - `-` is standard output.
//! - A symbolic link stays a link: it is followed (up to 40 links, relative
//!   targets resolved against the link's directory, a dangling link's
//!   target created) and the final target is written by the rules below.
//! - A character or block device, a FIFO or a socket is written through
//!   (opened for writing, never created, truncated, replaced or renamed
//!   over); a socket cannot be opened and gets a clear error.
//! - A regular file, or a name that does not exist yet, is written to a
//!   temporary file in the same directory and renamed over it only when
//!   complete (atomic: an interrupted run leaves the old file or none).
//!   Private keys get mode 0600; other output keeps an existing file's
//!   permission bits (0644 for a new one). An existing file's owner and
//!   group are kept where the process may set them (as root).
//! - A directory is an error.

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

/// The temporary file being written, for the signal handler to remove
/// (a leaked C string, or NULL).
pub static PENDING_TMP: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// Follows `path` through symbolic links to the name that will be written.
pub fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)?;
                p = if target.is_absolute() {
                    target
                } else {
                    p.parent().unwrap_or(Path::new(".")).join(target)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::ELOOP))
}

/// What kind of thing `--out` names once links are followed.
enum Target {
    /// A regular file (or a name to create): atomic replacement.
    File(Option<std::fs::Metadata>),
    /// A device, FIFO or socket: written through.
    Special,
}

fn classify(path: &Path) -> std::io::Result<Target> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(std::io::Error::from_raw_os_error(libc::EISDIR)),
        Ok(m) if m.is_file() => Ok(Target::File(Some(m))),
        Ok(m) => {
            let t = m.file_type();
            if t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket() {
                Ok(Target::Special)
            } else {
                Ok(Target::File(Some(m)))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Target::File(None)),
        Err(e) => Err(e),
    }
}

/// Writes `data` to `path` by the rules above. `private` selects mode 0600.
/// Returns the path actually written (the link's final target).
pub fn write(path: &Path, data: &[u8], private: bool) -> std::io::Result<PathBuf> {
    let real = resolve(path)?;
    match classify(&real)? {
        Target::Special if is_socket(&real) => Err(std::io::Error::other(
            "is a socket; --out writes regular files, devices and FIFOs",
        )),
        Target::Special => {
            let mut f = std::fs::OpenOptions::new().write(true).open(&real)?;
            f.write_all(data)?;
            f.flush()?;
            Ok(real)
        }
        Target::File(existing) => {
            replace(&real, data, private, existing.as_ref())?;
            Ok(real)
        }
    }
}

/// Whether `--out` can be written, looked at before any work so that an
/// unusable path fails at once rather than after hours of generation:
/// the same rules as [`write`] (links followed, a directory or a socket
/// refused), and for a file, a directory that exists and that this
/// process may create the temporary file in.
pub fn check(path: &Path) -> std::io::Result<()> {
    let real = resolve(path)?;
    match classify(&real)? {
        Target::Special if is_socket(&real) => Err(std::io::Error::other(
            "is a socket; --out writes regular files, devices and FIFOs",
        )),
        Target::Special => Ok(()),
        Target::File(_) => {
            let dir = real
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            match std::fs::metadata(dir) {
                Ok(m) if !m.is_dir() => {
                    return Err(std::io::Error::other(format!(
                        "{} is not a directory",
                        dir.display()
                    )))
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(std::io::Error::other(format!(
                        "the directory {} does not exist",
                        dir.display()
                    )))
                }
                Err(e) => return Err(e),
            }
            let c = CString::new(dir.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
            // SAFETY: a NUL-terminated path; access only reads it.
            if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
                return Err(std::io::Error::other(format!(
                    "cannot create files in {}: {}",
                    dir.display(),
                    std::io::Error::last_os_error()
                )));
            }
            Ok(())
        }
    }
}

/// The file `path` names, for telling two paths apart: device and inode
/// when it exists, else its resolved path.
pub fn identity(path: &Path) -> Option<Result<(u64, u64), PathBuf>> {
    let real = resolve(path).ok()?;
    Some(match std::fs::metadata(&real) {
        Ok(m) => Ok((m.dev(), m.ino())),
        Err(_) => Err(real),
    })
}

fn is_socket(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

fn replace(
    path: &Path,
    data: &[u8],
    private: bool,
    existing: Option<&std::fs::Metadata>,
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::from_raw_os_error(libc::EISDIR))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let mode = if private {
        0o600
    } else {
        existing.map_or(0o644, |m| m.permissions().mode() & 0o7777)
    };
    let c = CString::new(tmp.as_os_str().as_bytes()).ok();
    if let Some(c) = &c {
        PENDING_TMP.store(c.clone().into_raw(), Ordering::SeqCst);
    }
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        if let Some(m) = existing {
            // Keep the owner and group (possible as root; otherwise the
            // file stays ours, as any editor's save would leave it).
            let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
            // fchown may clear set-id bits; the mode is set again.
            let _ = f.set_permissions(std::fs::Permissions::from_mode(mode));
        }
        f.write_all(data)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    let pending = PENDING_TMP.swap(std::ptr::null_mut(), Ordering::SeqCst);
    if !pending.is_null() {
        // SAFETY: the pointer came from CString::into_raw above.
        drop(unsafe { CString::from_raw(pending) });
    }
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
