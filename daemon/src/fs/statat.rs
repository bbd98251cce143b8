//! `lstat` of many files of one root in walk order, at one path lookup per file.
//!
//! A whole-root search checks every file's stat; with deep trees the kernel spent most
//! of that time walking each full path again (`__d_lookup_rcu` per component). Files in
//! walk order come a directory at a time, so each thread keeps the directory it last
//! used open (`O_PATH`) and asks `fstatat` for the last component only.
//!
//! The open directory is reused only within one [`StatBatch`] (one tool call): a
//! directory renamed or replaced between calls is looked up afresh, and within a call
//! such a race is no different from one during a scan that stats each path.

use super::StatKey;
use std::cell::RefCell;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes batches, so that no thread reuses a directory across calls.
static BATCHES: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (batch, directory relative path, the open directory) of this thread.
    static OPEN_DIR: RefCell<Option<(u64, String, OpenDir)>> = const { RefCell::new(None) };
}

/// An open directory (`O_PATH`) whose children are stat'ed by name.
#[derive(Debug)]
pub struct OpenDir(OwnedFd);

/// A child's `lstat`: its key and link count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChildStat {
    pub key: StatKey,
    pub nlink: u64,
}

impl OpenDir {
    /// Opens `path` (its last component must not be a symlink; the caller has checked
    /// the ones before it).
    pub fn open(path: &Path) -> Option<OpenDir> {
        let path = CString::new(path.as_os_str().as_bytes()).ok()?;
        // SAFETY: a plain open(2) of a NUL-terminated path; the descriptor is owned below.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        // SAFETY: `fd` is a descriptor we just opened and nobody else owns.
        (fd >= 0).then(|| OpenDir(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The `lstat` of the child `name`, `None` when it fails.
    pub fn lstat(&self, name: &str) -> Option<ChildStat> {
        let name = CString::new(name).ok()?;
        // SAFETY: `st` is read only when fstatat succeeded; the descriptor and `name`
        // outlive the call.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::fstatat(
                self.0.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
        (rc == 0).then(|| ChildStat {
            key: StatKey {
                dev: st.st_dev,
                ino: st.st_ino,
                mode: st.st_mode,
                size: st.st_size as u64,
                mtime_ns: ns(st.st_mtime, st.st_mtime_nsec),
                ctime_ns: ns(st.st_ctime, st.st_ctime_nsec),
            },
            nlink: st.st_nlink,
        })
    }
}

/// Stats files under one root for the length of one call.
#[derive(Debug)]
pub struct StatBatch {
    root: PathBuf,
    id: u64,
}

impl StatBatch {
    pub fn new(root: &Path) -> StatBatch {
        StatBatch {
            root: root.to_path_buf(),
            id: BATCHES.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The `lstat` of `root/rel` (a file: `rel` is not `.`), `None` when it fails.
    pub fn lstat(&self, rel: &str) -> Option<StatKey> {
        self.lstat_child(rel).map(|child| child.key)
    }

    /// [`StatBatch::lstat`] with the link count.
    pub fn lstat_child(&self, rel: &str) -> Option<ChildStat> {
        let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
        OPEN_DIR.with(|open| {
            let mut open = open.borrow_mut();
            let reuse = matches!(&*open, Some((id, d, _)) if *id == self.id && d == dir);
            if !reuse {
                *open = None;
                let opened = OpenDir::open(&self.root.join(dir))?;
                *open = Some((self.id, dir.to_owned(), opened));
            }
            let (_, _, opened) = open.as_ref()?;
            opened.lstat(name)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_lstat_and_sees_replacements_between_batches() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("top.txt"), "1").unwrap();
        std::fs::write(root.join("a/b/x.txt"), "22").unwrap();
        std::os::unix::fs::symlink("x.txt", root.join("a/b/link")).unwrap();
        let batch = StatBatch::new(root);
        for rel in ["top.txt", "a/b/x.txt", "a/b/link"] {
            let meta = std::fs::symlink_metadata(root.join(rel)).unwrap();
            assert_eq!(batch.lstat(rel), Some(StatKey::of(&meta)), "{rel}");
        }
        assert_eq!(batch.lstat("a/b/missing"), None);
        assert_eq!(batch.lstat("nowhere/x.txt"), None);
        // The directory replaced: a new batch sees the new one.
        std::fs::rename(root.join("a/b"), root.join("a/old")).unwrap();
        std::fs::create_dir(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/x.txt"), "333").unwrap();
        let fresh = StatBatch::new(root);
        assert_eq!(fresh.lstat("a/b/x.txt").map(|s| s.size), Some(3));
    }
}
