//! Watcher-synced queries: when a walk may take the index's stats as the disk's.
//!
//! A whole-root search otherwise `lstat`s every file to prove its index entry current
//! (100 k files: most of the call). The watcher already sees every change, but late: the
//! kernel queues events, `notify` forwards them, the worker debounces them. A query must
//! not answer before the changes made before it were applied, so it asks for a *sync*
//! (watchman's cookie): it creates a file in a private directory watched by the same
//! inotify instance as the root. One instance has one event queue, so once the worker
//! meets that file's creation, every change made before it has been read too; the worker
//! applies them at once (no debounce) and acknowledges. The walk then lists the index
//! without touching the disk ([`Synced`]).
//!
//! The trust holds only where inotify sees every change, so a sync is refused (and the
//! caller stats as before) unless all of this is true:
//! - the watcher started, applied its start reconcile, and re-`lstat`ed every indexed
//!   file once with its watches in place ([`SyncState::set_trusted`]), catching in-place
//!   edits made between the first walk and the watches;
//! - it is not degraded (watch limit, no backend) and no indexed directory failed to be
//!   watched;
//! - every indexed entry lives on a local filesystem (inotify does not see changes made
//!   by another machine on NFS, SMB or FUSE mounts);
//! - the acknowledgement comes within the caller's timeout.
//!
//! A file with more than one hard link can change through a path outside the watched
//! directories; the directories holding one are listed with an `lstat` per file as before
//! ([`WatchSync::lists_fresh`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The directory under a daemon's state directory that holds its roots' cookie
/// directories. The state directory is private to the user and has one daemon at a
/// time (the cache's lock), so a daemon can clear what one killed before it left here.
pub fn cookie_parent(state_dir: &Path) -> PathBuf {
    state_dir.join("sync")
}

/// Removes the cookie directories a daemon killed without cleaning up left in
/// `state_dir` (an ended watcher removes its own). Call before any root is watched.
pub fn clear_cookie_parent(state_dir: &Path) {
    let parent = cookie_parent(state_dir);
    match std::fs::remove_dir_all(&parent) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(error = %e.kind(), "cannot clear old sync cookies"),
    }
}

/// Proof that a watcher had applied every change made before a walk started: the walk
/// may list the index without `lstat`ing files (see the module doc). Only this module
/// makes one.
#[derive(Debug)]
pub struct Synced(());

/// The sync side of one watcher, shared by its worker and the root's handle.
#[derive(Debug, Default)]
pub struct SyncState {
    cookies: Mutex<Cookies>,
    acked_cv: Condvar,
    /// The private directory cookies are made in, once it is watched.
    dir: RwLock<Option<PathBuf>>,
    /// Every condition of the module doc that the worker establishes holds.
    trusted: AtomicBool,
    /// An indexed directory could not be watched (not the limit: that degrades).
    unwatched: AtomicBool,
    /// Directories holding a file with more than one hard link.
    multi_link_dirs: RwLock<HashSet<String>>,
}

#[derive(Debug, Default)]
struct Cookies {
    next: u64,
    acked: u64,
}

impl SyncState {
    /// The worker watches `dir` for cookies.
    pub(super) fn set_dir(&self, dir: PathBuf) {
        *self.dir.write().unwrap_or_else(|e| e.into_inner()) = Some(dir);
    }

    /// The cookie number of `path`, if it is a cookie of this watcher.
    pub(super) fn cookie_of(&self, path: &Path) -> Option<u64> {
        let dir = self.dir.read().unwrap_or_else(|e| e.into_inner());
        let name = path.strip_prefix(dir.as_ref()?).ok()?.to_str()?;
        name.parse().ok()
    }

    /// Whether `path` lies in the cookie directory (its events are not the root's).
    pub(super) fn is_cookie_path(&self, path: &Path) -> bool {
        let dir = self.dir.read().unwrap_or_else(|e| e.into_inner());
        dir.as_ref().is_some_and(|dir| path.starts_with(dir))
    }

    /// Every change queued before cookie `n` has been applied.
    pub(super) fn ack(&self, n: u64) {
        let mut cookies = self.cookies.lock().unwrap_or_else(|e| e.into_inner());
        cookies.acked = cookies.acked.max(n);
        self.acked_cv.notify_all();
    }

