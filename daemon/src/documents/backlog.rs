//! The documents of one served root and what became of each (extracted, failed or
//! pending), for the background pre-extraction pass and `redctx status`; and the claims
//! that keep two threads (a read, the pass, the watcher's re-redaction) from extracting
//! the same document at once.
//!
//! Every outcome is kept with the stat it was reached at: a document is pending when
//! its newest known stat (the index's, or a read's) differs from its outcome's, so an
//! edit makes it pending again and nothing is ever answered for another version. The pass
//! tries each version once ([`Backlog::attempted`] settles it whatever happened), so a
//! hostile file costs one worker per version, never a loop. Failures live in memory only:
//! after a restart the pass tries a failed document once more.

use crate::fs::StatKey;
use crate::view::ViewError;
use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What `redctx status` shows of a root's documents.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DocumentCounts {
    /// Documents the root holds (as far as the index knows).
    pub total: u64,
    /// Of those, documents whose current version is extracted and cached.
    pub extracted: u64,
    /// Documents whose current version could not be extracted (or served).
    pub failed: u64,
    /// Documents not looked at in their current version yet.
    pub pending: u64,
}

/// How one version of a document ended.
#[derive(Debug)]
struct Outcome {
    stat: StatKey,
    /// `None`: extracted and cached.
    failure: Option<ViewError>,
    /// The version was settled when it was read (see `index::is_settled`): only then may
    /// a read answer a remembered failure without extracting again.
    trusted: bool,
}

#[derive(Debug)]
struct Doc {
    /// The newest stat known for the path.
    stat: StatKey,
    outcome: Option<Outcome>,
}

impl Doc {
    fn pending(&self) -> bool {
        self.outcome.as_ref().is_none_or(|o| o.stat != self.stat)
    }
}

#[derive(Debug, Default)]
struct Table {
    docs: HashMap<Box<str>, Doc>,
    /// Paths being extracted now.
    claimed: HashSet<Box<str>>,
    /// The pass should list the root's documents again (a rescan).
    relist: bool,
    /// The root is gone: the pass ends.
    closed: bool,
}

/// A root's documents (see the module doc).
#[derive(Debug, Default)]
pub struct Backlog {
    table: Mutex<Table>,
    /// Wakes the pass (work, a relist, the end) and threads waiting for a claim.
    changed: Condvar,
}

/// What the pass does next ([`Backlog::next`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Work {
    /// List the root's documents and hand them to [`Backlog::relist`].
    Relist,
    /// Extract these pending documents, in path order (each may have been done by a read
    /// meanwhile: [`Backlog::is_pending`]).
    Extract(Vec<(String, StatKey)>),
    /// The root is closed.
    Closed,
}

/// A document being extracted by the holder; released on drop.
pub struct Claim<'a> {
    backlog: &'a Backlog,
    rel: Box<str>,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.backlog.lock().claimed.remove(&self.rel);
        self.backlog.changed.notify_all();
    }
}

impl Backlog {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn changed(&self) {
        self.changed.notify_all();
    }

    /// The documents the root holds now, with their stats: outcomes of paths still
    /// listed are kept, other paths are dropped.
    pub fn relist(&self, docs: impl IntoIterator<Item = (String, StatKey)>) {
        let mut t = self.lock();
        let mut old = std::mem::take(&mut t.docs);
        for (rel, stat) in docs {
            let outcome = old.remove(rel.as_str()).and_then(|d| d.outcome);
            t.docs.insert(rel.into(), Doc { stat, outcome });
        }
        drop(t);
        self.changed();
    }

    /// Asks the pass to list the root's documents again.
    pub fn request_relist(&self) {
        self.lock().relist = true;
        self.changed();
    }

    /// Ends the pass (the root is dropped).
    pub fn close(&self) {
        self.lock().closed = true;
        self.changed();
    }

    /// Document `rel` is now at `stat` (the watcher saw it change, or it was created).
    pub fn noted(&self, rel: &str, stat: StatKey) {
        let mut t = self.lock();
        match t.docs.get_mut(rel) {
            Some(doc) => doc.stat = stat,
            None => {
                t.docs.insert(
                    rel.into(),
                    Doc {
                        stat,
                        outcome: None,
                    },
                );
            }
        }
        drop(t);
        self.changed();
    }

