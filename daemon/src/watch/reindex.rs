//! The low-priority thread that re-redacts files the watcher saw change, so the next
//! read finds them in the cache.

use super::*;

pub(super) fn lower_thread_priority() {
    crate::detectors::mark_background_thread();
    // Re-redaction yields the CPU to tool calls (a Linux thread is a task: PRIO_PROCESS
    // with its tid renices just this thread).
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread; failure only leaves the priority.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// Re-redacts queued files into the root's cache until stopped.
pub(super) fn reindex_loop(root: &ServedRoot, shared: &Shared) {
    lower_thread_priority();
    // This thread redacts every changed file: build its share of the matchers' lazy
    // state now, not on the first edit. A panic here must not take the thread down.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| root.engine_handle().warm_up()));
    loop {
        let rel = {
            let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(rel) = q.order.pop_front() {
                    q.queued.remove(&rel);
                    break rel;
                }
                q = shared.queue_cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        let done = std::panic::catch_unwind(AssertUnwindSafe(|| reindex_one(root, &rel)));
        if done.unwrap_or(false) {
            shared.reindexed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Redacts one changed file into the cache (both variants); false when it is not a text
/// file within limits or could not be read.
pub(super) fn reindex_one(root: &ServedRoot, rel: &str) -> bool {
    let Some(entry) = root.index().entry(rel) else {
        return false;
    };
    if entry.kind != EntryKind::File || entry.size > root.limits().max_raw_bytes_per_file {
        return false;
    }
    if !root.is_text(&entry) {
        return false;
    }
    root.content(&entry, true).is_ok()
}
