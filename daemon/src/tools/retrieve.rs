//! `retrieve`: BM25-ranked passages of redacted text (spec 7.2).
//!
//! Every document in scope is redacted (line-preserving), split into passages and
//! tokenized (`crate::passages`); passages are ranked by how many distinct query terms
//! they hold, then by BM25 over all passages of the scan. Documents the passage index
//! holds at their current version are not read: the index gives the same figures
//! (passages, tokens, per-term passage counts, each matching passage's length and hits);
//! only the passages printed are read. The rest are scanned in parallel. Statistics are
//! summed in walk order and each score's terms in the passage's order, so scores are
//! bit-identical to the reference's.

use super::targets::{Charged, charged_targets};
use super::walk::Budget;
use super::{Scanned, ToolError, ToolOutput, scan_content};
use crate::cancel::Stop;
use crate::engine::python::text::{char_len, splitlines};
use crate::engine::{Counts, CountsSum};
use crate::passages::{for_each_passage, passage_terms, tokens};
use crate::search_index::passages::Located;
use crate::tally::PerWorker;
use crate::view::{Entry, ListedEntry, PassageIndex, RedactedPath, RootView};
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Words a query term never is.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "was", "what", "when", "where", "which", "who",
    "with",
];
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

/// A passage with at least one query term.
#[derive(Clone, Debug, PartialEq)]
struct Candidate {
    doc: usize,
    /// Its number in the document: orders passages as their start lines do (the pieces
    /// of one long line share a start line and keep their order).
    ordinal: u32,
    /// Where it is in the text: known once the text is at hand (a scanned document, or
    /// an indexed one read back to print).
    place: Option<Box<Place>>,
    /// Its run of (term index, hits) in the call's hit list, in order of first
    /// occurrence: the reference sums BM25 terms in that order, and float addition is
    /// not associative.
    hits: Range<u32>,
    length: u64,
    score: f64,
}

/// Where a passage lies in its document.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Place {
    start_line: u64,
    end_line: u64,
    /// Byte range in the document, and how many lines it has (trailing empty lines are
    /// not recoverable from the range alone).
    range: (usize, usize),
    lines: usize,
}

/// What scanning one document produced.
struct DocScan {
    passages: u64,
    tokens: u64,
    /// Passages containing each term.
    df: Vec<u64>,
    candidates: Vec<Candidate>,
    /// The candidates' (term, hits) runs.
    hits: Vec<(u32, u32)>,
}

/// One document of the scope: found in the passage index (its content counts and
/// redacted path are the index's own), or scanned. Kept small: a whole-root call holds
/// one per file.
enum Doc<'a> {
    Indexed(&'a Counts, &'a RedactedPath, Located),
    Scanned(Box<ScannedDoc>),
}

impl Doc<'_> {
    /// Adds its content's and path's counts to `sum`.
    fn add_counts(&self, sum: &mut CountsSum) {
        let (counts, path) = match self {
            Doc::Indexed(counts, path, _) => (*counts, *path),
            Doc::Scanned(scanned) => (&scanned.counts, &scanned.path),
        };
        sum.add(counts);
        sum.add(&path.counts);
    }
}

struct ScannedDoc {
    counts: Counts,
    path: RedactedPath,
    /// Kept only when the document has a candidate passage.
    text: Option<Arc<str>>,
    scan: DocScan,
}

/// The scope's documents and what they add up to, in walk order.
struct Summed<'a> {
    /// `None`: skipped (it vanished or kept changing); keeps its place, has no passage.
    docs: Vec<Option<Doc<'a>>>,
    /// The text of each document printed from, by its place in `docs`.
    texts: HashMap<usize, Arc<str>>,
    gathered: Gathered,
    /// Indexed documents with their places in `docs`.
    located: Vec<(Located, u32)>,
    passages: u64,
    total_tokens: u64,
    /// Passages containing each term, over the scanned documents.
    df: Vec<u64>,
}