    /// `rel` is gone, and with it every document below it (a directory).
    pub fn forget(&self, rel: &str) {
        let mut t = self.lock();
        if rel == "." {
            t.docs.clear();
            return;
        }
        let below = format!("{rel}/");
        t.docs
            .retain(|path, _| path.as_ref() != rel && !path.starts_with(&below));
    }

    /// An extraction (or a cache hit) of `rel` read at `stat`: its newest stat and its
    /// outcome. `failure` is the error a reader got; `trusted` whether the version was
    /// settled.
    pub fn record(&self, rel: &str, stat: StatKey, failure: Option<ViewError>, trusted: bool) {
        let mut t = self.lock();
        let outcome = Some(Outcome {
            stat,
            failure,
            trusted,
        });
        match t.docs.get_mut(rel) {
            Some(doc) => *doc = Doc { stat, outcome },
            None => {
                t.docs.insert(rel.into(), Doc { stat, outcome });
            }
        }
    }

    /// The pass tried `rel` listed at `stat` and got `result`: unless something newer
    /// was recorded meanwhile (by the attempt itself or a read), that version is settled
    /// as this result, so it is not tried again. A path that is no longer a servable
    /// document (deleted, replaced by a directory or a symlink, excluded) is dropped.
    pub fn attempted(&self, rel: &str, stat: StatKey, result: Result<(), ViewError>) {
        let mut t = self.lock();
        if let Err(ViewError::Missing | ViewError::NotAFile | ViewError::Excluded) = result {
            t.docs.remove(rel);
            return;
        }
        if let Some(doc) = t.docs.get_mut(rel)
            && doc.stat == stat
            && doc.pending()
        {
            doc.outcome = Some(Outcome {
                stat,
                failure: result.err(),
                trusted: false,
            });
        }
    }

    /// Whether `rel` at `stat` still waits for the pass.
    pub fn is_pending(&self, rel: &str, stat: &StatKey) -> bool {
        self.lock()
            .docs
            .get(rel)
            .is_some_and(|d| d.stat == *stat && d.pending())
    }

    /// The failure an extraction of `rel` at `stat` already met, when a read may answer
    /// it without extracting again: the version was settled when read, and the failure
    /// was the document's own and trusted (the reader records a deadline met at low
    /// priority, or by the pre-extraction pass, as untrusted: tried again).
    pub fn remembered_failure(&self, rel: &str, stat: &StatKey) -> Option<ViewError> {
        let t = self.lock();
        let outcome = t.docs.get(rel)?.outcome.as_ref()?;
        match &outcome.failure {
            Some(err @ ViewError::Document(_)) if outcome.trusted && outcome.stat == *stat => {
                Some(err.clone())
            }
            _ => None,
        }
    }

    /// The counts `status` shows.
    pub fn counts(&self) -> DocumentCounts {
        let t = self.lock();
        let mut counts = DocumentCounts {
            total: t.docs.len() as u64,
            ..DocumentCounts::default()
        };
        for doc in t.docs.values() {
            match &doc.outcome {
                Some(o) if o.stat == doc.stat && o.failure.is_none() => counts.extracted += 1,
                Some(o) if o.stat == doc.stat => counts.failed += 1,
                _ => counts.pending += 1,
            }
        }
        counts
    }

