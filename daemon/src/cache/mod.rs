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

pub mod record;

use crate::engine::Policy;
pub use record::{ContentRecord, FileRecord, PlainVariant, StoredText, TextInfo};
use redb::{Database, DatabaseError, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const CONTENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("content");
const FILES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("files");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");

/// Layout version of the whole database; a mismatch rebuilds it. (2: file records say
/// under which policy their content was stored; 3: zstd content in page-sized chunks
/// under digest keys.)
pub const CACHE_FORMAT: u64 = 3;

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

/// A writer commit holds at most this many operations…
pub const MAX_BATCH_OPS: usize = 2048;
/// …or this many value bytes…
pub const MAX_BATCH_BYTES: usize = 64 << 20;
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

/// The content table's key of chunk `chunk` of the record under `key`.
fn chunk_key(key: &ContentKey, chunk: u32) -> [u8; CONTENT_DB_KEY] {
    chunk_key_at(&content_digest(key), chunk)
}

/// The digest that opens every content table key of the record under `key`.
fn content_digest(key: &ContentKey) -> [u8; 32] {
    *blake3::hash(key).as_bytes()
}

/// [`chunk_key`] from the record's [`content_digest`].
fn chunk_key_at(digest: &[u8; 32], chunk: u32) -> [u8; CONTENT_DB_KEY] {
    let mut out = [0u8; CONTENT_DB_KEY];
    out[..32].copy_from_slice(digest);
    out[32..].copy_from_slice(&chunk.to_be_bytes());
    out
}

/// Reads the content value under `key` by joining its chunks (numbered from 0, in key
/// order); `Some(None)` when chunks exist but do not make up one whole value.
fn read_chunks(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    key: &ContentKey,
) -> Result<Option<Option<Vec<u8>>>, redb::Error> {
    let first = chunk_key(key, 0);
    let last = chunk_key(key, u32::MAX);
    let mut value: Vec<u8> = Vec::new();
    let mut expected = None;
    for (n, item) in table
        .range::<&[u8]>(first.as_slice()..=last.as_slice())?
        .enumerate()
    {
        let (k, v) = item?;
        if k.value()[32..] != (n as u32).to_be_bytes() {
            return Ok(Some(None));
        }
        let chunk = v.value();
        if n == 0 {
            let Some(len) = record::content_value_len(chunk) else {
                return Ok(Some(None));
            };
            // The header is only trusted so far: a bogus length must not allocate much.
            value.reserve_exact(len.min(1 << 20));
            expected = Some(len);
        }
        value.extend_from_slice(chunk);
        if Some(value.len()) >= expected {
            break;
        }
    }
    Ok(match expected {
        None => None,
        Some(len) if len == value.len() => Some(Some(value)),
        Some(_) => Some(None),
    })
}

/// Removes every chunk stored under `key`.
fn remove_chunks(
    table: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    digest: &[u8; 32],
) -> Result<(), redb::Error> {
    let first = chunk_key_at(digest, 0);
    let last = chunk_key_at(digest, u32::MAX);
    table.retain_in::<&[u8], _>(first.as_slice()..=last.as_slice(), |_, _| false)?;
    Ok(())
}

/// redb page cache (the OS page cache holds the rest).
const DB_CACHE_BYTES: usize = 32 << 20;

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

/// Key of the content table.
pub type ContentKey = [u8; 96];

/// Builds a content key: content hash, policy fingerprint, and a digest of the per-file
/// context the engine reads besides the bytes (prose flag, the path when detectors use it).
pub fn content_key(hash: &[u8; 32], fingerprint: &[u8; 32], prose: bool, path: &str) -> ContentKey {
    let mut key = [0u8; 96];
    key[..32].copy_from_slice(hash);
    key[32..64].copy_from_slice(fingerprint);
    let mut context = blake3::Hasher::new();
    context.update(&[u8::from(prose)]);
    context.update(path.as_bytes());
    key[64..].copy_from_slice(context.finalize().as_bytes());
    key
}

/// The content key of a file's text: [`content_key`] with the prose flag of `rel` and, as
/// the path context, `rel` itself when the policy runs the detectors (they read the path:
/// file kind, lockfile exemptions) or nothing when it does not, so that the same bytes
/// anywhere in the tree share one record. The sweep derives the live keys of the file
/// table from this, so every file's content must be stored under it.
pub fn file_content_key(
    hash: &[u8; 32],
    fingerprint: &[u8; 32],
    rel: &str,
    path_context: bool,
) -> ContentKey {
    let context = if path_context { rel } else { "" };
    content_key(hash, fingerprint, crate::fs::is_prose_path(rel), context)
}

/// Fingerprint of everything that determines redacted output: the policy (with the
/// engine version), the detector rules, and this build's cache layout epoch.
pub fn policy_fingerprint(policy: &Policy) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new_derive_key("redctx 2025 policy fingerprint v1");
    hasher.update(&ENGINE_EPOCH.to_le_bytes());
    hasher.update(&policy.fingerprint());
    hasher.update(crate::engine::detect::DETECTOR_VERSION.as_bytes());
    *hasher.finalize().as_bytes()
}

