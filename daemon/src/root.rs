//! A served root: the index, the policy's engine and the persistent cache behind one
//! [`RootView`].
//!
//! Content is never stale: every answer `lstat`s the file (each path component, so a
//! symlink swapped in is refused) and trusts the cache only when the file record has the
//! same (dev, ino, mode, size, mtime_ns, ctime_ns) and was settled when written (see
//! [`IndexOptions::racy_window_ns`]); otherwise the file is read (verified), hashed,
//! redacted in both variants, stored and answered. Background indexing fills the cache
//! ahead of calls; calls never wait for it.

use crate::budget::ByteBudget;
use crate::cache::{
    self, Cache, ContentKey, ContentRecord, FileRecord, PlainVariant, StoredText, TextInfo,
};
use crate::documents::{self, backlog::Backlog, backlog::DocumentCounts, backlog::Work};
use crate::engine::{Counts, Engine, Mode, Record, RedactOptions};
use crate::fs::content::{Decoding, Encoding};
use crate::fs::{self, ContentKind, StatKey, content, is_prose_path};
use crate::index::{Index, IndexOptions, ListedFiles, is_settled, now_ns};
use crate::memo::Memo;
use crate::search_index::passages::{IndexedHits, Located};
use crate::search_index::plan::GramPlan;
use crate::search_index::{Indexed, PassageScreen, Screen, SearchIndex, Verdict, too_stale};
use crate::tally::Tally;
use crate::view::{
    Entry, EntryKind, FileScreen, Limits, PassageIndex, RedactedDoc, RedactedPath, RootView,
    Screened, TreeRow, ViewError,
};
use crate::watch::{Synced, WatchSync};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How a root is served.
#[derive(Clone, Debug, Default)]
pub struct RootOptions {
    /// Reference `--include-private`: drop default and configured exclusions (never-serve
    /// and protected paths stay refused).
    pub include_private: bool,
    pub index: IndexOptions,
    pub limits: Limits,
    /// TEST ONLY: pause the background pass (as [`ServedRoot::pause_indexing`]) once it
    /// has looked at this many files, so a test can act while a pass is in flight (kill
    /// the daemon mid-index, call tools before the pass ends).
    pub pause_indexing_after: Option<u64>,
}

/// Background indexing progress, readable at any time (for `status`).
#[derive(Debug, Default)]
pub struct IndexProgress {
    /// Files the current pass will look at.
    pub files_seen: AtomicU64,
    /// Files whose redacted content is in the cache (read now or found from before).
    pub files_indexed: AtomicU64,
    /// Of those, files that had to be read (the rest were reused from the cache).
    pub files_read: AtomicU64,
    /// Non-text, over-limit or non-regular files (metadata only).
    pub files_skipped: AtomicU64,
    /// Files that could not be read or redacted (they are retried on demand).
    pub files_failed: AtomicU64,
    /// Files not looked at yet.
    pub files_pending: AtomicU64,
    /// Raw bytes of indexed files.
    pub bytes_indexed: AtomicU64,
    pub running: AtomicBool,
    /// At least one pass completed.
    pub finished: AtomicBool,
}

/// A copy of [`IndexProgress`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgressSnapshot {
    pub files_seen: u64,
    pub files_indexed: u64,
    pub files_read: u64,
    pub files_skipped: u64,
    pub files_failed: u64,
    pub files_pending: u64,
    pub bytes_indexed: u64,
    pub running: bool,
    pub finished: bool,
}

/// Work counters of a root (tests use them to prove the cache was used).
#[derive(Debug, Default)]
pub struct ReadCounters {
    /// Whole-file content reads (verified reads of text candidates).
    pub content_reads: AtomicU64,
    /// Contents redacted (each counts once for both variants).
    pub redactions: AtomicU64,
    /// Files a search skipped because the search index ruled them out, or a retrieve
    /// ranked from the passage index without reading them.
    pub screened_out: AtomicU64,
    /// Retrieves whose passage read back to print did not hold what the passage index
    /// said (answered by a scan instead): damage, or a bug.
    pub passage_mismatches: AtomicU64,
    /// Walks that listed the index without `lstat`s after a sync with the watcher.
    pub synced_walks: AtomicU64,
    /// Documents extracted (each one extraction worker, or one in-process conversion).
    pub extractions: AtomicU64,
}

/// The raw start of one file ([`ServedRoot::raw_sample`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSample {
    pub text: String,
    /// Raw bytes charged to the total budget.
    pub charged: u64,
    pub truncated: bool,
    /// Hex SHA-256 of the whole file.
    pub sha256: String,
}

/// Redacted content and the `stat` line count of one file version.
struct Loaded {
    content: Arc<ContentRecord>,
    lines: u64,
    /// The file was read now (not answered from the cache).
    read: bool,
}

/// In-memory caches of redacted paths and names are dropped wholesale past this size.
const MAX_CACHED_PATHS: usize = 1 << 18;

/// Moves a pass's cursor past its last file when dropped.
struct CursorToEnd<'a>(&'a AtomicUsize, usize);

impl Drop for CursorToEnd<'_> {
    fn drop(&mut self) {
        self.0.store(self.1, Ordering::Relaxed);
    }
}

/// How far the indexing pass's prefetcher runs ahead of its workers, in files…
const PREFETCH_FILES: usize = 512;
/// …and in bytes, whichever is reached first: enough reads in flight to keep a cold disk
/// busy while the workers redact, little enough that the page cache keeps them.
const PREFETCH_BYTES: u64 = 16 << 20;
/// Of a file whose suffix is not a text one, the prefetcher asks for at most this much:
/// all of nearly every source file, the head of a large binary.
const PREFETCH_SNIFFED_BYTES: u64 = 256 << 10;
/// The prefetcher looks at only one file in [`PREFETCH_PROBE_EVERY`] once this many in a
/// row had their first page in memory (a warm tree), until one does not.
const PREFETCH_WARM_AFTER: usize = 256;
const PREFETCH_PROBE_EVERY: usize = 32;
/// A file whose suffix is not a text one and is larger than this has its prefix sniffed
/// before it is read: a large binary is not read whole to be refused. The prefetcher
/// read at most this much of it ahead.
const SNIFF_FIRST_ABOVE: u64 = PREFETCH_SNIFFED_BYTES;

/// Raw bytes of the files a pass's workers read and redact at once: each holds its file,
/// its decoded text and the engine's work on it until the record is queued, so more
/// workers (cores) must not mean more memory when files are large. Small files never
/// wait (a worker each); a file over the budget is redacted alone ([`crate::budget`]).
const PASS_TEXT_BYTES: u64 = 8 << 20;

/// How long a walk waits for the watcher to vouch for the index before it stats every
/// file itself: an idle watcher answers in well under a millisecond; one busy applying
/// a large burst is not waited for (the walk would cost about the same).
const WATCH_SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(100);

/// One root served under one policy.
pub struct ServedRoot {
    root: PathBuf,
    engine: Arc<Engine>,
    limits: Limits,
    index: Index,
    cache: Option<Arc<Cache>>,
    root_key: [u8; 32],
    fingerprint: [u8; 32],
    hash_key: [u8; 32],
    racy_window_ns: i64,
    threads: usize,
    /// Which encodings this policy's mode reads as text.
    decoding: Decoding,
    /// Documents are served as extracted Markdown (the policy's `documents`).
    documents: bool,
    paths: Memo<RedactedPath>,
    names: Mutex<HashMap<Box<str>, RedactedPath>>,
    progress: IndexProgress,
    counters: ReadCounters,
    paused: Mutex<bool>,
    resumed: Condvar,
    pause_after: Option<u64>,
    /// A pass was spawned and has not finished its warm-restart check yet (see
    /// [`ServedRoot::wait_warm_check`]).
    warm_check: Mutex<bool>,
    warm_checked: Condvar,
    /// Guards the store of `progress.finished`, so [`ServedRoot::wait_finished`] can
    /// sleep on `finished_cv` without missing the wake-up.
    finished_lock: Mutex<()>,
    finished_cv: Condvar,
    /// The search index in use (`None` until one is loaded or built).
    search: std::sync::RwLock<Option<Arc<SearchIndex>>>,
    /// Wakes the thread that keeps the search index current.
    search_wake: Arc<SearchWake>,
    /// The policy in balanced mode, built on the first write (its round-trip check).
    balanced: std::sync::OnceLock<Option<Arc<Engine>>>,
    /// The watcher's syncs, once a watcher runs (`crate::watch::sync`).
    watch_sync: std::sync::RwLock<Option<WatchSync>>,
    /// The documents and what became of each; the pre-extraction pass's work list.
    backlog: Arc<Backlog>,
}

