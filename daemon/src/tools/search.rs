//! `search` (`grep`): grep-style hits over redacted lines (spec 3.3, 7.1).
//!
//! Files are matched in parallel (rayon) and emitted in walk order, so the output is the
//! reference's byte for byte: only the time to produce it changes.

use super::targets::charged_targets;
use super::walk::Budget;
use super::{MAX_ANSWER_BYTES, Scanned, Skipped, ToolError, ToolOutput, merge_times, scan_content};
use crate::cancel::Stop;
use crate::engine::placeholder::casefold;
use crate::engine::python::text::{is_py_space, splitlines};
use crate::engine::{Category, Counts};
use crate::search_index::plan::GramPlan;
use crate::view::{Entry, FileScreen, RedactedDoc, RedactedPath, RootView, Screened};
use aho_corasick::{AhoCorasick, AhoCorasickKind};
use rayon::prelude::*;
use regex::{Regex, RegexBuilder};

/// The reference's default `max_results`.
pub const DEFAULT_MAX_RESULTS: usize = 200;

/// The longest query `search` takes, in characters (literal or regex); longer ones
/// answer `Search query exceeds the 4096 character limit.` before any work.
///
/// A query matches inside one line, and 4,096 characters is more than any line a person
/// or an agent searches for by hand (the reference caps retrieve queries at 2,000); a
/// longer one is a paste of a whole file or an attempt to make the daemon build a huge
/// matcher. Bounding it keeps the matcher's construction, and the work it adds to every
/// line, to microseconds whatever the agent sends. The reference has no bound (its
/// stdio cap of 10 MiB per request line is the only one): COMPAT.md.
pub const MAX_QUERY_CHARS: usize = 4096;

/// Lines matched between two checks of the call's [`Stop`] inside one file.
const LINES_PER_STOP_CHECK: usize = 4096;

/// Compiled-program size cap for regex queries: generous for real patterns, and it
/// turns a pathological one into `Invalid regex.` instead of memory growth.
const REGEX_SIZE_LIMIT: usize = 16 << 20;

/// Arguments of `redctx_search` / `grep`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchArgs {
    /// Literal text, or a regex when `regex`.
    pub query: String,
    /// Scopes (paths or ids); empty = the whole root.
    pub paths: Vec<String>,
    /// MCP default true, CLI default false.
    pub ignore_case: bool,
    /// Treat `query` as a regular expression (Rust `regex` syntax).
    pub regex: bool,
    /// Lines of context before and after each match.
    pub context: usize,
    /// fnmatch patterns on the raw relative path (any may match).
    pub glob: Vec<String>,
    /// Output-line cap (default 200), followed by `[TRUNCATED]` when reached.
    pub max_results: usize,
    /// CLI `--max-files` (files read); `None` for MCP calls.
    pub max_files: Option<u64>,
}

impl Default for SearchArgs {
    fn default() -> Self {
        SearchArgs {
            query: String::new(),
            paths: Vec::new(),
            ignore_case: true,
            regex: false,
            context: 0,
            glob: Vec::new(),
            max_results: DEFAULT_MAX_RESULTS,
            max_files: None,
        }
    }
}

/// Whether the reference would pre-screen files by their raw bytes for this query
/// (spec 7.1). With it, files that are not text are skipped silently instead of failing
/// the call, and only files containing the query are redacted.
fn raw_prefilter_applies(query: &str, regex: bool, ignore_case: bool) -> bool {
    let stripped = query.trim_matches(is_py_space);
    if regex || stripped.is_empty() {
        return false;
    }
    if stripped.contains(['[', ']', '_']) {
        return false;
    }
    let is_hex = |s: &str| s.chars().all(|c| c.is_ascii_hexdigit());
    if is_hex(stripped) {
        return false;
    }
    if let Some((left, right)) = stripped.split_once('.')
        && is_hex(left)
        && is_hex(right)
    {
        return false;
    }
    if ignore_case {
        let folded = casefold(stripped);
        !Category::ALL
            .iter()
            .any(|c| casefold(c.as_str()).contains(&folded))
    } else {
        !Category::ALL.iter().any(|c| c.as_str().contains(stripped))
    }
}

/// How lines are tested.
enum Matcher {
    /// Substring; `needle` is already casefolded when `fold`. `finder` searches for the
    /// needle exactly, or ASCII-case-insensitively when folding an ASCII needle (equal to
    /// casefolding both sides on ASCII text, without copying it).
    Literal {
        needle: String,
        fold: bool,
        finder: AhoCorasick,
        /// The query as given is ASCII (decides how the reference screens raw bytes).
        query_ascii: bool,
    },
    Regex(Regex),
}