/// Key of the keyed content hash for one salt.
pub fn content_hash_key(salt: &str) -> [u8; 32] {
    blake3::derive_key("redctx 2025 content hash v1", salt.as_bytes())
}

/// Keyed blake3 of raw bytes.
pub fn content_hash(key: &[u8; 32], bytes: &[u8]) -> [u8; 32] {
    *blake3::keyed_hash(key, bytes).as_bytes()
}

/// Namespace of one root in the file table.
pub fn root_key(canonical_root: &Path) -> [u8; 32] {
    use std::os::unix::ffi::OsStrExt;
    blake3::derive_key(
        "redctx 2025 root key v1",
        canonical_root.as_os_str().as_bytes(),
    )
}

fn file_key(root: &[u8; 32], rel: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(32 + rel.len());
    key.extend_from_slice(root);
    key.extend_from_slice(rel.as_bytes());
    key
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

/// What one sweep found and removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// File records read (every root's).
    pub files: u64,
    /// Content records (whole values) removed.
    pub records: u64,
    /// Content chunks removed (a record spans one or more).
    pub chunks: u64,
    /// Content records left.
    pub kept: u64,
    /// Some content was kept only because a root is served under a policy other than the
    /// one its records name: the sweep after that policy stops being served removes it.
    pub kept_for_served: bool,
    pub elapsed: Duration,
}

/// What the cache handle and its writer share about sweeps.
struct SweepControl {
    /// Bumped when a sweep starts and again when it ends: odd while one runs. A caller
    /// that found content and then stored a file record naming it compares this around
    /// the two steps ([`Cache::swept_since`]).
    epoch: AtomicU64,
    /// [`SWEEP_AFTER_ORPHANS`], lowered by tests.
    after: AtomicU64,
    /// (root key, policy fingerprint) of every root served now, once per
    /// [`Cache::serve_policy`]: a sweep keeps the content these policies would serve for
    /// each record of their root, whatever policy the record names (one path served
    /// under two option sets shares its file records, and each rewrites them).
    serving: Mutex<Vec<([u8; 32], [u8; 32])>>,
}

enum Op {
    PutFile {
        key: Vec<u8>,
        value: Vec<u8>,
        seq: u64,
    },
    PutContent {
        key: ContentKey,
        value: Vec<u8>,
        seq: u64,
    },
    DeleteFile(Vec<u8>),
    /// Deletes the file records of a path and of everything below it (`key` is the
    /// path's file key; `key + "/"` prefixes its descendants).
    DeleteTree(Vec<u8>),
    DeleteContent(ContentKey),
    ForgetRoot([u8; 32]),
    /// Sweep unreferenced content once the queued operations are committed: always when
    /// `force`, otherwise only if a file-record change since the last sweep may have left
    /// some behind. The report (none if the sweep did not run or failed) goes to `reply`.
    Sweep {
        force: bool,
        reply: Option<Sender<Option<SweepReport>>>,
    },
    /// A root stopped being served under a policy: sweep if the last sweep kept content
    /// for a served policy other than the records' own.
    Unserved,
    Flush(Sender<()>),
    /// Commit what is queued, answer, and end the writer.
    Stop(Sender<()>),
}