/// Requests to the search-index thread of a root (`ServedRoot::spawn_search_keeper`).
#[derive(Debug, Default)]
struct SearchWake {
    /// A check (rebuild if stale) is wanted.
    wanted: Mutex<bool>,
    cv: Condvar,
    /// The root was dropped: the thread ends.
    closed: AtomicBool,
}

impl SearchWake {
    fn request(&self) {
        *self.wanted.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Waits for a request (true) or the root's end (false).
    fn wait(&self) -> bool {
        let mut wanted = self.wanted.lock().unwrap_or_else(|e| e.into_inner());
        while !*wanted && !self.closed.load(Ordering::SeqCst) {
            wanted = self.cv.wait(wanted).unwrap_or_else(|e| e.into_inner());
        }
        *wanted = false;
        !self.closed.load(Ordering::SeqCst)
    }
}

impl std::fmt::Debug for ServedRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedRoot").finish_non_exhaustive()
    }
}

fn lower_thread_priority() {
    crate::detectors::mark_background_thread();
    // Background indexing yields the CPU to tool calls. On Linux a thread is a task, so
    // PRIO_PROCESS with its tid renices just this thread.
    #[cfg(target_os = "linux")]
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

impl Drop for ServedRoot {
    fn drop(&mut self) {
        self.search_wake.closed.store(true, Ordering::SeqCst);
        self.search_wake.request();
        self.backlog.close();
        if let Some(cache) = &self.cache {
            cache.unserve_policy(&self.root_key, &self.fingerprint);
        }
    }
}

impl ServedRoot {
    /// Serves `root` (canonicalised) under `engine`'s policy, walking it now (stat only:
    /// metadata calls are ready when this returns). `cache: None` serves without
    /// persistence. Start content indexing with [`ServedRoot::spawn_indexing`].
    pub fn open(
        root: &Path,
        engine: Arc<Engine>,
        cache: Option<Arc<Cache>>,
        opts: RootOptions,
    ) -> Result<ServedRoot, ViewError> {
        let root = std::fs::canonicalize(root).map_err(|_| ViewError::Missing)?;
        let root_name = root
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        let rules = fs::FsRules::new(engine.policy(), &root_name, opts.include_private);
        let threads = opts.index.threads.max(1);
        let decoding = Decoding::for_mode(engine.policy().mode);
        let documents = engine.policy().documents;
        let racy_window_ns = opts.index.racy_window_ns;
        let index = Index::new(&root, engine.clone(), rules, opts.index)?;
        index.scan();
        let (root_key, fingerprint) = (
            cache::root_key(&root),
            cache::policy_fingerprint(engine.policy()),
        );
        if let Some(cache) = &cache {
            cache.serve_policy(&root_key, &fingerprint);
        }
        Ok(ServedRoot {
            root_key,
            fingerprint,
            hash_key: cache::content_hash_key(&engine.policy().salt),
            root,
            engine,
            limits: opts.limits,
            index,
            cache,
            racy_window_ns,
            threads,
            decoding,
            documents,
            paths: Memo::new(MAX_CACHED_PATHS),
            names: Mutex::new(HashMap::new()),
            progress: IndexProgress::default(),
            counters: ReadCounters::default(),
            paused: Mutex::new(false),
            resumed: Condvar::new(),
            pause_after: opts.pause_indexing_after,
            warm_check: Mutex::new(false),
            warm_checked: Condvar::new(),
            finished_lock: Mutex::new(()),
            finished_cv: Condvar::new(),
            search: std::sync::RwLock::new(None),
            search_wake: Arc::default(),
            balanced: std::sync::OnceLock::new(),
            watch_sync: std::sync::RwLock::new(None),
            backlog: Arc::default(),
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The policy's engine, shared (a benchmark builds a fresh index with it).
    pub fn engine_handle(&self) -> Arc<Engine> {
        self.engine.clone()
    }

    /// This policy's engine in balanced mode (`None` when it cannot be built), made once
    /// per snapshot: a write must also redact cleanly for a session served in balanced
    /// mode (spec 9.1 step 7).
    pub fn balanced_engine(&self) -> Option<Arc<Engine>> {
        if self.engine.policy().mode == Mode::Balanced {
            return Some(self.engine.clone());
        }
        self.balanced
            .get_or_init(|| {
                let policy = crate::engine::Policy {
                    mode: Mode::Balanced,
                    ..self.engine.policy().clone()
                };
                Engine::new(Arc::new(policy)).ok().map(Arc::new)
            })
            .clone()
    }

    /// The index (metadata, ids, listing).
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Called by the watcher that keeps this root fresh: walks may sync with it.
    pub fn set_watch_sync(&self, sync: WatchSync) {
        *self.watch_sync.write().unwrap_or_else(|e| e.into_inner()) = Some(sync);
    }

    /// Watcher entry point: `rel` was created, modified or replaced.
    pub fn upsert(&self, rel: &str) {
        self.index.upsert(rel);
        if self.documents
            && matches!(ContentKind::of_path(rel), ContentKind::Document(_))
            && let Some(stat) = self.index.indexed_stat(rel)
            && stat.is_regular()
        {
            // Pending again until extracted (by the watcher's re-redaction or the pass).
            self.backlog.noted(rel, stat);
        }
    }

    /// Watcher entry point: `rel` was deleted or renamed away.
    pub fn remove(&self, rel: &str) {
        self.index.remove(rel);
        self.backlog.forget(rel);
        if let Some(cache) = &self.cache {
            // A directory takes the records of its whole subtree with it.
            cache.forget_tree(&self.root_key, rel);
        }
    }

    /// Watcher entry point: re-walk a directory subtree (`"."` for everything, e.g. after
    /// an event queue overflow).
    pub fn rescan_dir(&self, rel: &str) {
        self.index.rescan_dir(rel);
        if self.documents {
            self.backlog.request_relist();
        }
    }

    /// What became of the root's documents (`None` when documents are not served).
    pub fn document_counts(&self) -> Option<DocumentCounts> {
        self.documents.then(|| self.backlog.counts())
    }

    /// Blocks until the first pass has completed and every document of the root is
    /// extracted or failed in its current version, or `timeout` passes; returns whether
    /// that holds. For tests and benches: nothing in serving waits for it.
    pub fn wait_documents(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.progress.finished.load(Ordering::SeqCst) && self.backlog.idle() {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Work counters.
    pub fn counters(&self) -> &ReadCounters {
        &self.counters
    }

    /// Background indexing progress now.
    pub fn progress(&self) -> ProgressSnapshot {
        let p = &self.progress;
        ProgressSnapshot {
            files_seen: p.files_seen.load(Ordering::Relaxed),
            files_indexed: p.files_indexed.load(Ordering::Relaxed),
            files_read: p.files_read.load(Ordering::Relaxed),
            files_skipped: p.files_skipped.load(Ordering::Relaxed),
            files_failed: p.files_failed.load(Ordering::Relaxed),
            files_pending: p.files_pending.load(Ordering::Relaxed),
            bytes_indexed: p.bytes_indexed.load(Ordering::Relaxed),
            running: p.running.load(Ordering::Relaxed),
            finished: p.finished.load(Ordering::Relaxed),
        }
    }

    /// Holds the background pass between two files until [`ServedRoot::resume_indexing`]
    /// (tool calls are served meanwhile, redacting on demand what they need). For an
    /// operator who wants the CPU back, and for tests that must observe a pass in flight.
    pub fn pause_indexing(&self) {
        *self.paused.lock().unwrap_or_else(|e| e.into_inner()) = true;
    }

    /// Lets a paused background pass go on.
    pub fn resume_indexing(&self) {
        *self.paused.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.resumed.notify_all();
    }

    fn wait_while_paused(&self) {
        let mut paused = self.paused.lock().unwrap_or_else(|e| e.into_inner());
        while *paused {
            paused = self.resumed.wait(paused).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Runs [`ServedRoot::index_all`] on a background thread. Until that pass has checked
    /// the cache against the walk, [`ServedRoot::wait_warm_check`] blocks. Then a second
    /// thread keeps the search index current until the root is dropped.
    pub fn spawn_indexing(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        self.set_warm_check(true);
        let me = self.clone();
        std::thread::Builder::new()
            .name("redctx-indexer".into())
            .spawn(move || {
                me.index_all();
                me.set_warm_check(false);
                me.spawn_document_pass();
                me.spawn_search_keeper();
            })
            .expect("spawning the indexer thread")
    }

    /// Starts the thread that extracts the root's documents into the cache ahead of
    /// reads, after the text pass, one at a time at low priority (its workers too:
    /// `documents::extract`). It ends with the root (a policy change drops it); between
    /// documents it holds the root only weakly. Documents changed later are extracted
    /// again by the watcher's re-redaction (`content`, as any text file) or, when
    /// nothing else did, by this pass. Without a cache there is nothing to fill.
    fn spawn_document_pass(self: &Arc<Self>) {
        if !self.documents || self.cache.is_none() {
            return;
        }
        let backlog = self.backlog.clone();
        let weak = Arc::downgrade(self);
        let _ = std::thread::Builder::new()
            .name("redctx-documents".into())
            .spawn(move || {
                lower_thread_priority();
                loop {
                    match backlog.next() {
                        Work::Closed => return,
                        Work::Relist => {
                            let Some(me) = weak.upgrade() else { return };
                            backlog.relist(me.listed_documents(&me.index.files()));
                        }
                        Work::Extract(todo) => {
                            for (rel, stat) in todo {
                                if !backlog.is_pending(&rel, &stat) {
                                    continue;
                                }
                                let Some(me) = weak.upgrade() else { return };
                                me.pre_extract(&rel, stat);
                            }
                        }
                    }
                }
            });
    }

    /// The documents among `files` (the index's), when documents are served.
    fn listed_documents(&self, files: &[(String, StatKey)]) -> Vec<(String, StatKey)> {
        files
            .iter()
            .filter(|(rel, stat)| {
                stat.is_regular() && matches!(ContentKind::of_path(rel), ContentKind::Document(_))
            })
            .cloned()
            .collect()
    }

    /// One document of the pass: extracted into the cache as a read would (a panic is a
    /// failure), then settled in the backlog whatever happened.
    fn pre_extract(&self, rel: &str, stat: StatKey) {
        let ContentKind::Document(format) = ContentKind::of_path(rel) else {
            return;
        };
        // The turn before the claim (`load_document`): a read of this document waits
        // for this extraction only, never for the queue ahead of it.
        let _turn = documents::background_turn();
        if !self.backlog.is_pending(rel, &stat) {
            return; // a read did it while the pass waited
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            match self.load_document(rel, format) {
                Err(ViewError::ChangedDuringRead) => self.load_document(rel, format),
                other => other,
            }
        }))
        .unwrap_or(Err(ViewError::Internal));
        self.backlog.attempted(rel, stat, result.map(|_| ()));
    }

    /// Starts the thread that builds the passage index of the search index in use, and
    /// rebuilds the search index when searches find it stale (then its passages); it
    /// holds the root only while it works and ends with it. Without it (no thread could
    /// be started) the index simply ages, and searches and retrieves read more files.
    fn spawn_search_keeper(self: &Arc<Self>) {
        let wake = self.search_wake.clone();
        let weak = Arc::downgrade(self);
        let _ = std::thread::Builder::new()
            .name("redctx-search-index".into())
            .spawn(move || {
                lower_thread_priority();
                loop {
                    if let Some(me) = weak.upgrade() {
                        me.build_passages();
                    }
                    if !wake.wait() {
                        return;
                    }
                    let Some(me) = weak.upgrade() else { return };
                    me.refresh_search_index();
                }
            });
    }

    /// Builds the passage index (what retrieve ranks by, `search_index::passages`) of
    /// every segment of the search index that has none yet, from the cached content of
    /// each file's indexed version. Background work after "ready".
    pub fn build_passages(&self) {
        let (Some(cache), Some(index)) = (&self.cache, self.search_index()) else {
            return;
        };
        if index.passages_built() {
            return;
        }
        let _bulk = crate::budget::bulk_phase();
        let started = std::time::Instant::now();
        let pool = self.background_pool("redctx-passages");
        let built = index.build_passages(
            cache,
            &|rel, record| self.indexed_content(rel, record),
            pool.as_ref(),
        );
        tracing::info!(
            root = %self.root.display(),
            segments = built,
            complete = index.passages_built(),
            ms = started.elapsed().as_millis() as u64,
            "passage index built"
        );
        crate::budget::release_free_memory();
    }

    /// The cached redacted content of the version `record` describes, if this mode
    /// reads it as text.
    fn indexed_content(&self, rel: &str, record: &FileRecord) -> Option<Arc<ContentRecord>> {
        let info = record
            .text
            .filter(|info| self.decoding.reads(info.encoding))?;
        self.cache
            .as_ref()?
            .get_content(&self.content_key(&info.hash, rel))
    }

    /// Loads the root's search index, or builds it when there is none for this policy
    /// or too many files changed since it was built; the old one serves meanwhile.
    /// Blocks until done. Without a cache there is no index (searches read every file).
    pub fn refresh_search_index(&self) {
        let Some(cache) = &self.cache else { return };
        let files = self.index.files();
        let current = self
            .search_index()
            .or_else(|| SearchIndex::load(cache, &self.root_key, &self.fingerprint).map(Arc::new));
        if let Some(index) = current
            && !index.is_stale_for(&files)
        {
            tracing::info!(root = %self.root.display(), files = index.len(), "search index in use");
            self.set_search_index(Some(index));
            return;
        }
        self.build_search_index(cache, files);
    }

    /// Builds and publishes the search index of `files` (the index's listing, its paths
    /// moved into the search index).
    fn build_search_index(&self, cache: &Cache, files: Vec<(String, StatKey)>) {
        let _bulk = crate::budget::bulk_phase();
        let started = std::time::Instant::now();
        let read = |rel: &str, stat: &StatKey| {
            if self.never_read(ContentKind::of_path(rel), stat) {
                return Some(Indexed::Opaque(FileRecord::new(stat, true, None)));
            }
            let (record, content) = cache.get_file_and_content(&self.root_key, rel, |rec| {
                rec.trusted_for(stat)
                    .then_some(rec.text)
                    .flatten()
                    .filter(|info| self.decoding.reads(info.encoding))
                    .map(|info| self.content_key(&info.hash, rel))
            })?;
            if !record.trusted_for(stat) {
                return None;
            }
            match (record.text, content) {
                (None, _) => Some(Indexed::NotText(record)),
                // Wide text this mode does not read.
                (Some(info), _) if !self.decoding.reads(info.encoding) => {
                    Some(Indexed::NotText(record))
                }
                (Some(_), Some(content)) => Some(Indexed::Text(record, content)),
                (Some(_), None) => None,
            }
        };
        let pool = self.background_pool("redctx-grams");
        let built = SearchIndex::build(
            cache,
            &self.root_key,
            &self.fingerprint,
            files,
            &read,
            pool.as_ref(),
        );
        tracing::info!(
            root = %self.root.display(),
            files = built.as_ref().map_or(0, |b| b.len()),
            ms = started.elapsed().as_millis() as u64,
            "search index built"
        );
        if let Some(built) = built {
            self.set_search_index(Some(Arc::new(built)));
        }
    }

    /// The search index in use, if any.
    pub fn search_index(&self) -> Option<Arc<SearchIndex>> {
        self.search
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the search index in use (`None`: searches read every file until the
    /// next refresh).
    pub fn set_search_index(&self, index: Option<Arc<SearchIndex>>) {
        *self.search.write().unwrap_or_else(|e| e.into_inner()) = index;
    }

    /// A pool of `threads` low-priority workers for background passes (`None` if the
    /// OS refuses threads: the pass then runs on the calling thread).
    fn background_pool(&self, name: &'static str) -> Option<rayon::ThreadPool> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .thread_name(move |i| format!("{name}-{i}"))
            .start_handler(|_| lower_thread_priority())
            .build()
            .ok()
    }

    fn set_warm_check(&self, pending: bool) {
        *self.warm_check.lock().unwrap_or_else(|e| e.into_inner()) = pending;
        if !pending {
            self.warm_checked.notify_all();
        }
    }

    /// Blocks while a spawned pass is still checking the cache against the walk (the
    /// part of a warm restart that "ready" waits for), so work that can wait, such as
    /// registering the file watches, does not take the CPU from it. Returns at once when
    /// no pass is pending. Gives up after `timeout` and returns false if the check is still pending.
    pub fn wait_warm_check(&self, timeout: std::time::Duration) -> bool {
        let pending = self.warm_check.lock().unwrap_or_else(|e| e.into_inner());
        let (pending, _) = self
            .warm_checked
            .wait_timeout_while(pending, timeout, |pending| *pending)
            .unwrap_or_else(|e| e.into_inner());
        !*pending
    }

    /// Blocks until a pass has completed (the root is "ready") or `timeout` passes;
    /// returns whether one has. Wakes the moment the pass ends, for `status --wait`.
    pub fn wait_finished(&self, timeout: std::time::Duration) -> bool {
        let finished = || self.progress.finished.load(Ordering::SeqCst);
        let guard = self.finished_lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .finished_cv
            .wait_timeout_while(guard, timeout, |_| !finished())
            .unwrap_or_else(|e| e.into_inner());
        finished()
    }

    fn mark_finished(&self) {
        let guard = self.finished_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.progress.finished.store(true, Ordering::SeqCst);
        drop(guard);
        self.finished_cv.notify_all();
    }

    /// Redacts every indexed text file into the cache, in parallel at low priority.
    /// Files whose stat matches a settled file record with content under this policy are
    /// not read again (warm restart): the root's file records are loaded in one range
    /// scan and the content keys checked in one read transaction, so a restart with
    /// nothing changed costs no per-file database round trip. At the end of a complete
    /// pass, file records of paths no longer indexed (deleted while the daemon was down)
    /// are dropped. Blocks until done.
    pub fn index_all(&self) {
        let p = &self.progress;
        if p.running.swap(true, Ordering::SeqCst) {
            return;
        }
        let _bulk = crate::budget::bulk_phase();
        let started = std::time::Instant::now();
        let listed = self.index.listed_files();
        let files = &listed.files;
        for counter in [
            &p.files_indexed,
            &p.files_read,
            &p.files_skipped,
            &p.files_failed,
            &p.bytes_indexed,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        p.files_seen.store(files.len() as u64, Ordering::Relaxed);
        p.files_pending.store(files.len() as u64, Ordering::Relaxed);
        if self.documents {
            // Counted (as pending) from the start; extracted after the pass.
            self.backlog.relist(self.listed_documents(files));
        }
        let todo = self.reuse_cached(&listed);
        let verified = started.elapsed();
        self.set_warm_check(false);
        let in_flight = ByteBudget::new(PASS_TEXT_BYTES);
        let work = |(rel, stat): &(String, StatKey)| {
            self.wait_while_paused();
            let _held = (!self.never_read(ContentKind::of_path(rel), stat))
                .then(|| in_flight.acquire(stat.size));
            let outcome = self.index_one(rel, stat);
            self.count(outcome, stat.size);
        };
        if !todo.is_empty() {
            let pool = self.background_pool("redctx-index");
            // Workers take files in walk order from one cursor, so that a prefetcher
            // running a window ahead of it has the pages in memory when they are read.
            let cursor = AtomicUsize::new(0);
            let next = || {
                let k = cursor.fetch_add(1, Ordering::Relaxed);
                todo.get(k).map(|&i| &files[i])
            };
            std::thread::scope(|scope| {
                let _ = std::thread::Builder::new()
                    .name("redctx-prefetch".into())
                    .spawn_scoped(scope, || self.prefetch_ahead(files, &todo, &cursor));
                // Past the end however the workers stop (a panic included): the
                // prefetcher sees it and returns, so the scope can end.
                let _stop_prefetch = CursorToEnd(&cursor, todo.len());
                match pool {
                    Some(pool) => {
                        pool.broadcast(|_| std::iter::from_fn(next).for_each(&work));
                    }
                    None => std::iter::from_fn(next).for_each(&work),
                }
            });
        }
        let snap = self.progress();
        tracing::info!(
            root = %self.root.display(),
            files = snap.files_seen,
            read = snap.files_read,
            reused = snap.files_indexed - snap.files_read,
            skipped = snap.files_skipped,
            failed = snap.files_failed,
            verify_ms = verified.as_millis() as u64,
            total_ms = started.elapsed().as_millis() as u64,
            in_flight_peak_kb = in_flight.take_peak() >> 10,
            write_queue_peak_kb = self.cache.as_ref().map_or(0, |c| c.take_queue_peak() >> 10),
            "indexing pass finished"
        );
        if let Some(cache) = &self.cache {
            // Before "ready": a pass that changed records (edits while stopped, a new
            // policy) leaves content unreferenced; one with nothing changed costs nothing.
            cache.request_sweep();
        }
        // Nothing was redacted (a warm restart): the engine is warmed after "ready". Else
        // the pass's listing goes now: the search index lists the files again, and on a
        // 100k-file root each listing holds tens of megabytes.
        let warm_up = (snap.files_read == 0).then_some(listed);
        drop(todo);
        // Part of "ready": a warm restart loads the index (file tables only), a pass that
        // changed many files rebuilds it, so the first searches after ready use it.
        self.refresh_search_index();
        crate::budget::release_free_memory();
        p.running.store(false, Ordering::SeqCst);
        self.mark_finished();
        if let Some(listed) = warm_up {
            self.warm_up_engine(&listed.files);
        }
    }

    /// Keeps the kernel reading ahead of the pass's workers: up to [`PREFETCH_FILES`]
    /// files or [`PREFETCH_BYTES`] beyond the cursor they take files from, so a cold
    /// disk has many reads in flight while the workers redact. Returns when the cursor
    /// passes the end (set on the way out of the pass, even by a panic).
    fn prefetch_ahead(&self, files: &[(String, StatKey)], todo: &[usize], cursor: &AtomicUsize) {
        lower_thread_priority();
        // What advising position `k` adds to the window (0 for files the pass will not
        // read, which are not advised).
        let advised = |k: usize| {
            let (rel, stat) = &files[todo[k]];
            let kind = ContentKind::of_path(rel);
            if self.never_read(kind, stat) {
                0
            } else if kind == ContentKind::Text {
                stat.size
            } else {
                // Sniffed first (`.rs`, `.go`, `.c` too: the reference's suffix list is
                // short): source files are read whole after the sniff, a large binary
                // is not read past its first page.
                stat.size.min(PREFETCH_SNIFFED_BYTES)
            }
        };
        let mut ahead = 0; // next position to advise
        let mut start = 0; // first position still counted in `bytes`
        let mut bytes = 0u64; // advised and not yet taken: positions start..ahead
        // Files in a row found in memory already. On a warm tree the advice is wasted
        // work (an open, a stat and a page-cache walk per file), so past
        // `PREFETCH_WARM_AFTER` of them only every `PREFETCH_PROBE_EVERY`-th file is
        // looked at; one found on disk brings back advice for every file.
        let mut in_memory = 0usize;
        while ahead < todo.len() {
            let at = cursor.load(Ordering::Relaxed);
            if at >= todo.len() {
                return;
            }
            while start < at.min(ahead) {
                bytes -= advised(start);
                start += 1;
            }
            if ahead < at {
                // The workers overtook (warm pages): restart the window at the cursor.
                (ahead, start, bytes) = (at, at, 0);
            }
            if ahead - at >= PREFETCH_FILES || bytes >= PREFETCH_BYTES {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            let size = advised(ahead);
            if size > 0 && (in_memory < PREFETCH_WARM_AFTER || ahead % PREFETCH_PROBE_EVERY == 0) {
                match fs::prefetch(&self.root, &files[todo[ahead]].0, size) {
                    Some(true) => in_memory += 1,
                    _ => in_memory = 0,
                }
            }
            bytes += size;
            ahead += 1;
        }
    }

    /// Runs the engine over its built-in warm-up sample and a sample of the root's own
    /// text files (read, redacted and dropped: nothing is stored) so that a file
    /// changed later does not pay for the matchers' lazily built state: on a fresh
    /// engine the first files cost tens of milliseconds each instead of well under one,
    /// which a file edited right after a warm restart (nothing else redacted yet) would
    /// otherwise wait for.
    pub fn warm_up_engine(&self, files: &[(String, StatKey)]) {
        const MAX_FILES: usize = 24;
        const MAX_BYTES: u64 = 512 << 10;
        self.engine.warm_up();
        let text_files: Vec<&(String, StatKey)> = files
            .iter()
            .filter(|(rel, stat)| {
                stat.is_regular()
                    && (512..=(96 << 10)).contains(&stat.size)
                    && ContentKind::of_path(rel) == ContentKind::Text
            })
            .collect();
        let step = (text_files.len() / MAX_FILES).max(1);
        let mut budget = MAX_BYTES;
        for (rel, stat) in text_files.into_iter().step_by(step).take(MAX_FILES) {
            if stat.size > budget {
                break;
            }
            budget -= stat.size;
            let Ok((bytes, _)) = self.read_verified(rel) else {
                continue;
            };
            let Some(encoding) = content::text_encoding(&bytes, self.decoding) else {
                continue;
            };
            let text = self.decoding.decode(&bytes, encoding);
            let _ = self.engine.redact(
                &text,
                RedactOptions {
                    preserve_line_count: true,
                    prose: is_prose_path(rel),
                    path: rel,
                },
            );
        }
    }

    fn count(&self, outcome: Outcome, size: u64) {
        let p = &self.progress;
        match outcome {
            Outcome::Indexed { read } => {
                p.files_indexed.fetch_add(1, Ordering::Relaxed);
                p.bytes_indexed.fetch_add(size, Ordering::Relaxed);
                if read {
                    p.files_read.fetch_add(1, Ordering::Relaxed);
                }
            }
            Outcome::Skipped => {
                p.files_skipped.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed => {
                p.files_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        let pending = p.files_pending.fetch_sub(1, Ordering::Relaxed) - 1;
        if let Some(after) = self.pause_after
            && p.files_seen.load(Ordering::Relaxed) - pending == after
        {
            self.pause_indexing();
        }
    }

    /// The warm-restart check of a pass: counts every file whose cached records can be
    /// reused as done, drops the records of paths that are no longer indexed, and returns
    /// the positions in `files` that still need [`ServedRoot::index_one`].
    ///
    /// The root's file records are streamed in key order and merged with the walk sorted
    /// the same way, so nothing is looked up per file. A record stored under this policy
    /// is trusted to have its content (a content record that went missing is recomputed
    /// when used); records from another policy have their content keys checked in one
    /// read transaction.
    fn reuse_cached(&self, listed: &ListedFiles) -> Vec<usize> {
        let files = &listed.files;
        let Some(cache) = &self.cache else {
            return (0..files.len()).collect();
        };
        let mut order: Vec<usize> = (0..files.len()).collect();
        order.sort_unstable_by(|&a, &b| files[a].0.cmp(&files[b].0));
        let mut todo = Vec::new();
        let mut check: Vec<(usize, ContentKey, FileRecord)> = Vec::new();
        let mut stale: Vec<String> = Vec::new();
        // The text decision of every file whose record holds for its stat, as
        // `is_text` would make it from the record.
        let mut text_flags: Vec<(usize, bool)> = Vec::new();
        let mut next = 0;
        let complete = cache.scan_root_files(&self.root_key, |rel, rec| {
            while next < order.len() && files[order[next]].0.as_str() < rel {
                todo.push(order[next]);
                next += 1;
            }
            if next == order.len() || files[order[next]].0 != rel {
                stale.push(rel.to_owned());
                return;
            }
            let i = order[next];
            next += 1;
            let stat = &files[i].1;
            if rec.trusted_for(stat) {
                let flag = rec.text.is_some_and(|t| self.decoding.reads(t.encoding));
                text_flags.push((i, flag));
            }
            if !rec.trusted_for(stat) || self.never_read(ContentKind::of_path(rel), stat) {
                // Changed, or metadata only (index_one says so without reading).
                todo.push(i);
                return;
            }
            match rec.text {
                None => self.count(Outcome::Skipped, stat.size),
                Some(info) if !self.decoding.reads(info.encoding) => {
                    self.count(Outcome::Skipped, stat.size)
                }
                Some(_) if rec.stored_under == Some(self.fingerprint) => {
                    self.count(Outcome::Indexed { read: false }, stat.size)
                }
                Some(info) => check.push((i, self.content_key(&info.hash, rel), rec)),
            }
        });
        todo.extend(order[next..].iter().copied());
        self.index.set_listed_text_flags(listed, &text_flags);
        if !check.is_empty() {
            // Content this policy stored before (a policy changed back): the records are
            // stored again naming this policy, so that a sweep keeps that content.
            let epoch = cache.sweep_epoch();
            let keys: Vec<ContentKey> = check.iter().map(|(_, k, _)| *k).collect();
            let mut reused = Vec::new();
            for ((i, _, rec), present) in check.into_iter().zip(cache.contents_present(&keys)) {
                if present
                    && rec
                        .stored_under
                        .is_some_and(|other| cache.is_served(&self.root_key, &other))
                {
                    // The record's own policy is served too (one root under two option
                    // sets): a sweep keeps both contents while both are served, and
                    // re-storing would make the two restarts rewrite each other's
                    // records every time.
                    self.count(Outcome::Indexed { read: false }, files[i].1.size);
                } else if present {
                    let rel = files[i].0.as_str();
                    cache.put(
                        &self.root_key,
                        rel,
                        rec.stored_under(self.fingerprint),
                        None,
                    );
                    reused.push(i);
                } else {
                    todo.push(i);
                }
            }
            if cache.swept_since(epoch) {
                // A sweep may have taken the content between the check and the records:
                // those files go through `index_one` (a hit, or redacted again).
                todo.extend(reused);
            } else {
                for i in reused {
                    self.count(Outcome::Indexed { read: false }, files[i].1.size);
                }
            }
        }
        if complete {
            // Recorded for a path the walk no longer finds (deleted while stopped).
            for rel in stale {
                if self.index.indexed_stat(&rel).is_none() {
                    cache.forget_file(&self.root_key, &rel);
                }
            }
        }
        todo.sort_unstable();
        todo
    }

    /// Whether the indexing pass keeps a file of `kind` with `stat` as metadata only,
    /// without reading it: not a regular file, over the per-file limit, or a kind the
    /// pass does not read (documents, legacy Office: [`ContentKind::is_indexed`]).
    fn never_read(&self, kind: ContentKind, stat: &StatKey) -> bool {
        !stat.is_regular() || stat.size > self.limits.max_raw_bytes_per_file || !kind.is_indexed()
    }

    fn index_one(&self, rel: &str, stat: &StatKey) -> Outcome {
        let kind = ContentKind::of_path(rel);
        if self.never_read(kind, stat) {
            return Outcome::Skipped;
        }
        // The cache was consulted for this file by `reuse_cached`; the load consults it
        // again (a tool call may have stored it since) and says whether it read. A torn
        // read is tried once more, as `load` does.
        let loaded = match self.load_listed(rel, kind) {
            Err(ViewError::ChangedDuringRead) => self.load_listed(rel, kind),
            other => other,
        };
        match loaded {
            Ok(loaded) => Outcome::Indexed { read: loaded.read },
            Err(ViewError::NotText)
            | Err(ViewError::FileByteLimit)
            | Err(ViewError::NotAFile)
            | Err(ViewError::Excluded) => Outcome::Skipped,
            Err(_) => Outcome::Failed,
        }
    }

    fn content_key(&self, hash: &[u8; 32], rel: &str) -> ContentKey {
        // The detectors read the path (file kind, lockfile exemptions), so with them on
        // the same bytes at another path are a different entry.
        cache::file_content_key(hash, &self.fingerprint, rel, self.engine.policy().detectors)
    }

    /// The current stat of `rel` once its path has no symlink, it is a regular file, and
    /// the index admits it (not excluded, not a link to a protected file).
    fn admitted_stat(&self, rel: &str) -> Result<StatKey, ViewError> {
        self.admit(rel, &fs::validate_components(&self.root, rel)?)
    }

    /// The checks of [`ServedRoot::admitted_stat`] on the metadata of `rel`, taken from
    /// its path or from the file opened there.
    fn admit(&self, rel: &str, meta: &std::fs::Metadata) -> Result<StatKey, ViewError> {
        let stat = StatKey::of(meta);
        if !stat.is_regular() {
            return Err(ViewError::NotAFile);
        }
        if !self.index.admitted(rel, false) || fs::protected::is_link_to_protected(meta) {
            return Err(ViewError::Excluded);
        }
        Ok(stat)
    }

    /// [`ServedRoot::admitted_stat`] within the per-file byte limit: the checks every
    /// content answer makes.
    fn servable_stat(&self, rel: &str) -> Result<StatKey, ViewError> {
        self.within_limit(self.admitted_stat(rel)?)
    }

    /// [`fs::read_verified`] of `rel` within the per-file byte limit: the path-based read
    /// of a file's raw bytes.
    fn read_verified(&self, rel: &str) -> Result<(Vec<u8>, StatKey), ViewError> {
        fs::read_verified(
            &fs::abs_path(&self.root, rel),
            self.limits.max_raw_bytes_per_file,
        )
    }

    fn within_limit(&self, stat: StatKey) -> Result<StatKey, ViewError> {
        if stat.size > self.limits.max_raw_bytes_per_file {
            return Err(ViewError::FileByteLimit);
        }
        Ok(stat)
    }

    /// The line count kept in `rel`'s file record, when that record is trusted for the
    /// file's current stat: `stat` answers from it without decoding the content. `None`
    /// when only a read can tell (no cache, no record, a changed or unsettled file, a
    /// file that is not text).
    fn recorded_lines(&self, rel: &str) -> Result<Option<u64>, ViewError> {
        let stat = self.servable_stat(rel)?;
        self.index.note(rel, stat);
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        let Some((rec, _)) = cache.get_file_and_content(&self.root_key, rel, |_| None) else {
            return Ok(None);
        };
        Ok(rec
            .trusted_for(&stat)
            .then_some(rec.text)
            .flatten()
            .filter(|info| self.decoding.reads(info.encoding))
            .map(|info| info.lines))
    }

    /// The redacted content of a file as it is on disk now (see the module doc). A file
    /// written in place while it was read (`File changed during read.`: a torn read; a
    /// rename over it is no change, `fs::read_verified`) is read once more, since the
    /// writer has normally finished by then, and the agent gets the new text instead of
    /// an error. A file that keeps changing still fails.
    fn load(&self, rel: &str) -> Result<Loaded, ViewError> {
        match self.load_once(rel) {
            Err(ViewError::ChangedDuringRead) => self.load_once(rel),
            other => other,
        }
    }

    fn load_once(&self, rel: &str) -> Result<Loaded, ViewError> {
        let stat = self.servable_stat(rel)?;
        self.load_checked(rel, stat, || self.read_verified(rel))
    }

    /// The indexing pass's load of a listed file of `kind`: the file is opened once, and
    /// the checks, the sniff of a file not text by its name, and the read all use that
    /// descriptor (the path route where `openat2` is unavailable). Binary content is
    /// recorded as such and answered `NotText`; a file over [`SNIFF_FIRST_ABOVE`] bytes
    /// is sniffed on its first page, so a large binary is not read whole.
    fn load_listed(&self, rel: &str, kind: ContentKind) -> Result<Loaded, ViewError> {
        let observed = now_ns();
        let opened = match fs::open_beneath(&self.root, rel) {
            Some(file) => Some(fs::OpenedFile::of(file?)?),
            None => None,
        };
        let stat = match &opened {
            Some(opened) => self.within_limit(self.admit(rel, opened.meta())?)?,
            None => self.servable_stat(rel)?,
        };
        // A small file is read whole and sniffed on the bytes read (`load_checked`
        // records a binary one the same way); a larger one is sniffed first.
        if kind.text_by_name().is_none() && (opened.is_none() || stat.size > SNIFF_FIRST_ABOVE) {
            // Binary in every mode: recorded from the prefix. Wide text this mode does not
            // read is loaded, which records its encoding for the modes that do.
            let binary = match &opened {
                Some(opened) => opened
                    .prefix(content::SNIFF_BYTES)
                    .and_then(|prefix| content::classify(&prefix))
                    .is_none(),
                None => content::classify_file(&fs::abs_path(&self.root, rel)).is_none(),
            };
            if binary {
                if let Some(cache) = &self.cache {
                    let settled = is_settled(&stat, observed, self.racy_window_ns);
                    let file = FileRecord::new(&stat, settled, None);
                    cache.put(&self.root_key, rel, file, None);
                }
                return Err(ViewError::NotText);
            }
        }
        match opened {
            Some(opened) => self.load_checked(rel, stat, || {
                opened.read_whole(self.limits.max_raw_bytes_per_file)
            }),
            None => self.load_checked(rel, stat, || self.read_verified(rel)),
        }
    }

    /// The rest of a load once `rel` passed the checks with `stat`: its content from the
    /// cache when its record is trusted for `stat`, else from the bytes `read` returns
    /// (with the stat after reading), redacted and stored.
    fn load_checked(
        &self,
        rel: &str,
        stat: StatKey,
        read: impl FnOnce() -> Result<(Vec<u8>, StatKey), ViewError>,
    ) -> Result<Loaded, ViewError> {
        self.index.note(rel, stat);
        if let Some(cache) = &self.cache
            && let Some((rec, content)) = cache.get_file_and_content(&self.root_key, rel, |rec| {
                rec.trusted_for(&stat)
                    .then_some(rec.text)
                    .flatten()
                    .filter(|info| self.decoding.reads(info.encoding))
                    .map(|info| self.content_key(&info.hash, rel))
            })
            && rec.trusted_for(&stat)
        {
            match (rec.text, content) {
                (None, _) => return Err(ViewError::NotText),
                (Some(info), _) if !self.decoding.reads(info.encoding) => {
                    return Err(ViewError::NotText);
                }
                (Some(info), Some(content)) => {
                    return Ok(Loaded {
                        content,
                        lines: info.lines,
                        read: false,
                    });
                }
                (Some(_), None) => {}
            }
        }
        let observed = now_ns();
        let (bytes, stat) = read()?;
        self.counters.content_reads.fetch_add(1, Ordering::Relaxed);
        self.index.note(rel, stat);
        let settled = is_settled(&stat, observed, self.racy_window_ns);
        let Some(encoding) = content::classify(&bytes) else {
            if let Some(cache) = &self.cache {
                cache.put(
                    &self.root_key,
                    rel,
                    FileRecord::new(&stat, settled, None),
                    None,
                );
            }
            return Err(ViewError::NotText);
        };
        let hash = cache::content_hash(&self.hash_key, &bytes);
        let lines = content::decoded_lines(&bytes, encoding);
        let info = TextInfo {
            hash,
            lines,
            encoding,
        };
        if !self.decoding.reads(encoding) {
            // Wide text under strict or balanced: refused like binary, but recorded as
            // what it is, so that the same root served in code mode can reuse the record.
            if let Some(cache) = &self.cache {
                let file = FileRecord::new(&stat, settled, Some(info));
                cache.put(&self.root_key, rel, file, None);
            }
            return Err(ViewError::NotText);
        }
        let key = self.content_key(&hash, rel);
        let epoch = self.cache.as_ref().map_or(0, |c| c.sweep_epoch());
        let known = self.cache.as_ref().and_then(|c| c.get_content(&key));
        let (content, is_new) = match known {
            Some(content) => (content, false),
            None => {
                let record = self.redact_record(&bytes, encoding, rel, is_prose_path(rel))?;
                (Arc::new(record), true)
            }
        };
        drop(bytes);
        if let Some(cache) = &self.cache {
            let file = FileRecord::new(&stat, settled, Some(info)).stored_under(self.fingerprint);
            cache.put(
                &self.root_key,
                rel,
                file,
                is_new.then(|| (key, content.clone())),
            );
            if !is_new && cache.swept_since(epoch) {
                // Found before a sweep that no record named it yet: store it again.
                cache.put(&self.root_key, rel, file, Some((key, content.clone())));
            }
        }
        Ok(Loaded {
            content,
            lines,
            read: true,
        })
    }

    /// The redacted Markdown of document `rel` (spec 8), from the cache when its record
    /// is trusted for the current stat, else read, extracted ([`documents::extract`]) and
    /// redacted now. The key is the raw bytes' hash with [`documents::EXTRACTOR_VERSION`]
    /// under the policy fingerprint, so the same document is extracted once. A path is
    /// extracted by one thread at a time (the backlog's claim): a read that meets the
    /// pre-extraction pass on it waits, then finds the cache filled (or, for a version
    /// changed meanwhile, extracts it). A settled version's own failure is answered again
    /// without a worker ([`Backlog::remembered_failure`]).
    fn load_document(
        &self,
        rel: &str,
        format: fs::DocumentFormat,
    ) -> Result<Arc<ContentRecord>, ViewError> {
        if let (_, Some(content)) = self.cached_document(rel)? {
            return Ok(content);
        }
        let _claim = self.backlog.claim(rel);
        let (stat, hit) = self.cached_document(rel)?;
        if let Some(content) = hit {
            return Ok(content);
        }
        if let Some(failure) = self.backlog.remembered_failure(rel, &stat) {
            return Err(failure);
        }
        let observed = now_ns();
        let (bytes, stat) = fs::read_verified(
            &fs::abs_path(&self.root, rel),
            self.limits
                .max_raw_bytes_per_file
                .min(documents::MAX_INPUT_BYTES),
        )?;
        self.counters.content_reads.fetch_add(1, Ordering::Relaxed);
        self.index.note(rel, stat);
        let settled = is_settled(&stat, observed, self.racy_window_ns);
        let raw = cache::content_hash(&self.hash_key, &bytes);
        let mut versioned = raw.to_vec();
        versioned.extend_from_slice(b"redctx document");
        versioned.extend_from_slice(&documents::EXTRACTOR_VERSION.to_le_bytes());
        let hash = cache::content_hash(&self.hash_key, &versioned);
        let key = self.content_key(&hash, rel);
        let known = self.cache.as_ref().and_then(|c| c.get_content(&key));
        let (content, lines, is_new) = match known {
            Some(content) => {
                let lines =
                    content::decoded_lines(content.preserved.text.as_bytes(), Encoding::Utf8);
                (content, lines, false)
            }
            None => {
                self.counters.extractions.fetch_add(1, Ordering::Relaxed);
                let markdown = match documents::extract(format, &bytes, documents::DEADLINE) {
                    Ok(markdown) => markdown,
                    Err(documents::DocError::Cancelled) => {
                        return Err(documents::DocError::Cancelled.into());
                    }
                    Err(err) => {
                        // A deadline met at low priority may be the machine's load: the
                        // next read tries again. Any other failure of a settled version,
                        // a tool call's deadline included, is answered again without a
                        // worker (a document that takes 15 s once takes them each time).
                        let retry = err == documents::DocError::Deadline
                            && crate::detectors::is_background_thread();
                        self.backlog
                            .record(rel, stat, Some(err.into()), settled && !retry);
                        return Err(err.into());
                    }
                };
                drop(bytes);
                let lines = content::decoded_lines(markdown.as_bytes(), Encoding::Utf8);
                // A document's text is prose, whatever its name: people and
                // organisations are named in it as in Markdown notes.
                let record = self.redact_record(markdown.as_bytes(), Encoding::Utf8, rel, true)?;
                (Arc::new(record), lines, true)
            }
        };
        if let Some(cache) = &self.cache {
            let info = TextInfo {
                hash,
                lines,
                encoding: Encoding::Utf8,
            };
            let file = FileRecord::new(&stat, settled, Some(info)).stored_under(self.fingerprint);
            cache.put(
                &self.root_key,
                rel,
                file,
                Some((key, content.clone())).filter(|_| is_new),
            );
            self.backlog.record(rel, stat, None, settled);
        }
        Ok(content)
    }

    /// The checks of a document read on its current stat, and its cached extraction
    /// when the file record is trusted for that stat.
    fn cached_document(
        &self,
        rel: &str,
    ) -> Result<(StatKey, Option<Arc<ContentRecord>>), ViewError> {
        let stat = self.admitted_stat(rel)?;
        // The reference checks the document cap on the stat, before the read's budget.
        if stat.size > documents::MAX_INPUT_BYTES {
            return Err(documents::DocError::InputLimit.into());
        }
        if stat.size > self.limits.max_raw_bytes_per_file {
            return Err(ViewError::FileByteLimit);
        }
        self.index.note(rel, stat);
        if let Some(cache) = &self.cache
            && let Some((rec, Some(content))) =
                cache.get_file_and_content(&self.root_key, rel, |rec| {
                    rec.trusted_for(&stat)
                        .then_some(rec.text)
                        .flatten()
                        .map(|info| self.content_key(&info.hash, rel))
                })
            && rec.trusted_for(&stat)
        {
            self.backlog.record(rel, stat, None, true);
            return Ok((stat, Some(content)));
        }
        Ok((stat, None))
    }

    /// Redacts `rel` as it is on disk now and tells `record` each placeholder made and
    /// the raw text it replaced: the one read that hands raw values out, for
    /// rehydration. Nothing is cached or counted as served content; the caller holds the
    /// values for one call.
    pub fn record_raw(&self, rel: &str, record: &mut dyn Record) -> Result<(), ViewError> {
        self.servable_stat(rel)?;
        let (bytes, _) = self.read_verified(rel)?;
        let Some(encoding) = content::text_encoding(&bytes, self.decoding) else {
            return Err(ViewError::NotText);
        };
        let options = RedactOptions {
            preserve_line_count: false,
            prose: is_prose_path(rel),
            path: rel,
        };
        let text = self.decoding.decode(&bytes, encoding);
        self.engine
            .redact_recording(&text, options, record)
            .map_err(|_| ViewError::Internal)?;
        // The line-keeping variant may show placeholders of its own run
        // (`Engine::redact_variants`); the plain run's spellings come first.
        let keep = RedactOptions {
            preserve_line_count: true,
            ..options
        };
        self.engine
            .redact_recording(&text, keep, record)
            .map_err(|_| ViewError::Internal)?;
        Ok(())
    }

    /// The start of `rel` as it is on disk now, raw, for `redctx discover` (the operator's
    /// command): at most `max` bytes of a text file (UTF-8, BOM dropped, invalid bytes
    /// replaced) or `max` characters of a document's extracted Markdown. Returns the
    /// sample, the raw bytes it charges (the sample's, or the whole document's), whether
    /// the file was longer, and the SHA-256 of the whole file. Nothing is cached.
    pub fn raw_sample(&self, rel: &str, max: usize) -> Result<RawSample, ViewError> {
        self.servable_stat(rel)?;
        let (bytes, _) = self.read_verified(rel)?;
        let sha256 = crate::discover::sha256_hex(&bytes);
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if let ContentKind::Document(format) = ContentKind::of_name(name) {
            if !self.documents {
                return Err(ViewError::NotText);
            }
            let markdown = documents::extract(format, &bytes, documents::DEADLINE)?;
            let end = markdown
                .char_indices()
                .nth(max)
                .map_or(markdown.len(), |(at, _)| at);
            return Ok(RawSample {
                truncated: end < markdown.len(),
                text: markdown[..end].to_owned(),
                charged: bytes.len() as u64,
                sha256,
            });
        }
        if content::text_encoding(&bytes, self.decoding).is_none() {
            return Err(ViewError::NotText);
        }
        let truncated = bytes.len() > max;
        let head = &bytes[..bytes.len().min(max)];
        let body = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
        Ok(RawSample {
            text: String::from_utf8_lossy(body).into_owned(),
            charged: head.len() as u64,
            truncated,
            sha256,
        })
    }

    /// The cached record of `bytes` as the text of `rel`; `prose` decides code mode's
    /// name heuristics.
    fn redact_record(
        &self,
        bytes: &[u8],
        encoding: Encoding,
        rel: &str,
        prose: bool,
    ) -> Result<ContentRecord, ViewError> {
        let text = self.decoding.decode(bytes, encoding);
        let options = RedactOptions {
            preserve_line_count: true,
            prose,
            path: rel,
        };
        // The plain variant can only differ when a placeholder kept line breaks; the
        // two hide the same values (`Engine::redact_variants`).
        let (preserved, plain) = self
            .engine
            .redact_variants(&text, options)
            .map_err(view_error)?;
        let plain = match plain {
            Some(plain) => PlainVariant::Different(StoredText {
                text: Arc::from(plain.text),
                counts: plain.counts,
            }),
            None => PlainVariant::SameText {
                counts: preserved.counts.clone(),
            },
        };
        self.counters.redactions.fetch_add(1, Ordering::Relaxed);
        Ok(ContentRecord {
            preserved: StoredText {
                text: Arc::from(preserved.text),
                counts: preserved.counts,
            },
            plain,
        })
    }

    /// A name through the path redactor, memoized in `map`.
    fn redacted_path(
        &self,
        map: &Mutex<HashMap<Box<str>, RedactedPath>>,
        value: &str,
    ) -> RedactedPath {
        if let Some(found) = map.lock().ok().and_then(|m| m.get(value).cloned()) {
            return found;
        }
        match self.redact_path_value(value) {
            Ok(out) => {
                if let Ok(mut m) = map.lock() {
                    if m.len() >= MAX_CACHED_PATHS {
                        m.clear();
                    }
                    m.insert(value.into(), out.clone());
                }
                out
            }
            Err(stand_in) => stand_in,
        }
    }

    /// [`RootView::path`] for a caller that keeps the path itself: the memo's value if it
    /// holds one, else redacted without adding it (a whole-root retrieve would double
    /// every indexed file's path in memory).
    fn path_unmemoized(&self, rel: &str) -> RedactedPath {
        match self.paths.get(rel) {
            Some(found) => found,
            None => self
                .redact_path_value(rel)
                .unwrap_or_else(|stand_in| stand_in),
        }
    }

    /// `value` through the path redactor, with its id. `Err` is what to answer when the
    /// engine failed, not to be memoized: the opaque id stands in for the text, never
    /// the raw value.
    fn redact_path_value(&self, value: &str) -> Result<RedactedPath, RedactedPath> {
        let id: Arc<str> = Arc::from(self.engine.path_id(value));
        match self.engine.redact_path(value) {
            Ok(redacted) => Ok(RedactedPath {
                id,
                text: Arc::from(redacted.text),
                counts: redacted.counts,
            }),
            Err(_) => Err(RedactedPath {
                text: id.clone(),
                id,
                counts: Counts::default(),
            }),
        }
    }
}

enum Outcome {
    Indexed { read: bool },
    Skipped,
    Failed,
}

/// A search's screen of this root's files; asks for a rebuild of the index when the
/// search met too many files changed since it was built.
struct RootScreen<'a> {
    root: &'a ServedRoot,
    screen: Screen,
    stats: fs::StatBatch,
    /// Files in scope the index could not judge (changed since, or new).
    unknown: Tally,
    judged: Tally,
    /// Files answered without a read (added to the root's counter once, on drop).
    unread: Tally,
}

impl FileScreen for RootScreen<'_> {
    fn screen(&self, file: &Entry) -> Screened<'_> {
        self.judged.add(1);
        let verdict = self.screen.verdict(&self.stats, &file.rel, file.stat);
        if matches!(verdict, Verdict::RuledOut(_) | Verdict::NotText) {
            self.unread.add(1);
        }
        match verdict {
            Verdict::RuledOut(counts) => Screened::NoMatch(counts),
            Verdict::NotText => Screened::NotText,
            Verdict::Candidate => Screened::Read,
            Verdict::Unknown => {
                self.unknown.add(1);
                Screened::Read
            }
        }
    }
}

/// One retrieve query's passage postings over this root's search index.
struct RootPassages<'a> {
    root: &'a ServedRoot,
    screen: PassageScreen,
    stats: fs::StatBatch,
    /// Files answered without a read (added to the root's counter once, on drop).
    unread: Tally,
}

impl PassageIndex for RootPassages<'_> {
    fn locate(&self, file: &Entry) -> Option<(&Counts, &RedactedPath, Located)> {
        // The slot keeps the path it is given: the root's memo need not hold it too.
        let path = || self.root.path_unmemoized(&file.rel);
        let (counts, path, located) =
            self.screen
                .locate(&self.stats, &file.rel, file.stat, path)?;
        self.unread.add(1);
        Some((counts, path, located))
    }

    fn hits(&self, located: &[(Located, u32)]) -> Option<IndexedHits> {
        self.screen.hits(located)
    }

    fn text(&self, file: &Entry) -> Option<Arc<str>> {
        let record = self.screen.record(&file.rel)?;
        let content = self.root.indexed_content(&file.rel, record)?;
        Some(content.preserved.text.clone())
    }

    fn mismatch(&self) {
        let counters = &self.root.counters;
        counters.passage_mismatches.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(root = %self.root.root.display(), "passage index disagreed with the text; retrieve scanned instead");
    }
}

impl Drop for RootScreen<'_> {
    fn drop(&mut self) {
        self.root.count_unread(&self.unread);
        if too_stale(self.unknown.sum() as usize, self.judged.sum() as usize) {
            self.root.search_wake.request();
        }
    }
}

impl Drop for RootPassages<'_> {
    fn drop(&mut self) {
        self.root.count_unread(&self.unread);
    }
}

impl ServedRoot {
    /// Adds the files one call answered from the search index without a read.
    fn count_unread(&self, unread: &Tally) {
        let counters = &self.counters;
        counters
            .screened_out
            .fetch_add(unread.sum(), Ordering::Relaxed);
    }
}

impl RootView for ServedRoot {
    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn search_screen(&self, plan: &GramPlan) -> Option<Box<dyn FileScreen + '_>> {
        let screen = self.search_index()?.screen(self.cache.as_deref()?, plan)?;
        Some(Box::new(RootScreen {
            root: self,
            screen,
            stats: fs::StatBatch::new(&self.root),
            unknown: Tally::default(),
            judged: Tally::default(),
            unread: Tally::default(),
        }))
    }

    fn passage_index(&self, terms: &[String]) -> Option<Box<dyn PassageIndex + '_>> {
        let screen = self
            .search_index()?
            .passage_screen(self.cache.as_deref()?, terms)?;
        Some(Box::new(RootPassages {
            root: self,
            screen,
            stats: fs::StatBatch::new(&self.root),
            unread: Tally::default(),
        }))
    }

    fn limits(&self) -> &Limits {
        &self.limits
    }

    fn resolve(&self, input: &str) -> Result<Entry, ViewError> {
        self.index.resolve(input)
    }

    fn children(&self, dir: &Entry) -> Result<Vec<Entry>, ViewError> {
        if dir.kind != EntryKind::Dir {
            return Err(ViewError::NotADirectory);
        }
        self.index.children(&dir.rel)
    }

    fn watch_sync(&self) -> Option<Synced> {
        let sync = self.watch_sync.read().ok()?.clone()?;
        let synced = sync.sync(WATCH_SYNC_TIMEOUT)?;
        self.counters.synced_walks.fetch_add(1, Ordering::Relaxed);
        Some(synced)
    }

    fn synced_children(&self, dir: &Entry, _proof: &Synced) -> Result<Arc<[Entry]>, ViewError> {
        if dir.kind != EntryKind::Dir {
            return Err(ViewError::NotADirectory);
        }
        let fresh = self
            .watch_sync
            .read()
            .ok()
            .and_then(|sync| sync.as_ref().map(|sync| sync.lists_fresh(&dir.rel)))
            .unwrap_or(false);
        match fresh
            .then(|| self.index.indexed_children(&dir.rel))
            .flatten()
        {
            Some(children) => Ok(children),
            None => self.index.children(&dir.rel).map(Arc::from),
        }
    }

    /// From the index ([`Index::members`]: ids kept in the tree, no per-file `lstat`),
    /// names from the memo under one lock per directory; a name seen for the first time
    /// is redacted after the lock is released.
    fn tree_children(&self, dir: &Entry) -> Result<Vec<TreeRow>, ViewError> {
        if dir.kind != EntryKind::Dir {
            return Err(ViewError::NotADirectory);
        }
        let mut memo = None;
        let mut missing: Vec<(usize, Box<str>)> = Vec::new();
        let mut at = 0;
        let mut rows = self.index.members(&dir.rel, |child| {
            let known = memo
                .get_or_insert_with(|| self.names.lock().ok())
                .as_ref()
                .and_then(|names| names.get(child.name).cloned());
            if known.is_none() {
                missing.push((at, child.name.into()));
            }
            at += 1;
            TreeRow {
                id: child.id,
                name: known.unwrap_or_default(),
                dir: child.stat.is_dir().then(|| Entry {
                    rel: Arc::from(child.rel),
                    kind: EntryKind::Dir,
                    size: child.stat.size,
                    stat: None,
                    text: None,
                }),
            }
        })?;
        drop(memo);
        for (i, name) in missing {
            rows[i].name = self.name(&name);
        }
        Ok(rows)
    }

    fn is_text(&self, file: &Entry) -> bool {
        if file.kind == EntryKind::Dir {
            return false;
        }
        // Legacy .doc/.ppt files are sniffed like any other file (stat counts their
        // lines); renderers refuse to print them with their own message. Documents are
        // readable exactly when extraction is on (the reference's `is_readable`).
        match ContentKind::of_name(file.name()) {
            ContentKind::Document(_) => return self.documents,
            kind => {
                if let Some(text) = kind.text_by_name() {
                    return text;
                }
            }
        }
        // Decided by the index for the stat the entry carries (a listing from the index).
        if let (Some(stat), Some(text)) = (file.stat, file.text) {
            return stat.is_regular() && text;
        }
        let path = fs::abs_path(&self.root, &file.rel);
        // The stat the walk just took, if it handed this entry out; else one now.
        let stat = match file.stat {
            Some(stat) => stat,
            None => match std::fs::symlink_metadata(&path) {
                Ok(meta) => StatKey::of(&meta),
                Err(_) => return false,
            },
        };
        if !stat.is_regular() {
            return false;
        }
        self.index.note(&file.rel, stat);
        if let Some(flag) = self.index.text_flag(&file.rel, &stat) {
            return flag;
        }
        if let Some(cache) = &self.cache
            && let Some(rec) = cache.get_file(&self.root_key, &file.rel)
            && rec.trusted_for(&stat)
        {
            let flag = rec.text.is_some_and(|t| self.decoding.reads(t.encoding));
            self.index.set_text_flag(&file.rel, &stat, flag);
            return flag;
        }
        let flag = content::classify_file(&path).is_some_and(|e| self.decoding.reads(e));
        self.index.set_text_flag(&file.rel, &stat, flag);
        flag
    }

    fn content(&self, file: &Entry, preserve_line_count: bool) -> Result<RedactedDoc, ViewError> {
        let content = match ContentKind::of_name(file.name()) {
            ContentKind::Document(format) if self.documents => {
                match self.load_document(&file.rel, format) {
                    Err(ViewError::ChangedDuringRead) => self.load_document(&file.rel, format),
                    other => other,
                }?
            }
            kind => {
                if let Some(refusal) = kind.refusal() {
                    return Err(refusal);
                }
                self.load(&file.rel)?.content
            }
        };
        let (text, counts) = content.variant(preserve_line_count);
        Ok(RedactedDoc {
            text: text.clone(),
            counts: counts.clone(),
        })
    }

    fn stat_line_count(&self, file: &Entry) -> Result<u64, ViewError> {
        if let Some(lines) = self.recorded_lines(&file.rel)? {
            return Ok(lines);
        }
        match self.load(&file.rel) {
            Ok(loaded) => Ok(loaded.lines),
            Err(ViewError::NotText) => {
                let path = fs::abs_path(&self.root, &file.rel);
                let (bytes, _) = fs::read_verified(&path, self.limits.max_raw_bytes_per_file)?;
                Ok(content::count_lines(&bytes))
            }
            Err(err) => Err(err),
        }
    }

    fn path(&self, rel: &str) -> RedactedPath {
        if let Some(found) = self.paths.get(rel) {
            return found;
        }
        match self.redact_path_value(rel) {
            Ok(found) => {
                self.paths.insert(rel, found.clone());
                found
            }
            Err(stand_in) => stand_in,
        }
    }

    fn name(&self, name: &str) -> RedactedPath {
        self.redacted_path(&self.names, name)
    }
}

/// A plugged detector's refusal keeps its sentence; other engine failures are internal.
fn view_error(e: crate::engine::EngineError) -> ViewError {
    match e {
        crate::engine::EngineError::Plugged(p) => ViewError::Detector(p),
        _ => ViewError::Internal,
    }
}
