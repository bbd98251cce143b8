//! The watcher's worker: turns a burst of events into index changes, settling every
//! touched path against the disk, watching new directories before re-walking them.

use super::*;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};

/// Events worth acting on: opens, reads and read-only closes (including the daemon's own
/// reads of the files it serves) are noise.
pub(super) fn is_noise(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => false,
        EventKind::Access(_) => true,
        _ => false,
    }
}

/// Whether an event may bring a new directory at `paths[i]`, which must then be watched
/// and walked even if a directory of that name was watched before.
pub(super) fn brings_new(kind: &EventKind, index: usize) -> bool {
    match kind {
        EventKind::Create(_) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::To | RenameMode::Any)) => true,
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => index == 1,
        _ => false,
    }
}

pub(super) fn parent_rel(rel: &str) -> &str {
    match rel.rfind('/') {
        Some(i) => &rel[..i],
        None => ".",
    }
}

pub(super) fn join_rel(base: &str, name: &str) -> String {
    if base == "." {
        name.to_owned()
    } else {
        format!("{base}/{name}")
    }
}

/// Outcome of adding one watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Added {
    Yes,
    /// The watch limit (kernel or budget) is reached.
    Limit,
    /// The directory vanished or cannot be watched.
    Failed,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Touch {
    /// The event may bring a new directory here.
    pub(super) new: bool,
}

/// The event thread: owns the backend and applies batches to the root.
pub(super) struct Worker {
    pub(super) root: Arc<ServedRoot>,
    pub(super) root_path: PathBuf,
    pub(super) opts: WatchOptions,
    pub(super) shared: Arc<Shared>,
    pub(super) backend: Option<Backend>,
    pub(super) on_policy_change: Box<dyn Fn() + Send + Sync>,
    /// Policy files as given.
    pub(super) policy_inputs: Vec<PathBuf>,
    /// Policy files as event paths will name them (canonical directories).
    pub(super) policy_files: HashSet<PathBuf>,
    /// Directories whose creation, removal or rename may move a policy file.
    pub(super) policy_ancestors: HashSet<PathBuf>,
    /// The private directory of sync cookies (`watch::sync`), removed with the worker.
    pub(super) cookies: Option<tempfile::TempDir>,
}

