//! The filesystem watcher that keeps one [`ServedRoot`] fresh: new files, deletions and
//! renames become visible to list/tree/search without a refresh call, changed files are
//! re-redacted in the background, and policy file edits are reported.
//!
//! Reads never depend on it: a content answer stats the file first (see
//! [`crate::root`]). The watcher is what moves the index (and the cache) ahead of calls.
//!
//! How it watches (inotify through `notify` 8.2):
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

use crate::fs::StatKey;
use crate::root::ServedRoot;
use crate::view::{EntryKind, RootView};
use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecursiveMode, Watcher as _};
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

/// Events worth acting on: opens, reads and read-only closes (including the daemon's own
/// reads of the files it serves) are noise.
fn is_noise(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    }
}

/// Whether an event may bring a new directory at `paths[i]`, which must then be watched
/// and walked even if a directory of that name was watched before.
fn brings_new(kind: &EventKind, index: usize) -> bool {
    match kind {
        EventKind::Create(_) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Any)) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => index == 1,
        _ => false,
    }
}

fn parent_rel(rel: &str) -> &str {
    match rel.rfind('/') {
        Some(i) => &rel[..i],
        None => ".",
    }
}

fn join_rel(base: &str, name: &str) -> String {
    if base == "." {
        name.to_owned()
    } else {
        format!("{base}/{name}")
    }
}