impl Op {
    fn bytes(&self) -> usize {
        match self {
            Op::PutFile { key, value, .. } => key.len() + value.len(),
            Op::PutContent { value, .. } => 65 + value.len(),
            _ => 64,
        }
    }
}

/// Records sent to the writer but not yet committed, so readers see their own writes.
#[derive(Default)]
struct Pending {
    files: Mutex<HashMap<Vec<u8>, (u64, FileRecord)>>,
    content: Mutex<HashMap<ContentKey, (u64, Arc<ContentRecord>)>>,
}

/// The open cache. Share one `Arc<Cache>` between all roots of a daemon.
pub struct Cache {
    /// `None` once [`Cache::shutdown`] closed the database (every read is then a miss).
    db: RwLock<Option<Arc<Database>>>,
    path: PathBuf,
    tx: Option<Sender<Op>>,
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
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let content = content.and_then(|(key, rec)| {
            let value = record::encode_content(&rec)?;
            if let Ok(mut p) = self.pending.content.lock() {
                p.insert(key, (seq, rec));
            }
            Some((key, value))
        });
        // Both pending entries before either op: a sweep between the two commits then
        // still finds the record naming the content (in the queue or in the table).
        let key = file_key(root, rel);
        if let Ok(mut p) = self.pending.files.lock() {
            p.insert(key.clone(), (seq, file));
        }
        if let Some((key, value)) = content {
            self.send(Op::PutContent { key, value, seq });
        }
        self.send(Op::PutFile {
            key,
            value: record::encode(&file),
            seq,
        });
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

fn writer_loop(
    db: &Database,
    rx: &Receiver<Op>,
    pending: &Pending,
    stats: &CacheStats,
    sweep_control: &SweepControl,
    orphans: u64,
) {
    let mut sweeper = Sweeper {
        orphans,
        files_at_last_sweep: 0,
        retry_at: 0,
        kept_for_served: false,
    };
    loop {
        let Ok(first) = rx.recv() else { return };
        let mut bytes = first.bytes();
        let mut flushes = Vec::new();
        let mut batch = Vec::new();
        // `Some(force)` once a sweep was asked for.
        let mut sweep: Option<bool> = None;
        let mut sweep_replies = Vec::new();
        let mut disconnected = false;
        let mut stop = false;
        let deadline = Instant::now() + MAX_LINGER;
        let mut last_arrival = Instant::now();
        let mut next = Some(first);
        loop {
            if let Some(op) = next.take() {
                match op {
                    Op::Flush(reply) => flushes.push(reply),
                    Op::Stop(reply) => {
                        flushes.push(reply);
                        stop = true;
                    }
                    Op::Sweep { force, reply } => {
                        sweep = Some(sweep.unwrap_or(false) || force);
                        sweep_replies.extend(reply);
                    }
                    Op::Unserved if sweeper.kept_for_served => sweep = Some(true),
                    Op::Unserved => {}
                    op => batch.push(op),
                }
            }
            if !flushes.is_empty()
                || sweep.is_some()
                || batch.len() >= MAX_BATCH_OPS
                || bytes >= MAX_BATCH_BYTES
            {
                break;
            }
            match rx.try_recv() {
                Ok(op) => {
                    last_arrival = Instant::now();
                    bytes += op.bytes();
                    next = Some(op);
                    continue;
                }
                Err(TryRecvError::Disconnected) => {
                    disconnected = true;
                    break;
                }
                Err(TryRecvError::Empty) => {}
            }
            // The queue is empty: nap instead of blocking on it. A blocked receiver makes
            // every send a futex wake and a context switch (two per indexed file, about
            // a tenth of a cold pass's CPU); a napping one is found by the next poll.
            let now = Instant::now();
            if now >= deadline || now.duration_since(last_arrival) >= LINGER {
                break;
            }
            std::thread::sleep(POLL.min(deadline - now));
            match rx.try_recv() {
                Ok(op) => {
                    last_arrival = Instant::now();
                    bytes += op.bytes();
                    next = Some(op);
                }
                Err(TryRecvError::Empty) => {}
                Err(TryRecvError::Disconnected) => {
                    disconnected = true;
                    break;
                }
            }
        }
        if !batch.is_empty() {
            match commit(db, &batch, sweeper.orphans) {
                Ok(orphans) => {
                    sweeper.orphans = orphans;
                    stats.commits.fetch_add(1, Ordering::Relaxed);
                    stats
                        .committed_ops
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                }
                Err(err) => {
                    stats.write_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %err, "cache commit failed; entries will be recomputed");
                }
            }
            clear_pending(pending, &batch);
        }
        let report = sweeper.maybe_sweep(sweep, db, pending, stats, sweep_control);
        for reply in sweep_replies {
            let _ = reply.send(report);
        }
        for reply in flushes {
            let _ = reply.send(());
        }
        if disconnected || stop {
            return;
        }
    }
}

