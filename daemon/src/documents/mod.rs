//! Documents (spec 8, `--documents`): `.docx .pptx .xlsx .xls .pdf` bytes in, Markdown out,
//! which then goes through the engine like any text file's content.
//!
//! Parsers of hostile files run in a worker process of ours ([`worker`]): the daemon
//! sends the bytes and the format (never the name), the worker sets its own memory and
//! CPU limits and answers the Markdown or an error code. One fresh worker per extraction
//! (results are cached, so extractions are rare): a crash, a limit or a hang costs that
//! worker only, and there is nothing to restart. Without an installed worker (library
//! users, tests) extraction runs in-process behind a panic boundary.
//!
//! Every limit and message is the reference's: the input cap before conversion, the
//! member count and declared expansion of a zip container before parsing ([`zipguard`]),
//! the output cap, the 15 s deadline, the empty-text and failure messages.
//!
//! Crates: calamine (reads xlsx and xls; umya: xlsx only), zip + quick-xml (docx-rs and
//! kin build models we discard), lopdf (pure Rust, bounded inflation; pdf-extract pulls
//! in many more crates).

pub mod backlog;
mod ooxml;
mod pdf;
mod sheets;
pub mod worker;
mod zipguard;

use crate::fs::DocumentFormat;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Raw bytes a document may have (charged before conversion).
pub const MAX_INPUT_BYTES: u64 = 5_000_000;
/// Characters of extracted Markdown.
pub const MAX_OUTPUT_CHARS: usize = 1_000_000;
/// Declared uncompressed bytes of a zip container's members.
pub const MAX_EXPANDED_BYTES: u64 = 50_000_000;
/// Members of a zip container.
pub const MAX_MEMBERS: usize = 2_000;
/// Wall-clock time one extraction may take.
pub const DEADLINE: Duration = Duration::from_secs(15);
/// Changes whenever the Markdown made from the same bytes may change: part of the cache
/// key of an extracted document, so old extractions are not served after an upgrade.
pub const EXTRACTOR_VERSION: u32 = 1;

/// Why a document gave no text, in the reference's words (no input is ever echoed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocError {
    #[error("Document input byte limit exceeded.")]
    InputLimit,
    #[error(
        "Document extraction failed. The document may be malformed, encrypted, or unsupported."
    )]
    Failed,
    #[error("Document expanded-size or extracted-text limit exceeded.")]
    Limit,
    #[error(
        "Document contains no extractable text. Scanned documents require OCR outside this MCP."
    )]
    NoText,
    #[error("Document extraction deadline exceeded.")]
    Deadline,
    #[error("Unsupported document format.")]
    Unsupported,
    /// The call it ran for ended ([`crate::cancel::Stop::ambient_stopped`]): nothing
    /// about the document, never remembered as its outcome.
    #[error("Operation cancelled.")]
    Cancelled,
}

impl DocError {
    /// The worker's exit code for this error (0 is success).
    fn code(self) -> i32 {
        match self {
            DocError::InputLimit => 10,
            DocError::Failed => 11,
            DocError::Limit => 12,
            DocError::NoText => 13,
            DocError::Deadline => 14,
            DocError::Unsupported => 15,
            DocError::Cancelled => 16,
        }
    }

    /// The error a worker's exit code stands for; any other code is a failure.
    fn from_code(code: i32) -> DocError {
        [
            DocError::InputLimit,
            DocError::Limit,
            DocError::NoText,
            DocError::Deadline,
            DocError::Unsupported,
        ]
        .into_iter()
        .find(|e| e.code() == code)
        .unwrap_or(DocError::Failed)
    }
}

/// The worker's command line: `<exe> --extract-worker <suffix>`.
pub const WORKER_FLAG: &str = "--extract-worker";

static WORKER_EXE: OnceLock<PathBuf> = OnceLock::new();

/// Makes every later extraction in this process run in a worker started from `exe`
/// (`redctxd` installs itself at startup).
pub fn install_worker(exe: PathBuf) {
    let _ = WORKER_EXE.set(exe);
}

/// Background extractions take turns: at most one runs at a time in the whole daemon.
static BACKGROUND_TURN: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread holds [`BACKGROUND_TURN`] through a [`BackgroundTurn`].
    static HOLDS_TURN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The daemon-wide background turn, taken ahead of the work it covers: the