impl Matcher {
    fn literal(query: &str, fold: bool) -> Result<Matcher, ToolError> {
        let needle = if fold {
            casefold(query)
        } else {
            query.to_owned()
        };
        // A contiguous NFA builds in time linear in the needle; the automatic choice
        // builds a DFA for a single pattern, quadratic-ish in its length.
        let finder = AhoCorasick::builder()
            .ascii_case_insensitive(fold)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build([needle.as_str()])
            .map_err(|_| ToolError::Failed)?;
        Ok(Matcher::Literal {
            needle,
            fold,
            finder,
            query_ascii: query.is_ascii(),
        })
    }

    /// 0-based indices of matching lines of `text`, split without line ends.
    ///
    /// `prefilter`: the reference screens each file's raw bytes first; for an ASCII
    /// query with `ignore_case` that screen is ASCII-case-insensitive (`bytes.lower()`),
    /// so a file whose only occurrences need a non-ASCII fold (`straße` for `STRASSE`)
    /// is skipped, while a file that passes is then matched line by line with full
    /// case folding. We screen the redacted text the same way.
    ///
    /// At most `limit` indices: a file never shows more lines than the output has room
    /// for, so the rest need not be found (or held).
    fn matching_lines(
        &self,
        text: &str,
        prefilter: bool,
        stop: &Stop,
        limit: usize,
    ) -> Result<Vec<usize>, ToolError> {
        let lines_where = |test: &dyn Fn(&str) -> bool| -> Result<Vec<usize>, ToolError> {
            let lines = splitlines(text, false);
            let mut found = Vec::new();
            for (chunk, lines) in lines.chunks(LINES_PER_STOP_CHECK).enumerate() {
                stop.check()?;
                let first = chunk * LINES_PER_STOP_CHECK;
                found.extend(
                    (0..lines.len())
                        .filter(|&i| test(lines[i]))
                        .map(|i| first + i)
                        .take(limit - found.len()),
                );
                if found.len() == limit {
                    break;
                }
            }
            Ok(found)
        };
        match self {
            Matcher::Literal {
                needle,
                fold,
                finder,
                query_ascii,
            } => {
                let ascii = needle.is_ascii() && text.is_ascii();
                if !*fold || ascii {
                    // A line holding the needle puts it in the whole text too.
                    if !finder.is_match(text) {
                        return Ok(Vec::new());
                    }
                    return lines_where(&|line| finder.is_match(line));
                }
                // Case folding is per character, so a file whose folded whole text
                // lacks the needle has no matching line.
                let screened = if prefilter && *query_ascii {
                    finder.is_match(text)
                } else {
                    casefold(text).contains(needle.as_str())
                };
                if !screened {
                    return Ok(Vec::new());
                }
                lines_where(&|line| casefold(line).contains(needle.as_str()))
            }
            Matcher::Regex(re) => lines_where(&|line| re.is_match(line)),
        }
    }
}

/// The grep lines of one file, in the reference's order: for each match, its context
/// window, every line at most once; a line is marked `:` only as the centre of its
/// own window (a match first shown as context of an earlier match stays `-`). At most
/// `limit` lines, and no more once they hold `byte_limit` bytes.
///
/// `matches` ascend and every window is as wide, so what a window shares with those
/// before it is the part below the end of the last one: each line is visited once,
/// however wide the context (a window re-scanned whole made `context` quadratic).
fn file_lines(
    doc: &RedactedDoc,
    path: &RedactedPath,
    matches: &[usize],
    context: usize,
    (limit, byte_limit): (usize, usize),
) -> Vec<String> {
    let lines = splitlines(&doc.text, false);
    let mut out = Vec::new();
    let mut bytes = 0;
    let mut shown_to = 0; // lines below this one are out
    for &m in matches {
        let from = m.saturating_sub(context).max(shown_to);
        let to = m.saturating_add(context).saturating_add(1).min(lines.len());
        for (index, line) in lines.iter().enumerate().take(to).skip(from) {
            if out.len() >= limit || bytes >= byte_limit {
                return out;
            }
            let marker = if index == m { ':' } else { '-' };
            let shown = format!("{}{marker}{}:{}:{line}\n", path.id, index + 1, path.text);
            bytes += shown.len();
            out.push(shown);
        }
        shown_to = shown_to.max(to);
    }
    out
}

