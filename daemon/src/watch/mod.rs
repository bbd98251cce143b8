//! The filesystem watcher that keeps one [`ServedRoot`] fresh: new files, deletions and
//! renames become visible to list/tree/search without a refresh call, changed files are
//! re-redacted in the background, and policy file edits are reported.
//!
//! Reads never depend on it: a content answer stats the file first (see
//! [`crate::root`]). The watcher is what moves the index (and the cache) ahead of calls.
//!
//! How it watches (inotify, through our own reader in `backend`: `notify`'s asks for
//! every file open; `notify`'s event types):
//! - only the directories the index keeps ([`crate::index::Index::dirs`]), each
//!   NON-recursively, so `node_modules`, `target`, `.git`, ignored and excluded trees cost
//!   no watch; watches follow directories as they appear and disappear;
//! - a new directory is watched first (with every admitted subdirectory, top-down), then
//!   re-walked, because files written right after `mkdir` raise no event of their own;
//! - bursts are coalesced (~50 ms of quiet, at most ~500 ms of delay) and every touched
//!   path is settled against the disk, so the order of events inside a burst never
//!   matters; a very large burst or an event-queue overflow re-walks the whole root;
//! - the parent directories of the policy files (config, term files) are watched too,
//!   and any change to those files calls the `on_policy_change` callback;
//! - when the kernel's watch limit is reached the watcher keeps what it has, warns once
//!   with the command that raises the limit, and re-walks the whole root every 30 s.
//!
//! One background thread owns the `notify` watcher and does all the index work (so a
//! re-walk never races an event); a second, low-priority thread re-redacts changed
//! files. Nothing here panics the daemon: a failure degrades to periodic re-walks.

mod backend;
mod reindex;
mod sync;
mod worker;

pub use sync::{Synced, WatchSync, clear_cookie_parent, cookie_parent};

use reindex::reindex_loop;
use worker::Worker;

use crate::fs::StatKey;
use crate::root::ServedRoot;
use crate::view::{EntryKind, RootView};
use backend::Backend;
use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{Event, EventKind};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

/// Where the kernel's per-user inotify watch limit is read from.
const WATCH_LIMIT_FILE: &str = "/proc/sys/fs/inotify/max_user_watches";

/// A burst touching more distinct paths than this re-walks the whole root instead (one
/// `lstat` walk is cheaper than settling each path and re-reading each directory).
const BURST_RESCAN_PATHS: usize = 20_000;

/// Events gathered into one batch at most (the rest wait for the next batch).
const MAX_BATCH_EVENTS: usize = 100_000;

/// Why a directory is watched (a directory can be watched for both reasons).
const FOR_INDEX: u8 = 1;
const FOR_POLICY: u8 = 2;

/// Tuning of a [`Watcher`]; the defaults are what the daemon uses.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// Quiet time that ends a burst of events (coalescing a `git checkout`).
    pub debounce: Duration,
    /// A burst is processed after this long even if events keep coming.
    pub max_batch_delay: Duration,
    /// Period of the whole-root re-walk once the watcher is degraded.
    pub poll_interval: Duration,
    /// Re-redact created and modified files in the background (worth it with a
    /// persistent cache: the next read is then a cache hit).
    pub reindex: bool,
    /// Right after the watches are in place, re-walk the directories that changed since
    /// the root's first walk (catching what changed before the watches).
    pub reconcile_on_start: bool,
    /// Most watches this root may use (leaving room for editors and other tools); going
    /// over it degrades exactly as the kernel limit does. `None`: only the kernel limit.
    pub watch_budget: Option<u64>,
    /// Set by [`Watcher::spawn`]: wait for the root's warm-restart check before adding
    /// watches, and treat an unwatchable root as degraded rather than as an error.
    pub background_start: bool,
    /// Where the directory of sync cookies is made ([`sync`]): the daemon's
    /// [`cookie_parent`], which it clears on start; `None`: the system's temporary
    /// directory (a daemon without a cache).
    pub cookie_parent: Option<PathBuf>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            debounce: Duration::from_millis(50),
            max_batch_delay: Duration::from_millis(500),
            poll_interval: Duration::from_secs(30),
            reindex: true,
            reconcile_on_start: true,
            watch_budget: None,
            background_start: false,
            cookie_parent: None,
        }
    }
}