impl Worker {
    pub(super) fn new(
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
            cookies: None,
        }
    }

    pub(super) fn run(
        &mut self,
        tx: Sender<Msg>,
        rx: Receiver<Msg>,
        ready: Sender<Result<(), WatchError>>,
    ) {
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
        // Without the start reconcile, changes made before the watches stay unseen
        // until a rescan: the watcher then never vouches for the index.
        if self.opts.reconcile_on_start {
            self.guarded(|w| w.reconcile());
            self.guarded(|w| w.restat());
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
    pub(super) fn setup(&mut self, tx: Sender<Msg>) -> Result<(), WatchError> {
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
        match Backend::new(Box::new(handler)) {
            Ok(backend) => {
                self.backend = Some(backend);
                self.watch_cookies();
            }
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

    pub(super) fn event_loop(&mut self, rx: &Receiver<Msg>) {
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
            // The highest sync cookie met: a query waits for it, so the batch is applied
            // at once instead of after the debounce.
            let mut cookie = None;
            match first {
                Msg::Stop => return,
                Msg::Event(ev) => self.take(ev, &mut batch, &mut cookie),
                Msg::Error => errors = true,
            }
            let opened = Instant::now();
            while cookie.is_none() && batch.len() < MAX_BATCH_EVENTS {
                let left = self.opts.max_batch_delay.saturating_sub(opened.elapsed());
                let wait = self.opts.debounce.min(left);
                if wait.is_zero() {
                    break;
                }
                match rx.recv_timeout(wait) {
                    Ok(Msg::Event(ev)) => self.take(ev, &mut batch, &mut cookie),
                    Ok(Msg::Error) => errors = true,
                    Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                    Err(RecvTimeoutError::Timeout) => break,
                }
            }
            if !batch.is_empty() || errors {
                self.guarded(|w| w.apply(batch, errors));
            }
            if let Some(n) = cookie {
                self.shared.sync.ack(n);
            }
        }
    }

    /// Adds an event to the batch, or notes the sync cookie it announces (events in the
    /// cookie directory are never the root's).
    fn take(&self, event: Event, batch: &mut Vec<Event>, cookie: &mut Option<u64>) {
        let sync = &self.shared.sync;
        if event.paths.iter().any(|p| sync.is_cookie_path(p)) {
            if matches!(event.kind, EventKind::Create(_)) {
                let n = event.paths.iter().filter_map(|p| sync.cookie_of(p)).max();
                *cookie = (*cookie).max(n);
            }
            return;
        }
        batch.push(event);
    }

    /// Makes and watches the private cookie directory; without it, syncs are refused.
    fn watch_cookies(&mut self) {
        let Some(backend) = self.backend.as_mut() else {
            return;
        };
        let mut builder = tempfile::Builder::new();
        builder
            .prefix("redctx-sync-")
            .permissions(std::fs::Permissions::from_mode(0o700));
        let made = match &self.opts.cookie_parent {
            Some(parent) => std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .and_then(|()| builder.tempdir_in(parent)),
            None => builder.tempdir(),
        };
        let Ok(dir) = made else {
            return;
        };
        if backend.watch(dir.path()).is_ok() {
            self.shared.sync.set_dir(dir.path().to_path_buf());
            self.cookies = Some(dir);
        }
    }

    /// Re-`lstat`s every indexed file now that the watches are in place (an in-place
    /// edit made before them raised no event and left its directory's stat alone), notes
    /// the directories holding multiply-linked files, and from then on lets walks trust
    /// the index after a sync, if every entry is on a local filesystem (`watch::sync`).
    pub(super) fn restat(&mut self) {
        let stats = crate::fs::StatBatch::new(&self.root_path);
        let mut multi_link_dirs = HashSet::new();
        let mut devices: HashMap<u64, String> = HashMap::new();
        for (rel, indexed) in self.root.index().files() {
            if self.shared.stop.load(Ordering::Relaxed) {
                return;
            }
            let Some(now) = stats.lstat_child(&rel) else {
                self.root.upsert(&rel);
                continue;
            };
            if now.nlink > 1 {
                multi_link_dirs.insert(parent_rel(&rel).to_owned());
            }
            devices.entry(now.key.dev).or_insert_with(|| rel.clone());
            if now.key != indexed {
                self.root.upsert(&rel);
                if self.opts.reindex && now.key.is_regular() {
                    self.shared.queue_reindex(&rel);
                }
            }
        }
        for rel in self.root.index().dirs() {
            if let Some(stat) = self.root.index().indexed_stat(&rel) {
                devices.entry(stat.dev).or_insert(rel);
            }
        }
        let local = devices
            .values()
            .all(|rel| sync::on_local_filesystem(&self.abs(rel)));
        if !local {
            tracing::info!(
                "part of the root is on a network or user-space filesystem: every search \
                 checks each file on disk instead of trusting the watcher"
            );
        }
        self.shared.sync.set_multi_link_dirs(multi_link_dirs);
        let ready = local && self.backend.is_some() && self.cookies.is_some();
        self.shared.sync.set_trusted(ready);
    }

    /// Runs one step; a panic is logged, the backend is given up if it was the cause,
    /// and the root is re-walked so nothing is left half-applied.
    pub(super) fn guarded(&mut self, step: impl FnOnce(&mut Worker)) {
        if std::panic::catch_unwind(AssertUnwindSafe(|| step(self))).is_err() {
            tracing::error!("file watcher step failed; re-walking the root");
            self.abandon_backend();
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| self.full_rescan()));
        }
    }

    /// Gives up the backend after a panic (its loop may be dead: dropping it could panic
    /// again) and serves by periodic rescans.
    pub(super) fn abandon_backend(&mut self) {
        if let Some(backend) = self.backend.take() {
            std::mem::forget(backend);
        }
        self.shared.watches().clear();
        self.shared.watches_used.store(0, Ordering::Relaxed);
        self.set_degraded();
    }

    pub(super) fn degraded(&self) -> bool {
        self.shared.degraded.load(Ordering::Relaxed)
    }

    pub(super) fn set_degraded(&self) {
        self.shared.degraded.store(true, Ordering::Relaxed);
    }

    pub(super) fn abs(&self, rel: &str) -> PathBuf {
        crate::fs::abs_path(&self.root_path, rel)
    }

    pub(super) fn rel_of(&self, path: &Path) -> Option<String> {
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
    pub(super) fn add_watch(&mut self, dir: &Path, reason: u8, force: bool) -> Added {
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
        match backend.watch(dir) {
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
                    notify::ErrorKind::PathNotFound => Added::Failed,
                    notify::ErrorKind::Io(ref io) if io.kind() == std::io::ErrorKind::NotFound => {
                        Added::Failed
                    }
                    _ => {
                        if reason & FOR_INDEX != 0 {
                            // Changes there would go unseen: walks stat every file again.
                            self.shared.sync.set_unwatched();
                        }
                        Added::Failed
                    }
                }
            }
        }
    }

    /// Drops `reason` from `dir`'s watch, unwatching it when no reason is left.
    pub(super) fn drop_watch(&mut self, dir: &Path, reason: u8) {
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
    pub(super) fn drop_index_watches_below(&mut self, rel: &str) {
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

    pub(super) fn is_index_watched(&self, rel: &str) -> bool {
        self.shared
            .watches()
            .get(&self.abs(rel))
            .is_some_and(|bits| bits & FOR_INDEX != 0)
    }

    pub(super) fn is_policy_watched(&self, dir: &Path) -> bool {
        self.shared
            .watches()
            .get(dir)
            .is_some_and(|bits| bits & FOR_POLICY != 0)
    }

    pub(super) fn hit_limit(&self) {
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
    pub(super) fn new_dir(&mut self, rel: &str) {
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
                    if dent.metadata().is_ok_and(|m| m.nlink() > 1) {
                        self.shared.sync.add_multi_link_dir(&dir);
                    }
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
    pub(super) fn gone(&mut self, rel: &str) {
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
    pub(super) fn apply(&mut self, batch: Vec<Event>, errors: bool) {
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
    pub(super) fn settle(&mut self, touched: BTreeMap<String, Touch>) {
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
                    if meta.nlink() > 1 {
                        self.shared.sync.add_multi_link_dir(parent_rel(&rel));
                    }
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
    pub(super) fn sync_index_watches(&mut self) {
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
    pub(super) fn reconcile(&mut self) {
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
    pub(super) fn full_rescan(&mut self) {
        self.shared.rescans.fetch_add(1, Ordering::Relaxed);
        let before: Option<HashMap<String, StatKey>> = self
            .opts
            .reindex
            .then(|| self.root.index().files().into_iter().collect());
        self.root.rescan_dir(".");
        if self.backend.is_some() {
            self.sync_index_watches();
        }
        // The walk took fresh stats but not link counts: note them again (and vouch
        // for the index, if the start reconcile made it whole once).
        if self.opts.reconcile_on_start {
            self.restat();
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
    pub(super) fn tick(&mut self) {
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
    pub(super) fn policy_layout(&self) -> (HashSet<PathBuf>, HashSet<PathBuf>, BTreeSet<PathBuf>) {
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

    pub(super) fn policy_dirs(&self) -> BTreeSet<PathBuf> {
        self.policy_layout().2
    }

    /// Re-resolves where the policy files live and watches their directories.
    pub(super) fn refresh_policy_watches(&mut self) {
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
pub(super) fn covered_by(walked: &HashSet<String>, rel: &str) -> bool {
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
