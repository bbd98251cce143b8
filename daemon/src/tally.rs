//! A count that many threads bump at once: a whole-root search or retrieve counts once
//! per file in scope from every worker, and one shared atomic made the cores trade its
//! cache line back and forth on each file. Each worker adds to its own line here; a
//! reader sums them (after the workers are done, for an exact figure).

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
}
