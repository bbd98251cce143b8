//! Verified reads: the stat that identifies a version of a file ([`StatKey`]), whole-file
//! reads that refuse a torn read ([`read_verified`]), the first bytes for the content sniff
//! ([`read_prefix`]), and read-ahead hints ([`prefetch`]). What the bytes are is decided by
//! [`super::content`].

use crate::view::ViewError;
use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The stat fields that identify one version of a file's content.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StatKey {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

impl StatKey {
    /// Extracts the key from `lstat`/`fstat` metadata.
    pub fn of(meta: &Metadata) -> StatKey {
        StatKey {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            size: meta.size(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            ctime_ns: meta
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.ctime_nsec()),
        }
    }

    /// Whether the key is a regular file.
    pub fn is_regular(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    /// Whether the key is a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }

    /// Whether the key is a directory.
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    /// The reference's "changed during read" comparison: (dev, ino, mode, size, mtime_ns).
    fn same_version(&self, other: &StatKey) -> bool {
        (self.dev, self.ino, self.mode, self.size, self.mtime_ns)
            == (other.dev, other.ino, other.mode, other.size, other.mtime_ns)
    }
}

/// Asks the kernel to start reading the first `len` bytes of `root/rel` into the page
/// cache and returns without waiting (`POSIX_FADV_WILLNEED`). Source files are small, so
/// the kernel's own read-ahead never reaches from one into the next, and a worker reading
/// a cold file waits for the disk with its core idle; the indexing pass calls this a
/// window ahead of its workers so their reads find the pages there. Reads nothing into
/// this process, opens like the content path (no symlink at any component), advises
/// only a regular file, and ignores failures (the verified read decides).
pub fn prefetch(root: &Path, rel: &str, len: u64) {
    #[cfg(target_os = "linux")]
    if let Some(file) = super::paths::open_for_read_no_symlinks(root, rel)
        && file.metadata().is_ok_and(|m| m.is_file())
    {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(len).unwrap_or(0); // 0: to the end
        // SAFETY: the descriptor is open for the duration of the call; the advice
        // only schedules reads into the page cache.
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, len, libc::POSIX_FADV_WILLNEED) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (root, rel, len);
}

/// Reads a whole regular file, refusing a torn read: the `lstat` before, the opened
/// file's `fstat`, and its `fstat` after the read must agree, and the size read must be
/// the size stated. Opening uses `O_NOFOLLOW | O_NONBLOCK`, so a file swapped for a
/// symlink or a FIFO after the first `lstat` can neither be followed nor block the
/// reader; a file that is another name of a protected file (`fs::protected`) is refused
/// by what was opened, not by what the path showed a moment before.
///
/// Returns the bytes with the stat of the file they were read from. A file replaced by a
/// rename while it was read (how editors save) yields the complete version that was
/// opened: a consistent snapshot of the file as it was when the read began, never a mix.
/// The reference re-`lstat`s the path and answers `File changed during read.` then
/// (COMPAT.md); the returned stat is the opened file's, so a cache keyed on it is
/// re-read at the next request, whose `lstat` shows the new file.
pub fn read_verified(path: &Path, max_bytes: u64) -> Result<(Vec<u8>, StatKey), ViewError> {
    let before = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(_) => return Err(ViewError::Missing),
    };
    if before.file_type().is_symlink() {
        return Err(ViewError::Unsafe);
    }
    let before = StatKey::of(&before);
    if !before.is_regular() {
        return Err(ViewError::NotAFile);
    }
    if before.size > max_bytes {
        return Err(ViewError::FileByteLimit);
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| {
            if err.raw_os_error() == Some(libc::ELOOP) {
                ViewError::Unsafe
            } else {
                ViewError::ReadFailed
            }
        })?;
    let opened = file.metadata().map_err(|_| ViewError::ReadFailed)?;
    if crate::fs::protected::is_link_to_protected(&opened) {
        return Err(ViewError::Excluded);
    }
    if !StatKey::of(&opened).same_version(&before) {
        return Err(ViewError::ChangedDuringRead);
    }
    let data = read_bounded(&mut file, before.size, max_bytes)?;
    let after = file.metadata().map_err(|_| ViewError::ReadFailed)?;
    let after = StatKey::of(&after);
    if !after.same_version(&before) || data.len() as u64 != before.size {
        return Err(ViewError::ChangedDuringRead);
    }
    Ok((data, after))
}

fn read_bounded(file: &mut File, expected: u64, max_bytes: u64) -> Result<Vec<u8>, ViewError> {
    let mut data = Vec::with_capacity(expected.min(max_bytes) as usize + 1);
    // One byte past the limit is enough to notice growth; the caller compares sizes.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut data)
        .map_err(|_| ViewError::ReadFailed)?;
    Ok(data)
}

/// The first `len` bytes of a regular file on disk (fewer when it is shorter), without
/// following a symlink or blocking on a FIFO; `None` when it cannot be opened or read or
/// is not a regular file.
pub fn read_prefix(path: &Path, len: usize) -> Option<Vec<u8>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut prefix = Vec::with_capacity(len);
    file.take(len as u64).read_to_end(&mut prefix).ok()?;
    Some(prefix)
}
