//! The persistent cache of redacted content: one redb database per user state dir.
//!
//! Tables:
//! - `content`: (keyed blake3 of the exact raw bytes, policy fingerprint, prose flag) →
//!   [`ContentRecord`] (redacted text and counts; the non-line-preserving text only when
//!   it differs), zstd-compressed. Identical files under one policy are redacted once.
//!   Stored under a 32-byte digest of the [`ContentKey`] plus a chunk number: a value is
//!   split into chunks of [`CHUNK_BYTES`], each of which fills one 4 KiB redb leaf page on
//!   its own, because redb stores a value larger than a page in a leaf of the next power
//!   of two pages (a 5 KB value takes 8 KB) and that rounding cost a third of the file.
//! - `files`: (root key, raw relative path) → [`FileRecord`] (the stat the content was
//!   read at, the content hash, the line count).
//! - `gram_heads`, `grams`: the search index of each root (grams of redacted text; see
//!   `grams.rs`).
//! - `meta`: the cache format number and the count of file-record changes since the last
//!   sweep that may have left a content record unreferenced (`orphans`).
//!
//! Invariants: raw content is never stored (only redacted text and a keyed hash of the raw
//! bytes, keyed by the policy salt so the file cannot confirm guesses of short secrets);
//! the content key carries the policy fingerprint, so one policy never reads another's
//! text; anything that does not decode is a miss, and a database that cannot be opened is
//! deleted and rebuilt. The open database holds redb's file lock, which makes a second
//! daemon on the same state dir fail with [`CacheError::AlreadyOpen`].
//!
//! Writes go through one writer thread that commits batches (up to
//! [`MAX_BATCH_OPS`] operations, [`LINGER`] of quiet or [`MAX_LINGER`] after the first) with
//! `Durability::Immediate`: each commit is fsynced, so after `kill -9` the database holds
//! exactly the committed batches (redb is copy-on-write with a checksummed commit slot;
//! an interrupted commit is rolled back on the next open). Batching keeps the fsync count
//! low during bulk indexing, and a lost uncommitted batch only costs re-redaction.
//!
//! Content records are referenced or swept: a file record names its content by (content
//! hash, policy fingerprint, path), so an edit, a policy change or a deletion leaves the
//! old content behind. The writer counts those changes (in the commit that makes them,
//! so the count survives a restart) and, when a pass asks for it ([`Cache::request_sweep`])
//! or the count grows past [`SWEEP_AFTER_ORPHANS`], runs a sweep in one write transaction
//! of its own: it derives the live content keys from every root's file records and from
//! the records queued but not committed, and removes every content chunk whose key is not
//! among them. Content kept only because another policy serves the record's root (a
//! policy change whose new pass ended before the old snapshot was dropped) is swept once
//! that policy stops being served. Nothing else writes meanwhile, and `kill -9` leaves the
//! database before or after the sweep. A lookup that found content just before a sweep
//! removed it notices ([`Cache::swept_since`]) and stores the content again.

mod grams;
mod layout;
pub mod record;
mod sweep;
mod writer;

use crate::budget::ByteBudget;
use crate::engine::Policy;
pub use grams::{GRAM_CHUNK_BYTES, GramHead, GramPart, IndexBytes};
pub use layout::{
    ContentKey, content_hash, content_hash_key, content_key, file_content_key, policy_fingerprint,
    root_key,
};
use layout::{
    DB_CACHE_BYTES, chunk_key, chunk_key_at, content_digest, file_key, read_chunks, remove_chunks,
};
pub use record::{ContentRecord, FileRecord, PlainVariant, StoredText, TextInfo};
use redb::{Database, DatabaseError, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
pub use sweep::SweepReport;
use sweep::{SweepControl, Sweeper, content_ref};
use writer::{Op, Pending, writer_loop};

const CONTENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("content");
const FILES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("files");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// External detectors' findings: (text hash, detector identity) → spans.
const FINDINGS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("findings");

/// Layout version of the whole database; a mismatch rebuilds it. (2: file records say
/// under which policy their content was stored; 3: zstd content in page-sized chunks
/// under digest keys; 4: text records name their encoding.)
pub const CACHE_FORMAT: u64 = 4;

/// Bump whenever the redaction engine's output for the same policy changes, so older
/// cached text is never served. Part of the policy fingerprint.
pub const ENGINE_EPOCH: u32 = 1;

/// `meta` key of the count of file-record changes since the last sweep that may have left
/// content unreferenced.
const META_ORPHANS: &str = "orphans";

/// A sweep runs by itself once this many file-record changes (an edit, a record re-stored
/// under another policy, a deleted file) may have left content unreferenced since the
/// last one, or a quarter of the file records of that sweep if that is more: a sweep
/// reads the whole database, so its cost stays a fixed share of the writes that made it
/// due. Cold indexing (new records only) never makes one due.
pub const SWEEP_AFTER_ORPHANS: u64 = 10_000;

/// File name of the database inside the state dir.
pub const CACHE_FILE: &str = "cache.redb";

/// Bytes the writer's queue holds at most (records sent and not yet committed, with the
/// decoded copies readers see meanwhile): a producer waits for room
/// ([`crate::budget`]), so a disk slower than the redaction, or a run of large files,
/// cannot grow the daemon's memory. Twice [`MAX_BATCH_BYTES`]: one batch commits while
/// the next fills.
pub const WRITE_QUEUE_BYTES: u64 = 32 << 20;
/// A writer commit holds at most this many operations…
pub const MAX_BATCH_OPS: usize = 2048;
/// …or this many queued bytes ([`WRITE_QUEUE_BYTES`])…
pub const MAX_BATCH_BYTES: usize = 16 << 20;
/// …and commits once no operation arrived for this long…
pub const LINGER: Duration = Duration::from_millis(20);
/// …or this long after the first, whichever comes first. Bulk indexing sends operations
/// without pause, so its commits (each fsynced, each with a fixed cost in redb) come
/// about four times a second instead of fifty; a single edit is committed after
/// [`LINGER`] of quiet. Readers see queued records at once either way.
pub const MAX_LINGER: Duration = Duration::from_millis(250);
/// While a batch is open the writer polls its queue this often rather than blocking on
/// it, so senders never have to wake it (a flush or stop waits at most this long more).
pub const POLL: Duration = Duration::from_millis(2);

/// Largest chunk of a content value: one chunk with its key exactly fills a 4 KiB redb
/// leaf page (page minus the leaf header, the two length fields and the key).
pub const CHUNK_BYTES: usize = 4096 - 4 - 8 - CONTENT_DB_KEY;

/// Bytes of a content table key: digest of the [`ContentKey`] and chunk number (u32 BE).
const CONTENT_DB_KEY: usize = 36;

/// Failures of opening the cache. Messages carry no paths.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Another process (or this one) already has the database open: a daemon is
    /// already running on this state dir.
    #[error("Another redctx daemon is already using this state directory.")]
    AlreadyOpen,
    #[error("Could not prepare the state directory: {0}")]
    StateDir(std::io::ErrorKind),
    #[error("Could not open the cache database.")]
    Open,
}

