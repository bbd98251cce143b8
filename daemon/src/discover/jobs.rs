//! Running discoveries by the number their client gave them, so a second request on the
//! socket can ask how far one is (the CLI's progress bar). Only counts are shared.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The discoveries running now.
#[derive(Default)]
pub struct Jobs(Mutex<HashMap<u64, Arc<Progress>>>);

/// Documents done and in all of one discovery.
#[derive(Default)]
pub struct Progress {
    done: AtomicU64,
    total: AtomicU64,
}

impl Progress {
    /// The number of documents is known.
    pub fn start(&self, total: usize) {
        self.total.store(total as u64, Ordering::Relaxed);
    }

    /// One more document answered.
    pub fn step(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

/// A registered job; dropping it (the request ended or was cancelled) unregisters it.
pub struct Running<'a> {
    jobs: &'a Jobs,
    job: u64,
    pub progress: Arc<Progress>,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut map = self.jobs.0.lock().unwrap_or_else(|p| p.into_inner());
        // A later job of the same number (another client's choice) keeps its entry.
        if map
            .get(&self.job)
            .is_some_and(|p| Arc::ptr_eq(p, &self.progress))
        {
            map.remove(&self.job);
        }
    }
}

impl Jobs {
    /// Registers `job` until the returned guard drops.
    pub fn register(&self, job: u64) -> Running<'_> {
        let progress = Arc::new(Progress::default());
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(job, progress.clone());
        Running {
            jobs: self,
            job,
            progress,
        }
    }

    /// `(done, total)` of `job`; zeros when it is not running.
    pub fn progress(&self, job: u64) -> (u64, u64) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&job)
            .map_or((0, 0), |p| {
                (
                    p.done.load(Ordering::Relaxed),
                    p.total.load(Ordering::Relaxed),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_reports_progress_while_registered_only() {
        let jobs = Jobs::default();
        assert_eq!(jobs.progress(7), (0, 0));
        {
            let running = jobs.register(7);
            running.progress.start(3);
            running.progress.step();
            assert_eq!(jobs.progress(7), (1, 3));
            // The same number registered again: the newer job owns it.
            let newer = jobs.register(7);
            drop(running);
            assert_eq!(jobs.progress(7), (0, 0));
            newer.progress.start(2);
            assert_eq!(jobs.progress(7), (0, 2));
        }
        assert_eq!(jobs.progress(7), (0, 0));
    }
}
