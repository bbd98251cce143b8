//! Pre-order traversal of a root view and the per-call operation budget (spec 6.4, 6.5).
//!
//! The walk is lazy, like the reference's generator: entries are charged to the budget
//! only when the walk actually reaches them, so a call that stops early (a bundle at its
//! file cap, a search at `max_results`) never fails on entries it did not need.

use super::ToolError;
use crate::cancel::Stop;
use crate::view::{Entry, EntryKind, Limits, ListedEntry, RootView, ViewError};
use crate::watch::Synced;
use std::sync::Arc;

/// The traversal budget we recommend as the daemon's default for every walk
/// (`Limits::max_traversal_entries`).
///
/// The reference's 10,000 entries exist to bound filesystem IO per call; our walks run
/// over the in-memory index, where a million entries cost well under a second, while
/// 10,000 made whole-root `list -r`, `search` and id resolution fail on real monorepos
/// (120 k entries in the perf anchors). One million leaves 8× headroom over that corpus
/// and still stops a runaway call on a pathological tree.
pub const DEFAULT_TRAVERSAL_ENTRIES: u64 = 1_000_000;

/// The raw-byte budget per call we recommend as the daemon's default
/// (`Limits::max_total_raw_bytes`).
///
/// The reference's 50,000,000 bytes bound the fresh reads and the (slow) redaction one
/// call may trigger; a whole-root search or retrieve on a generated 20,000-file monorepo
/// (87 MB) already failed on it. Our calls answer from the cache of redacted text, and a
/// cold file costs milliseconds, so the default is sized to let whole-root calls succeed
/// on real monorepos: 4,000,000,000 bytes is six times the 665 MB, 106 k-file corpus of
/// the perf anchors and twice the largest repositories we know of (about 2 GB), while a
/// call over a pathological tree (a home directory, a log archive) still stops. A limit
/// the operator sets is applied exactly, with the reference's message.
pub const DEFAULT_TOTAL_RAW_BYTES: u64 = 4_000_000_000;

/// What one call may consume: traversal entries, files read, raw bytes (spec 6.5), and
/// until when (`stop`: cancellation and deadline, checked as entries and files are
/// charged). `None` means unlimited.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    /// Traversal entries (start + every listed child).
    pub max_entries: Option<u64>,
    /// Files read (`File limit exceeded.`).
    pub max_files: Option<u64>,
    /// Raw bytes of one file (its size on disk).
    pub max_file_bytes: Option<u64>,
    /// Raw bytes of all files read by the call.
    pub max_total_bytes: Option<u64>,
    /// When the call must give up, whatever it has consumed.
    pub stop: Stop,
    entries: u64,
    files: u64,
    bytes: u64,
}

impl Budget {
    /// The operator's limits for one call; no file-count limit.
    pub fn from_limits(limits: &Limits) -> Budget {
        Budget {
            max_entries: Some(limits.max_traversal_entries),
            max_files: None,
            max_file_bytes: Some(limits.max_raw_bytes_per_file),
            max_total_bytes: Some(limits.max_total_raw_bytes),
            ..Budget::default()
        }
    }

    /// The same budget, ending when `stop` says so.
    pub fn stopping(self, stop: &Stop) -> Budget {
        Budget {
            stop: stop.clone(),
            ..self
        }
    }

    /// Charges one traversal entry (`Traversal entry limit exceeded.` past the cap).
    /// Every 1,024th entry also checks `stop`: a walk over the index visits about a
    /// million entries a second, so that is a check every millisecond or so.
    pub fn consume_entry(&mut self) -> Result<(), ToolError> {
        self.entries += 1;
        if self.entries.is_multiple_of(1024) {
            self.stop.check()?;
        }
        match self.max_entries {
            Some(max) if self.entries > max => Err(ViewError::EntryLimit.into()),
            _ => Ok(()),
        }
    }

    /// Whether a file of `size` raw bytes is over the per-file limit: a scan over many
    /// files leaves it out uncharged; a read of it fails in [`Budget::consume_file`].
    pub fn over_file_limit(&self, size: u64) -> bool {
        self.max_file_bytes.is_some_and(|max| size > max)
    }

    /// Charges one file read of `size` raw bytes: the file count first, then the
    /// per-file and total byte limits, as the reference does.
    pub fn consume_file(&mut self, size: u64) -> Result<(), ToolError> {
        self.stop.check()?;
        self.files += 1;
        if let Some(max) = self.max_files
            && self.files > max
        {
            return Err(ToolError::FileLimit);
        }
        if let Some(max) = self.max_file_bytes
            && size > max
        {
            return Err(ViewError::FileByteLimit.into());
        }
        let total = self.bytes.saturating_add(size);
        if let Some(max) = self.max_total_bytes
            && total > max
        {
            return Err(ViewError::TotalByteLimit.into());
        }
        self.bytes = total;
        Ok(())
    }
}

