//! A byte budget: how much memory a queue or a set of work in flight may hold, counted in
//! bytes rather than items, so the daemon's memory does not grow with file sizes (a
//! thousand 4 MB records weigh what a million 4 KB ones do).
//!
//! A producer [`ByteBudget::acquire`]s the bytes an item will hold before making it and
//! keeps the [`Permit`] with the item; dropping the permit gives the bytes back. Waiters
//! are served in arrival order, so a large item is not starved by a stream of small
//! ones. An item larger than the whole budget is admitted alone once nothing else is
//! held: a queue never deadlocks on one large item, it only runs it by itself.
//!
//! [`release_free_memory`] hands what a finished phase freed back to the system, and
//! [`release_when_quiet`] does so once a burst of large calls is over.

use std::sync::{Arc, Condvar, LazyLock, Mutex};
use std::time::{Duration, Instant};

/// Hands the allocator's free memory back to the system (glibc's `malloc_trim`), after a
/// phase that allocated and freed hundreds of megabytes (the indexing pass, the search
/// and passage index builds). glibc returns freed memory only from the top of a heap, so
/// what a phase freed in the middle stays in the daemon's RSS until reused; an idle
/// daemon that indexed a large root would otherwise sit at its peak. Takes milliseconds;
/// a no-op with other allocators.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's heaps to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Allocations of this size or more get a mapping of their own during a bulk phase
/// ([`bulk_phase`]): glibc's default threshold.
const BULK_MAPPED_ABOVE: libc::c_int = 128 << 10;

/// The threshold outside bulk phases: what glibc's own threshold grows to once large
/// blocks have been freed (`DEFAULT_MMAP_THRESHOLD_MAX` on 64-bit), so calls keep their
/// large vectors in the heap and reuse them.
const CALL_MAPPED_ABOVE: libc::c_int = 32 << 20;

/// Bulk phases running now (several roots can index at once).
static BULK_PHASES: Mutex<usize> = Mutex::new(0);

/// Held while the daemon reads, redacts or indexes a whole root (the indexing pass, the
/// search and passage builds). Until the last one ends, a block of
/// [`BULK_MAPPED_ABOVE`] or more is mapped on its own and unmapped when freed.
///
/// Why: glibc raises its mapping threshold to the size of each mapped block freed, so
/// after the first large file of a pass every text up to 32 MiB is carved from the
/// worker threads' heaps and leaves holes among the small blocks still in use. On a
/// 106k-file corpus with files up to 4 MB the cold index peaked at 337–342 MB RSS that
/// way and at 291–296 MB with the threshold held. The cost is system time, about 1 s of
/// page faults in a 21 s cold index of that corpus (a threshold of 1 MiB saved half of
/// it and kept 10 MB more). Calls made outside indexing are not slowed: mapping each
/// large vector anew made whole-root searches and retrieves 25–38% slower, so the
/// threshold goes back up when the phase ends.
#[must_use = "the phase ends when the guard is dropped"]
pub struct BulkPhase(());

/// Starts a [`BulkPhase`].
pub fn bulk_phase() -> BulkPhase {
    let mut running = BULK_PHASES.lock().unwrap_or_else(|e| e.into_inner());
    if *running == 0 {
        set_mapping_threshold(BULK_MAPPED_ABOVE);
    }
    *running += 1;
    BulkPhase(())
}

impl Drop for BulkPhase {
    fn drop(&mut self) {
        let mut running = BULK_PHASES.lock().unwrap_or_else(|e| e.into_inner());
        *running -= 1;
        if *running == 0 {
            set_mapping_threshold(CALL_MAPPED_ABOVE);
        }
    }
}

/// glibc's `M_MMAP_THRESHOLD`; a no-op with other allocators.
fn set_mapping_threshold(bytes: libc::c_int) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; glibc takes its own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, bytes);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// How long after the last [`release_when_quiet`] the free memory is handed back: a
/// burst of large calls trims once, after it.
const QUIET: Duration = Duration::from_millis(250);

/// Asks for [`release_free_memory`] once no call has asked for [`QUIET`], on a thread of
/// its own (the caller's answer does not wait for it). For calls that read a whole
/// root: a whole-root `retrieve` of a 100k-file root frees tens of megabytes in the
/// middle of the heap, which glibc would otherwise keep.
pub fn release_when_quiet() {
    static LAST_ASKED: LazyLock<Arc<(Mutex<Option<Instant>>, Condvar)>> = LazyLock::new(|| {
        let shared: Arc<(Mutex<Option<Instant>>, Condvar)> = Arc::default();
        let worker = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("redctx-trim".into())
            .spawn(move || {
                let (asked, wake) = &*worker;
                let mut last = asked.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    match *last {
                        None => last = wake.wait(last).unwrap_or_else(|e| e.into_inner()),
                        Some(at) if at.elapsed() < QUIET => {
                            let left = QUIET - at.elapsed();
                            last = wake
                                .wait_timeout(last, left)
                                .unwrap_or_else(|e| e.into_inner())
                                .0;
                        }
                        Some(_) => {
                            *last = None;
                            drop(last);
                            release_free_memory();
                            last = asked.lock().unwrap_or_else(|e| e.into_inner());
                        }
                    }
                }
            });
        if spawned.is_err() {
            tracing::warn!("no thread to hand free memory back after large calls");
        }
        shared
    });
    let (asked, wake) = &**LAST_ASKED;
    *asked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    wake.notify_one();
}