/// What the watcher is doing, for `status` and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchStats {
    /// Directories watched now (index and policy directories).
    pub watches_used: u64,
    /// The kernel's per-user limit (`fs.inotify.max_user_watches`), when readable.
    pub watch_limit: Option<u64>,
    /// Whole-root re-walks (start reconcile, overflow, huge bursts, degraded polling).
    pub rescans: u64,
    /// Subtree re-walks (new directories).
    pub dir_rescans: u64,
    /// Event-queue overflows reported by the kernel.
    pub overflows: u64,
    /// Filesystem events received (noise such as opens and reads excluded).
    pub events: u64,
    /// Files re-redacted in the background after a change.
    pub reindexed: u64,
    /// Batches of events applied.
    pub batches: u64,
    /// Some directories could not be watched (watch limit, or no inotify at all):
    /// changes there show up at the next periodic re-walk.
    pub degraded: bool,
    /// The initial watches are in place (or given up on) and the start reconcile ran:
    /// from here on, changes are followed by events.
    pub started: bool,
    /// Whole-root walks may take the index's stats as the disk's after a sync
    /// ([`WatchSync`]): every condition of `watch::sync` holds now.
    pub synced_walks: bool,
}

/// Why a watcher could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The background thread could not be started.
    #[error("could not start the file watcher thread")]
    Spawn,
    /// The root directory itself cannot be watched (it vanished or is unreadable).
    #[error("the root directory cannot be watched")]
    Root,
}