    pub(super) fn set_trusted(&self, trusted: bool) {
        self.trusted.store(trusted, Ordering::SeqCst);
    }

    pub(super) fn set_unwatched(&self) {
        self.unwatched.store(true, Ordering::SeqCst);
    }

    /// Replaces the set of directories holding multiply-linked files (a full re-stat).
    pub(super) fn set_multi_link_dirs(&self, dirs: HashSet<String>) {
        *self
            .multi_link_dirs
            .write()
            .unwrap_or_else(|e| e.into_inner()) = dirs;
    }

    /// `dir` holds a file with more than one link.
    pub(super) fn add_multi_link_dir(&self, dir: &str) {
        let known = self
            .multi_link_dirs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(dir);
        if !known {
            self.multi_link_dirs
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(dir.to_owned());
        }
    }

    fn usable(&self, degraded: &AtomicBool, stopped: &AtomicBool) -> bool {
        self.trusted.load(Ordering::SeqCst)
            && !self.unwatched.load(Ordering::SeqCst)
            && !degraded.load(Ordering::SeqCst)
            && !stopped.load(Ordering::SeqCst)
    }
}

/// A root's handle on its watcher's syncs; outlives the watcher harmlessly (a stopped
/// watcher refuses every sync).
#[derive(Clone)]
pub struct WatchSync(pub(super) Arc<super::Shared>);

impl std::fmt::Debug for WatchSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchSync").finish_non_exhaustive()
    }
}

impl WatchSync {
    /// Whether a sync would be tried now.
    pub fn usable(&self) -> bool {
        self.0.sync.usable(&self.0.degraded, &self.0.stop)
    }

    /// Waits until every change made before this call is in the index, at most
    /// `timeout`; `None` when the watcher cannot vouch for that (see the module doc).
    pub fn sync(&self, timeout: Duration) -> Option<Synced> {
        let shared = &self.0;
        let state = &shared.sync;
        if !self.usable() {
            return None;
        }
        let dir = state
            .dir
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        let n = {
            let mut cookies = state.cookies.lock().unwrap_or_else(|e| e.into_inner());
            cookies.next += 1;
            cookies.next
        };
        let cookie = dir.join(n.to_string());
        std::fs::File::create(&cookie).ok()?;
        let deadline = Instant::now() + timeout;
        let acked = {
            let mut cookies = state.cookies.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if cookies.acked >= n {
                    break true;
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break false;
                }
                cookies = state
                    .acked_cv
                    .wait_timeout(cookies, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        };
        let _ = std::fs::remove_file(&cookie);
        (acked && self.usable()).then_some(Synced(()))
    }

    /// Whether the index's stats of `dir`'s files may stand for the disk's after a sync:
    /// false when one of them has another hard link (changes through it raise no event
    /// here).
    pub fn lists_fresh(&self, dir: &str) -> bool {
        !self
            .0
            .sync
            .multi_link_dirs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(dir)
    }
}

/// `statfs` magic numbers of filesystems whose every change passes through this kernel
/// (so inotify reports it): the common local ones. Anything else (NFS, SMB, FUSE, 9p, …)
/// can change behind the watcher's back.
const LOCAL_FILESYSTEMS: &[i64] = &[
    0xEF53,      // ext2/3/4
    0x5846_5342, // xfs
    0x9123_683E, // btrfs
    0x0102_1994, // tmpfs
    0x794C_7630, // overlayfs
    0xF2F5_2010, // f2fs
    0x2FC1_2FC1, // zfs
    0xCA45_1A4E, // bcachefs
    0x3153_464A, // jfs
    0x5265_4973, // reiserfs
];

/// Whether `path` lies on a filesystem in [`LOCAL_FILESYSTEMS`].
pub(super) fn on_local_filesystem(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs writes only the struct it is given; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c_path.as_ptr(), &mut st) } != 0 {
        return false;
    }
    #[allow(clippy::unnecessary_cast)]
    LOCAL_FILESYSTEMS.contains(&(st.f_type as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temp_dir_and_proc_are_told_apart() {
        // /proc is never a local disk filesystem; the test's own temp dir is one of the
        // listed kinds on every machine this suite runs on (ext4, xfs, btrfs or tmpfs).
        assert!(!on_local_filesystem(Path::new("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert!(on_local_filesystem(dir.path()));
        assert!(!on_local_filesystem(&dir.path().join("missing")));
    }
}