    /// Blocks until the pass has something to do: a relist, pending documents nobody is
    /// extracting, or the end.
    pub fn next(&self) -> Work {
        let mut t = self.lock();
        loop {
            if t.closed {
                return Work::Closed;
            }
            if std::mem::take(&mut t.relist) {
                return Work::Relist;
            }
            let mut todo: Vec<(String, StatKey)> = t
                .docs
                .iter()
                .filter(|(rel, doc)| doc.pending() && !t.claimed.contains(*rel))
                .map(|(rel, doc)| (rel.to_string(), doc.stat))
                .collect();
            if !todo.is_empty() {
                todo.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                return Work::Extract(todo);
            }
            t = self.changed.wait(t).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Takes the claim on `rel`, waiting while another thread extracts it. The holder
    /// looks at the cache again before extracting: the previous holder may have filled it.
    pub fn claim(&self, rel: &str) -> Claim<'_> {
        let mut t = self.lock();
        while t.claimed.contains(rel) {
            t = self.changed.wait(t).unwrap_or_else(|e| e.into_inner());
        }
        t.claimed.insert(rel.into());
        Claim {
            backlog: self,
            rel: rel.into(),
        }
    }

    /// Whether no document waits for the pass and none is being extracted (tests and
    /// benches wait for this).
    pub fn idle(&self) -> bool {
        let t = self.lock();
        t.claimed.is_empty() && !t.relist && t.docs.values().all(|d| !d.pending())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::DocError;

    fn stat(size: u64) -> StatKey {
        StatKey {
            size,
            ..StatKey::default()
        }
    }

    #[test]
    fn a_version_is_pending_until_its_outcome_and_again_after_an_edit() {
        let b = Backlog::default();
        b.relist([
            ("a.pdf".to_owned(), stat(1)),
            ("b.docx".to_owned(), stat(2)),
        ]);
        assert_eq!(
            b.next(),
            Work::Extract(vec![("a.pdf".into(), stat(1)), ("b.docx".into(), stat(2))])
        );
        b.record("a.pdf", stat(1), None, true);
        b.attempted("b.docx", stat(2), Err(DocError::Failed.into()));
        let counts = b.counts();
        assert_eq!((counts.total, counts.extracted, counts.failed), (2, 1, 1));
        assert!(b.idle());
        b.noted("a.pdf", stat(3));
        assert_eq!(b.counts().pending, 1);
        assert_eq!(b.next(), Work::Extract(vec![("a.pdf".into(), stat(3))]));
    }

    #[test]
    fn the_pass_settles_a_version_once_whatever_happened() {
        let b = Backlog::default();
        b.relist([("x.pdf".to_owned(), stat(1))]);
        b.attempted("x.pdf", stat(1), Err(ViewError::Internal));
        assert!(!b.is_pending("x.pdf", &stat(1)));
        assert_eq!(b.counts().failed, 1);
        // Deleted meanwhile: no longer counted.
        b.noted("y.pdf", stat(1));
        b.attempted("y.pdf", stat(1), Err(ViewError::Missing));
        assert_eq!(b.counts().total, 1);
    }

    #[test]
    fn only_settled_failures_of_the_same_version_are_answered_without_extracting() {
        let b = Backlog::default();
        let failed = ViewError::Document(DocError::Failed);
        b.record("a.pdf", stat(1), Some(failed.clone()), true);
        assert_eq!(
            b.remembered_failure("a.pdf", &stat(1)),
            Some(failed.clone())
        );
        assert_eq!(b.remembered_failure("a.pdf", &stat(2)), None);
        b.record("b.pdf", stat(1), Some(failed), false);
        assert_eq!(b.remembered_failure("b.pdf", &stat(1)), None);
        // A tool call's deadline is remembered like any failure of the document's own.
        let deadline = ViewError::Document(DocError::Deadline);
        b.record("c.pdf", stat(1), Some(deadline.clone()), true);
        assert_eq!(b.remembered_failure("c.pdf", &stat(1)), Some(deadline));
    }

    #[test]
    fn a_removed_directory_takes_its_documents_and_claims_exclude_one_another() {
        let b = Backlog::default();
        b.relist([
            ("d/a.pdf".to_owned(), stat(1)),
            ("d/e/b.pdf".to_owned(), stat(1)),
            ("dd.pdf".to_owned(), stat(1)),
        ]);
        b.forget("d");
        assert_eq!(b.counts().total, 1);
        let claim = b.claim("dd.pdf");
        // Claimed documents are not handed to the pass.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _second = b.claim("dd.pdf");
                tx.send(()).unwrap();
            });
            assert!(
                rx.recv_timeout(std::time::Duration::from_millis(50))
                    .is_err()
            );
            drop(claim);
            rx.recv().unwrap();
        });
    }
}
