//! The one writer thread: it commits queued operations in batches, fsynced, and runs
//! sweeps between batches; readers see queued records through [`Pending`].

use super::*;
use crate::budget::Permit;

pub(super) enum Op {
    PutFile {
        key: Vec<u8>,
        value: Vec<u8>,
        seq: u64,
        /// The queue's bytes for this record and the content sent with it (queued value
        /// and the decoded record readers see in [`Pending`]), given back once the batch
        /// holding it is committed and its pending entries are cleared.
        held: Permit,
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
    /// An external detector's findings: key = text hash + detector identity.
    PutFindings {
        key: [u8; 64],
        value: Vec<u8>,
        held: Permit,
    },
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
    /// What the op holds in memory until its batch is committed: a put's share of the
    /// queue's [`ByteBudget`] (content is charged with the file record sent after it).
    pub(super) fn bytes(&self) -> usize {
        match self {
            Op::PutFile { held, .. } | Op::PutFindings { held, .. } => held.bytes() as usize,
            Op::PutContent { .. } => 0,
            _ => 64,
        }
    }
}

/// Records sent to the writer but not yet committed, so readers see their own writes.
#[derive(Default)]
pub(super) struct Pending {
    pub(super) files: Mutex<HashMap<Vec<u8>, (u64, FileRecord)>>,
    pub(super) content: Mutex<HashMap<ContentKey, (u64, Arc<ContentRecord>)>>,
    pub(super) findings: Mutex<HashMap<[u8; 64], Vec<u8>>>,
}

pub(super) fn writer_loop(
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

/// Applies a batch in one transaction; returns the new count of file-record changes
/// that may have left content unreferenced (`orphans` plus this batch's), committed with it.
pub(super) fn commit(db: &Database, batch: &[Op], orphans: u64) -> Result<u64, redb::Error> {
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
                Op::PutFindings { key, value, .. } => {
                    w.open_table(FINDINGS)?
                        .insert(key.as_slice(), value.as_slice())?;
                }
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

pub(super) fn clear_pending(pending: &Pending, batch: &[Op]) {
    if let Ok(mut files) = pending.files.lock() {
        for op in batch {
            if let Op::PutFile { key, seq, .. } = op
                && files.get(key).is_some_and(|(s, _)| s == seq)
            {
                files.remove(key);
            }
        }
    }
    if let Ok(mut findings) = pending.findings.lock() {
        for op in batch {
            if let Op::PutFindings { key, value, .. } = op
                && findings.get(key) == Some(value)
            {
                findings.remove(key);
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
