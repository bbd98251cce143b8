//! Tool renderers: the exact text every tool answers with, computed from a [`RootView`].
//!
//! What goes in: a snapshot of one root ([`RootView`]) and typed arguments that the
//! protocol layer already checked against the tool's input schema (types, required keys,
//! minimums). What comes out: a [`ToolOutput`] with the text the agent sees, whether it
//! is an error, and the redaction counts that went into it (for the receipt).
//!
//! Invariants:
//! - Renderers do no IO. They never touch the filesystem, the cache or the watcher: every
//!   byte of content, every path and every name comes from the view, already redacted.
//! - Output formats, orderings, limits and error texts are the reference's (spec 3.3, 7);
//!   every deliberate difference is documented on the function that makes it.
//! - Error texts are fixed, input-free sentences (spec 12.2); nothing raw is ever echoed.
//! - `counts` is the sum of the counts of every redacted content, path and name the
//!   renderer used, in the places the reference's redactor counted them, so receipts
//!   match (see each renderer for the exceptions).

/// The most text an answer that grows with its arguments (`search`'s `max_results` and
/// `context`, `bundle`'s character limits) carries, about: past it the answer ends as
/// its own limit would end it (`[TRUNCATED…]`). The socket's frames stop at 64 MiB, and
/// an agent reads far less; without it, one call over a large file built half a
/// gigabyte of lines in the daemon. The reference has no such bound (COMPAT.md).
pub const MAX_ANSWER_BYTES: usize = 16 << 20;

mod bundle;
pub mod glob;
mod listing;
mod read;
pub mod receipt;
mod report;
mod retrieve;
mod search;
mod targets;
pub mod walk;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

pub use bundle::{BundleArgs, bundle};
pub use listing::{ListArgs, TreeArgs, list, stat, tree};
pub use read::{LinesArgs, ReadArgs, head, read, tail};
pub use receipt::{DetectorReceipt, Receipt};
pub use report::{
    AuditArgs, AuditFormat, DoctorArgs, PluggedDetector, audit, doctor, refresh_index,
};
pub use retrieve::{RetrieveArgs, retrieve};
pub use search::{SearchArgs, search};
pub(crate) use targets::target_files;
pub use walk::{Budget, DEFAULT_TOTAL_RAW_BYTES, DEFAULT_TRAVERSAL_ENTRIES, Walk, walk};

use crate::cancel::{Stop, Stopped};
use crate::engine::{Counts, EngineError};
use crate::fs::ContentKind;
use crate::view::{Entry, EntryKind, RedactedDoc, RootView, ViewError};

/// The answer of one tool call, ready for the protocol layer to wrap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// Success text (normally newline-terminated) or the fixed error sentence (no newline).
    pub text: String,
    /// `isError` of the MCP result (a failed call, or an audit with a FAIL).
    pub is_error: bool,
    /// Substitutions made while producing this answer (content, paths and names).
    pub counts: Counts,
}

impl ToolOutput {
    /// A successful answer; empty output becomes the reference's `OK\n`.
    pub fn ok(text: String, counts: Counts) -> ToolOutput {
        let text = if text.is_empty() {
            "OK\n".to_owned()
        } else {
            text
        };
        ToolOutput {
            text,
            is_error: false,
            counts,
        }
    }

    /// A failed call. Counts made before the failure still belong to the receipt.
    pub fn error(error: ToolError, counts: Counts) -> ToolOutput {
        ToolOutput {
            text: error.to_string(),
            is_error: true,
            counts,
        }
    }
}

/// Every way a renderer can fail. `Display` is the exact, input-free text a client sees.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("{0}")]
    View(#[from] ViewError),
    #[error("File limit exceeded.")]
    FileLimit,
    #[error("--end-line must be greater than or equal to --start-line.")]
    EndBeforeStart,
    #[error("--start-line is beyond the end of the file.")]
    StartBeyondEnd,
    #[error("Invalid regex.")]
    InvalidRegex,
    #[error(
        "Retrieval requires max_results between 1 and 50 and max_chars between 256 and 100000."
    )]
    RetrievalBounds,
    #[error("Retrieval query exceeds the 2000 character limit.")]
    RetrievalQueryTooLong,
    #[error("Retrieval requires 1 to 64 searchable query terms.")]
    RetrievalTerms,
    /// Ours (the reference has no bound): see [`search::MAX_QUERY_CHARS`].
    #[error("Search query exceeds the 4096 character limit.")]
    SearchQueryTooLong,
    /// The call's time budget ran out (the reference's text).
    #[error("Operation deadline exceeded.")]
    Deadline,
    /// The requester cancelled or went away, or the daemon is stopping: nobody reads it.
    #[error("Operation cancelled.")]
    Cancelled,
    #[error("Retrieval passage limit exceeded. Narrow the paths or glob.")]
    RetrievalPassages,
    /// Anything whose message may not reach a client (spec 3.1 safe-error filter).
    #[error("Tool execution failed.")]
    Failed,
}

impl From<Stopped> for ToolError {
    fn from(stopped: Stopped) -> ToolError {
        match stopped {
            Stopped::Cancelled => ToolError::Cancelled,
            Stopped::Deadline => ToolError::Deadline,
        }
    }
}

impl From<EngineError> for ToolError {
    /// Engine failures are not on the reference's safe list: they surface generically.
    fn from(e: EngineError) -> ToolError {
        match e {
            EngineError::Plugged(p) => ToolError::View(ViewError::Detector(p)),
            _ => ToolError::Failed,
        }
    }
}

