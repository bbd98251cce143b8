//! `retrieve`: BM25-ranked passages of redacted text (spec 7.2).
//!
//! Every document in scope is redacted (line-preserving), split into passages and
//! tokenized; passages are ranked by how many distinct query terms they hold, then by
//! BM25 over all passages of the scan. Scanning is parallel per document; the statistics
//! are summed in walk order, so scores are bit-identical to the reference's.

use super::targets::charged_targets;
use super::walk::Budget;
use super::{Scanned, ToolError, ToolOutput, scan_content};
use crate::cancel::Stop;
use crate::engine::Counts;
use crate::engine::placeholder::{PLACEHOLDER_RE, casefold};
use crate::engine::python::text::{byte_offset_of_char, char_len, is_py_word, splitlines};
use crate::search_index::PassageStats;
use crate::search_index::plan::GramPlan;
use crate::view::{Entry, PassageScreen, RedactedPath, RootView};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

/// Words a query term never is.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "was", "what", "when", "where", "which", "who",
    "with",
];
/// A passage grows until one more line would pass this many characters…
const PASSAGE_CHARS: usize = 1600;
/// …or it already spans this many lines.
const PASSAGE_LINES: u64 = 24;
const TRUNCATED_MARKER: &str =
    "[TRUNCATED: more matching passages; narrow the query or increase limits]\n";
const TOO_SMALL: &str =
    "Matching passages exceed max_chars. Increase max_chars to return a cited passage.\n";

/// Arguments of `redctx_retrieve` / `retrieve`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetrieveArgs {
    /// Free text; at most 2,000 characters and 64 distinct non-stop-word terms.
    pub query: String,
    /// Scopes (paths or ids); empty = the whole root.
    pub paths: Vec<String>,
    /// fnmatch patterns on the raw relative path (any may match).
    pub glob: Vec<String>,
    /// 1..=50 (default 8); checked here, as the reference does.
    pub max_results: i64,
    /// 256..=100000 (default 12000).
    pub max_chars: i64,
    /// Files read per call. The reference stops at 80 (`File limit exceeded.`); our
    /// default is `None`: the whole root is searchable, since content comes from the
    /// cache rather than fresh reads. The CLI's `--max-files` sets it.
    pub max_files: Option<u64>,
    /// Passages scanned per call. The reference stops at 20,000 (`Retrieval passage
    /// limit exceeded…`); our default is `None`, for the same reason, and because
    /// candidates are kept as byte ranges rather than copies, so memory stays small.
    pub max_passages: Option<u64>,
}

impl Default for RetrieveArgs {
    fn default() -> Self {
        RetrieveArgs {
            query: String::new(),
            paths: Vec::new(),
            glob: Vec::new(),
            max_results: 8,
            max_chars: 12_000,
            max_files: None,
            max_passages: None,
        }
    }
}

/// `[^\W_]` of Python's Unicode `re`: a letter or number.
fn is_alnum(ch: char) -> bool {
    ch != '_' && is_py_word(ch)
}

/// Calls `f` with every token of `text`: whole placeholders, and words
/// `[^\W_]+(?:[-'][^\W_]+)*`, in order (the reference's `TOKEN_RE`, not yet casefolded).
fn for_each_token(text: &str, f: &mut impl FnMut(&str)) {
    let mut pos = 0;
    for m in PLACEHOLDER_RE.find_iter(text) {
        // Words never contain `[`, so they cannot overlap a placeholder.
        word_tokens(&text[pos..m.start()], f);
        f(m.as_str());
        pos = m.end();
    }
    word_tokens(&text[pos..], f);
}

fn word_tokens(text: &str, f: &mut impl FnMut(&str)) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        if !is_alnum(chars[i].1) {
            i += 1;
            continue;
        }
        let start = chars[i].0;
        while i < chars.len() && is_alnum(chars[i].1) {
            i += 1;
        }
        while i + 1 < chars.len() && matches!(chars[i].1, '-' | '\'') && is_alnum(chars[i + 1].1) {
            i += 1;
            while i < chars.len() && is_alnum(chars[i].1) {
                i += 1;
            }
        }
        let end = chars.get(i).map_or(text.len(), |&(at, _)| at);
        f(&text[start..end]);
    }
}

/// The casefolded tokens of `text`.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, &mut |token| out.push(casefold(token)));
    out
}