/// Sums the documents' figures in walk order, failing where the reference would: at the
/// first error (`failure`: the earliest failed document and its error), or past
/// `max_passages` (with the documents counted until then). The documents stay in the
/// vector they came in: a whole-root call holds one per file, and a second vector of
/// them took 5 MB more on a 106k-file root.
fn sum_in_walk_order<'a>(
    mut docs: Vec<Option<Doc<'a>>>,
    failure: Option<(usize, ToolError)>,
    args: &RetrieveArgs,
    terms: usize,
) -> Result<Summed<'a>, (ToolError, Vec<Option<Doc<'a>>>)> {
    let mut texts = HashMap::new();
    let mut gathered = Gathered::default();
    let mut located = Vec::new();
    let (mut passages, mut total_tokens) = (0u64, 0u64);
    let mut df = vec![0; terms];
    let (failed_at, mut error) = match failure {
        Some((at, error)) => (at, Some(error)),
        None => (usize::MAX, None),
    };
    for (place, doc) in docs.iter_mut().enumerate() {
        if place == failed_at {
            let error = error.take().unwrap_or(ToolError::Failed);
            docs.truncate(place);
            return Err((error, docs));
        }
        let (doc_passages, doc_tokens) = match doc {
            None => (0, 0),
            Some(Doc::Indexed(_, _, at)) => {
                located.push((*at, place as u32));
                (at.passages, at.tokens)
            }
            Some(Doc::Scanned(scanned)) => {
                let scan = &mut scanned.scan;
                for (sum, n) in df.iter_mut().zip(&scan.df) {
                    *sum += n;
                }
                let candidates = std::mem::take(&mut scan.candidates);
                gathered.add(candidates.into_iter(), std::mem::take(&mut scan.hits));
                if let Some(text) = scanned.text.take() {
                    texts.insert(place, text);
                }
                (scan.passages, scan.tokens)
            }
        };
        passages += doc_passages;
        if args.max_passages.is_some_and(|max| passages > max) {
            docs.truncate(place + 1);
            return Err((ToolError::RetrievalPassages, docs));
        }
        total_tokens += doc_tokens;
    }
    Ok(Summed {
        docs,
        texts,
        gathered,
        located,
        passages,
        total_tokens,
        df,
    })
}

/// Document `doc` of the call: its figures from the passage index when it holds the
/// file at its current version, else from a scan of its redacted text; `None` when it
/// vanished or kept changing (left out silently: the answer's character budget has no
/// room for a note).
fn document<'a>(
    view: &dyn RootView,
    index: Option<&'a dyn PassageIndex>,
    stop: &Stop,
    terms: &HashMap<String, usize>,
    doc: usize,
    entry: &Entry,
) -> Result<Option<Doc<'a>>, ToolError> {
    if let Some((counts, path, at)) = index.and_then(|index| index.locate(entry)) {
        stop.check()?;
        return Ok(Some(Doc::Indexed(counts, path, at)));
    }
    let Scanned::Content(content) = scan_content(view, entry, true, stop)? else {
        return Ok(None);
    };
    let path = view.path(&entry.rel);
    let scan = scan_document(doc, &content.text, terms);
    // Only documents with a candidate are printed from; the rest are let go now, so a
    // whole-root call holds the text of matching files only.
    let text = (!scan.candidates.is_empty()).then_some(content.text);
    Ok(Some(Doc::Scanned(Box::new(ScannedDoc {
        counts: content.counts,
        path,
        text,
        scan,
    }))))
}