/// The writer thread's sweep state.
struct Sweeper {
    /// File-record changes since the last sweep that may have left content unreferenced
    /// (as committed in `meta`).
    orphans: u64,
    /// File records the last sweep read (0 before the first).
    files_at_last_sweep: u64,
    /// After a failed sweep, the orphan count an automatic one waits for before trying
    /// again (a failure would otherwise repeat its whole-table read after every batch).
    retry_at: u64,
    /// The last sweep kept content for a served policy other than its records' own
    /// ([`SweepReport::kept_for_served`]): a policy no longer served then owes a sweep.
    kept_for_served: bool,
}

impl Sweeper {
    /// After a batch: sweeps when asked (`Some(force)`: always if forced, else if
    /// anything may be unreferenced) or when enough changes piled up; counts and logs it.
    fn maybe_sweep(
        &mut self,
        asked: Option<bool>,
        db: &Database,
        pending: &Pending,
        stats: &CacheStats,
        control: &SweepControl,
    ) -> Option<SweepReport> {
        let due = control
            .after
            .load(Ordering::Relaxed)
            .max(self.files_at_last_sweep / 4);
        if !self.should_run(asked, due) {
            return None;
        }
        control.epoch.fetch_add(1, Ordering::SeqCst);
        let swept = sweep_content(db, pending, &control.serving);
        control.epoch.fetch_add(1, Ordering::SeqCst);
        match swept {
            Ok(Some(report)) => {
                self.orphans = 0;
                self.retry_at = 0;
                self.files_at_last_sweep = report.files;
                self.kept_for_served = report.kept_for_served;
                stats.sweeps.fetch_add(1, Ordering::Relaxed);
                stats
                    .swept_records
                    .fetch_add(report.records, Ordering::Relaxed);
                tracing::info!(
                    swept = report.records,
                    chunks = report.chunks,
                    kept = report.kept,
                    file_records = report.files,
                    ms = report.elapsed.as_millis() as u64,
                    "cache sweep finished"
                );
                Some(report)
            }
            Ok(None) => {
                self.failed(due);
                None
            }
            Err(err) => {
                self.failed(due);
                stats.write_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %err, "cache sweep failed; unreferenced content stays");
                None
            }
        }
    }

    /// Whether to sweep now: always when forced; when asked, if anything may be
    /// unreferenced; by itself once `due` changes piled up (and, after a failure, `due`
    /// more since it).
    fn should_run(&self, asked: Option<bool>, due: u64) -> bool {
        match asked {
            Some(true) => true,
            Some(false) => self.orphans > 0,
            None => self.orphans >= due.max(self.retry_at),
        }
    }

    /// Backs an automatic sweep off after one that removed nothing because it failed.
    fn failed(&mut self, due: u64) {
        self.retry_at = self.orphans.saturating_add(due);
    }
}

/// The content a stored file record names, as (content hash, policy fingerprint); `None`
/// for a record without text, without a policy, or that does not decode.
fn content_ref(value: &[u8]) -> Option<([u8; 32], [u8; 32])> {
    let rec = record::decode::<FileRecord>(value)?;
    Some((rec.text?.hash, rec.stored_under?))
}

