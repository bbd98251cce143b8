//! Atomic publication of a written document (spec 9.1 step 9).
//!
//! The text goes to a temporary `.<name>.<random>.tmp` beside the target, is fsynced,
//! then appears under the target name all at once: hard-linked when the target must not
//! exist (the link fails if it appeared meanwhile), renamed over it when overwriting. The
//! directory is fsynced after, and the temporary name is always removed.
//!
//! Every directory from the root down is opened relative to its parent with
//! `O_NOFOLLOW | O_DIRECTORY` (and created, mode 0700 like Python's `mkdir`, when
//! missing), and every later step is relative to the final directory's descriptor: a
//! component replaced by a symlink after the checks makes the publish fail instead of
//! writing through it.

use super::WriteError;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Publishes `text` at `rel` (root-relative, already checked) under `root`.
pub fn publish(root: &Path, rel: &str, text: &str, overwrite: bool) -> Result<(), WriteError> {
    let (dirs, name) = rel.rsplit_once('/').unwrap_or((".", rel));
    let mut dir = open_dir(None, root.as_os_str().as_bytes(), false)?;
    for part in dirs.split('/').filter(|p| *p != ".") {
        dir = open_dir(Some(&dir), part.as_bytes(), true)?;
    }
    let (tmp, mut file) = create_temp(&dir, name)?;
    let result = write_and_link(&dir, &tmp, &mut file, name, text, overwrite);
    drop(file);
    // Gone already after a rename; after a link, or on failure, it is removed here.
    unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
    result
}

fn write_and_link(
    dir: &OwnedFd,
    tmp: &CString,
    file: &mut std::fs::File,
    name: &str,
    text: &str,
    overwrite: bool,
) -> Result<(), WriteError> {
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|_| WriteError::Publish)?;
    let target = c_name(name.as_bytes())?;
    let fd = dir.as_raw_fd();
    let rc = if overwrite {
        unsafe { libc::renameat(fd, tmp.as_ptr(), fd, target.as_ptr()) }
    } else {
        unsafe { libc::linkat(fd, tmp.as_ptr(), fd, target.as_ptr(), 0) }
    };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::EEXIST) if !overwrite => WriteError::OutputExists,
            _ => WriteError::Publish,
        });
    }
    // Best effort, as in the reference: the data itself is already synced.
    unsafe { libc::fsync(fd) };
    Ok(())
}

fn c_name(bytes: &[u8]) -> Result<CString, WriteError> {
    CString::new(bytes).map_err(|_| WriteError::Publish)
}

/// Opens directory `name` (relative to `parent`, or a path when `None`) without
/// following a symlink; with `create`, makes it first when missing.
fn open_dir(parent: Option<&OwnedFd>, name: &[u8], create: bool) -> Result<OwnedFd, WriteError> {
    let c = c_name(name)?;
    let at = parent.map_or(libc::AT_FDCWD, |p| p.as_raw_fd());
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut fd = unsafe { libc::openat(at, c.as_ptr(), flags) };
    if fd < 0 && create && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
        let made = unsafe { libc::mkdirat(at, c.as_ptr(), 0o777) };
        if made != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(WriteError::Failed);
        }
        fd = unsafe { libc::openat(at, c.as_ptr(), flags) };
    }
    if fd < 0 {
        // A symlink (swapped in since the checks) fails the publish; a file where a
        // directory must go fails like the reference's `mkdir`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let found = unsafe { libc::fstatat(at, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        let is_link = found == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFLNK;
        return Err(if found == 0 && !is_link {
            WriteError::Failed
        } else {
            WriteError::Publish
        });
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Creates `.<name>.<8 random>.tmp` (`:` in the name becomes `_`) in `dir`, mode 0600,
/// refusing to reuse an existing name.
fn create_temp(dir: &OwnedFd, name: &str) -> Result<(CString, std::fs::File), WriteError> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_";
    for _ in 0..100 {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|_| WriteError::Publish)?;
        let suffix: String = random
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect();
        let tmp = c_name(format!(".{}.{suffix}.tmp", name.replace(':', "_")).as_bytes())?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = unsafe { libc::openat(dir.as_raw_fd(), tmp.as_ptr(), flags, 0o600) };
        if fd >= 0 {
            return Ok((tmp, unsafe { std::fs::File::from_raw_fd(fd) }));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(WriteError::Publish);
        }
    }
    Err(WriteError::Publish)
}