/// The checks of the reference's `validate_path(expected="text")`, in its order, for a
/// resolved entry: a directory is not a file; legacy Office and disabled documents have
/// their own messages; anything else the view does not serve as text is refused.
pub(crate) fn check_text_file(view: &dyn RootView, entry: &Entry) -> Result<(), ToolError> {
    if entry.kind != EntryKind::File {
        return Err(ViewError::NotAFile.into());
    }
    let kind = ContentKind::of_name(entry.name());
    if kind == ContentKind::LegacyOffice {
        return Err(ViewError::LegacyOffice.into());
    }
    if !view.is_text(entry) {
        // A document's own refusal, else the generic one.
        return Err(kind.refusal().unwrap_or(ViewError::NotText).into());
    }
    Ok(())
}

/// The reference refuses a document over the input cap before charging the read budget
/// (`Document input byte limit exceeded.` rather than the raw byte limit).
pub(crate) fn check_document_size(entry: &Entry) -> Result<(), ToolError> {
    let document = matches!(ContentKind::of_name(entry.name()), ContentKind::Document(_));
    if document && entry.size > crate::documents::MAX_INPUT_BYTES {
        return Err(ViewError::from(crate::documents::DocError::InputLimit).into());
    }
    Ok(())
}

/// What a multi-file scan (search, retrieve, bundle) got for one file.
pub(crate) enum Scanned {
    /// Its redacted content.
    Content(RedactedDoc),
    /// Left out: it vanished, changed type, or kept changing or failing to read while the
    /// call ran.
    Gone,
    /// Left out: named like text, its bytes are not (a NUL byte, UTF-16 without a
    /// decoder). ripgrep skips such files; the reference fails the whole call on the
    /// first one, so one such file anywhere broke every whole-root search (COMPAT).
    NotText,
    /// Left out: it failed on its own ([`ViewError::is_per_file`]: a size limit, a
    /// document without text, a detector failure). The reference fails the whole call,
    /// so one scanned PDF or one large file broke every whole-root search (COMPAT).
    Unreadable,
}

/// One file of a multi-file scan. A file that fails with churn (see
/// [`ViewError::is_churn`]) is read once more (a writer replacing it mid-read usually has
/// finished by then), then left out, so one busy file never fails a whole answer; a file
/// that is not text is left out at once. Limits and policy refusals still fail the call
/// as they always did.
pub(crate) fn scan_content(
    view: &dyn RootView,
    entry: &Entry,
    preserve_line_count: bool,
    stop: &Stop,
) -> Result<Scanned, ToolError> {
    stop.check()?;
    // Under the call's stop: an extraction worker it waits for ends with it.
    let content = || {
        let result = stop.around(|| view.content(entry, preserve_line_count));
        if let Err(ViewError::Document(crate::documents::DocError::Cancelled)) = result {
            stop.check()?;
        }
        Ok::<_, ToolError>(result)
    };
    let second = match content()? {
        Ok(doc) => return Ok(Scanned::Content(doc)),
        Err(ViewError::NotText) => return Ok(Scanned::NotText),
        Err(error) if error.is_per_file() => return Ok(Scanned::Unreadable),
        Err(error) if !error.is_churn() => return Err(error.into()),
        Err(_) => content()?,
    };
    match second {
        Ok(doc) => Ok(Scanned::Content(doc)),
        Err(ViewError::NotText) => Ok(Scanned::NotText),
        Err(error) if error.is_per_file() => Ok(Scanned::Unreadable),
        Err(error) if error.is_churn() => Ok(Scanned::Gone),
        Err(error) => Err(error.into()),
    }
}

/// Files a multi-file scan left out, by why, for the `[SKIPPED: …]` line that ends its
/// answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// Named like text, not text ([`Scanned::NotText`]).
    pub not_text: usize,
    /// Failed on their own ([`Scanned::Unreadable`]).
    pub unreadable: usize,
}

impl Skipped {
    /// Counts one left-out file; `Content` and `Gone` count nothing.
    pub fn count(&mut self, scanned: &Scanned) {
        match scanned {
            Scanned::NotText => self.not_text += 1,
            Scanned::Unreadable => self.unreadable += 1,
            Scanned::Content(_) | Scanned::Gone => {}
        }
    }

    /// The closing line (nothing when no file was left out).
    pub fn note(&self) -> String {
        let mut parts = Vec::new();
        match self.not_text {
            0 => {}
            1 => parts.push("1 file that is not text".to_owned()),
            n => parts.push(format!("{n} files that are not text")),
        }
        match self.unreadable {
            0 => {}
            1 => parts.push(format!("1 file {UNREADABLE}")),
            n => parts.push(format!("{n} files {UNREADABLE}")),
        }
        if parts.is_empty() {
            return String::new();
        }
        format!("[SKIPPED: {}]\n", parts.join("; "))
    }
}

/// Why a [`Scanned::Unreadable`] file was left out, in the agent's words.
const UNREADABLE: &str =
    "that could not be read (over the size limit, no document text, or a detector failure)";

/// One `list` line: `<ref>\t<kind>\t<size>\t<rpath>` (spec 3.3); adds the path's counts.
pub(crate) fn format_entry(
    view: &dyn RootView,
    entry: &Entry,
    counts: &mut Counts,
    out: &mut String,
) {
    let path = view.path(&entry.rel);
    counts.merge(&path.counts);
    out.push_str(&path.id);
    match entry.kind {
        EntryKind::Dir => out.push_str("\tdir \t-\t"),
        EntryKind::File => {
            out.push_str("\tfile\t");
            out.push_str(&entry.size.to_string());
            out.push('\t');
        }
    }
    out.push_str(&path.text);
    out.push('\n');
}

/// Adds `counts` `times` times (a path printed on several output lines).
pub(crate) fn merge_times(into: &mut Counts, counts: &Counts, times: u64) {
    for (category, n) in &counts.0 {
        into.add(*category, n * times);
    }
}