/// The live content of file records during one sweep.
struct LiveSet<'a> {
    /// Digests (the content table's key prefix) of the content keys to keep.
    digests: HashSet<[u8; 32]>,
    /// (root key, fingerprint) of the roots served now.
    serving: &'a [([u8; 32], [u8; 32])],
    /// Some keys were added for a served policy other than the record's own.
    for_served: bool,
}

impl LiveSet<'_> {
    /// Adds the content keys the record `rec` of `file_key` can be served from: under the
    /// policy it names and under each policy its root is served with now. Each with and
    /// without the path as context, since the record does not say whether the policy
    /// runs the detectors (the fingerprint fixes it, so only one of the two can exist).
    fn add_record(&mut self, file_key: &[u8], rec: &FileRecord) {
        let Some(info) = rec.text else { return };
        let (Some(root), Some(Ok(rel))) = (
            file_key.get(..32),
            file_key.get(32..).map(std::str::from_utf8),
        ) else {
            return;
        };
        let mut for_served = false;
        let serving = self
            .serving
            .iter()
            .filter(|(r, fp)| r.as_slice() == root && rec.stored_under != Some(*fp))
            .map(|(_, fp)| fp)
            .inspect(|_| for_served = true);
        for fingerprint in rec.stored_under.iter().chain(serving) {
            for path_context in [true, false] {
                let key = file_content_key(&info.hash, fingerprint, rel, path_context);
                self.digests.insert(*blake3::hash(&key).as_bytes());
            }
        }
        self.for_served |= for_served;
    }
}

/// Removes, in one write transaction, every content chunk that no file record (committed
/// or queued) and no queued content names. `Ok(None)`: the queue could not be read (a
/// poisoned lock), so nothing was removed.
fn sweep_content(
    db: &Database,
    pending: &Pending,
    serving: &Mutex<Vec<([u8; 32], [u8; 32])>>,
) -> Result<Option<SweepReport>, redb::Error> {
    let started = Instant::now();
    let Ok(serving) = serving.lock().map(|s| s.clone()) else {
        return Ok(None);
    };
    let mut w = db.begin_write()?;
    w.set_durability(Durability::Immediate)?;
    let mut live = LiveSet {
        digests: HashSet::new(),
        serving: &serving,
        for_served: false,
    };
    let mut report = SweepReport::default();
    {
        let files = w.open_table(FILES)?;
        for item in files.iter()? {
            let (k, v) = item?;
            report.files += 1;
            if let Some(rec) = record::decode::<FileRecord>(v.value()) {
                live.add_record(k.value(), &rec);
            }
        }
    }
    // What is queued is committed after this sweep: its content stays. (The writer is
    // this thread, so nothing leaves the queue meanwhile.)
    {
        let (Ok(files), Ok(content)) = (pending.files.lock(), pending.content.lock()) else {
            w.abort()?;
            return Ok(None);
        };
        for (k, (_, rec)) in files.iter() {
            live.add_record(k, rec);
        }
        for key in content.keys() {
            live.digests.insert(*blake3::hash(key).as_bytes());
        }
    }
    {
        let mut content = w.open_table(CONTENT)?;
        content.retain(|k, _| {
            let first = k.get(32..) == Some(&[0u8; 4][..]);
            let keep = k.len() == CONTENT_DB_KEY
                && k[..32]
                    .try_into()
                    .is_ok_and(|d: [u8; 32]| live.digests.contains(&d));
            if keep {
                report.kept += u64::from(first);
            } else {
                report.chunks += 1;
                report.records += u64::from(first);
            }
            keep
        })?;
        w.open_table(META)?.insert(META_ORPHANS, 0)?;
    }
    w.commit()?;
    report.kept_for_served = live.for_served;
    report.elapsed = started.elapsed();
    Ok(Some(report))
}