/// pre-extraction pass takes it before it claims a document, so a read of that document
/// never waits behind another root's queued extraction, only behind the one it needs.
pub struct BackgroundTurn(#[allow(dead_code)] std::sync::MutexGuard<'static, ()>);

impl Drop for BackgroundTurn {
    fn drop(&mut self) {
        HOLDS_TURN.set(false);
    }
}

/// Waits for the background turn ([`BackgroundTurn`]).
pub fn background_turn() -> BackgroundTurn {
    let guard = BACKGROUND_TURN.lock().unwrap_or_else(|e| e.into_inner());
    HOLDS_TURN.set(true);
    BackgroundTurn(guard)
}

/// Extracts `bytes` of `format` as Markdown within `deadline` (at most [`DEADLINE`]).
/// On a background thread (the pre-extraction pass, the watcher's re-redaction) it waits
/// for its turn and the worker runs at low CPU priority ([`worker::Priority`]).
pub fn extract(
    format: DocumentFormat,
    bytes: &[u8],
    deadline: Duration,
) -> Result<String, DocError> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(DocError::InputLimit);
    }
    let deadline = deadline.min(DEADLINE);
    let background = crate::detectors::is_background_thread();
    let _turn = (background && !HOLDS_TURN.get()).then(background_turn);
    let priority = if background {
        worker::Priority::Background
    } else {
        worker::Priority::Normal
    };
    let _slot = if background {
        None
    } else {
        Some(WorkerSlot::take()?)
    };
    match WORKER_EXE.get() {
        Some(exe) => worker::run(exe, format, bytes, deadline, priority),
        None => extract_in_thread(format, bytes, deadline),
    }
}

/// Extractions for tool calls that run at once, daemon-wide. Each worker may map up to a
/// gigabyte and reads do not take the background turn: without a bound, a session
/// reading a dozen hostile spreadsheets at once held a dozen gigabytes. A read waits for
/// a slot before its deadline starts, so waiting never turns into a deadline failure.
const MAX_CALL_EXTRACTIONS: usize = 2;

static CALL_EXTRACTIONS: (Mutex<usize>, std::sync::Condvar) =
    (Mutex::new(0), std::sync::Condvar::new());

/// One of the [`MAX_CALL_EXTRACTIONS`] slots, given back on drop.
struct WorkerSlot;

impl WorkerSlot {
    /// Waits for a slot, or until the call it waits for ends.
    fn take() -> Result<WorkerSlot, DocError> {
        let (running, freed) = &CALL_EXTRACTIONS;
        let mut n = running.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= MAX_CALL_EXTRACTIONS {
            if crate::cancel::Stop::ambient_stopped() {
                return Err(DocError::Cancelled);
            }
            n = freed
                .wait_timeout(n, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *n += 1;
        Ok(WorkerSlot)
    }
}

impl Drop for WorkerSlot {
    fn drop(&mut self) {
        let (running, freed) = &CALL_EXTRACTIONS;
        *running.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        freed.notify_one();
    }
}

/// The in-process fallback: a thread, so the deadline holds for the caller (a parser that
/// hangs keeps its thread; the worker exists for that case), and a panic boundary.
fn extract_in_thread(
    format: DocumentFormat,
    bytes: &[u8],
    deadline: Duration,
) -> Result<String, DocError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = bytes.to_vec();
    std::thread::Builder::new()
        .name("redctx-extract".into())
        .spawn(move || {
            let _ = tx.send(convert(format, &owned));
        })
        .map_err(|_| DocError::Failed)?;
    match rx.recv_timeout(deadline) {
        Ok(result) => result,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(DocError::Deadline),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(DocError::Failed),
    }
}

/// The conversion itself, with the output checks; a parser's panic is a failure.
pub fn convert(format: DocumentFormat, bytes: &[u8]) -> Result<String, DocError> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(DocError::InputLimit);
    }
    let text = std::panic::catch_unwind(|| match format {
        DocumentFormat::Docx => ooxml::docx(bytes),
        DocumentFormat::Pptx => ooxml::pptx(bytes),
        DocumentFormat::Xlsx => {
            zipguard::check(bytes)?;
            sheets::workbook(bytes, false)
        }
        DocumentFormat::Xls => sheets::workbook(bytes, true),
        DocumentFormat::Pdf => pdf::pdf(bytes),
    })
    .map_err(|_| DocError::Failed)??;
    if text.chars().count() > MAX_OUTPUT_CHARS {
        return Err(DocError::Limit);
    }
    if text.trim().is_empty() {
        return Err(DocError::NoText);
    }
    Ok(text)
}

/// A Markdown table: the first row is the header; `|` escaped, line breaks and tabs
/// folded to spaces so that each row stays one line.
fn markdown_table(rows: &[Vec<String>]) -> String {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0);
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        out.push('|');
        for c in 0..width {
            let cell = row.get(c).map_or("", String::as_str);
            let cell: String = cell
                .split(['\n', '\r', '\t'])
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            out.push(' ');
            out.push_str(&cell.trim().replace('|', "\\|"));
            out.push_str(" |");
        }
        out.push('\n');
        if i == 0 {
            out.push('|');
            out.push_str(&" --- |".repeat(width));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests;