fn lower_thread_priority() {
    // Re-redaction yields the CPU to tool calls (a Linux thread is a task: PRIO_PROCESS
    // with its tid renices just this thread).
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread; failure only leaves the priority.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// Re-redacts queued files into the root's cache until stopped.
fn reindex_loop(root: &ServedRoot, shared: &Shared) {
    lower_thread_priority();
    // This thread redacts every changed file: build its share of the matchers' lazy
    // state now, not on the first edit. A panic here must not take the thread down.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| root.engine_handle().warm_up()));
    loop {
        let rel = {
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(rel) = q.order.pop_front() {
                    q.queued.remove(&rel);
                    break rel;
                }
                q = shared.queue_cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        let done = std::panic::catch_unwind(AssertUnwindSafe(|| reindex_one(root, &rel)));
        if done.unwrap_or(false) {
            shared.reindexed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Redacts one changed file into the cache (both variants); false when it is not a text
/// file within limits or could not be read.
fn reindex_one(root: &ServedRoot, rel: &str) -> bool {
    let Some(entry) = root.index().entry(rel) else {
        return false;
    };
    if entry.kind != EntryKind::File || entry.size > root.limits().max_raw_bytes_per_file {
        return false;
    }
    if !root.is_text(&entry) {
        return false;
    }
    root.content(&entry, true).is_ok()
}

/// Outcome of adding one watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Added {
    Yes,
    /// The watch limit (kernel or budget) is reached.
    Limit,
    /// The directory vanished or cannot be watched.
    Failed,
}

#[derive(Clone, Copy, Debug, Default)]
struct Touch {
    /// The event may bring a new directory here.
    new: bool,
}

/// The event thread: owns the backend and applies batches to the root.
struct Worker {
    root: Arc<ServedRoot>,
    root_path: PathBuf,
    opts: WatchOptions,
    shared: Arc<Shared>,
    backend: Option<notify::RecommendedWatcher>,
    on_policy_change: Box<dyn Fn() + Send + Sync>,
    /// Policy files as given.
    policy_inputs: Vec<PathBuf>,
    /// Policy files as event paths will name them (canonical directories).
    policy_files: HashSet<PathBuf>,
    /// Directories whose creation, removal or rename may move a policy file.
    policy_ancestors: HashSet<PathBuf>,
}

impl Worker {
    fn new(
        root: Arc<ServedRoot>,
        policy_inputs: Vec<PathBuf>,
        opts: WatchOptions,
        shared: Arc<Shared>,
        on_policy_change: impl Fn() + Send + Sync + 'static,
    ) -> Worker {
        Worker {
            root_path: root.root().to_path_buf(),
            root,
            opts,
            shared,
            backend: None,
            on_policy_change: Box::new(on_policy_change),
            policy_inputs,
            policy_files: HashSet::new(),
            policy_ancestors: HashSet::new(),
        }
    }

    fn run(&mut self, tx: Sender<Msg>, rx: Receiver<Msg>, ready: Sender<Result<(), WatchError>>) {
        let started = Instant::now();
        if self.opts.background_start {
            while !self.root.wait_warm_check(Duration::from_millis(100)) {
                if self.shared.stop.load(Ordering::SeqCst) {
                    return;
                }
            }
        }
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.setup(tx))) {
            Ok(Ok(())) => {}
            Ok(Err(err)) if self.opts.background_start => {
                tracing::warn!(
                    "{err}; new, deleted and renamed files show up through a rescan every {} s",
                    self.opts.poll_interval.as_secs()
                );
                self.backend = None;
                self.shared.watches().clear();
                self.shared.watches_used.store(0, Ordering::Relaxed);
                self.set_degraded();
            }
            Ok(Err(err)) => {
                let _ = ready.send(Err(err));
                return;
            }
            Err(_) => {
                tracing::error!(
                    "file watcher failed while starting; falling back to periodic rescans"
                );
                self.abandon_backend();
            }
        }
        let _ = ready.send(Ok(()));
        if self.shared.stop.load(Ordering::SeqCst) {
            return;
        }
        if self.opts.reconcile_on_start {
            self.guarded(|w| w.reconcile());
        }
        self.shared.started.store(true, Ordering::SeqCst);
        tracing::info!(
            root = %self.root_path.display(),
            watches = self.shared.watches_used.load(Ordering::Relaxed),
            ms = started.elapsed().as_millis() as u64,
            "file watches in place"
        );
        self.event_loop(&rx);
        // Dropping the backend stops its thread and removes every watch.
        self.backend = None;
    }

    /// Creates the backend and watches every indexed directory and the policy
    /// directories.
    fn setup(&mut self, tx: Sender<Msg>) -> Result<(), WatchError> {
        let handler = move |res: notify::Result<Event>| match res {
            Ok(event) => {
                if !is_noise(&event) {
                    let _ = tx.send(Msg::Event(event));
                }
            }
            Err(err) => {
                // Watch-limit errors come from adds, which this module makes itself.
                if !matches!(err.kind, notify::ErrorKind::MaxFilesWatch) {
                    let _ = tx.send(Msg::Error);
                }
            }
        };
        match notify::recommended_watcher(handler) {
            Ok(backend) => self.backend = Some(backend),
            Err(_) => {
                tracing::warn!(
                    "could not create a file watcher (inotify instances exhausted? see \
                     fs.inotify.max_user_instances); new, deleted and renamed files show up \
                     through a rescan every {} s instead",
                    self.opts.poll_interval.as_secs()
                );
                self.set_degraded();
                return Ok(());
            }
        }
        let dirs = self.root.index().dirs();
        for rel in &dirs {
            if self.shared.stop.load(Ordering::Relaxed) {
                // Dropped while starting (a policy reload, a shutdown): stop adding.
                return Ok(());
            }
            match self.add_watch(&self.abs(rel), FOR_INDEX, false) {
                Added::Yes => {}
                Added::Limit => break,
                Added::Failed if rel == "." => return Err(WatchError::Root),
                Added::Failed => {}
            }
        }
        self.refresh_policy_watches();
        Ok(())
    }

    fn event_loop(&mut self, rx: &Receiver<Msg>) {
        let mut next_tick: Option<Instant> = None;
        loop {
            if self.degraded() {
                next_tick.get_or_insert_with(|| Instant::now() + self.opts.poll_interval);
            } else {
                next_tick = None;
            }
            let first = match next_tick {
                Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                    Ok(msg) => msg,
                    Err(RecvTimeoutError::Timeout) => {
                        next_tick = Some(Instant::now() + self.opts.poll_interval);
                        self.guarded(|w| w.tick());
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => return,
                },
                None => match rx.recv() {
                    Ok(msg) => msg,
                    Err(_) => return,
                },
            };
            let mut batch = Vec::new();
            let mut errors = false;
            match first {
                Msg::Stop => return,
                Msg::Event(ev) => batch.push(ev),
                Msg::Error => errors = true,
            }
            let opened = Instant::now();
            while batch.len() < MAX_BATCH_EVENTS {
                let left = self.opts.max_batch_delay.saturating_sub(opened.elapsed());
                let wait = self.opts.debounce.min(left);
                if wait.is_zero() {
                    break;
                }
                match rx.recv_timeout(wait) {
                    Ok(Msg::Event(ev)) => batch.push(ev),
                    Ok(Msg::Error) => errors = true,
                    Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
            self.guarded(|w| w.apply(batch, errors));
        }
    }

    /// Runs one step; a panic is logged, the backend is given up if it was the cause,
    /// and the root is re-walked so nothing is left half-applied.
    fn guarded(&mut self, step: impl FnOnce(&mut Worker)) {
        if std::panic::catch_unwind(AssertUnwindSafe(|| step(self))).is_err() {
            tracing::error!("file watcher step failed; re-walking the root");
            self.abandon_backend();
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| self.full_rescan()));
        }
    }

    /// Gives up the backend after a panic (its loop may be dead: dropping it could panic
    /// again) and serves by periodic rescans.
    fn abandon_backend(&mut self) {
        if let Some(backend) = self.backend.take() {
            std::mem::forget(backend);
        }
        self.shared.watches().clear();
        self.shared.watches_used.store(0, Ordering::Relaxed);
        self.set_degraded();
    }

    fn degraded(&self) -> bool {
        self.shared.degraded.load(Ordering::Relaxed)
    }

    fn set_degraded(&self) {
        self.shared.degraded.store(true, Ordering::Relaxed);
    }

    fn abs(&self, rel: &str) -> PathBuf {
        crate::fs::abs_path(&self.root_path, rel)
    }

    fn rel_of(&self, path: &Path) -> Option<String> {
        let rest = path.strip_prefix(&self.root_path).ok()?.to_str()?;
        Some(if rest.is_empty() {
            ".".to_owned()
        } else {
            rest.to_owned()
        })
    }

    /// Watches `dir` for `reason`. With `force` the backend is asked even if the table
    /// lists the directory (a directory renamed away and back loses its watch inside
    /// the backend).
    fn add_watch(&mut self, dir: &Path, reason: u8, force: bool) -> Added {
        {
            let mut table = self.shared.watches();
            if let Some(bits) = table.get_mut(dir) {
                *bits |= reason;
                if !force {
                    return Added::Yes;
                }
            } else if let Some(budget) = self.opts.watch_budget
                && table.len() as u64 >= budget
            {
                drop(table);
                self.hit_limit();
                return Added::Limit;
            }
        }
        let Some(backend) = self.backend.as_mut() else {
            return Added::Limit;
        };
        match backend.watch(dir, RecursiveMode::NonRecursive) {
            Ok(()) => {
                let mut table = self.shared.watches();
                *table.entry(dir.to_path_buf()).or_insert(0) |= reason;
                self.shared
                    .watches_used
                    .store(table.len() as u64, Ordering::Relaxed);
                Added::Yes
            }
            Err(err) => {
                let mut table = self.shared.watches();
                table.remove(dir);
                self.shared
                    .watches_used
                    .store(table.len() as u64, Ordering::Relaxed);
                drop(table);
                match err.kind {
                    notify::ErrorKind::MaxFilesWatch => {
                        self.hit_limit();
                        Added::Limit
                    }
                    _ => Added::Failed,
                }
            }
        }
    }

    /// Drops `reason` from `dir`'s watch, unwatching it when no reason is left.
    fn drop_watch(&mut self, dir: &Path, reason: u8) {
        let unwatch = {
            let mut table = self.shared.watches();
            let Some(bits) = table.get_mut(dir) else {
                return;
            };
            *bits &= !reason;
            let unwatch = *bits == 0;
            if unwatch {
                table.remove(dir);
            }
            self.shared
                .watches_used
                .store(table.len() as u64, Ordering::Relaxed);
            unwatch
        };
        if unwatch && let Some(backend) = self.backend.as_mut() {
            // Already gone when the directory was deleted or moved: nothing to undo.
            let _ = backend.unwatch(dir);
        }
    }

    /// Drops the index watches of `rel` and everything below it.
    fn drop_index_watches_below(&mut self, rel: &str) {
        let top = self.abs(rel);
        let below: Vec<PathBuf> = self
            .shared
            .watches()
            .iter()
            .filter(|(p, bits)| *bits & FOR_INDEX != 0 && p.starts_with(&top))
            .map(|(p, _)| p.clone())
            .collect();
        for dir in below {
            self.drop_watch(&dir, FOR_INDEX);
        }
    }

    fn is_index_watched(&self, rel: &str) -> bool {
        self.shared
            .watches()
            .get(&self.abs(rel))
            .is_some_and(|bits| bits & FOR_INDEX != 0)
    }

    fn is_policy_watched(&self, dir: &Path) -> bool {
        self.shared
            .watches()
            .get(dir)
            .is_some_and(|bits| bits & FOR_POLICY != 0)
    }

    fn hit_limit(&self) {
        self.set_degraded();
        if self.shared.warned.swap(true, Ordering::Relaxed) {
            return;
        }
        let used = self.shared.watches_used.load(Ordering::Relaxed);
        let poll = self.opts.poll_interval.as_secs();
        match (self.opts.watch_budget, read_watch_limit()) {
            (Some(budget), _) if used >= budget => tracing::warn!(
                "file watch budget of this root reached ({used} of {budget} watches): \
                 changes in unwatched directories show up through a rescan every {poll} s"
            ),
            (_, Some(limit)) => tracing::warn!(
                "inotify watch limit reached (fs.inotify.max_user_watches = {limit}, \
                 {used} watches used by this root): changes in unwatched directories show \
                 up through a rescan every {poll} s. Raise the limit with `sudo sysctl \
                 fs.inotify.max_user_watches={}` (persist it in /etc/sysctl.d/) and \
                 restart the daemon",
                limit.saturating_mul(4).max(524_288)
            ),
            (_, None) => tracing::warn!(
                "inotify watch limit reached ({used} watches used by this root): changes \
                 in unwatched directories show up through a rescan every {poll} s. Raise \
                 it with `sudo sysctl fs.inotify.max_user_watches=524288`"
            ),
        }
    }

    /// Watches a directory that just appeared (top-down, each directory before its
    /// listing is read, so nothing created meanwhile slips between listing and watch),
    /// then re-walks it into the index.
    fn new_dir(&mut self, rel: &str) {
        if !self.root.index().admitted(rel, true) {
            self.root.remove(rel);
            self.drop_index_watches_below(rel);
            return;
        }
        let mut stack = vec![rel.to_owned()];
        let mut files = Vec::new();
        while let Some(dir) = stack.pop() {
            match self.add_watch(&self.abs(&dir), FOR_INDEX, true) {
                Added::Yes => {}
                Added::Limit => break,
                Added::Failed => continue,
            }
            let Ok(read) = std::fs::read_dir(self.abs(&dir)) else {
                continue;
            };
            for dent in read.flatten() {
                let Ok(ft) = dent.file_type() else { continue };
                if !ft.is_dir() && !ft.is_file() {
                    continue;
                }
                let Ok(name) = dent.file_name().into_string() else {
                    continue;
                };
                let child = join_rel(&dir, &name);
                if ft.is_file() {
                    files.push(child);
                } else if self.root.index().admitted(&child, true) {
                    stack.push(child);
                }
            }
        }
        self.shared.dir_rescans.fetch_add(1, Ordering::Relaxed);
        self.root.rescan_dir(rel);
        if self.opts.reindex {
            // Files the walk found (the re-index thread skips those the index refused).
            for file in files {
                self.shared.queue_reindex(&file);
            }
        }
    }

    /// A path was deleted or moved away.
    fn gone(&mut self, rel: &str) {
        if rel == "." {
            tracing::warn!("the served root directory disappeared");
            return;
        }
        self.root.remove(rel);
        // Only a watched directory can have watched directories below it (watches are
        // added top-down and dropped subtree-wide), so a deleted file costs no scan.
        if self.is_index_watched(rel) {
            self.drop_index_watches_below(rel);
        }
    }

    /// Applies one batch of events.
    fn apply(&mut self, batch: Vec<Event>, errors: bool) {
        self.shared.batches.fetch_add(1, Ordering::Relaxed);
        self.shared
            .events
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        let mut overflow = errors;
        let mut policy_hit = false;
        let mut policy_moved = false;
        let mut touched: BTreeMap<String, Touch> = BTreeMap::new();
        for event in &batch {
            if event.need_rescan() {
                self.shared.overflows.fetch_add(1, Ordering::Relaxed);
                overflow = true;
                continue;
            }
            for (i, path) in event.paths.iter().enumerate() {
                if self.policy_files.contains(path) {
                    policy_hit = true;
                }
                if self.policy_ancestors.contains(path) {
                    policy_moved = true;
                }
                if let Some(rel) = self.rel_of(path) {
                    touched.entry(rel).or_default().new |= brings_new(&event.kind, i);
                }
            }
        }
        if overflow {
            self.full_rescan();
            self.refresh_policy_watches();
            (self.on_policy_change)();
            return;
        }
        if touched.len() > BURST_RESCAN_PATHS {
            self.full_rescan();
        } else {
            self.settle(touched);
        }
        if policy_moved {
            self.refresh_policy_watches();
        }
        if policy_hit || policy_moved {
            (self.on_policy_change)();
        }
    }

    /// Brings each touched path in line with the disk (event order inside a burst does
    /// not matter: only the final state does).
    fn settle(&mut self, touched: BTreeMap<String, Touch>) {
        let mut walked: HashSet<String> = HashSet::new();
        let mut gitignore_changed = false;
        for (rel, touch) in touched {
            if covered_by(&walked, &rel) {
                continue;
            }
            if rel.rsplit('/').next() == Some(".gitignore") {
                gitignore_changed = true;
            }
            match std::fs::symlink_metadata(self.abs(&rel)) {
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => self.gone(&rel),
                Err(_) => self.root.upsert(&rel),
                Ok(meta) if meta.is_dir() => {
                    if touch.new || !self.is_index_watched(&rel) {
                        self.new_dir(&rel);
                        walked.insert(rel);
                    } else {
                        self.root.upsert(&rel);
                    }
                }
                Ok(meta) => {
                    self.root.upsert(&rel);
                    if self.opts.reindex && meta.is_file() && self.root.index().contains(&rel) {
                        self.shared.queue_reindex(&rel);
                    }
                }
            }
        }
        if gitignore_changed {
            // The index re-walked the directory: trees may have become admitted or not.
            self.sync_index_watches();
        }
    }

    /// Makes the index watches match the index's directories: stale watches are
    /// dropped, unwatched directories are watched and re-walked (they may hold files
    /// created before their watch).
    fn sync_index_watches(&mut self) {
        let dirs = self.root.index().dirs();
        let wanted: HashSet<PathBuf> = dirs.iter().map(|r| self.abs(r)).collect();
        let stale: Vec<PathBuf> = self
            .shared
            .watches()
            .iter()
            .filter(|(p, bits)| *bits & FOR_INDEX != 0 && !wanted.contains(*p))
            .map(|(p, _)| p.clone())
            .collect();
        for dir in stale {
            self.drop_watch(&dir, FOR_INDEX);
        }
        let mut fresh: HashSet<String> = HashSet::new();
        for rel in dirs {
            if self.is_index_watched(&rel) || covered_by(&fresh, &rel) {
                continue;
            }
            let before = self.shared.watches_used.load(Ordering::Relaxed);
            self.new_dir(&rel);
            if self.degraded() && self.shared.watches_used.load(Ordering::Relaxed) == before {
                // At the limit: further adds fail the same way; the next rescan retries.
                break;
            }
            fresh.insert(rel);
        }
    }

    /// Catches what changed between the root's walk and its watches: re-walks the
    /// directories whose `lstat` moved since the walk (or was too fresh to trust then),
    /// instead of the whole root, so a warm restart does not pay for a second walk. A
    /// file edited in place in that gap keeps its directory's stat; it is still answered
    /// fresh (every content answer checks the file first), only redacted on first use
    /// instead of in the background.
    fn reconcile(&mut self) {
        let stale = self.root.index().stale_dirs();
        if stale.first().is_some_and(|d| d == ".") {
            return self.full_rescan();
        }
        let mut walked: HashSet<String> = HashSet::new();
        for rel in stale {
            if covered_by(&walked, &rel) {
                continue;
            }
            self.shared.dir_rescans.fetch_add(1, Ordering::Relaxed);
            self.root.rescan_dir(&rel);
            walked.insert(rel);
        }
        if !walked.is_empty() && self.backend.is_some() {
            self.sync_index_watches();
        }
    }

    /// Re-walks the whole root (stat only), re-syncs the watches and queues the files
    /// whose stat changed for re-redaction.
    fn full_rescan(&mut self) {
        self.shared.rescans.fetch_add(1, Ordering::Relaxed);
        let before: Option<HashMap<String, StatKey>> = self
            .opts
            .reindex
            .then(|| self.root.index().files().into_iter().collect());
        self.root.rescan_dir(".");
        if self.backend.is_some() {
            self.sync_index_watches();
        }
        if let Some(before) = before {
            for (rel, stat) in self.root.index().files() {
                if before.get(&rel) != Some(&stat) {
                    self.shared.queue_reindex(&rel);
                }
            }
        }
    }

    /// Periodic work while degraded: re-walk everything, retry the missing watches and
    /// leave degraded mode once every directory is watched again.
    fn tick(&mut self) {
        let policy_unwatched = !self.policy_dirs().iter().all(|d| self.is_policy_watched(d));
        self.full_rescan();
        self.refresh_policy_watches();
        if policy_unwatched {
            (self.on_policy_change)();
        }
        if self.backend.is_none() {
            return;
        }
        let all_watched = self
            .root
            .index()
            .dirs()
            .iter()
            .all(|rel| self.is_index_watched(rel))
            && self.policy_dirs().iter().all(|d| self.is_policy_watched(d));
        if all_watched && self.degraded() {
            self.shared.degraded.store(false, Ordering::Relaxed);
            self.shared.warned.store(false, Ordering::Relaxed);
            tracing::info!("every directory is watched again; periodic rescans stopped");
        }
    }

    /// Where each policy file would appear in events, and the directory to watch for it
    /// (its parent, or the nearest existing ancestor while the parent is missing).
    fn policy_layout(&self) -> (HashSet<PathBuf>, HashSet<PathBuf>, BTreeSet<PathBuf>) {
        let mut files = HashSet::new();
        let mut ancestors = HashSet::new();
        let mut dirs = BTreeSet::new();
        for input in &self.policy_inputs {
            let abs = if input.is_absolute() {
                input.clone()
            } else {
                self.root_path.join(input)
            };
            let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
                continue;
            };
            let mut base = parent.to_path_buf();
            let mut missing = Vec::new();
            let existing = loop {
                match std::fs::canonicalize(&base) {
                    Ok(c) if c.is_dir() => break Some(c),
                    _ => {}
                }
                match (base.file_name(), base.parent()) {
                    (Some(n), Some(p)) => {
                        missing.push(n.to_os_string());
                        base = p.to_path_buf();
                    }
                    _ => break None,
                }
            };
            let Some(existing) = existing else { continue };
            let mut file = existing.clone();
            for part in missing.iter().rev() {
                file.push(part);
                ancestors.insert(file.clone());
            }
            ancestors.insert(existing.clone());
            file.push(name);
            // A policy file that is a symlink changes where its target lives.
            if let Ok(target) = std::fs::canonicalize(&file)
                && target != file
                && let Some(target_dir) = target.parent()
            {
                dirs.insert(target_dir.to_path_buf());
                files.insert(target);
            }
            files.insert(file);
            dirs.insert(existing);
        }
        (files, ancestors, dirs)
    }

    fn policy_dirs(&self) -> BTreeSet<PathBuf> {
        self.policy_layout().2
    }

    /// Re-resolves where the policy files live and watches their directories.
    fn refresh_policy_watches(&mut self) {
        let (files, ancestors, dirs) = self.policy_layout();
        self.policy_files = files;
        self.policy_ancestors = ancestors;
        let stale: Vec<PathBuf> = self
            .shared
            .watches()
            .iter()
            .filter(|(p, bits)| *bits & FOR_POLICY != 0 && !dirs.contains(*p))
            .map(|(p, _)| p.clone())
            .collect();
        for dir in stale {
            self.drop_watch(&dir, FOR_POLICY);
        }
        for dir in dirs {
            if self.add_watch(&dir, FOR_POLICY, false) == Added::Limit {
                break;
            }
        }
    }
}

/// Whether `rel` lies below a directory walked in this batch.
fn covered_by(walked: &HashSet<String>, rel: &str) -> bool {
    if walked.is_empty() {
        return false;
    }
    if walked.contains(".") {
        return true;
    }
    let mut at = rel;
    while at != "." {
        at = parent_rel(at);
        if walked.contains(at) {
            return true;
        }
    }
    false
}