/// What matching one file produced.
enum FileResult {
    /// Not searched: non-text under the raw prefilter, or a file that vanished or kept
    /// changing while the call ran ([`scan_content`]).
    Skipped,
    /// Not searched, and counted in the answer: named like text, but not text, where the
    /// reference would have failed the call.
    NotText,
    /// Not searched, and counted in the answer: it failed on its own
    /// ([`Scanned::Unreadable`]).
    Unreadable,
    Failed(ToolError),
    Searched {
        doc_counts: Counts,
        path: Option<RedactedPath>,
        lines: Vec<String>,
    },
}

/// How every file of the call's scope is searched: the matcher, whether the reference's
/// raw screen applies, the context lines and the search index's screen.
struct Query<'a> {
    matcher: &'a Matcher,
    /// The reference's raw-byte screen applies ([`raw_prefilter_applies`]).
    prefilter: bool,
    context: usize,
    /// The search index's verdicts, when the view has an index and the query a plan.
    screen: Option<&'a dyn FileScreen>,
}

fn search_file(
    view: &dyn RootView,
    entry: &Entry,
    query: &Query<'_>,
    stop: &Stop,
    (limit, byte_limit): (usize, usize),
) -> FileResult {
    let Query {
        matcher,
        prefilter,
        context,
        screen,
    } = *query;
    // A file the index rules out is what reading it and finding no match would give.
    match screen.map_or(Screened::Read, |screen| screen.screen(entry)) {
        Screened::NoMatch(doc_counts) => {
            return FileResult::Searched {
                // Under the raw prefilter a file without a match adds nothing to the
                // receipt (see `search`), so its counts are not copied.
                doc_counts: if prefilter {
                    Counts::default()
                } else {
                    doc_counts.clone()
                },
                path: None,
                lines: Vec::new(),
            };
        }
        // As the cache would answer below.
        Screened::NotText if prefilter => return FileResult::Skipped,
        Screened::NotText => return FileResult::NotText,
        Screened::Read => {}
    }
    // Under the raw prefilter a file that is not text is skipped, never an error. The
    // content is asked for first (from the cache it answers `NotText` for such a file
    // at no cost), and the text check runs only to classify a failure.
    let doc = match scan_content(view, entry, true, stop) {
        Ok(Scanned::Content(doc)) => doc,
        Ok(Scanned::Gone) => return FileResult::Skipped,
        Ok(Scanned::NotText) if prefilter => return FileResult::Skipped,
        Ok(Scanned::NotText) => return FileResult::NotText,
        Ok(Scanned::Unreadable) => return FileResult::Unreadable,
        Err(ToolError::View(_)) if prefilter && !view.is_text(entry) => {
            return FileResult::Skipped;
        }
        Err(error) => return FileResult::Failed(error),
    };
    if limit == 0 {
        // Read for its errors and receipt counts only: the output is full.
        return FileResult::Searched {
            doc_counts: doc.counts,
            path: None,
            lines: Vec::new(),
        };
    }
    let matches = match matcher.matching_lines(&doc.text, prefilter, stop, limit) {
        Ok(matches) => matches,
        Err(error) => return FileResult::Failed(error),
    };
    if matches.is_empty() {
        return FileResult::Searched {
            doc_counts: doc.counts,
            path: None,
            lines: Vec::new(),
        };
    }
    let path = view.path(&entry.rel);
    let lines = file_lines(&doc, &path, &matches, context, (limit, byte_limit));
    FileResult::Searched {
        doc_counts: doc.counts,
        path: Some(path),
        lines,
    }
}

