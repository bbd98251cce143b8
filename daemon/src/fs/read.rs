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
/// window ahead of its workers so their reads find the pages there. Reads at most one
/// byte into this process, opens like the content path (no symlink at any component),
/// advises only a regular file, and ignores failures (the verified read decides).
///
/// Returns whether the file's first page was in memory already (a read of one byte
/// that may not wait for the disk, `RWF_NOWAIT`), so the caller can tell a warm tree,
/// where advice is wasted work, from a cold one; `None` when it could not tell. A file
/// whose first page is in memory is not advised: the rest of it nearly always is too.
pub fn prefetch(root: &Path, rel: &str, len: u64) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let file = super::paths::open_for_read_no_symlinks(root, rel)?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut byte = [0u8; 1];
        let iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        // SAFETY: one iovec over a live one-byte buffer, on a descriptor open for the
        // duration of the call.
        let got = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, 0, libc::RWF_NOWAIT) };
        let cached = (got >= 0).then_some(true).or_else(|| {
            // EAGAIN: the page is not in memory; anything else (an old kernel) tells
            // nothing, and the file is advised.
            let err = std::io::Error::last_os_error();
            (err.raw_os_error() == Some(libc::EAGAIN)).then_some(false)
        });
        if cached != Some(true) {
            let len = libc::off_t::try_from(len).unwrap_or(0); // 0: to the end
            // SAFETY: the descriptor is open for the duration of the call; the advice
            // only schedules reads into the page cache.
            unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, len, libc::POSIX_FADV_WILLNEED) };
        }
        cached
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (root, rel, len);
        None
    }
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
    let file = std::fs::OpenOptions::new()
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
    let opened = OpenedFile::of(file)?;
    if crate::fs::protected::is_link_to_protected(&opened.meta) {
        return Err(ViewError::Excluded);
    }
    if !opened.stat().same_version(&before) {
        return Err(ViewError::ChangedDuringRead);
    }
    opened.read_whole(max_bytes)
}

/// A file opened for reading with its `fstat`: the indexing pass opens each file once
/// (`paths::open_beneath`, no symlink at any component) and answers the admission
/// checks, the content sniff and the read from that one descriptor, where the path-based
/// route costs three opens and six stats per file.
pub struct OpenedFile {
    file: File,
    meta: Metadata,
}

impl OpenedFile {
    /// `file` with its current `fstat`.
    pub fn of(file: File) -> Result<OpenedFile, ViewError> {
        let meta = file.metadata().map_err(|_| ViewError::ReadFailed)?;
        Ok(OpenedFile { file, meta })
    }

    /// The `fstat` taken when it was opened.
    pub fn meta(&self) -> &Metadata {
        &self.meta
    }

    /// [`StatKey`] of [`OpenedFile::meta`].
    pub fn stat(&self) -> StatKey {
        StatKey::of(&self.meta)
    }

    /// Up to the first `len` bytes, read at offset 0 (the position is left alone);
    /// `None` when the read fails.
    pub fn prefix(&self, len: usize) -> Option<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut prefix = vec![0; len];
        let mut filled = 0;
        while filled < len {
            match self.file.read_at(&mut prefix[filled..], filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        prefix.truncate(filled);
        Some(prefix)
    }

    /// The whole file, refusing a torn read: its `fstat` after the read must show the
    /// version it had when opened, and the size read must be that version's. Returns the
    /// bytes with the stat after the read.
    pub fn read_whole(mut self, max_bytes: u64) -> Result<(Vec<u8>, StatKey), ViewError> {
        let before = self.stat();
        let data = read_bounded(&mut self.file, before.size, max_bytes)?;
        let after = self.file.metadata().map_err(|_| ViewError::ReadFailed)?;
        let after = StatKey::of(&after);
        if !after.same_version(&before) || data.len() as u64 != before.size {
            return Err(ViewError::ChangedDuringRead);
        }
        Ok((data, after))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn an_opened_file_reads_whole_after_its_prefix_and_refuses_a_torn_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "0123456789").unwrap();
        let open = || OpenedFile::of(File::open(&path).unwrap()).unwrap();
        let opened = open();
        assert_eq!(opened.prefix(4).as_deref(), Some(&b"0123"[..]));
        assert_eq!(opened.prefix(64).as_deref(), Some(&b"0123456789"[..]));
        // The prefix left the position at the start: the whole file is read.
        let (bytes, stat) = opened.read_whole(1 << 20).unwrap();
        assert_eq!(bytes, b"0123456789");
        assert_eq!(stat.size, 10);
        // Written between the open and the read: not a version of the file.
        let opened = open();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"more")
            .unwrap();
        assert_eq!(
            opened.read_whole(1 << 20).unwrap_err(),
            ViewError::ChangedDuringRead
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn prefetch_tells_a_file_in_memory_and_skips_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("warm.txt"), "just written").unwrap();
        std::os::unix::fs::symlink(root.join("warm.txt"), root.join("link.txt")).unwrap();
        // Just written: its page is in memory.
        assert_eq!(prefetch(root, "warm.txt", 12), Some(true));
        assert_eq!(prefetch(root, "link.txt", 12), None);
        assert_eq!(prefetch(root, "missing.txt", 12), None);
    }
}