/// Splits `text` into the reference's passages and scores their terms.
fn scan_document(doc: usize, text: &str, terms: &HashMap<String, usize>) -> DocScan {
    let mut scan = DocScan {
        passages: 0,
        tokens: 0,
        df: vec![0; terms.len()],
        candidates: Vec::new(),
        hits: Vec::new(),
    };
    let base = text.as_ptr() as usize;
    let offset = |s: &str| s.as_ptr() as usize - base;
    for_each_passage(text, &mut |start_line, end_line, parts| {
        let ordinal = scan.passages as u32;
        scan.passages += 1;
        let found = passage_terms(parts, &mut |token| terms.get(token).copied());
        scan.tokens += found.length;
        for &(term, _, _) in &found.hits {
            scan.df[term] += 1;
        }
        if !found.hits.is_empty() {
            let first = parts.first().map_or(0, |s| offset(s));
            let last = parts.last().map_or(0, |s| offset(s) + s.len());
            let at = scan.hits.len() as u32;
            scan.hits
                .extend(found.hits.iter().map(|&(t, n, _)| (t as u32, n as u32)));
            scan.candidates.push(Candidate {
                doc,
                ordinal,
                place: Some(Box::new(Place {
                    start_line,
                    end_line,
                    range: (first, last),
                    lines: parts.len(),
                })),
                hits: at..scan.hits.len() as u32,
                length: found.length,
                score: 0.0,
            });
        }
    });
    scan
}

/// The call's candidates and their hit runs, gathered from every document.
#[derive(Default)]
struct Gathered {
    candidates: Vec<Candidate>,
    hits: Vec<(u32, u32)>,
}

impl Gathered {
    /// Adds candidates whose runs are in `hits` (moved after the ones held).
    fn add(&mut self, candidates: impl Iterator<Item = Candidate>, hits: Vec<(u32, u32)>) {
        let shift = self.hits.len() as u32;
        self.candidates.extend(candidates.map(|c| Candidate {
            hits: c.hits.start + shift..c.hits.end + shift,
            ..c
        }));
        self.hits.extend(hits);
    }
}

