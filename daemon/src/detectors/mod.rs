//! Detectors that live outside the engine: external detector processes
//! (`--detector exec=PROGRAM`, protocol in `docs/detector-protocol.md`) and the
//! findings cache in front of them. The engine sees each as a
//! [`crate::engine::plugged::SpanSource`].
//!
//! - `protocol.rs`: the messages, parsed and checked (pure).
//! - `process.rs`: one detector process: start, hello, deadline, restart with back-off.
//! - `findings.rs`: findings keyed by (text hash, detector name, version, argument) in
//!   the cache, so a file is sent to a detector once per content and identity.
//!
//! Processes are shared: one per program (and program file version) for the whole
//! daemon, however many roots and policies use it, and ended with the last of them.

pub mod findings;
pub mod process;
pub mod protocol;

use std::cell::Cell;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

pub use findings::Findings;
pub use process::{ExecDetector, StartError, Timeouts};

thread_local! {
    static BACKGROUND: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as background work (the index pass, re-redaction): its
/// detector requests wait while a tool call's are queued.
pub fn mark_background_thread() {
    BACKGROUND.with(|b| b.set(true));
}

/// Whether the calling thread does background work ([`mark_background_thread`]).
pub(crate) fn is_background_thread() -> bool {
    BACKGROUND.with(Cell::get)
}

/// The identity of a program file: a replaced program is a new detector process.
type ProgramKey = (PathBuf, u64, u64, u64, i64, i64);

fn registry() -> &'static Mutex<HashMap<ProgramKey, Weak<ExecDetector>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<ProgramKey, Weak<ExecDetector>>>> = OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

/// The running detector of `program`, started (and its hello read) if no policy holds
/// one for this version of the file. Holds the registry lock while starting, so two
/// loads of one policy start one process.
pub fn obtain(program: &Path) -> Result<Arc<ExecDetector>, StartError> {
    let meta = std::fs::metadata(program).map_err(|_| StartError::Spawn)?;
    let key = (
        program.to_path_buf(),
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
    );
    let mut map = registry().lock().unwrap_or_else(|e| e.into_inner());
    map.retain(|_, d| d.strong_count() > 0);
    if let Some(found) = map.get(&key).and_then(Weak::upgrade) {
        return Ok(found);
    }
    let detector = Arc::new(ExecDetector::start(program, Timeouts::default())?);
    tracing::info!(
        detector = %detector.hello().name,
        version = %detector.hello().version,
        "external detector started"
    );
    map.insert(key, Arc::downgrade(&detector));
    Ok(detector)
}
