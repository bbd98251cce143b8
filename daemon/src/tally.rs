//! Sums that many threads add to at once: a whole-root search or retrieve counts once
//! per file in scope from every worker, and one shared atomic made the cores trade its
//! cache line back and forth on each file. Each worker adds to its own line here; a
//! reader sums them (after the workers are done, for an exact figure).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

const LINES: usize = 8;

/// One cache line (128 bytes covers the adjacent-line prefetch of x86 cores).
#[derive(Default)]
#[repr(align(128))]
struct Line(AtomicU64);

#[derive(Default)]
pub struct Tally([Line; LINES]);

impl Tally {
    pub fn add(&self, n: u64) {
        // Workers of one rayon pool have distinct indexes; other threads share line 0.
        let line = rayon::current_thread_index().map_or(0, |i| i % LINES);
        self.0[line].0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn sum(&self) -> u64 {
        self.0.iter().map(|l| l.0.load(Ordering::Relaxed)).sum()
    }
}

/// One value per worker of the current rayon pool, each on its own cache line: a
/// worker adds to its own while it holds the data in cache, and the values are combined
/// once the work is done ([`PerWorker::into_values`]).
pub struct PerWorker<T>(Box<[Padded<T>]>);

#[repr(align(128))]
struct Padded<T>(Mutex<T>);

impl<T: Default> PerWorker<T> {
    /// One value per worker of the pool this is called in (the global one outside any).
    pub fn new() -> PerWorker<T> {
        let workers = rayon::current_num_threads().max(1);
        PerWorker((0..workers).map(|_| Padded(Mutex::default())).collect())
    }

    /// Runs `f` on the calling worker's value (threads outside the pool share the first).
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let at = rayon::current_thread_index().map_or(0, |i| i % self.0.len());
        let mut value = self.0[at].0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut value)
    }

    pub fn into_values(self) -> impl Iterator<Item = T> {
        self.0
            .into_iter()
            .map(|p| p.0.into_inner().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<T: Default> Default for PerWorker<T> {
    fn default() -> Self {
        PerWorker::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn adds_from_every_thread_sum_exactly() {
        let tally = Tally::default();
        (0..10_000u64)
            .into_par_iter()
            .for_each(|i| tally.add(i % 3));
        tally.add(5);
        assert_eq!(tally.sum(), (0..10_000u64).map(|i| i % 3).sum::<u64>() + 5);
    }

    #[test]
    fn per_worker_values_combine_to_every_addition() {
        let sums: PerWorker<Vec<u64>> = PerWorker::new();
        (0..5_000u64)
            .into_par_iter()
            .for_each(|i| sums.with(|v| v.push(i)));
        let mut all: Vec<u64> = sums.into_values().flatten().collect();
        all.sort_unstable();
        assert_eq!(all, (0..5_000).collect::<Vec<_>>());
    }
}