/// A shared count of bytes held, with a cap producers wait on.
#[derive(Debug)]
pub struct ByteBudget {
    cap: u64,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    used: u64,
    /// Highest `used` seen since the last [`ByteBudget::take_peak`].
    peak: u64,
    /// Tickets: `next` is handed to the next arrival, `serving` is the one admitted next.
    next: u64,
    serving: u64,
}

/// Bytes held from a [`ByteBudget`]; given back when dropped.
#[derive(Debug)]
pub struct Permit {
    budget: Arc<ByteBudget>,
    bytes: u64,
}

impl ByteBudget {
    pub fn new(cap: u64) -> Arc<ByteBudget> {
        Arc::new(ByteBudget {
            cap,
            state: Mutex::new(State::default()),
            freed: Condvar::new(),
        })
    }

    /// Waits until `bytes` fit beside what is held (or nothing is held, for an item
    /// larger than the cap) and every earlier waiter was admitted, then holds them.
    pub fn acquire(self: &Arc<Self>, bytes: u64) -> Permit {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = state.next;
        state.next += 1;
        while state.serving != ticket || !(state.used == 0 || state.used + bytes <= self.cap) {
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.serving += 1;
        state.used += bytes;
        state.peak = state.peak.max(state.used);
        drop(state);
        // The next in line may fit too.
        self.freed.notify_all();
        Permit {
            budget: self.clone(),
            bytes,
        }
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).used
    }

    /// The most bytes held at once since the last call (then starts again from now).
    pub fn take_peak(&self) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let used = state.used;
        std::mem::replace(&mut state.peak, used)
    }

    pub fn cap(&self) -> u64 {
        self.cap
    }
}

impl Permit {
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.budget.state.lock().unwrap_or_else(|e| e.into_inner());
        state.used -= self.bytes;
        drop(state);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `acquire(bytes)` on a thread; the receiver gets the permit once admitted.
    fn acquire_on_thread(budget: &Arc<ByteBudget>, bytes: u64) -> mpsc::Receiver<Permit> {
        let (tx, rx) = mpsc::channel();
        let budget = budget.clone();
        std::thread::spawn(move || {
            let _ = tx.send(budget.acquire(bytes));
        });
        rx
    }

    const BLOCKED: Duration = Duration::from_millis(100);
    const ADMITTED: Duration = Duration::from_secs(10);

    #[test]
    fn a_producer_blocks_while_the_budget_is_full_and_proceeds_when_bytes_are_released() {
        let budget = ByteBudget::new(100);
        let first = budget.acquire(60);
        let second = budget.acquire(40);
        assert_eq!(budget.used(), 100);
        let third = acquire_on_thread(&budget, 30);
        assert!(
            third.recv_timeout(BLOCKED).is_err(),
            "admitted past the cap"
        );
        assert_eq!(budget.used(), 100);
        drop(second);
        let third = third
            .recv_timeout(ADMITTED)
            .expect("admitted once bytes were freed");
        assert_eq!(budget.used(), 90);
        assert_eq!(budget.take_peak(), 100);
        drop((first, third));
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn an_item_larger_than_the_budget_passes_alone() {
        let budget = ByteBudget::new(100);
        let small = budget.acquire(10);
        let large = acquire_on_thread(&budget, 1_000);
        assert!(
            large.recv_timeout(BLOCKED).is_err(),
            "ran beside another item"
        );
        drop(small);
        let large = large
            .recv_timeout(ADMITTED)
            .expect("admitted alone, no deadlock");
        assert_eq!(budget.used(), 1_000);
        // Nothing runs beside it, not even a small item...
        let after = acquire_on_thread(&budget, 1);
        assert!(after.recv_timeout(BLOCKED).is_err());
        // ...until it is released.
        drop(large);
        assert!(after.recv_timeout(ADMITTED).is_ok());
    }

    #[test]
    fn a_small_item_does_not_overtake_a_waiting_large_one() {
        let budget = ByteBudget::new(100);
        let held = budget.acquire(50);
        let large = acquire_on_thread(&budget, 80);
        // Let it take its place in line before the small one arrives.
        std::thread::sleep(BLOCKED);
        let small = acquire_on_thread(&budget, 10);
        assert!(
            small.recv_timeout(BLOCKED).is_err(),
            "a small item that fits went ahead of the waiting large one"
        );
        drop(held);
        let large = large
            .recv_timeout(ADMITTED)
            .expect("the first waiter goes first");
        let small = small
            .recv_timeout(ADMITTED)
            .expect("then the next one that fits");
        assert_eq!(budget.used(), 90);
        drop((large, small));
    }
}