/// Applies a batch in one transaction; returns the new count of file-record changes
/// that may have left content unreferenced (`orphans` plus this batch's), committed with it.
fn commit(db: &Database, batch: &[Op], orphans: u64) -> Result<u64, redb::Error> {
    let mut w = db.begin_write()?;
    w.set_durability(Durability::Immediate)?;
    let mut orphaned = 0u64;
    {
        let mut files = w.open_table(FILES)?;
        let mut content = w.open_table(CONTENT)?;
        for op in batch {
            match op {
                Op::PutFile { key, value, .. } => {
                    let old = files
                        .insert(key.as_slice(), value.as_slice())?
                        .and_then(|g| content_ref(g.value()));
                    if old.is_some() && old != content_ref(value) {
                        orphaned += 1;
                    }
                }
                Op::PutContent { .. } | Op::DeleteContent(_) => {} // below
                Op::DeleteFile(key) => {
                    if files
                        .remove(key.as_slice())?
                        .is_some_and(|g| content_ref(g.value()).is_some())
                    {
                        orphaned += 1;
                    }
                }
                Op::DeleteTree(key) => {
                    if files
                        .remove(key.as_slice())?
                        .is_some_and(|g| content_ref(g.value()).is_some())
                    {
                        orphaned += 1;
                    }
                    let below = [key.as_slice(), b"/"].concat();
                    let mut doomed = Vec::new();
                    for item in files.range::<&[u8]>(below.as_slice()..)? {
                        let (k, _) = item?;
                        if !k.value().starts_with(&below) {
                            break;
                        }
                        doomed.push(k.value().to_vec());
                    }
                    for key in doomed {
                        if files
                            .remove(key.as_slice())?
                            .is_some_and(|g| content_ref(g.value()).is_some())
                        {
                            orphaned += 1;
                        }
                    }
                }
                Op::ForgetRoot(root) => {
                    let mut doomed = Vec::new();
                    for item in files.range::<&[u8]>(root.as_slice()..)? {
                        let (k, _) = item?;
                        if !k.value().starts_with(root) {
                            break;
                        }
                        doomed.push(k.value().to_vec());
                    }
                    for key in doomed {
                        if files
                            .remove(key.as_slice())?
                            .is_some_and(|g| content_ref(g.value()).is_some())
                        {
                            orphaned += 1;
                        }
                    }
                }
                Op::Sweep { .. } | Op::Unserved | Op::Flush(_) | Op::Stop(_) => {}
            }
        }
        // Content operations touch only their table, so they go in digest order (stable:
        // two on one record keep theirs): content keys are random, and neighbouring
        // inserts then share the pages they dirty instead of each copying a path of its
        // own through the tree.
        let mut content_ops: Vec<([u8; 32], &Op)> = batch
            .iter()
            .filter_map(|op| match op {
                Op::PutContent { key, .. } | Op::DeleteContent(key) => {
                    Some((content_digest(key), op))
                }
                _ => None,
            })
            .collect();
        content_ops.sort_by_key(|op| op.0);
        for (digest, op) in content_ops {
            remove_chunks(&mut content, &digest)?;
            if let Op::PutContent { value, .. } = op {
                // At most MAX_DECODED_CONTENT / CHUNK_BYTES chunks: far below u32::MAX.
                for (n, chunk) in value.chunks(CHUNK_BYTES).enumerate() {
                    content.insert(chunk_key_at(&digest, n as u32).as_slice(), chunk)?;
                }
            }
        }
        if orphaned > 0 {
            w.open_table(META)?
                .insert(META_ORPHANS, orphans.saturating_add(orphaned))?;
        }
    }
    w.commit()?;
    Ok(orphans.saturating_add(orphaned))
}

fn clear_pending(pending: &Pending, batch: &[Op]) {
    if let Ok(mut files) = pending.files.lock() {
        for op in batch {
            if let Op::PutFile { key, seq, .. } = op
                && files.get(key).is_some_and(|(s, _)| s == seq)
            {
                files.remove(key);
            }
        }
    }
    if let Ok(mut content) = pending.content.lock() {
        for op in batch {
            if let Op::PutContent { key, seq, .. } = op
                && content.get(key).is_some_and(|(s, _)| s == seq)
            {
                content.remove(key);
            }
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