/// Keeps a served root fresh while it lives; dropping it stops watching.
pub struct Watcher {
    tx: Sender<Msg>,
    shared: Arc<Shared>,
    worker: Option<JoinHandle<()>>,
    reindexer: Option<JoinHandle<()>>,
    thread_ids: Vec<ThreadId>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

enum Msg {
    Event(Event),
    /// The backend reported an error (other than a watch limit).
    Error,
    Stop,
}

/// State shared by the handle, the event thread and the re-index thread.
#[derive(Default)]
struct Shared {
    watches: Mutex<HashMap<PathBuf, u8>>,
    watches_used: AtomicU64,
    rescans: AtomicU64,
    dir_rescans: AtomicU64,
    overflows: AtomicU64,
    events: AtomicU64,
    reindexed: AtomicU64,
    batches: AtomicU64,
    degraded: AtomicBool,
    warned: AtomicBool,
    started: AtomicBool,
    queue: Mutex<ReindexQueue>,
    queue_cv: Condvar,
    stop: AtomicBool,
    sync: sync::SyncState,
}

#[derive(Default)]
struct ReindexQueue {
    order: VecDeque<String>,
    queued: HashSet<String>,
}

impl Shared {
    fn watches(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, u8>> {
        self.watches.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn queue_reindex(&self, rel: &str) {
        let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        if q.queued.insert(rel.to_owned()) {
            q.order.push_back(rel.to_owned());
            self.queue_cv.notify_one();
        }
    }
}

impl Watcher {
    /// Starts watching `root` with the default [`WatchOptions`]. `policy_paths` are the
    /// files the root's policy was built from (config, term files; absolute or
    /// root-relative); `on_policy_change` is called (on the watcher thread, so keep it
    /// cheap: flag a reload, send a message) whenever one of them may have changed, and
    /// must itself check what changed. Returns once every indexed directory is watched
    /// (or the watcher is degraded).
    pub fn start(
        root: Arc<ServedRoot>,
        policy_paths: Vec<PathBuf>,
        on_policy_change: impl Fn() + Send + Sync + 'static,
    ) -> Result<Watcher, WatchError> {
        Watcher::start_with(
            root,
            policy_paths,
            WatchOptions::default(),
            on_policy_change,
        )
    }

    /// [`Watcher::start`] with explicit tuning.
    pub fn start_with(
        root: Arc<ServedRoot>,
        policy_paths: Vec<PathBuf>,
        opts: WatchOptions,
        on_policy_change: impl Fn() + Send + Sync + 'static,
    ) -> Result<Watcher, WatchError> {
        let (watcher, ready) = Watcher::launch(root, policy_paths, opts, on_policy_change)?;
        match ready.recv() {
            Ok(Ok(())) => Ok(watcher),
            Ok(Err(err)) => Err(err),
            Err(_) => Err(WatchError::Spawn),
        }
    }

    /// Starts watching without waiting for the watches: returns at once, and the
    /// background thread first lets the root's warm-restart check finish
    /// ([`ServedRoot::wait_warm_check`]), then watches every indexed directory and
    /// reconciles what changed since the walk ([`WatchStats::started`] says when). A
    /// daemon answers meanwhile: content answers check the file on disk, listings re-read
    /// a directory whose stat moved, and the reconcile indexes what was created before
    /// its directory was watched. A root that cannot be watched degrades to periodic
    /// re-walks (logged) instead of failing.
    pub fn spawn(
        root: Arc<ServedRoot>,
        policy_paths: Vec<PathBuf>,
        opts: WatchOptions,
        on_policy_change: impl Fn() + Send + Sync + 'static,
    ) -> Result<Watcher, WatchError> {
        let opts = WatchOptions {
            background_start: true,
            ..opts
        };
        Watcher::launch(root, policy_paths, opts, on_policy_change).map(|(w, _)| w)
    }

    /// Starts the threads; the receiver says when the initial watches are in place.
    #[allow(clippy::type_complexity)]
    fn launch(
        root: Arc<ServedRoot>,
        policy_paths: Vec<PathBuf>,
        opts: WatchOptions,
        on_policy_change: impl Fn() + Send + Sync + 'static,
    ) -> Result<(Watcher, Receiver<Result<(), WatchError>>), WatchError> {
        let shared = Arc::new(Shared::default());
        root.set_watch_sync(WatchSync(shared.clone()));
        let (tx, rx) = mpsc::channel::<Msg>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), WatchError>>();

        let reindexer = if opts.reindex {
            let root = root.clone();
            let shared = shared.clone();
            Some(
                std::thread::Builder::new()
                    .name("redctx-reindex".into())
                    .spawn(move || reindex_loop(&root, &shared))
                    .map_err(|_| WatchError::Spawn)?,
            )
        } else {
            None
        };

        let worker = {
            let shared = shared.clone();
            let tx = tx.clone();
            std::thread::Builder::new()
                .name("redctx-watch".into())
                .spawn(move || {
                    let mut worker =
                        Worker::new(root, policy_paths, opts, shared, on_policy_change);
                    worker.run(tx, rx, ready_tx);
                })
        };
        let mut watcher = Watcher {
            tx,
            shared,
            worker: None,
            reindexer,
            thread_ids: Vec::new(),
        };
        if let Some(r) = &watcher.reindexer {
            watcher.thread_ids.push(r.thread().id());
        }
        let worker = worker.map_err(|_| WatchError::Spawn)?;
        watcher.thread_ids.push(worker.thread().id());
        watcher.worker = Some(worker);
        Ok((watcher, ready_rx))
    }

    /// Counters and state now.
    pub fn stats(&self) -> WatchStats {
        let s = &self.shared;
        WatchStats {
            watches_used: s.watches_used.load(Ordering::Relaxed),
            watch_limit: read_watch_limit(),
            rescans: s.rescans.load(Ordering::Relaxed),
            dir_rescans: s.dir_rescans.load(Ordering::Relaxed),
            overflows: s.overflows.load(Ordering::Relaxed),
            events: s.events.load(Ordering::Relaxed),
            reindexed: s.reindexed.load(Ordering::Relaxed),
            batches: s.batches.load(Ordering::Relaxed),
            degraded: s.degraded.load(Ordering::Relaxed),
            started: s.started.load(Ordering::SeqCst),
            synced_walks: WatchSync(s.clone()).usable(),
        }
    }

    /// The directories watched now (absolute, sorted): for diagnostics and tests.
    pub fn watched_dirs(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.shared.watches().keys().cloned().collect();
        out.sort();
        out
    }

    /// Feeds an event as if the OS had reported it (tests and diagnostics: an event with
    /// [`notify::event::Flag::Rescan`] simulates a queue overflow).
    pub fn inject(&self, event: Event) {
        let _ = self.tx.send(Msg::Event(event));
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            let _q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.queue_cv.notify_all();
        }
        // Dropped from its own callback (a policy reload replacing the root): the threads
        // finish on their own; joining would wait on ourselves.
        if self.thread_ids.contains(&std::thread::current().id()) {
            return;
        }
        for handle in [self.worker.take(), self.reindexer.take()]
            .into_iter()
            .flatten()
        {
            let _ = handle.join();
        }
    }
}

/// The kernel's per-user inotify watch limit.
pub fn read_watch_limit() -> Option<u64> {
    std::fs::read_to_string(WATCH_LIMIT_FILE)
        .ok()?
        .trim()
        .parse()
        .ok()
}
