//! `read` (`cat`), `head` and `tail`: a line range of one redacted file (spec 3.3).

use super::walk::Budget;
use super::{ToolError, ToolOutput, check_text_file};
use crate::engine::Counts;
use crate::engine::python::text::{splitlines, truncate_redacted};
use crate::view::{Entry, RedactedDoc, RootView};

/// The reference's default `max_chars` of read/head/tail.
pub const DEFAULT_MAX_CHARS: usize = 120_000;

/// Arguments of `redctx_read` / `cat`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadArgs {
    /// Path or id of a text file.
    pub path: String,
    /// 1-based; `None` (or 0) starts at line 1.
    pub start_line: Option<u64>,
    /// Inclusive; `None` (or 0, as the reference treats it) reads to the end.
    pub end_line: Option<u64>,
    /// Output cut (characters, placeholder-safe); default 120,000.
    pub max_chars: usize,
    /// Prefix each line with `{n:>6}\t`.
    pub line_numbers: bool,
}

impl Default for ReadArgs {
    fn default() -> Self {
        ReadArgs {
            path: String::new(),
            start_line: None,
            end_line: None,
            max_chars: DEFAULT_MAX_CHARS,
            line_numbers: false,
        }
    }
}

/// Arguments of the CLI's `head` and `tail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinesArgs {
    /// Path or id of a text file.
    pub path: String,
    /// Default 40. `head` with 0 reads the whole file (reference quirk: 0 means "no end").
    pub lines: u64,
    /// As [`ReadArgs::max_chars`].
    pub max_chars: usize,
    /// As [`ReadArgs::line_numbers`].
    pub line_numbers: bool,
}

impl Default for LinesArgs {
    fn default() -> Self {
        LinesArgs {
            path: String::new(),
            lines: 40,
            max_chars: DEFAULT_MAX_CHARS,
            line_numbers: false,
        }
    }
}

/// Resolves a text file and returns its line-preserving redacted content and path.
fn open_text(view: &dyn RootView, path: &str) -> Result<(Entry, RedactedDoc), ToolError> {
    let entry = view.resolve(path)?;
    check_text_file(view, &entry)?;
    super::check_document_size(&entry)?;
    Budget::from_limits(view.limits()).consume_file(entry.size)?;
    let doc = view.content(&entry, true)?;
    Ok((entry, doc))
}

/// Header, then the (truncated) selection, numbered or verbatim.
fn render(
    view: &dyn RootView,
    entry: &Entry,
    selected: &str,
    (first, last): (u64, u64),
    (max_chars, line_numbers): (usize, bool),
    counts: &mut Counts,
) -> String {
    let text = truncate_redacted(selected, max_chars);
    let rpath = view.path(&entry.rel);
    counts.merge(&rpath.counts);
    let mut out = format!("--- {} {} lines {first}-{last} ---\n", rpath.id, rpath.text);
    if line_numbers {
        for (offset, line) in splitlines(&text, false).into_iter().enumerate() {
            out.push_str(&format!("{:>6}\t{line}\n", first + offset as u64));
        }
    } else {
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// `read`: lines `start..=end` of the file redacted with line preservation, split with
/// Python `splitlines(keepends=True)` (CRLF kept), cut at `max_chars` without splitting a
/// placeholder. Header `--- <ref> <rpath> lines <start>-<min(end, n)> ---`. An end before
/// the start fails with the end-line message when an end was given, else with the
/// start-line one (so an empty file always fails).
pub fn read(view: &dyn RootView, args: &ReadArgs) -> ToolOutput {
    let mut counts = Counts::default();
    let result = (|| -> Result<String, ToolError> {
        let (entry, doc) = open_text(view, &args.path)?;
        counts.merge(&doc.counts);
        let lines = splitlines(&doc.text, true);
        let n = lines.len() as u64;
        let start = args.start_line.unwrap_or(0).max(1);
        let end_given = args.end_line.filter(|&end| end != 0);
        let end = end_given.unwrap_or(n);
        if end < start {
            return Err(if end_given.is_some() {
                ToolError::EndBeforeStart
            } else {
                ToolError::StartBeyondEnd
            });
        }
        let from = (start - 1).min(n) as usize;
        let to = end.min(n) as usize;
        let selected: String = lines[from..to.max(from)].concat();
        Ok(render(
            view,
            &entry,
            &selected,
            (start, end.min(n)),
            (args.max_chars, args.line_numbers),
            &mut counts,
        ))
    })();
    match result {
        Ok(text) => ToolOutput::ok(text, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}

/// `head`: `read` of lines `1..=lines`.
pub fn head(view: &dyn RootView, args: &LinesArgs) -> ToolOutput {
    let read_args = ReadArgs {
        path: args.path.clone(),
        start_line: Some(1),
        end_line: Some(args.lines),
        max_chars: args.max_chars,
        line_numbers: args.line_numbers,
    };
    read(view, &read_args)
}

/// `tail`: the last `lines` lines; header `lines <max(1, n-lines+1)>-<n>`. Never fails on
/// an empty file (it prints the header and an empty line).
pub fn tail(view: &dyn RootView, args: &LinesArgs) -> ToolOutput {
    let mut counts = Counts::default();
    let result = (|| -> Result<String, ToolError> {
        let (entry, doc) = open_text(view, &args.path)?;
        counts.merge(&doc.counts);
        let lines = splitlines(&doc.text, true);
        let n = lines.len() as u64;
        let start = (n + 1).saturating_sub(args.lines).max(1);
        let selected: String = lines[(start - 1).min(n) as usize..].concat();
        Ok(render(
            view,
            &entry,
            &selected,
            (start, n),
            (args.max_chars, args.line_numbers),
            &mut counts,
        ))
    })();
    match result {
        Ok(text) => ToolOutput::ok(text, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}