/// Counters of the cache's life, for `status` and tests.
#[derive(Debug, Default)]
pub struct CacheStats {
    pub commits: AtomicU64,
    pub committed_ops: AtomicU64,
    pub write_errors: AtomicU64,
    pub read_errors: AtomicU64,
    /// Records that did not decode (treated as misses and overwritten).
    pub decode_errors: AtomicU64,
    /// The database was deleted and recreated when opening.
    pub rebuilt_on_open: AtomicBool,
    /// Sweeps of unreferenced content that committed.
    pub sweeps: AtomicU64,
    /// Content records (whole values, not chunks) those sweeps removed.
    pub swept_records: AtomicU64,
}

fn findings_key(hash: &[u8; 32], identity: &[u8; 32]) -> [u8; 64] {
    let mut key = [0u8; 64];
    key[..32].copy_from_slice(hash);
    key[32..].copy_from_slice(identity);
    key
}

/// The open cache. Share one `Arc<Cache>` between all roots of a daemon.
pub struct Cache {
    /// `None` once [`Cache::shutdown`] closed the database (every read is then a miss).
    db: RwLock<Option<Arc<Database>>>,
    path: PathBuf,
    tx: Option<Sender<Op>>,
    /// Bytes of the puts in `tx` and `pending` ([`WRITE_QUEUE_BYTES`]).
    queue: Arc<ByteBudget>,
    pending: Arc<Pending>,
    seq: AtomicU64,
    writer: Mutex<Option<JoinHandle<()>>>,
    stats: Arc<CacheStats>,
    sweep: Arc<SweepControl>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache").finish_non_exhaustive()
    }
}

fn prepare_state_dir(state_dir: &Path) -> Result<(), CacheError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if !state_dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(|e| CacheError::StateDir(e.kind()))?;
    }
    let meta = std::fs::metadata(state_dir).map_err(|e| CacheError::StateDir(e.kind()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(state_dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| CacheError::StateDir(e.kind()))?;
    }
    Ok(())
}

/// Opens (creating) the database and checks its layout; `Ok(None)` means "unusable,
/// rebuild it".
fn try_open(path: &Path) -> Result<Option<Database>, CacheError> {
    let db = match Database::builder()
        .set_cache_size(DB_CACHE_BYTES)
        .create(path)
    {
        Ok(db) => db,
        Err(DatabaseError::DatabaseAlreadyOpen) | Err(DatabaseError::LockProtocolMismatch) => {
            return Err(CacheError::AlreadyOpen);
        }
        Err(err) => {
            tracing::warn!(error = %err, "cache database unusable; rebuilding it");
            return Ok(None);
        }
    };
    let ready = (|| -> Result<bool, redb::Error> {
        let mut w = db.begin_write()?;
        w.set_durability(Durability::Immediate)?;
        let ok = {
            let mut meta = w.open_table(META)?;
            let format = meta.get("format")?.map(|g| g.value());
            let ok = match format {
                Some(CACHE_FORMAT) => true,
                Some(_) => false,
                None => {
                    meta.insert("format", CACHE_FORMAT)?;
                    true
                }
            };
            if ok && meta.get(META_ORPHANS)?.is_none() {
                // A cache written before sweeps were counted may hold unreferenced
                // content: the first pass that asks sweeps it. A new one holds none.
                meta.insert(META_ORPHANS, u64::from(format.is_some()))?;
            }
            ok
        };
        w.open_table(CONTENT)?;
        w.open_table(FILES)?;
        w.open_table(grams::GRAM_HEADS)?;
        w.open_table(grams::GRAMS)?;
        w.open_table(FINDINGS)?;
        w.commit()?;
        Ok(ok)
    })();
    match ready {
        Ok(true) => Ok(Some(db)),
        Ok(false) => {
            tracing::info!("cache database has another format; rebuilding it");
            Ok(None)
        }
        Err(err) => {
            tracing::warn!(error = %err, "cache database unreadable; rebuilding it");
            Ok(None)
        }
    }
}

