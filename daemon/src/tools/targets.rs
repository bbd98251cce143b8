//! The file scope of search, retrieve and bundle (the reference's `iter_target_files`).

use super::ToolError;
use super::glob::{Pattern, matches_any};
use super::walk::{Budget, walk};
use crate::fs::ContentKind;
use crate::view::{Entry, EntryKind, ListedEntry, RootView};
use foldhash::HashSet;
use std::sync::Arc;

/// Files in scope, in walk order. `error` is a traversal failure met after the last
/// listed file: the reference's lazy walk would raise it only once a caller asked for
/// the next file, so callers that stop early never see it.
pub(crate) struct Targets {
    pub files: Vec<ListedEntry>,
    pub error: Option<ToolError>,
}

/// Resolves every scope first (any failure fails the call), then walks each in turn:
/// regular files only, legacy Office and disabled documents skipped, non-text files
/// skipped when `text_only`, `globs` matched with fnmatch on the *redacted* relative
/// path, and a file reached from two scopes listed once. An empty `scopes` means the
/// whole root.
///
/// Globs see what the agent sees. The reference matches them on the raw path, which
/// makes every glob a question about raw names: `docs/T*`, `docs/Ta*`, … rebuild a
/// redacted file name a character at a time from which calls find the file. On the
/// redacted path a glob can only select what the listing already shows (COMPAT.md);
/// for the many paths that hold nothing to redact the two are the same.
pub(crate) fn target_files(
    view: &dyn RootView,
    scopes: &[String],
    globs: &[String],
    text_only: bool,
    budget: &mut Budget,
) -> Result<Targets, ToolError> {
    // A scope given twice, or two spellings of one, is walked once: its files are
    // listed once anyway, and a call naming one directory a hundred thousand times
    // walked it as often.
    let starts: Vec<Entry> = if scopes.is_empty() {
        vec![view.resolve(".")?]
    } else {
        let mut named: HashSet<&str> = HashSet::default();
        let mut resolved: HashSet<Arc<str>> = HashSet::default();
        let mut starts = Vec::new();
        for scope in scopes {
            if !named.insert(scope.as_str()) {
                continue;
            }
            let start = view.resolve(scope)?;
            if resolved.insert(start.rel.clone()) {
                starts.push(start);
            }
        }
        starts
    };
    let patterns: Vec<Pattern> = globs.iter().map(|glob| Pattern::new(glob)).collect();
    // Files already kept, when two scopes may reach the same file (one scope never does).
    let mut seen: Option<HashSet<Arc<str>>> = (starts.len() > 1).then(HashSet::default);
    let mut files = Vec::new();
    let mut keep = |entry: ListedEntry, files: &mut Vec<ListedEntry>| {
        if entry.kind != EntryKind::File || seen.as_ref().is_some_and(|s| s.contains(&entry.rel)) {
            return;
        }
        match ContentKind::of_name(entry.name()) {
            ContentKind::LegacyOffice => return,
            ContentKind::Document(_) if !view.is_text(&entry) => return,
            _ => {}
        }
        if text_only && !view.is_text(&entry) {
            return;
        }
        if !patterns.is_empty() && !matches_any(&patterns, &view.path(&entry.rel).text) {
            return;
        }
        if let Some(seen) = seen.as_mut() {
            seen.insert(entry.rel.clone());
        }
        files.push(entry);
    };
    for start in starts {
        if start.kind == EntryKind::File {
            keep(ListedEntry::alone(start), &mut files);
            continue;
        }
        let mut walk = walk(view, start, None, false, budget);
        while let Some(item) = walk.next_listed() {
            match item {
                Ok((entry, _)) => keep(entry, &mut files),
                Err(error) => {
                    return Ok(Targets {
                        files,
                        error: Some(error),
                    });
                }
            }
        }
    }
    Ok(Targets { files, error: None })
}

/// [`target_files`], then each file's read charged to `budget` in walk order: the files
/// that may be read, and the failure that ends the call after them (a file or total
/// byte limit hit at the next file, else the walk's own), which the reference raises
/// only once the files before it were processed. A file over the per-file limit is
/// left out and counted (the reference fails the call on it, COMPAT).
pub(crate) fn charged_targets(
    view: &dyn RootView,
    scopes: &[String],
    globs: &[String],
    text_only: bool,
    budget: &mut Budget,
) -> Result<Charged, ToolError> {
    let Targets { files, error } = target_files(view, scopes, globs, text_only, budget)?;
    let mut kept = Vec::with_capacity(files.len());
    let mut over_limit = 0;
    for entry in files {
        // Over the per-file limit: left out, like any file that fails on its own.
        if budget.over_file_limit(entry.size) {
            over_limit += 1;
            continue;
        }
        if let Err(limit) = budget.consume_file(entry.size) {
            return Ok(Charged {
                files: kept,
                cut: Some(limit),
                over_limit,
            });
        }
        kept.push(entry);
    }
    Ok(Charged {
        files: kept,
        cut: error,
        over_limit,
    })
}

/// What [`charged_targets`] charged: the files to read, the limit or traversal failure
/// met after them (`cut`), and how many files it left out for being over the per-file
/// byte limit.
pub(crate) struct Charged {
    pub files: Vec<ListedEntry>,
    pub cut: Option<ToolError>,
    pub over_limit: usize,
}