/// `search`: `<ref><:|-><line>:<rpath>:<redacted line>` lines, files in walk order
/// (spec 3.3, 7.1); `[TRUNCATED]` once `max_results` lines are out (even when nothing
/// would follow); `No matches.\n` when nothing matched.
///
/// Literal queries match substrings of redacted lines (both casefolded with
/// `ignore_case`). Regex queries use the Rust `regex` crate (linear time, so no
/// backtracking screen is needed; Python-only syntax such as look-around fails with
/// `Invalid regex.`), and every file in scope is read, as in the reference.
///
/// Receipt counts: every searched file's content, plus the path once per emitted line.
/// Where the reference pre-screens raw bytes (spec 7.1) it only redacts files whose raw
/// text holds the query; we have no raw text, so there we count files with a match in
/// their redacted text, which equals the reference except for files whose only raw
/// occurrences were redacted away.
///
/// `stop` ends the call between files and every few thousand lines (`Operation deadline
/// exceeded.` or, for a requester that went away, an answer nobody reads); files that
/// vanish or keep changing during the call are left out, and so are files named like
/// text that are not, counted in a closing `[SKIPPED: …]` line ([`scan_content`]).
pub fn search(view: &dyn RootView, args: &SearchArgs, stop: &Stop) -> ToolOutput {
    let mut counts = Counts::default();
    match search_inner(view, args, stop, &mut counts) {
        Ok(text) if text.is_empty() => ToolOutput::ok("No matches.\n".into(), counts),
        Ok(text) => ToolOutput::ok(text, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}

fn search_inner(
    view: &dyn RootView,
    args: &SearchArgs,
    stop: &Stop,
    counts: &mut Counts,
) -> Result<String, ToolError> {
    if args.query.chars().nth(MAX_QUERY_CHARS).is_some() {
        return Err(ToolError::SearchQueryTooLong);
    }
    let matcher = if args.regex {
        let re = RegexBuilder::new(&args.query)
            .case_insensitive(args.ignore_case)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|_| ToolError::InvalidRegex)?;
        Matcher::Regex(re)
    } else {
        Matcher::literal(&args.query, args.ignore_case)?
    };
    let prefilter = raw_prefilter_applies(&args.query, args.regex, args.ignore_case);
    let plan = if args.regex {
        GramPlan::regex(&args.query)
    } else {
        GramPlan::literal(&args.query)
    };
    let screen = plan.as_ref().and_then(|plan| view.search_screen(plan));
    let query = Query {
        matcher: &matcher,
        prefilter,
        context: args.context,
        screen: screen.as_deref(),
    };
    let mut budget = Budget::from_limits(view.limits()).stopping(stop);
    budget.max_files = args.max_files;
    let charged = charged_targets(view, &args.paths, &args.glob, !prefilter, &mut budget)?;
    let (files, cut) = (charged.files.as_slice(), charged.cut);

    let mut out = String::new();
    let mut results = 0usize;
    // Files go in parallel batches (growing, so an early `max_results` wastes little
    // work), emitted in walk order. A literal search stops where the reference stops
    // reading: at the line that fills the output. A regex search, like the reference's,
    // reads and redacts every file before any output, so a failure anywhere fails the
    // call and the receipt counts every file; once its output is full the rest are read
    // (for errors and counts) but not matched, so a query matching everything holds one
    // batch of lines, never the whole root's, and the path counts of its lines join the
    // receipt only when the call succeeds.
    let reads_everything = args.regex;
    let mut emitted = Counts::default();
    let mut full = false;
    let mut skipped = Skipped {
        unreadable: charged.over_limit,
        ..Skipped::default()
    };
    // A non-empty answer ends with how many files were left out. An empty one stays
    // `No matches.` for files that are not text (they hold no text to match), and says
    // so for files that failed, which might have matched.
    let finish = |mut out: String, skipped: Skipped| {
        if out.is_empty() && skipped.unreadable > 0 {
            out.push_str("No matches.\n");
        }
        if !out.is_empty() {
            out.push_str(&skipped.note());
        }
        out
    };
    for range in batches(files) {
        let limit = if full { 0 } else { args.max_results - results };
        let byte_limit = MAX_ANSWER_BYTES.saturating_sub(out.len());
        let searched: Vec<FileResult> = files[range]
            .par_iter()
            .map(|entry| search_file(view, entry, &query, stop, (limit, byte_limit)))
            .collect();
        for result in searched {
            let (doc_counts, path, lines) = match result {
                FileResult::Skipped => continue,
                FileResult::NotText => {
                    skipped.not_text += 1;
                    continue;
                }
                FileResult::Unreadable => {
                    skipped.unreadable += 1;
                    continue;
                }
                FileResult::Failed(error) => return Err(error),
                FileResult::Searched {
                    doc_counts,
                    path,
                    lines,
                } => (doc_counts, path, lines),
            };
            if !prefilter || path.is_some() {
                counts.merge(&doc_counts);
            }
            let Some(path) = path.filter(|_| !full) else {
                continue;
            };
            let sink = if reads_everything {
                &mut emitted
            } else {
                &mut *counts
            };
            full = emit(
                &mut out,
                &mut results,
                args.max_results,
                &path,
                &lines,
                sink,
            );
            if full && !reads_everything {
                return Ok(finish(out, skipped));
            }
        }
    }
    if let Some(error) = cut {
        return Err(error);
    }
    counts.merge(&emitted);
    Ok(finish(out, skipped))
}

/// Consecutive ranges of `files` for parallel batches, growing from 32 to 1,024 files:
/// small at first, so a call that fills its output early wastes little work. A batch
/// also ends once its files hold [`BATCH_BYTES`] (by size on disk), since each file's
/// lines are held until the batch is emitted: a batch of large files matching
/// everything holds about that much, not a thousand files' worth.
fn batches<E: std::ops::Deref<Target = Entry>>(
    files: &[E],
) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut start = 0;
    let mut size = 32;
    std::iter::from_fn(move || {
        if start >= files.len() {
            return None;
        }
        let mut end = start;
        let mut bytes = 0u64;
        while end < files.len() && end - start < size && (end == start || bytes < BATCH_BYTES) {
            bytes += files[end].size;
            end += 1;
        }
        let range = start..end;
        start = end;
        size = (size * 2).min(1024);
        Some(range)
    })
}