impl Cache {
    /// The state directory the cache lives in (private to the user; see
    /// [`Cache::open`]).
    pub fn state_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Opens `<state_dir>/cache.redb` (the dir is created 0700), rebuilding the database
    /// when it is corrupt, from another format, or otherwise unusable.
    pub fn open(state_dir: &Path) -> Result<Cache, CacheError> {
        prepare_state_dir(state_dir)?;
        let path = state_dir.join(CACHE_FILE);
        let stats = Arc::new(CacheStats::default());
        let db = match try_open(&path)? {
            Some(db) => db,
            None => {
                stats.rebuilt_on_open.store(true, Ordering::Relaxed);
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(CacheError::StateDir(e.kind())),
                }
                try_open(&path)?.ok_or(CacheError::Open)?
            }
        };
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        }
        let orphans = (|| -> Result<u64, redb::Error> {
            let r = db.begin_read()?;
            Ok(r.open_table(META)?
                .get(META_ORPHANS)?
                .map_or(0, |g| g.value()))
        })()
        .unwrap_or(1);
        let db = Arc::new(db);
        let pending = Arc::new(Pending::default());
        let sweep = Arc::new(SweepControl {
            epoch: AtomicU64::new(0),
            after: AtomicU64::new(SWEEP_AFTER_ORPHANS),
            serving: Mutex::new(Vec::new()),
        });
        let (tx, rx) = mpsc::channel();
        let writer = {
            let (db, pending, stats) = (db.clone(), pending.clone(), stats.clone());
            let control = sweep.clone();
            std::thread::Builder::new()
                .name("redctx-cache-writer".into())
                .spawn(move || writer_loop(&db, &rx, &pending, &stats, &control, orphans))
                .map_err(|_| CacheError::Open)?
        };
        Ok(Cache {
            db: RwLock::new(Some(db)),
            path,
            tx: Some(tx),
            queue: ByteBudget::new(WRITE_QUEUE_BYTES),
            pending,
            seq: AtomicU64::new(1),
            writer: Mutex::new(Some(writer)),
            stats,
            sweep,
        })
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Life counters.
    pub fn stats(&self) -> &CacheStats {
        &self.stats
    }

    /// The most bytes the writer's queue held at once since the last call
    /// ([`WRITE_QUEUE_BYTES`] at most, or one record larger than that alone).
    pub fn take_queue_peak(&self) -> u64 {
        self.queue.take_peak()
    }

    /// The open database, unless the cache was shut down.
    fn reader(&self) -> Option<Arc<Database>> {
        self.db.read().ok().and_then(|db| db.clone())
    }

    /// Commits everything queued, stops the writer and closes the database, so the
    /// next start opens it without redb's repair pass (which a file left open costs:
    /// a walk of the whole database). Call once when the daemon stops; later reads are
    /// misses and later writes are dropped.
    pub fn shutdown(&self) {
        let (tx, rx) = mpsc::channel();
        self.send(Op::Stop(tx));
        let _ = rx.recv();
        if let Some(writer) = self.writer.lock().ok().and_then(|mut w| w.take()) {
            let _ = writer.join();
        }
        if let Ok(mut db) = self.db.write() {
            db.take();
        }
    }

    fn send(&self, op: Op) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(op);
        }
    }

    fn read_value(&self, table: TableDefinition<&[u8], &[u8]>, key: &[u8]) -> Option<Vec<u8>> {
        let db = self.reader()?;
        let found = (|| -> Result<Option<Vec<u8>>, redb::Error> {
            let r = db.begin_read()?;
            let t = r.open_table(table)?;
            Ok(t.get(key)?.map(|g| g.value().to_vec()))
        })();
        self.settle(found)
    }

    /// The file record of `rel` under a root, if any.
    pub fn get_file(&self, root: &[u8; 32], rel: &str) -> Option<FileRecord> {
        let key = file_key(root, rel);
        if let Some((_, rec)) = self.pending.files.lock().ok()?.get(&key) {
            return Some(*rec);
        }
        let bytes = self.read_value(FILES, &key)?;
        let rec = record::decode::<FileRecord>(&bytes);
        if rec.is_none() {
            self.stats.decode_errors.fetch_add(1, Ordering::Relaxed);
            self.send(Op::DeleteFile(key));
        }
        rec
    }

    /// The content record of a key, if any.
    pub fn get_content(&self, key: &ContentKey) -> Option<Arc<ContentRecord>> {
        if let Some((_, rec)) = self.pending.content.lock().ok()?.get(key) {
            return Some(rec.clone());
        }
        let db = self.reader()?;
        let found = (|| -> Result<Option<Option<Vec<u8>>>, redb::Error> {
            let r = db.begin_read()?;
            read_chunks(&r.open_table(CONTENT)?, key)
        })();
        let bytes = self.settle(found)?.unwrap_or_default();
        self.content_or_delete(key, &bytes)
    }

    /// Decodes a stored content value; one that does not decode is counted, queued for
    /// deletion and answered as a miss.
    fn content_or_delete(&self, key: &ContentKey, bytes: &[u8]) -> Option<Arc<ContentRecord>> {
        let rec = record::decode_content(bytes);
        if rec.is_none() {
            self.stats.decode_errors.fetch_add(1, Ordering::Relaxed);
            self.send(Op::DeleteContent(*key));
        }
        rec.map(Arc::new)
    }

    /// The file record of `rel` under a root and, when `content_key` names a key for it,
    /// that content record: what serving a file from the cache needs, read in one
    /// transaction and decoded straight from the database's pages (the hot path of
    /// whole-root search and retrieve).
    pub fn get_file_and_content(
        &self,
        root: &[u8; 32],
        rel: &str,
        content_key: impl FnOnce(&FileRecord) -> Option<ContentKey>,
    ) -> Option<(FileRecord, Option<Arc<ContentRecord>>)> {
        let fkey = file_key(root, rel);
        let pending = self.pending.files.lock().ok()?.get(&fkey).map(|(_, r)| *r);
        let db = self.reader();
        let mut txn = None;
        let file = match pending {
            Some(rec) => rec,
            None => {
                let found = (|| -> Result<Option<Option<FileRecord>>, redb::Error> {
                    let Some(db) = &db else { return Ok(None) };
                    let r = txn.insert(db.begin_read()?);
                    let t = r.open_table(FILES)?;
                    Ok(t.get(fkey.as_slice())?
                        .map(|g| record::decode::<FileRecord>(g.value())))
                })();
                match self.settle(found)? {
                    Some(rec) => rec,
                    None => {
                        self.stats.decode_errors.fetch_add(1, Ordering::Relaxed);
                        self.send(Op::DeleteFile(fkey));
                        return None;
                    }
                }
            }
        };
        let Some(ckey) = content_key(&file) else {
            return Some((file, None));
        };
        if let Some((_, rec)) = self.pending.content.lock().ok()?.get(&ckey) {
            return Some((file, Some(rec.clone())));
        }
        let found = (|| -> Result<Option<Option<Arc<ContentRecord>>>, redb::Error> {
            let Some(db) = &db else { return Ok(None) };
            let r = match txn.take() {
                Some(r) => r,
                None => db.begin_read()?,
            };
            let t = r.open_table(CONTENT)?;
            Ok(read_chunks(&t, &ckey)?
                .map(|v| self.content_or_delete(&ckey, &v.unwrap_or_default())))
        })();
        Some((file, self.settle(found).flatten()))
    }

    /// The value of a read, or `None` (counted and logged) when the database failed.
    fn settle<T>(&self, found: Result<Option<T>, redb::Error>) -> Option<T> {
        match found {
            Ok(value) => value,
            Err(err) => {
                self.stats.read_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %err, "cache read failed; answering without the cache");
                None
            }
        }
    }

    /// Queues a file record (and optionally new content) for the writer; readers of this
    /// cache see it immediately.
    pub fn put(
        &self,
        root: &[u8; 32],
        rel: &str,
        file: FileRecord,
        content: Option<(ContentKey, Arc<ContentRecord>)>,
    ) {
        let content = content.and_then(|(key, rec)| {
            let value = record::encode_content(&rec)?;
            Some((key, rec, value))
        });
        let key = file_key(root, rel);
        let value = record::encode(&file);
        let bytes = key.len()
            + value.len()
            + content.as_ref().map_or(0, |(_, rec, value)| {
                std::mem::size_of::<ContentKey>() + rec.text_bytes() + value.len()
            });
        // Room in the queue first (it may wait for a commit), then the sequence number,
        // so records of one path still go out in the order they were numbered.
        let held = self.queue.acquire(bytes as u64);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let content = content.map(|(key, rec, value)| {
            if let Ok(mut p) = self.pending.content.lock() {
                p.insert(key, (seq, rec));
            }
            (key, value)
        });
        // Both pending entries before either op: a sweep between the two commits then
        // still finds the record naming the content (in the queue or in the table).
        if let Ok(mut p) = self.pending.files.lock() {
            p.insert(key.clone(), (seq, file));
        }
        if let Some((key, value)) = content {
            self.send(Op::PutContent { key, value, seq });
        }
        self.send(Op::PutFile {
            key,
            value,
            seq,
            held,
        });
    }

    /// An external detector's findings for a text (its keyed hash) under the detector's
    /// identity digest; `None` on a miss or an entry that does not decode.
    pub fn get_findings(
        &self,
        hash: &[u8; 32],
        identity: &[u8; 32],
    ) -> Option<Vec<crate::engine::plugged::CharSpan>> {
        let key = findings_key(hash, identity);
        let pending = self.pending.findings.lock().ok()?.get(&key).cloned();
        let bytes = match pending {
            Some(bytes) => bytes,
            None => self.read_value(FINDINGS, &key)?,
        };
        let spans = record::decode::<Vec<(u64, u64, String)>>(&bytes).and_then(|spans| {
            spans
                .into_iter()
                .map(|(start, end, category)| {
                    Some(crate::engine::plugged::CharSpan {
                        start,
                        end,
                        category: crate::engine::placeholder::Category::from_name(&category)?,
                    })
                })
                .collect::<Option<Vec<_>>>()
        });
        if spans.is_none() {
            self.stats.decode_errors.fetch_add(1, Ordering::Relaxed);
        }
        spans
    }

    /// Queues an external detector's findings (see [`Cache::get_findings`]). They live
    /// while some file record names the text's hash (a sweep removes the others).
    pub fn put_findings(
        &self,
        hash: &[u8; 32],
        identity: &[u8; 32],
        spans: &[crate::engine::plugged::CharSpan],
    ) {
        let key = findings_key(hash, identity);
        let wire: Vec<(u64, u64, &str)> = spans
            .iter()
            .map(|s| (s.start, s.end, s.category.as_str()))
            .collect();
        let value = record::encode(&wire);
        let held = self.queue.acquire(2 * (key.len() + value.len()) as u64);
        if let Ok(mut p) = self.pending.findings.lock() {
            p.insert(key, value.clone());
        }
        self.send(Op::PutFindings { key, value, held });
    }

    /// Drops the file record of one path (deleted file).
    pub fn forget_file(&self, root: &[u8; 32], rel: &str) {
        let key = file_key(root, rel);
        if let Ok(mut p) = self.pending.files.lock() {
            p.remove(&key);
        }
        self.send(Op::DeleteFile(key));
    }

    /// Drops the file records of `rel` and of every path below it (a deleted or
    /// renamed-away directory takes its whole subtree with it).
    pub fn forget_tree(&self, root: &[u8; 32], rel: &str) {
        let key = file_key(root, rel);
        let below = [key.as_slice(), b"/"].concat();
        if let Ok(mut p) = self.pending.files.lock() {
            p.retain(|k, _| k != &key && !k.starts_with(&below));
        }
        self.send(Op::DeleteTree(key));
    }

    /// Calls `f(rel, record)` for every file record of a root, in key order (byte order
    /// of `rel`), from one read transaction: a warm restart merges this with the walk
    /// instead of looking each file up. Records that do not decode are skipped (misses);
    /// records queued but not committed yet win over committed ones. Returns whether the
    /// scan went through the whole table (false after a read error).
    pub fn scan_root_files(&self, root: &[u8; 32], mut f: impl FnMut(&str, FileRecord)) -> bool {
        let pending: HashMap<Vec<u8>, FileRecord> = self
            .pending
            .files
            .lock()
            .map(|p| {
                p.iter()
                    .filter(|(k, _)| k.starts_with(root))
                    .map(|(k, (_, rec))| (k.clone(), *rec))
                    .collect()
            })
            .unwrap_or_default();
        let Some(db) = self.reader() else {
            return false;
        };
        let scanned = (|| -> Result<(), redb::Error> {
            let r = db.begin_read()?;
            let t = r.open_table(FILES)?;
            for item in t.range::<&[u8]>(root.as_slice()..)? {
                let (k, v) = item?;
                let key = k.value();
                let Some(rel) = key.strip_prefix(root.as_slice()) else {
                    break;
                };
                let rec = match pending.get(key) {
                    Some(rec) => Some(*rec),
                    None => record::decode::<FileRecord>(v.value()),
                };
                if let (Ok(rel), Some(rec)) = (std::str::from_utf8(rel), rec) {
                    f(rel, rec);
                }
            }
            Ok(())
        })();
        match scanned {
            Ok(()) => true,
            Err(err) => {
                self.stats.read_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %err, "cache scan failed; files will be re-read");
                false
            }
        }
    }

    /// Which of `keys` have a content record, looked up in one read transaction (in key
    /// order, so the lookups walk the table's pages once).
    pub fn contents_present(&self, keys: &[ContentKey]) -> Vec<bool> {
        let mut present = vec![false; keys.len()];
        let db_keys: Vec<_> = keys.iter().map(|k| chunk_key(k, 0)).collect();
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_unstable_by(|&a, &b| db_keys[a].cmp(&db_keys[b]));
        if let Ok(p) = self.pending.content.lock() {
            for (i, key) in keys.iter().enumerate() {
                present[i] = p.contains_key(key);
            }
        }
        let Some(db) = self.reader() else {
            return present;
        };
        let looked = (|| -> Result<(), redb::Error> {
            let r = db.begin_read()?;
            let t = r.open_table(CONTENT)?;
            for &i in &order {
                if !present[i] {
                    present[i] = t
                        .get(db_keys[i].as_slice())?
                        .is_some_and(|g| record::content_value_len(g.value()).is_some());
                }
            }
            Ok(())
        })();
        if looked.is_err() {
            self.stats.read_errors.fetch_add(1, Ordering::Relaxed);
        }
        present
    }

    /// Drops every file record of a root (a forgotten root).
    pub fn forget_root(&self, root: &[u8; 32]) {
        if let Ok(mut p) = self.pending.files.lock() {
            p.retain(|k, _| !k.starts_with(root));
        }
        self.send(Op::ForgetRoot(*root));
        self.drop_grams(root);
    }

    /// Records that `root` is served under the policy `fingerprint` until
    /// [`Cache::unserve_policy`]: sweeps keep what that policy would serve for the
    /// root's file records.
    pub fn serve_policy(&self, root: &[u8; 32], fingerprint: &[u8; 32]) {
        if let Ok(mut serving) = self.sweep.serving.lock() {
            serving.push((*root, *fingerprint));
        }
    }

    /// Whether a root is served under `fingerprint` now (see [`Cache::serve_policy`]): a
    /// sweep keeps that policy's content whatever the file records name.
    pub fn is_served(&self, root: &[u8; 32], fingerprint: &[u8; 32]) -> bool {
        self.sweep
            .serving
            .lock()
            .is_ok_and(|serving| serving.contains(&(*root, *fingerprint)))
    }

    /// Undoes one [`Cache::serve_policy`] (the root's snapshot was dropped). Content the
    /// last sweep kept only for a served policy is swept once what is queued now is
    /// committed (a policy change's pass can end, and sweep, before the old snapshot
    /// goes).
    pub fn unserve_policy(&self, root: &[u8; 32], fingerprint: &[u8; 32]) {
        if let Ok(mut serving) = self.sweep.serving.lock()
            && let Some(i) = serving.iter().position(|e| *e == (*root, *fingerprint))
        {
            serving.swap_remove(i);
        }
        self.send(Op::Unserved);
    }

    /// Asks the writer to sweep unreferenced content once what is queued now is
    /// committed, if any file-record change since the last sweep may have left some (the
    /// end of an indexing pass: a warm restart with nothing changed costs nothing). Does
    /// not wait.
    pub fn request_sweep(&self) {
        self.send(Op::Sweep {
            force: false,
            reply: None,
        });
    }

    /// Sweeps unreferenced content now (after what is queued) and waits for it; `None`
    /// when the sweep failed or the cache is shut down. For tests and maintenance.
    pub fn sweep(&self) -> Option<SweepReport> {
        let (tx, rx) = mpsc::channel();
        self.send(Op::Sweep {
            force: true,
            reply: Some(tx),
        });
        rx.recv().ok().flatten()
    }

    /// The sweep epoch now: take it before looking content up, and pass it to
    /// [`Cache::swept_since`] after storing a file record that names that content.
    pub fn sweep_epoch(&self) -> u64 {
        self.sweep.epoch.load(Ordering::SeqCst)
    }

    /// Whether a sweep ran (or was running) since `epoch` was taken. A sweep keeps the
    /// content of every queued file record, so only content found before a sweep and
    /// named by a record queued after it read the queue can have been removed: the
    /// caller then stores that content again.
    pub fn swept_since(&self, epoch: u64) -> bool {
        epoch % 2 == 1 || self.sweep_epoch() != epoch
    }

    /// Number of content records (whole values) in the database, not counting queued
    /// ones; `None` on a read error. Walks the whole content table: for tests and
    /// diagnostics.
    pub fn content_records(&self) -> Option<u64> {
        let db = self.reader()?;
        let counted = (|| -> Result<u64, redb::Error> {
            let r = db.begin_read()?;
            let t = r.open_table(CONTENT)?;
            let mut n = 0;
            for item in t.iter()? {
                let (k, _) = item?;
                n += u64::from(k.value().get(32..) == Some(&[0u8; 4][..]));
            }
            Ok(n)
        })();
        counted.ok()
    }

    /// Blocks until everything queued before this call is committed.
    pub fn flush(&self) {
        let (tx, rx) = mpsc::channel();
        self.send(Op::Flush(tx));
        let _ = rx.recv();
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        // Closing the channel lets the writer commit what is queued and exit.
        self.tx.take();
        if let Some(writer) = self.writer.lock().ok().and_then(|mut w| w.take()) {
            let _ = writer.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Category, Counts};

    #[test]
    fn after_a_failed_sweep_an_automatic_one_waits_for_as_many_changes_again() {
        let due = SWEEP_AFTER_ORPHANS;
        let mut sweeper = Sweeper {
            orphans: due,
            files_at_last_sweep: 0,
            retry_at: 0,
            kept_for_served: false,
        };
        assert!(sweeper.should_run(None, due));
        sweeper.failed(due);
        // Not after every following batch…
        sweeper.orphans += due - 1;
        assert!(!sweeper.should_run(None, due));
        // …but once as many changes piled up again.
        sweeper.orphans += 1;
        assert!(sweeper.should_run(None, due));
        // A sweep asked for at the end of a pass, or forced, does not wait.
        sweeper.failed(due);
        assert!(sweeper.should_run(Some(false), due));
        assert!(sweeper.should_run(Some(true), due));
    }

    fn record(text: String) -> Arc<ContentRecord> {
        let mut counts = Counts::default();
        counts.add(Category::from_name("SECRET").unwrap(), 3);
        Arc::new(ContentRecord {
            preserved: StoredText {
                text: Arc::from(text),
                counts: counts.clone(),
            },
            plain: PlainVariant::SameText { counts },
        })
    }

    /// Text that compresses poorly, so its value spans many chunks.
    fn noisy(len: usize, seed: u64) -> String {
        let mut s = seed | 1;
        (0..len)
            .map(|i| {
                if i % 64 == 63 {
                    return '\n';
                }
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                char::from(b'!' + (s % 90) as u8)
            })
            .collect()
    }

    fn chunks_of(path: &Path, key: &ContentKey) -> usize {
        let db = Database::open(path).unwrap();
        let r = db.begin_read().unwrap();
        let t = r.open_table(CONTENT).unwrap();
        let (first, last) = (chunk_key(key, 0), chunk_key(key, u32::MAX));
        t.range::<&[u8]>(first.as_slice()..=last.as_slice())
            .unwrap()
            .count()
    }

    #[test]
    fn puts_wait_while_the_writer_queue_holds_its_bytes_and_resume_after_a_commit() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(Cache::open(dir.path()).unwrap());
        // Hold the database's write transaction: the writer takes its first batch and
        // then waits in its commit, as behind a slow disk.
        let db = cache.reader().unwrap();
        let stall = db.begin_write().unwrap();
        let file = FileRecord::new(&crate::fs::StatKey::default(), true, None);
        const RECORD: usize = 4 << 20;
        const RECORDS: u8 = 24; // 96 MB: three times the queue
        let done = Arc::new(AtomicU64::new(0));
        let producer = {
            let (cache, done) = (cache.clone(), done.clone());
            std::thread::spawn(move || {
                for n in 0..RECORDS {
                    let text = format!("{n:02}").repeat(RECORD / 2);
                    cache.put(
                        &[7; 32],
                        &format!("{n}.txt"),
                        file,
                        Some(([n; 96], record(text))),
                    );
                    done.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = u64::MAX;
        // Until the producer stops making progress (it waits for room).
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = done.load(Ordering::SeqCst);
            if now == last || Instant::now() > deadline {
                break;
            }
            last = now;
        }
        let stuck_at = done.load(Ordering::SeqCst);
        assert!(
            stuck_at < u64::from(RECORDS),
            "every put went through while the writer could not commit"
        );
        assert!(
            cache.queue.used() <= WRITE_QUEUE_BYTES,
            "queue over its budget"
        );
        assert!(
            stuck_at * RECORD as u64 >= WRITE_QUEUE_BYTES / 2,
            "the queue should fill before puts wait ({stuck_at} records)"
        );
        drop(stall);
        producer.join().unwrap();
        assert_eq!(done.load(Ordering::SeqCst), u64::from(RECORDS));
        cache.flush();
        assert_eq!(
            cache.queue.used(),
            0,
            "committed records give their bytes back"
        );
        assert!(cache.take_queue_peak() <= WRITE_QUEUE_BYTES);
        assert_eq!(
            cache.get_content(&[3; 96]).map(|r| r.text_bytes()),
            Some(RECORD)
        );
    }

    #[test]
    fn a_large_record_spans_chunks_and_reads_back_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        let (big, small) = ([1u8; 96], [2u8; 96]);
        let file = FileRecord::new(&crate::fs::StatKey::default(), true, None);
        let (big_rec, small_rec) = (record(noisy(60_000, 1)), record("x = 1\n".into()));
        {
            let cache = Cache::open(dir.path()).unwrap();
            cache.put(&root, "big.txt", file, Some((big, big_rec.clone())));
            cache.put(&root, "small.txt", file, Some((small, small_rec.clone())));
            cache.shutdown();
        }
        let path = dir.path().join(CACHE_FILE);
        assert!(chunks_of(&path, &big) > 5);
        assert_eq!(chunks_of(&path, &small), 1);
        let cache = Cache::open(dir.path()).unwrap();
        assert_eq!(cache.get_content(&big), Some(big_rec.clone()));
        assert_eq!(cache.get_content(&small), Some(small_rec));
        let (_, served) = cache
            .get_file_and_content(&root, "big.txt", |_| Some(big))
            .unwrap();
        assert_eq!(served, Some(big_rec));
        assert_eq!(
            cache.contents_present(&[small, [3u8; 96], big]),
            vec![true, false, true]
        );
        assert_eq!(cache.stats().decode_errors.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_rewritten_record_leaves_no_chunks_of_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        let key = [1u8; 96];
        let file = FileRecord::new(&crate::fs::StatKey::default(), true, None);
        let short = record(noisy(5_000, 2));
        {
            let cache = Cache::open(dir.path()).unwrap();
            cache.put(&root, "a.txt", file, Some((key, record(noisy(40_000, 1)))));
            cache.flush();
            cache.put(&root, "a.txt", file, Some((key, short.clone())));
            cache.shutdown();
        }
        let path = dir.path().join(CACHE_FILE);
        let expected = record::encode_content(&short)
            .unwrap()
            .len()
            .div_ceil(CHUNK_BYTES);
        assert_eq!(chunks_of(&path, &key), expected);
        let cache = Cache::open(dir.path()).unwrap();
        assert_eq!(cache.get_content(&key), Some(short));
    }

    #[test]
    fn a_record_missing_a_chunk_is_a_miss_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let key = [1u8; 96];
        let file = FileRecord::new(&crate::fs::StatKey::default(), true, None);
        {
            let cache = Cache::open(dir.path()).unwrap();
            cache.put(
                &[7u8; 32],
                "a.txt",
                file,
                Some((key, record(noisy(40_000, 1)))),
            );
            cache.shutdown();
        }
        let path = dir.path().join(CACHE_FILE);
        {
            let db = Database::open(&path).unwrap();
            let w = db.begin_write().unwrap();
            w.open_table(CONTENT)
                .unwrap()
                .remove(chunk_key(&key, 2).as_slice())
                .unwrap();
            w.commit().unwrap();
        }
        let cache = Cache::open(dir.path()).unwrap();
        assert_eq!(cache.get_content(&key), None);
        assert_eq!(cache.stats().decode_errors.load(Ordering::Relaxed), 1);
        cache.shutdown();
        drop(cache);
        assert_eq!(chunks_of(&path, &key), 0);
    }

    #[test]
    fn a_cache_of_the_previous_format_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CACHE_FILE);
        {
            // Format 2 stored one LZ4 value per 96-byte key.
            let db = Database::create(&path).unwrap();
            let w = db.begin_write().unwrap();
            w.open_table(META).unwrap().insert("format", 2).unwrap();
            w.open_table(CONTENT)
                .unwrap()
                .insert([1u8; 96].as_slice(), [1u8, 0, 0, 0, 0].as_slice())
                .unwrap();
            w.commit().unwrap();
        }
        let cache = Cache::open(dir.path()).unwrap();
        assert!(cache.stats().rebuilt_on_open.load(Ordering::Relaxed));
        assert_eq!(cache.get_content(&[1u8; 96]), None);
        assert_eq!(cache.contents_present(&[[1u8; 96]]), vec![false]);
    }

    const FP: [u8; 32] = [9u8; 32];

    /// A text file record whose content hash is `b` repeated, stored under [`FP`].
    fn text_file(b: u8) -> FileRecord {
        let info = TextInfo {
            hash: [b; 32],
            lines: 1,
            encoding: crate::fs::content::Encoding::Utf8,
        };
        FileRecord::new(&crate::fs::StatKey::default(), true, Some(info)).stored_under(FP)
    }

    /// The key the record of `rel` from [`text_file`]`(b)` names (detectors on).
    fn key_of(rel: &str, b: u8) -> ContentKey {
        file_content_key(&[b; 32], &FP, rel, true)
    }

    /// Whether serving `rel` (record and the content it names) is a hit.
    fn served(cache: &Cache, root: &[u8; 32], rel: &str) -> Option<Arc<ContentRecord>> {
        let (_, content) = cache.get_file_and_content(root, rel, |rec| {
            rec.text
                .map(|info| file_content_key(&info.hash, &FP, rel, true))
        })?;
        content
    }

    #[test]
    fn a_sweep_removes_the_content_of_an_edited_file_and_keeps_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        let cache = Cache::open(dir.path()).unwrap();
        let (old, new) = (record(noisy(20_000, 1)), record("v2\n".into()));
        cache.put(&root, "a.py", text_file(1), Some((key_of("a.py", 1), old)));
        cache.flush();
        cache.put(
            &root,
            "a.py",
            text_file(2),
            Some((key_of("a.py", 2), new.clone())),
        );
        let report = cache.sweep().unwrap();
        assert_eq!((report.records, report.kept, report.files), (1, 1, 1));
        assert!(report.chunks > 1, "a multi-chunk record goes whole");
        assert_eq!(cache.get_content(&key_of("a.py", 1)), None);
        assert_eq!(served(&cache, &root, "a.py"), Some(new.clone()));
        assert_eq!(cache.content_records(), Some(1));
        assert_eq!(cache.stats().swept_records.load(Ordering::Relaxed), 1);
        // Still a hit after a restart, and nothing more to sweep.
        cache.shutdown();
        drop(cache);
        let cache = Cache::open(dir.path()).unwrap();
        assert_eq!(served(&cache, &root, "a.py"), Some(new));
        assert_eq!(cache.sweep().unwrap().records, 0);
    }

    #[test]
    fn findings_live_as_long_as_a_file_record_names_their_text() {
        use crate::engine::plugged::CharSpan;
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        let cache = Cache::open(dir.path()).unwrap();
        let spans = vec![CharSpan {
            start: 0,
            end: 3,
            category: crate::engine::placeholder::Category::ID,
        }];
        let detector = [5u8; 32];
        cache.put(&root, "a.py", text_file(1), None);
        cache.put_findings(&[1; 32], &detector, &spans);
        cache.put_findings(&[2; 32], &detector, &spans);
        cache.flush();
        assert_eq!(cache.get_findings(&[2; 32], &detector), Some(spans.clone()));
        let report = cache.sweep().unwrap();
        assert_eq!(report.findings, 1);
        assert_eq!(cache.get_findings(&[1; 32], &detector), Some(spans.clone()));
        assert_eq!(cache.get_findings(&[2; 32], &detector), None);
        assert_eq!(cache.get_findings(&[1; 32], &[6u8; 32]), None);
        cache.shutdown();
        drop(cache);
        let cache = Cache::open(dir.path()).unwrap();
        assert_eq!(cache.get_findings(&[1; 32], &detector), Some(spans));
    }

    #[test]
    fn content_shared_by_two_files_survives_deleting_one_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        let cache = Cache::open(dir.path()).unwrap();
        // Without the detectors the path is no part of the key: both files share it.
        let key = file_content_key(&[1; 32], &FP, "", false);
        assert_eq!(key, file_content_key(&[1; 32], &FP, "b.py", false));
        let shared = record("x = 1\n".into());
        cache.put(&root, "a.py", text_file(1), Some((key, shared.clone())));
        cache.put(&root, "b.py", text_file(1), None);
        cache.put(
            &root,
            "dir/c.py",
            text_file(3),
            Some((key_of("dir/c.py", 3), shared.clone())),
        );
        cache.flush();
        cache.forget_file(&root, "a.py");
        cache.forget_tree(&root, "dir");
        let report = cache.sweep().unwrap();
        assert_eq!((report.records, report.kept), (1, 1));
        assert_eq!(cache.get_content(&key), Some(shared));
        assert_eq!(cache.get_content(&key_of("dir/c.py", 3)), None);
    }

    #[test]
    fn content_named_only_by_queued_records_is_never_swept() {
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        let cache = Cache::open(dir.path()).unwrap();
        let (one, three) = (record("one\n".into()), record("three\n".into()));
        cache.put(
            &root,
            "a.py",
            text_file(1),
            Some((key_of("a.py", 1), one.clone())),
        );
        cache.put(
            &root,
            "b.py",
            text_file(3),
            Some((key_of("b.py", 3), three.clone())),
        );
        cache.flush();
        cache.put(
            &root,
            "a.py",
            text_file(2),
            Some((key_of("a.py", 2), record("two\n".into()))),
        );
        cache.forget_file(&root, "b.py");
        cache.flush();
        // Queued but not yet received by the writer: a record naming the committed
        // content of version 1 (a file edited back, found in the cache), and content 3
        // stored again.
        cache
            .pending
            .files
            .lock()
            .unwrap()
            .insert(file_key(&root, "a.py"), (u64::MAX, text_file(1)));
        cache
            .pending
            .content
            .lock()
            .unwrap()
            .insert(key_of("b.py", 3), (u64::MAX, three.clone()));
        let report = cache.sweep().unwrap();
        assert_eq!((report.records, report.kept), (0, 3));
        cache.pending.files.lock().unwrap().clear();
        cache.pending.content.lock().unwrap().clear();
        assert_eq!(cache.get_content(&key_of("a.py", 1)), Some(one));
        assert_eq!(cache.get_content(&key_of("b.py", 3)), Some(three));
    }

    #[test]
    fn a_policy_serving_the_root_keeps_its_content_under_records_of_another() {
        let dir = tempfile::tempdir().unwrap();
        let (root, other_root) = ([7u8; 32], [8u8; 32]);
        let cache = Cache::open(dir.path()).unwrap();
        let served_fp = [5u8; 32];
        let key = file_content_key(&[1; 32], &served_fp, "a.py", true);
        let under_other = file_content_key(&[1; 32], &served_fp, "b.py", true);
        let rec = record("a\n".into());
        // The record names FP (another option set rewrote it); served_fp's content stays
        // while a root is served with it.
        cache.put(&root, "a.py", text_file(1), Some((key, rec.clone())));
        cache.put(
            &other_root,
            "b.py",
            text_file(1),
            Some((under_other, rec.clone())),
        );
        cache.serve_policy(&root, &served_fp);
        assert_eq!(cache.sweep().unwrap().records, 1, "only another root's");
        assert_eq!(cache.get_content(&key), Some(rec));
        // Unserving sweeps what was kept for it.
        cache.unserve_policy(&root, &served_fp);
        cache.flush();
        assert_eq!(cache.content_records(), Some(0));
        assert_eq!(cache.stats().swept_records.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn content_kept_for_a_replaced_policy_goes_when_that_policy_is_unserved() {
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        let cache = Cache::open(dir.path()).unwrap();
        let new_fp = [6u8; 32];
        cache.serve_policy(&root, &FP);
        for (rel, b) in [("a.py", 1), ("b.py", 2)] {
            cache.put(
                &root,
                rel,
                text_file(b),
                Some((key_of(rel, b), record("old\n".into()))),
            );
        }
        cache.flush();
        // A policy change: the new snapshot's pass rewrites every record and asks for its
        // sweep before the old snapshot is dropped.
        cache.serve_policy(&root, &new_fp);
        for (rel, b) in [("a.py", 1), ("b.py", 2)] {
            let key = file_content_key(&[b; 32], &new_fp, rel, true);
            let rec = text_file(b).stored_under(new_fp);
            cache.put(&root, rel, rec, Some((key, record("new\n".into()))));
        }
        cache.request_sweep();
        cache.flush();
        assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 1);
        assert_eq!(
            cache.content_records(),
            Some(4),
            "the old policy is still served"
        );
        cache.unserve_policy(&root, &FP);
        cache.flush();
        assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 2);
        assert_eq!(cache.content_records(), Some(2));
        let new_key = file_content_key(&[1; 32], &new_fp, "a.py", true);
        assert_eq!(cache.get_content(&new_key), Some(record("new\n".into())));
        // Nothing was kept for another policy since: unserving costs no sweep.
        cache.unserve_policy(&root, &new_fp);
        cache.flush();
        assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn enough_orphaning_changes_start_a_sweep_and_an_unchanged_cache_skips_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = [7u8; 32];
        {
            let cache = Cache::open(dir.path()).unwrap();
            for b in 1..=3 {
                cache.put(
                    &root,
                    "a.py",
                    text_file(b),
                    Some((key_of("a.py", b), record(format!("v{b}\n")))),
                );
                cache.flush();
            }
            // Two changes orphaned content: counted, committed, not swept yet.
            assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 0);
            cache.shutdown();
        }
        let cache = Cache::open(dir.path()).unwrap();
        cache.sweep.after.store(3, Ordering::Relaxed);
        // New records orphan nothing.
        cache.put(
            &root,
            "b.py",
            text_file(9),
            Some((key_of("b.py", 9), record("b\n".into()))),
        );
        cache.flush();
        assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 0);
        // The third change since the last sweep (the count survived the restart).
        cache.put(
            &root,
            "a.py",
            text_file(4),
            Some((key_of("a.py", 4), record("v4\n".into()))),
        );
        cache.flush();
        assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 1);
        assert_eq!(cache.stats().swept_records.load(Ordering::Relaxed), 3);
        assert_eq!(cache.content_records(), Some(2));
        // A requested sweep with nothing changed since is skipped.
        cache.put(&root, "b.py", text_file(9), None);
        cache.request_sweep();
        cache.flush();
        assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 1);
        cache.forget_root(&root);
        cache.request_sweep();
        cache.flush();
        assert_eq!(cache.stats().sweeps.load(Ordering::Relaxed), 2);
        assert_eq!(cache.content_records(), Some(0));
    }

    #[test]
    fn a_cache_from_before_sweeps_is_swept_on_the_first_request() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cache = Cache::open(dir.path()).unwrap();
            cache.put(
                &[7u8; 32],
                "a.py",
                text_file(1),
                Some(([1u8; 96], record("x\n".into()))),
            );
            cache.shutdown();
        }
        {
            let db = Database::open(dir.path().join(CACHE_FILE)).unwrap();
            let w = db.begin_write().unwrap();
            w.open_table(META).unwrap().remove(META_ORPHANS).unwrap();
            w.commit().unwrap();
        }
        let cache = Cache::open(dir.path()).unwrap();
        cache.request_sweep();
        cache.flush();
        assert_eq!(cache.stats().swept_records.load(Ordering::Relaxed), 1);
    }
}
