//! Sweeping content no file record references any more: the live keys are derived
//! from every root's file records and the queued ones, everything else is removed in
//! one write transaction.

use super::*;

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
    /// External detectors' findings removed (no file record names their text).
    pub findings: u64,
    /// Some content was kept only because a root is served under a policy other than the
    /// one its records name: the sweep after that policy stops being served removes it.
    pub kept_for_served: bool,
    pub elapsed: Duration,
}

/// What the cache handle and its writer share about sweeps.
pub(super) struct SweepControl {
    /// Bumped when a sweep starts and again when it ends: odd while one runs. A caller
    /// that found content and then stored a file record naming it compares this around
    /// the two steps ([`Cache::swept_since`]).
    pub(super) epoch: AtomicU64,
    /// [`SWEEP_AFTER_ORPHANS`], lowered by tests.
    pub(super) after: AtomicU64,
    /// (root key, policy fingerprint) of every root served now, once per
    /// [`Cache::serve_policy`]: a sweep keeps the content these policies would serve for
    /// each record of their root, whatever policy the record names (one path served
    /// under two option sets shares its file records, and each rewrites them).
    pub(super) serving: Mutex<Vec<([u8; 32], [u8; 32])>>,
}

/// The writer thread's sweep state.
pub(super) struct Sweeper {
    /// File-record changes since the last sweep that may have left content unreferenced
    /// (as committed in `meta`).
    pub(super) orphans: u64,
    /// File records the last sweep read (0 before the first).
    pub(super) files_at_last_sweep: u64,
    /// After a failed sweep, the orphan count an automatic one waits for before trying
    /// again (a failure would otherwise repeat its whole-table read after every batch).
    pub(super) retry_at: u64,
    /// The last sweep kept content for a served policy other than its records' own
    /// ([`SweepReport::kept_for_served`]): a policy no longer served then owes a sweep.
    pub(super) kept_for_served: bool,
}

impl Sweeper {
    /// After a batch: sweeps when asked (`Some(force)`: always if forced, else if
    /// anything may be unreferenced) or when enough changes piled up; counts and logs it.
    pub(super) fn maybe_sweep(
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
    pub(super) fn should_run(&self, asked: Option<bool>, due: u64) -> bool {
        match asked {
            Some(true) => true,
            Some(false) => self.orphans > 0,
            None => self.orphans >= due.max(self.retry_at),
        }
    }

    /// Backs an automatic sweep off after one that removed nothing because it failed.
    pub(super) fn failed(&mut self, due: u64) {
        self.retry_at = self.orphans.saturating_add(due);
    }
}

/// The content a stored file record names, as (content hash, policy fingerprint); `None`
/// for a record without text, without a policy, or that does not decode.
pub(super) fn content_ref(value: &[u8]) -> Option<([u8; 32], [u8; 32])> {
    let rec = record::decode::<FileRecord>(value)?;
    Some((rec.text?.hash, rec.stored_under?))
}

/// The live content of file records during one sweep.
pub(super) struct LiveSet<'a> {
    /// Digests (the content table's key prefix) of the content keys to keep.
    pub(super) digests: HashSet<[u8; 32]>,
    /// Content hashes file records name: findings of these texts stay.
    pub(super) hashes: HashSet<[u8; 32]>,
    /// (root key, fingerprint) of the roots served now.
    pub(super) serving: &'a [([u8; 32], [u8; 32])],
    /// Some keys were added for a served policy other than the record's own.
    pub(super) for_served: bool,
}

impl LiveSet<'_> {
    /// Adds the content keys the record `rec` of `file_key` can be served from: under the
    /// policy it names and under each policy its root is served with now. Each with and
    /// without the path as context, since the record does not say whether the policy
    /// runs the detectors (the fingerprint fixes it, so only one of the two can exist).
    pub(super) fn add_record(&mut self, file_key: &[u8], rec: &FileRecord) {
        let Some(info) = rec.text else { return };
        self.hashes.insert(info.hash);
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
pub(super) fn sweep_content(
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
        hashes: HashSet::new(),
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
        w.open_table(FINDINGS)?.retain(|k, _| {
            let keep = k
                .get(..32)
                .and_then(|h| <[u8; 32]>::try_from(h).ok())
                .is_some_and(|h| live.hashes.contains(&h));
            report.findings += u64::from(!keep);
            keep
        })?;
        w.open_table(META)?.insert(META_ORPHANS, 0)?;
    }
    w.commit()?;
    report.kept_for_served = live.for_served;
    report.elapsed = started.elapsed();
    Ok(Some(report))
}