/// Walks `start` in reference pre-order: the start, then for each directory its
/// children in view order (directories first), recursing into each subdirectory before
/// later siblings. Yields `(entry, depth)` with depth 0 for the start; a directory at
/// `max_depth` is yielded but not expanded. Directories are yielded only when
/// `include_dirs`. The start costs one entry and every child of an expanded directory
/// one more; the walk ends after yielding its first error.
pub fn walk<'a>(
    view: &'a dyn RootView,
    start: Entry,
    max_depth: Option<u32>,
    include_dirs: bool,
    budget: &'a mut Budget,
) -> Walk<'a> {
    // An unbounded walk lists up to the whole tree; one sync with the watcher spares it
    // an `lstat` per file. A bounded one (a listing, a tree) lists little: not worth it.
    let synced = (max_depth.is_none() && start.kind == EntryKind::Dir)
        .then(|| view.watch_sync())
        .flatten();
    Walk {
        view,
        budget,
        max_depth,
        include_dirs,
        start: Some(start),
        expand: None,
        stack: Vec::new(),
        done: false,
        synced,
    }
}

/// The lazy iterator behind [`walk`].
pub struct Walk<'a> {
    view: &'a dyn RootView,
    budget: &'a mut Budget,
    max_depth: Option<u32>,
    include_dirs: bool,
    start: Option<Entry>,
    /// A directory already yielded whose children are listed on the next step.
    expand: Option<(Entry, u32)>,
    /// Per directory being walked: its listing, the position of its next child, and
    /// that child's depth.
    stack: Vec<(Arc<[Entry]>, usize, u32)>,
    done: bool,
    /// The watcher's proof for an unbounded walk: listings come from the index.
    synced: Option<Synced>,
}

impl Walk<'_> {
    /// Leaves the directory just yielded unexpanded: its children are neither listed nor
    /// charged (the rehydration map's walk prunes the write sub-directory).
    pub fn prune(&mut self) {
        self.expand = None;
    }

    fn fail(&mut self, error: ToolError) -> Option<Result<(ListedEntry, u32), ToolError>> {
        self.done = true;
        Some(Err(error))
    }
}

impl Walk<'_> {
    /// The next entry, held through its listing ([`ListedEntry`]): what a caller that
    /// keeps every file of a whole-root walk holds.
    pub fn next_listed(&mut self) -> Option<Result<(ListedEntry, u32), ToolError>> {
        if self.done {
            return None;
        }
        loop {
            if let Some(start) = self.start.take() {
                if let Err(error) = self.budget.consume_entry() {
                    return self.fail(error);
                }
                if start.kind == EntryKind::File {
                    return Some(Ok((ListedEntry::alone(start), 0)));
                }
                self.expand = Some((start.clone(), 0));
                if self.include_dirs {
                    return Some(Ok((ListedEntry::alone(start), 0)));
                }
                continue;
            }
            if let Some((dir, depth)) = self.expand.take() {
                if self.max_depth.is_some_and(|max| depth >= max) {
                    continue;
                }
                let listed = match &self.synced {
                    Some(proof) => self.view.synced_children(&dir, proof),
                    None => self.view.children(&dir).map(Arc::from),
                };
                let children = match listed {
                    Ok(children) => children,
                    // A directory below the start that is gone, or whose path the OS
                    // cannot open (longer than PATH_MAX), is left out, as the
                    // reference's walk leaves it: one such directory must not fail
                    // every whole-root call.
                    Err(ViewError::Missing) if depth > 0 => continue,
                    Err(error) => return self.fail(error.into()),
                };
                for _ in children.iter() {
                    if let Err(error) = self.budget.consume_entry() {
                        return self.fail(error);
                    }
                }
                self.stack.push((children, 0, depth + 1));
                continue;
            }
            let (children, next, depth) = self.stack.last_mut()?;
            let depth = *depth;
            let Some(child) = ListedEntry::new(children.clone(), *next) else {
                self.stack.pop();
                continue;
            };
            *next += 1;
            if child.kind == EntryKind::Dir {
                self.expand = Some(((*child).clone(), depth));
                if self.include_dirs {
                    return Some(Ok((child, depth)));
                }
                continue;
            }
            return Some(Ok((child, depth)));
        }
    }
}

impl Iterator for Walk<'_> {
    type Item = Result<(Entry, u32), ToolError>;

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.next_listed()?;
        Some(next.map(|(entry, depth)| ((*entry).clone(), depth)))
    }
}