/// A passage with at least one query term.
struct Candidate {
    doc: usize,
    start_line: u64,
    end_line: u64,
    /// Byte range of the passage in the document, and how many lines it has (trailing
    /// empty lines are not recoverable from the range alone).
    range: (usize, usize),
    lines: usize,
    /// (term index, hits) in order of first occurrence: the reference sums BM25 terms
    /// in that order, and float addition is not associative.
    hits: Vec<(usize, u64)>,
    length: u64,
    score: f64,
}

/// What scanning one document produced.
struct DocScan {
    passages: u64,
    tokens: u64,
    /// Passages containing each term.
    df: Vec<u64>,
    candidates: Vec<Candidate>,
}

/// One document's redacted text (kept only when it has a candidate passage), content
/// counts, redacted path and scan.
type ScannedDoc = (Option<Arc<str>>, Counts, RedactedPath, DocScan);

/// Splits `text` into the reference's passages and scores their terms.
fn scan_document(doc: usize, text: &str, terms: &HashMap<String, usize>) -> DocScan {
    let mut scan = DocScan {
        passages: 0,
        tokens: 0,
        df: vec![0; terms.len()],
        candidates: Vec::new(),
    };
    let base = text.as_ptr() as usize;
    let offset = |s: &str| s.as_ptr() as usize - base;
    let emit = |scan: &mut DocScan, start_line: u64, end_line: u64, parts: &[&str]| {
        scan.passages += 1;
        let mut hits: Vec<(usize, u64)> = Vec::new();
        let mut length = 0u64;
        for part in parts {
            for_each_token(part, &mut |token| {
                length += 1;
                let folded = casefold(token);
                if let Some(&term) = terms.get(&folded) {
                    match hits.iter_mut().find(|(t, _)| *t == term) {
                        Some((_, n)) => *n += 1,
                        None => hits.push((term, 1)),
                    }
                }
            });
        }
        scan.tokens += length;
        for &(term, _) in &hits {
            scan.df[term] += 1;
        }
        if !hits.is_empty() {
            let first = parts.first().map_or(0, |s| offset(s));
            let last = parts.last().map_or(0, |s| offset(s) + s.len());
            scan.candidates.push(Candidate {
                doc,
                start_line,
                end_line,
                range: (first, last),
                lines: parts.len(),
                hits,
                length,
                score: 0.0,
            });
        }
    };
    let mut block: Vec<&str> = Vec::new();
    let mut size = 0usize;
    let (mut start, mut end) = (1u64, 1u64);
    for (index, full_line) in splitlines(text, false).into_iter().enumerate() {
        let number = index as u64 + 1;
        let mut line = full_line;
        let line_chars = char_len(line);
        if !block.is_empty()
            && (size + line_chars + 1 > PASSAGE_CHARS || number - start >= PASSAGE_LINES)
        {
            emit(&mut scan, start, end, &block);
            block.clear();
            size = 0;
        }
        let mut remaining = line_chars;
        while remaining > PASSAGE_CHARS {
            let mut cut = byte_offset_of_char(line, PASSAGE_CHARS);
            if let Some(space) = line[..cut].rfind(' ')
                && space > 0
            {
                cut = space + 1;
            }
            for m in PLACEHOLDER_RE.find_iter(line) {
                if m.start() < cut && cut < m.end() {
                    cut = m.start();
                    break;
                }
                if m.start() >= cut {
                    break;
                }
            }
            if cut == 0 {
                // Cannot happen (a cut after a space is never inside a placeholder),
                // but never loop forever on it.
                break;
            }
            emit(&mut scan, number, number, &[&line[..cut]]);
            remaining -= char_len(&line[..cut]);
            line = &line[cut..];
        }
        if block.is_empty() {
            start = number;
        }
        block.push(line);
        size += remaining + 1;
        end = number;
    }
    if !block.is_empty() {
        emit(&mut scan, start, end, &block);
    }
    scan
}

/// What a text adds to the BM25 statistics of any query none of its passages matches
/// (the search index learns it once per indexed version, so retrieve can skip the file).
pub fn passage_stats(text: &str) -> PassageStats {
    let scan = scan_document(0, text, &HashMap::new());
    PassageStats {
        passages: scan.passages,
        tokens: scan.tokens,
    }
}

/// The passage text: its lines joined with `\n`.
fn passage_text(text: &str, candidate: &Candidate) -> String {
    let mut lines = splitlines(&text[candidate.range.0..candidate.range.1], false);
    while lines.len() < candidate.lines {
        lines.push("");
    }
    lines.join("\n")
}

