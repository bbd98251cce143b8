//! The extraction worker: `redctxd --extract-worker <suffix> [background]` reads a
//! document's bytes on stdin and writes its Markdown on stdout, exit code 0; any refusal
//! is an exit code ([`DocError`]'s). It limits itself first (address space, CPU seconds),
//! so a parser that allocates or loops without end is stopped by the kernel; the daemon
//! sees a signal or a deadline and answers the fixed failure message. A background
//! extraction's worker also lowers its own CPU priority.

use super::{DEADLINE, DocError, MAX_INPUT_BYTES, MAX_OUTPUT_CHARS, convert};
use crate::fs::DocumentFormat;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address space a worker may map: parsers of a 5 MB input need far less.
const WORKER_MEMORY_BYTES: u64 = 1 << 30;
/// CPU seconds a worker may use (the wall-clock deadline usually comes first).
const WORKER_CPU_SECONDS: u64 = DEADLINE.as_secs() + 1;
/// Output bytes read from a worker: enough for [`MAX_OUTPUT_CHARS`] of any UTF-8.
const MAX_OUTPUT_BYTES: u64 = MAX_OUTPUT_CHARS as u64 * 4;
/// The nice value of a background extraction's worker (the index pass's threads run at
/// 10; a document is larger work that a tool call should never wait behind).
pub const BACKGROUND_NICE: i32 = 15;
/// The worker's argument that asks for [`BACKGROUND_NICE`].
const BACKGROUND_ARG: &str = "background";

/// Whom an extraction is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// A tool call waits for it.
    Normal,
    /// Pre-extraction or re-redaction after an edit: the worker yields the CPU.
    Background,
}

/// The worker's main: `suffix` names the format; `mode` is [`BACKGROUND_ARG`] for a
/// background extraction. Returns the process exit code.
pub fn main(suffix: &str, mode: Option<&str>) -> i32 {
    limit_self();
    if mode == Some(BACKGROUND_ARG) {
        // SAFETY: a plain syscall on this process; raising the nice value is always
        // allowed, and a failure only leaves the priority as it was.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE) };
    }
    let Some(format) = DocumentFormat::ALL
        .into_iter()
        .find(|f| f.suffix() == suffix)
    else {
        return DocError::Unsupported.code();
    };
    let mut bytes = Vec::new();
    if std::io::stdin()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return DocError::Failed.code();
    }
    // Parsers' panics print nothing: stderr is closed by the daemon, and the hook is off.
    std::panic::set_hook(Box::new(|_| {}));
    match convert(format, &bytes) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            if out
                .write_all(text.as_bytes())
                .and_then(|()| out.flush())
                .is_err()
            {
                return DocError::Failed.code();
            }
            0
        }
        Err(err) => err.code(),
    }
}

fn limit_self() {
    let set = |resource, value: u64| {
        let limit = libc::rlimit {
            rlim_cur: value as libc::rlim_t,
            rlim_max: value as libc::rlim_t,
        };
        // SAFETY: setrlimit reads a valid, initialised struct; it only lowers our limits.
        unsafe { libc::setrlimit(resource, &limit) };
    };
    set(libc::RLIMIT_AS, WORKER_MEMORY_BYTES);
    set(libc::RLIMIT_CPU, WORKER_CPU_SECONDS);
    set(libc::RLIMIT_CORE, 0);
}

/// Runs one extraction in a fresh worker started from `exe`, killed at `deadline`.
pub fn run(
    exe: &Path,
    format: DocumentFormat,
    bytes: &[u8],
    deadline: Duration,
    priority: Priority,
) -> Result<String, DocError> {
    let started = Instant::now();
    let mut child = Command::new(exe)
        .arg(super::WORKER_FLAG)
        .arg(format.suffix())
        .args((priority == Priority::Background).then_some(BACKGROUND_ARG))
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|_| DocError::Failed)?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(DocError::Failed);
    };
    let input = bytes.to_vec();
    let writer = std::thread::spawn(move || {
        // A worker that exits early closes the pipe; its exit code tells why.
        let _ = stdin.write_all(&input);
    });
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.take(MAX_OUTPUT_BYTES + 1).read_to_end(&mut out);
        out
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= deadline || crate::cancel::Stop::ambient_stopped() => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = writer.join();
                let _ = reader.join();
                // The call that waited for it went away: the worker goes with it.
                if started.elapsed() < deadline {
                    return Err(DocError::Cancelled);
                }
                return Err(DocError::Deadline);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(DocError::Failed);
            }
        }
    };
    let _ = writer.join();
    let out = reader.join().map_err(|_| DocError::Failed)?;
    match status.code() {
        Some(0) if out.len() as u64 > MAX_OUTPUT_BYTES => Err(DocError::Limit),
        Some(0) => String::from_utf8(out).map_err(|_| DocError::Failed),
        // Killed by a signal (a crash, the CPU limit, an allocation past the memory
        // limit that aborted) or any unknown code: the fixed failure.
        Some(code) => Err(DocError::from_code(code)),
        None => Err(DocError::Failed),
    }
}