/// The passage text: its lines joined with `\n`.
fn passage_text(text: &str, place: &Place) -> String {
    let mut lines = splitlines(&text[place.range.0..place.range.1], false);
    while lines.len() < place.lines {
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
    let index = view.passage_index(&term_list);
    if let Some(text) = ranked(view, args, stop, &terms, index.as_deref(), counts)? {
        return Ok(text);
    }
    if let Some(index) = &index {
        index.mismatch();
    }
    // The text read back to print an indexed passage did not hold what the index said
    // (its cache entry changed or went away): answer from the files instead.
    *counts = Counts::default();
    ranked(view, args, stop, &terms, None, counts)?.ok_or(ToolError::Failed)
}

/// Scans (or looks up in `index`) every document in scope, ranks the passages and
/// prints the answer; `None` when an indexed passage could not be read back as indexed.
fn ranked(
    view: &dyn RootView,
    args: &RetrieveArgs,
    stop: &Stop,
    terms: &HashMap<String, usize>,
    index: Option<&dyn PassageIndex>,
    counts: &mut Counts,
) -> Result<Option<String>, ToolError> {
    let mut budget = Budget::from_limits(view.limits()).stopping(stop);
    budget.max_files = args.max_files;
    // Files left out (over a limit, failed on their own) are left out silently: the
    // answer has a character budget and no closing line.
    let Charged { files, cut, .. } =
        charged_targets(view, &args.paths, &args.glob, true, &mut budget)?;
    let files: &[ListedEntry] = &files;

    // Counts are summed where each file's are at hand (and in cache), per worker; the
    // walk-order sum is only needed when the call fails part-way.
    let sums: PerWorker<CountsSum> = PerWorker::new();
    // The earliest document that failed, and why (the rest of the call goes on; the
    // walk-order sum stops there, as the reference's loop would have).
    let failure: Mutex<Option<(usize, ToolError)>> = Mutex::new(None);
    let docs: Vec<Option<Doc>> = files
        .par_iter()
        .enumerate()
        .map(|(doc, entry)| {
            let found = document(view, index, stop, terms, doc, entry);
            if let Ok(Some(doc)) = &found {
                sums.with(|sum| doc.add_counts(sum));
            }
            found.unwrap_or_else(|error| {
                let mut first = failure.lock().unwrap_or_else(|e| e.into_inner());
                if first.as_ref().is_none_or(|(at, _)| doc < *at) {
                    *first = Some((doc, error));
                }
                None
            })
        })
        .collect();
    let failure = failure.into_inner().unwrap_or_else(|e| e.into_inner());

    // Sum in walk order, failing where the reference would.
    let summed = sum_in_walk_order(docs, failure, args, terms.len());
    let mut sum = CountsSum::default();
    match &summed {
        Ok(_) => sums.into_values().for_each(|part| sum.merge(part)),
        // The counts of the documents before the failure (and the one past the
        // passage limit), as the reference reports them.
        Err((_, counted)) => counted
            .iter()
            .flatten()
            .for_each(|doc| doc.add_counts(&mut sum)),
    }
    sum.add_to(counts);
    let Summed {
        docs,
        mut texts,
        mut gathered,
        located,
        passages,
        total_tokens,
        mut df,
    } = summed.map_err(|(error, _)| error)?;
    let no_path = RedactedPath::default();
    let paths: Vec<&RedactedPath> = docs
        .iter()
        .map(|doc| match doc {
            Some(Doc::Indexed(_, path, _)) => *path,
            Some(Doc::Scanned(scanned)) => &scanned.path,
            None => &no_path,
        })
        .collect();
    if let Some(error) = cut {
        return Err(error);
    }
    if let (Some(index), false) = (index, located.is_empty()) {
        let Some(found) = index.hits(&located) else {
            return Ok(None);
        };
        for (sum, n) in df.iter_mut().zip(&found.df) {
            *sum += n;
        }
        let candidates = found.passages.into_iter().map(|p| Candidate {
            doc: p.doc as usize,
            ordinal: p.ordinal,
            place: None,
            hits: p.hits,
            length: u64::from(p.length),
            score: 0.0,
        });
        gathered.add(candidates, found.hits);
    }
    if gathered.candidates.is_empty() {
        return Ok(Some("No matches.\n".into()));
    }

    let average = (total_tokens as f64 / passages.max(1) as f64).max(1.0);
    let Gathered {
        mut candidates,
        mut hits,
    } = gathered;
    // BM25 of one passage, its terms summed in the order given.
    let bm25 = |run: &[(u32, u32)], length: u64| {
        let length = length as f64;
        run.iter().fold(0.0, |score, &(term, n)| {
            let frequency = df[term as usize];
            let idf = (1.0
                + ((passages as f64 - frequency as f64) + 0.5) / (frequency as f64 + 0.5))
                .ln();
            let n = f64::from(n);
            score + idf * (n * 2.2) / (n + 1.2 * (0.25 + 0.75 * length / average))
        })
    };
    for candidate in &mut candidates {
        let run = &hits[candidate.hits.start as usize..candidate.hits.end as usize];
        candidate.score = bm25(run, candidate.length);
    }
    // Distinct terms, score, ref, place in the document: a total order (no two
    // candidates tie on all four), so taking the first `max_results` and sorting only
    // those is the full sort's prefix.
    let order = |a: &Candidate, b: &Candidate| {
        b.hits
            .len()
            .cmp(&a.hits.len())
            .then_with(|| b.score.total_cmp(&a.score))
            .then_with(|| paths[a.doc].id.cmp(&paths[b.doc].id))
            .then_with(|| a.ordinal.cmp(&b.ordinal))
    };
    let total = candidates.len();
    let max_results = args.max_results as usize;
    if total > max_results {
        candidates.select_nth_unstable_by(max_results - 1, order);
        // An indexed passage with three or more terms has a score summed in term order,
        // a few ulps (1e-14 relative at most) from the exact one: whatever is that close
        // to the last place may still take it, and is settled below too.
        let last = &candidates[max_results - 1];
        let (distinct, reach) = (last.hits.len(), last.score - last.score.abs() * 1e-9);
        let mut kept = max_results;
        for i in max_results..total {
            if candidates[i].hits.len() == distinct && candidates[i].score >= reach {
                candidates.swap(kept, i);
                kept += 1;
            }
        }
        candidates.truncate(kept);
    }
    // Indexed passages are read back: their place in the text, and for three terms or
    // more the order their terms first occur in, which makes the exact score.
    let mut wanted: Vec<usize> = candidates
        .iter()
        .filter(|c| c.place.is_none())
        .map(|c| c.doc)
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let read_back: Vec<Option<(Arc<str>, DocScan)>> = wanted
        .par_iter()
        .map(|&doc| {
            let text = index?.text(&files[doc])?;
            let scan = scan_document(doc, &text, terms);
            Some((text, scan))
        })
        .collect();
    let mut scans: HashMap<usize, DocScan> = HashMap::new();
    for (doc, found) in wanted.into_iter().zip(read_back) {
        let Some((text, scan)) = found else {
            return Ok(None);
        };
        texts.insert(doc, text);
        scans.insert(doc, scan);
    }
    for candidate in &mut candidates {
        if candidate.place.is_some() {
            continue;
        }
        let Some(scan) = scans.get(&candidate.doc) else {
            return Ok(None);
        };
        let run = candidate.hits.start as usize..candidate.hits.end as usize;
        let same = scan.candidates.iter().find(|c| {
            let exact = &scan.hits[c.hits.start as usize..c.hits.end as usize];
            let mut a = exact.to_vec();
            a.sort_unstable();
            c.ordinal == candidate.ordinal && c.length == candidate.length && a == hits[run.clone()]
        });
        let Some(same) = same else {
            return Ok(None);
        };
        hits[run.clone()]
            .copy_from_slice(&scan.hits[same.hits.start as usize..same.hits.end as usize]);
        candidate.score = bm25(&hits[run], candidate.length);
        candidate.place = same.place.clone();
    }
    candidates.sort_by(order);
    candidates.truncate(max_results);

    let max_chars = args.max_chars as usize;
    let marker_chars = char_len(TRUNCATED_MARKER);
    let mut output = String::new();
    let mut output_chars = 0usize;
    let mut selected = 0usize;
    for candidate in &candidates {
        let (Some(text), Some(place)) = (texts.get(&candidate.doc), &candidate.place) else {
            return Ok(None);
        };
        let path = &paths[candidate.doc];
        let entry = format!(
            "--- {} {} lines {}-{} score={:.3} ---\n{}\n\n",
            path.id,
            path.text,
            place.start_line,
            place.end_line,
            candidate.score,
            passage_text(text, place)
        );
        let entry_chars = char_len(&entry);
        if output_chars + entry_chars + marker_chars > max_chars {
            break;
        }
        output.push_str(&entry);
        output_chars += entry_chars;
        selected += 1;
    }
    if selected < total {
        output.push_str(if selected > 0 {
            TRUNCATED_MARKER
        } else {
            TOO_SMALL
        });
    }
    Ok(Some(output))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .map(|c| passage_text(&line, c.place.as_ref().unwrap()))
            .collect();
        assert_eq!(texts, vec!["w".repeat(1599), format!("{p} w")]);
        // With a space before the cut, the cut lands right after it.
        let line = format!("{} {}", "w".repeat(1000), "w".repeat(1000));
        let scan = scan_document(0, &line, &terms);
        let texts: Vec<String> = scan
            .candidates
            .iter()
            .map(|c| passage_text(&line, c.place.as_ref().unwrap()))
            .collect();
        assert_eq!(
            texts,
            vec![format!("{} ", "w".repeat(1000)), "w".repeat(1000)]
        );
        assert!(
            scan.candidates
                .iter()
                .filter_map(|c| c.place.as_ref())
                .all(|p| p.start_line == 1 && p.end_line == 1)
        );
    }

    #[test]
    fn passages_close_at_24_lines_and_keep_trailing_empty_lines() {
        let terms: HashMap<String, usize> = [("x".to_string(), 0)].into_iter().collect();
        let text = "x\n".repeat(30) + "\n\n";
        let scan = scan_document(0, &text, &terms);
        assert_eq!(scan.passages, 2);
        let second = scan.candidates[1].place.as_ref().unwrap();
        assert_eq!((second.start_line, second.end_line), (25, 32));
        assert_eq!(passage_text(&text, second), "x\nx\nx\nx\nx\nx\n\n");
    }
}