/// `retrieve`: validates the limits and the query (spec 7.2, in the reference's order),
/// scans every readable file in scope, and prints the top `max_results` passages as
/// `--- <ref> <rpath> lines <S>-<E> score=<s.sss> ---\n<text>\n\n` while they fit in
/// `max_chars` (with room for the truncation line). Ranking: distinct query terms
/// matched, then score (both descending), then ref, then start line. Scores print with
/// three decimals, rounded half-even on the binary value as Python does (Rust's `{:.3}`
/// formats exactly the same way, checked on 200,000 values against Python).
///
/// Receipt counts: the content and path of every scanned document.
///
/// `stop` ends the call between files; files that vanish or keep changing during the
/// call are left out ([`scan_content`]).
pub fn retrieve(view: &dyn RootView, args: &RetrieveArgs, stop: &Stop) -> ToolOutput {
    let mut counts = Counts::default();
    match retrieve_inner(view, args, stop, &mut counts) {
        Ok(text) => ToolOutput::ok(text, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}

fn retrieve_inner(
    view: &dyn RootView,
    args: &RetrieveArgs,
    stop: &Stop,
    counts: &mut Counts,
) -> Result<String, ToolError> {
    if !(1..=50).contains(&args.max_results) || !(256..=100_000).contains(&args.max_chars) {
        return Err(ToolError::RetrievalBounds);
    }
    if char_len(&args.query) > 2000 {
        return Err(ToolError::RetrievalQueryTooLong);
    }
    let mut term_list: Vec<String> = Vec::new();
    for token in tokens(&args.query) {
        if !STOP_WORDS.contains(&token.as_str()) && !term_list.contains(&token) {
            term_list.push(token);
        }
    }
    if term_list.is_empty() || term_list.len() > 64 {
        return Err(ToolError::RetrievalTerms);
    }
    let terms: HashMap<String, usize> = term_list
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, t)| (t, i))
        .collect();

    let mut budget = Budget::from_limits(view.limits()).stopping(stop);
    budget.max_files = args.max_files;
    let (files, cut) = charged_targets(view, &args.paths, &args.glob, true, &mut budget)?;
    let files: &[Entry] = &files;

    // The search index leaves out the files that hold no term, once it knows what each
    // adds to the statistics (learnt by the first call that reads it).
    let screen = GramPlan::any_of(&term_list).and_then(|plan| view.search_screen(&plan));
    let scanned: Vec<Result<Option<ScannedDoc>, ToolError>> = files
        .par_iter()
        .enumerate()
        .map(|(doc, entry)| {
            let verdict = screen
                .as_deref()
                .map_or(PassageScreen::Read, |screen| screen.passages(entry));
            if let PassageScreen::Known(content_counts, stats) = verdict {
                stop.check()?;
                let scan = DocScan {
                    passages: stats.passages,
                    tokens: stats.tokens,
                    df: vec![0; terms.len()],
                    candidates: Vec::new(),
                };
                return Ok(Some((None, content_counts, view.path(&entry.rel), scan)));
            }
            // Left out silently: the answer's character budget has no room for a note.
            let Scanned::Content(content) = scan_content(view, entry, true, stop)? else {
                return Ok(None);
            };
            let path = view.path(&entry.rel);
            let scan = scan_document(doc, &content.text, &terms);
            if let (PassageScreen::Learn, Some(screen)) = (verdict, screen.as_deref())
                && scan.candidates.is_empty()
            {
                let stats = PassageStats {
                    passages: scan.passages,
                    tokens: scan.tokens,
                };
                screen.learn_passages(entry, stats);
            }
            // Only documents with a candidate are printed from; the rest are let go now,
            // so a whole-root call holds the text of matching files only.
            let text = (!scan.candidates.is_empty()).then_some(content.text);
            Ok(Some((text, content.counts, path, scan)))
        })
        .collect();

    // Sum in walk order, failing where the reference would.
    let mut texts: Vec<Option<Arc<str>>> = Vec::with_capacity(scanned.len());
    let mut paths = Vec::with_capacity(scanned.len());
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut passages = 0u64;
    let mut total_tokens = 0u64;
    let mut df = vec![0u64; term_list.len()];
    for result in scanned {
        let Some((text, doc_counts, path, scan)) = result? else {
            // Skipped (it vanished or kept changing): keeps its slot, has no passage.
            texts.push(None);
            paths.push(RedactedPath::default());
            continue;
        };
        counts.merge(&doc_counts);
        counts.merge(&path.counts);
        passages += scan.passages;
        if args.max_passages.is_some_and(|max| passages > max) {
            return Err(ToolError::RetrievalPassages);
        }
        total_tokens += scan.tokens;
        for (sum, n) in df.iter_mut().zip(&scan.df) {
            *sum += n;
        }
        candidates.extend(scan.candidates);
        texts.push(text);
        paths.push(path);
    }
    if let Some(error) = cut {
        return Err(error);
    }
    if candidates.is_empty() {
        return Ok("No matches.\n".into());
    }

    let average = (total_tokens as f64 / passages.max(1) as f64).max(1.0);
    for candidate in &mut candidates {
        let length = candidate.length as f64;
        candidate.score = candidate.hits.iter().fold(0.0, |score, &(term, hits)| {
            let frequency = df[term];
            let idf = (1.0
                + ((passages as f64 - frequency as f64) + 0.5) / (frequency as f64 + 0.5))
                .ln();
            let hits = hits as f64;
            score + idf * (hits * 2.2) / (hits + 1.2 * (0.25 + 0.75 * length / average))
        });
    }
    candidates.sort_by(|a, b| {
        b.hits
            .len()
            .cmp(&a.hits.len())
            .then_with(|| b.score.total_cmp(&a.score))
            .then_with(|| paths[a.doc].id.cmp(&paths[b.doc].id))
            .then_with(|| a.start_line.cmp(&b.start_line))
    });

    let max_results = args.max_results as usize;
    let max_chars = args.max_chars as usize;
    let marker_chars = char_len(TRUNCATED_MARKER);
    let mut output = String::new();
    let mut output_chars = 0usize;
    let mut selected = 0usize;
    for candidate in candidates.iter().take(max_results) {
        let path = &paths[candidate.doc];
        let entry = format!(
            "--- {} {} lines {}-{} score={:.3} ---\n{}\n\n",
            path.id,
            path.text,
            candidate.start_line,
            candidate.end_line,
            candidate.score,
            passage_text(texts[candidate.doc].as_deref().unwrap_or(""), candidate)
        );
        let entry_chars = char_len(&entry);
        if output_chars + entry_chars + marker_chars > max_chars {
            break;
        }
        output.push_str(&entry);
        output_chars += entry_chars;
        selected += 1;
    }
    if selected < candidates.len() {
        output.push_str(if selected > 0 {
            TRUNCATED_MARKER
        } else {
            TOO_SMALL
        });
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_placeholders_whole_and_join_hyphens_and_apostrophes() {
        let text = "Don't re-run [PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] x_y a- -b Straße ²";
        assert_eq!(
            tokens(text),
            vec![
                "don't",
                "re-run",
                "[person_b6e03a41f7e5c4a5d77d8f67fcef2327]",
                "x",
                "y",
                "a",
                "b",
                "strasse",
                "²"
            ]
        );
        assert_eq!(tokens("PERSON_b6e0"), vec!["person", "b6e0"]);
    }

    #[test]
    fn long_lines_are_cut_after_the_last_space_and_never_inside_a_placeholder() {
        let terms: HashMap<String, usize> = [
            ("w".to_string(), 0),
            ("w".repeat(1599), 1),
            ("w".repeat(1000), 2),
        ]
        .into_iter()
        .collect();
        // 1,599 chars then a placeholder straddling the 1,600 cut, no spaces before it.
        let p = "[PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327]";
        let line = format!("{}{p} w", "w".repeat(1599));
        let scan = scan_document(0, &line, &terms);
        let texts: Vec<String> = scan
            .candidates
            .iter()
            .map(|c| passage_text(&line, c))
            .collect();
        assert_eq!(texts, vec!["w".repeat(1599), format!("{p} w")]);
        // With a space before the cut, the cut lands right after it.
        let line = format!("{} {}", "w".repeat(1000), "w".repeat(1000));
        let scan = scan_document(0, &line, &terms);
        let texts: Vec<String> = scan
            .candidates
            .iter()
            .map(|c| passage_text(&line, c))
            .collect();
        assert_eq!(
            texts,
            vec![format!("{} ", "w".repeat(1000)), "w".repeat(1000)]
        );
        assert!(
            scan.candidates
                .iter()
                .all(|c| c.start_line == 1 && c.end_line == 1)
        );
    }

    #[test]
    fn passages_close_at_24_lines_and_keep_trailing_empty_lines() {
        let terms: HashMap<String, usize> = [("x".to_string(), 0)].into_iter().collect();
        let text = "x\n".repeat(30) + "\n\n";
        let scan = scan_document(0, &text, &terms);
        assert_eq!(scan.passages, 2);
        let second = &scan.candidates[1];
        assert_eq!((second.start_line, second.end_line), (25, 32));
        assert_eq!(passage_text(&text, second), "x\nx\nx\nx\nx\nx\n\n");
    }
}