/// File bytes a parallel batch of [`batches`] holds at most (one large file may pass it).
const BATCH_BYTES: u64 = 32 << 20;

/// Appends a file's lines until the cap; returns true once `[TRUNCATED]` was written.
fn emit(
    out: &mut String,
    results: &mut usize,
    max_results: usize,
    path: &RedactedPath,
    lines: &[String],
    counts: &mut Counts,
) -> bool {
    for line in lines {
        out.push_str(line);
        merge_times(counts, &path.counts, 1);
        *results += 1;
        if *results >= max_results || out.len() >= MAX_ANSWER_BYTES {
            out.push_str("[TRUNCATED]\n");
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::{file_lines, raw_prefilter_applies};
    use crate::view::{RedactedDoc, RedactedPath};

    /// The definition `file_lines` keeps: every window scanned whole, lines marked as
    /// shown (the reference's loop).
    fn rescanning(lines: usize, matches: &[usize], context: usize, limit: usize) -> Vec<String> {
        let mut shown = vec![false; lines];
        let mut out = Vec::new();
        for &m in matches {
            let to = (m + context + 1).min(lines);
            let from = m.saturating_sub(context);
            for (index, was_shown) in shown.iter_mut().enumerate().take(to).skip(from) {
                if out.len() >= limit {
                    return out;
                }
                if !*was_shown {
                    *was_shown = true;
                    let marker = if index == m { ':' } else { '-' };
                    out.push(format!("@p_x{marker}{}:f:l{index}\n", index + 1));
                }
            }
        }
        out
    }

    #[test]
    fn context_windows_show_each_line_once_as_rescanning_them_would() {
        let path = RedactedPath {
            id: "@p_x".into(),
            text: "f".into(),
            ..RedactedPath::default()
        };
        let mut n = 11u32;
        let mut next = |below: u32| {
            n = n.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (n >> 8) % below
        };
        for _ in 0..500 {
            let lines = 1 + next(40) as usize;
            let text: String = (0..lines).map(|i| format!("l{i}\n")).collect();
            let doc = RedactedDoc {
                text: text.into(),
                counts: Default::default(),
            };
            let mut matches: Vec<usize> = (0..lines).filter(|_| next(4) == 0).collect();
            matches.dedup();
            let context = next(6) as usize;
            let limit = 1 + next(50) as usize;
            assert_eq!(
                file_lines(&doc, &path, &matches, context, (limit, usize::MAX)),
                rescanning(lines, &matches, context, limit),
                "{lines} lines, matches {matches:?}, context {context}, limit {limit}"
            );
        }
        // Bytes bound the lines too: none is started past the bound.
        let doc = RedactedDoc {
            text: "x\n".repeat(100).into(),
            counts: Default::default(),
        };
        let all: Vec<usize> = (0..100).collect();
        let shown = file_lines(&doc, &path, &all, 0, (usize::MAX, 50));
        let bytes: usize = shown.iter().map(String::len).sum();
        assert!(
            bytes >= 50 && bytes - shown.last().unwrap().len() < 50,
            "{shown:?}"
        );
    }

    #[test]
    fn raw_prefilter_eligibility_follows_the_reference() {
        assert!(raw_prefilter_applies("mutex", false, true));
        assert!(!raw_prefilter_applies("mutex", true, true));
        assert!(!raw_prefilter_applies("  ", false, true));
        assert!(!raw_prefilter_applies("snake_case", false, true));
        assert!(!raw_prefilter_applies("[PERSON", false, true));
        assert!(!raw_prefilter_applies("deadBEEF", false, true));
        assert!(!raw_prefilter_applies("b6e0.9271", false, true));
        assert!(!raw_prefilter_applies("person", false, true));
        assert!(raw_prefilter_applies("person", false, false));
        assert!(!raw_prefilter_applies("ERSO", false, false));
        assert!(raw_prefilter_applies("ab.cd.ef", false, true));
    }
}
