//! The rehydration map of one call: each wanted token → the first raw spelling the
//! root's own redaction replaced with it (spec 9.1 step 3, 9.2).
//!
//! The reference redacts every file of the root on every call to collect the whole map,
//! under an 80-file budget, so it fails on any real repository. Here only the tokens the
//! submitted text carries are looked up, and the index and the cache of redacted text
//! say where to look:
//! - an `@p_<id>` or `redctx://p_<id>` is the index's O(1) id lookup;
//! - a placeholder is searched for, in the walk order the reference uses (pre-order,
//!   each entry's path before its content), in the *redacted* paths and cached redacted
//!   content; only an entry that shows it is read raw and redacted again, recording what
//!   each placeholder replaced. The first such entry holds the first spelling, so the
//!   walk stops once every token is found (an explicit `--max-submit-files` keeps the
//!   reference's whole-walk budget instead).
//! - the search index (`crate::search_index`, grams of each file's redacted text) rules
//!   out, unread, the files whose text holds none of the wanted forms: exactly the files
//!   the content test above would pass over, so the map is the same with or without it
//!   (a file changed since the index was built, or not in it, is read). The index holds
//!   the line-preserving variant and the map reads the plain one; they differ only in the
//!   line breaks after a placeholder, never in the placeholders.
//!
//! Raw values exist only in the map this returns, for the duration of one call: never
//! in the cache, the index or a log. A placeholder a declared alias replaced before its
//! group existed (superseded) is searched for by the linked form that now stands in its
//! place.

use super::tokens::is_path_ref;
use crate::engine::Record;
use crate::fs::ContentKind;
use crate::root::ServedRoot;
use crate::search_index::plan::GramPlan;
use crate::tools::{Budget, ToolError, walk};
use crate::view::{EntryKind, RootView, Screened, ViewError};
use aho_corasick::AhoCorasick;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Where the map may come from.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// Case-folded root-relative directory left out, with everything below it (the write
    /// sub-directory: what agents wrote never rehydrates).
    pub prune: Option<String>,
    /// `--max-submit-files` when the operator gave it: the walk reads every file, as the
    /// reference does, and fails past this many.
    pub max_files: Option<u64>,
}

impl Scope {
    fn pruned(&self, rel: &str, is_dir: bool) -> bool {
        let Some(prune) = &self.prune else {
            return false;
        };
        let folded = crate::engine::placeholder::casefold(rel);
        (is_dir && folded == *prune)
            || folded
                .strip_prefix(prune.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

/// Records the first raw spelling of each wanted placeholder.
struct Collect<'a> {
    wanted: &'a HashSet<String>,
    found: HashMap<String, String>,
}

impl Record for Collect<'_> {
    fn placeholder(&mut self, placeholder: &str, raw: &str) {
        if self.wanted.contains(placeholder) && !self.found.contains_key(placeholder) {
            self.found.insert(placeholder.to_owned(), raw.to_owned());
        }
    }
}

/// The map for `wanted` (tokens of the submitted text), from `root` within `scope` and
/// `budget` (entries, per-file and total bytes; files when `scope.max_files` is set).
/// A token absent from the root is absent from the map. Errors are the budget's and the
/// view's fixed messages.
pub fn build(
    root: &ServedRoot,
    wanted: &BTreeSet<String>,
    scope: &Scope,
    budget: Budget,
) -> Result<HashMap<String, String>, ToolError> {
    let mut map = HashMap::new();
    let placeholders: HashSet<String> =
        wanted.iter().filter(|t| !is_path_ref(t)).cloned().collect();
    for token in wanted.iter().filter(|t| is_path_ref(t)) {
        if let Some(rel) = path_of(root, token, scope) {
            map.insert(token.clone(), rel);
        }
    }
    if placeholders.is_empty() && scope.max_files.is_none() {
        return Ok(map);
    }
    // What to look for in redacted text: each wanted placeholder, and for a superseded
    // one the linked placeholder redaction shows now.
    let mut forms: Vec<(String, String)> = placeholders
        .iter()
        .map(|p| (p.clone(), p.clone()))
        .collect();
    for (ordinary, linked) in root.engine().superseded_placeholders() {
        if placeholders.contains(&ordinary) {
            forms.push((linked, ordinary));
        }
    }
    let finder = AhoCorasick::new(forms.iter().map(|(form, _)| form.as_str()))
        .map_err(|_| ToolError::Failed)?;
    // A screen for the forms still pending after the first files read: the common
    // forms are found there, and would otherwise make most files candidates.
    let mut screen: Option<Option<Box<dyn crate::view::FileScreen + '_>>> = None;
    let mut reads = 0usize;
    let mut collect = Collect {
        wanted: &placeholders,
        found: HashMap::new(),
    };
    let shows_pending = |text: &str, found: &HashMap<String, String>| {
        finder
            .find_overlapping_iter(text)
            .any(|m| !found.contains_key(&forms[m.pattern().as_usize()].1))
    };
    // Two counters of one budget: the walk charges entries, the reads files and bytes.
    let mut files = budget.clone();
    files.max_entries = None;
    files.max_files = scope.max_files;
    let mut entries = budget;
    (
        entries.max_files,
        entries.max_file_bytes,
        entries.max_total_bytes,
    ) = (None, None, None);
    let start = root.resolve(".")?;
    let mut walk = walk(root, start, None, true, &mut entries);
    while let Some(item) = walk.next() {
        let (entry, _) = item?;
        let is_dir = entry.kind == EntryKind::Dir;
        if scope.pruned(&entry.rel, is_dir) {
            walk.prune();
            continue;
        }
        let pending = collect.found.len() < placeholders.len();
        if !pending && scope.max_files.is_none() {
            break;
        }
        if pending && shows_pending(&root.path(&entry.rel).text, &collect.found) {
            root.engine()
                .redact_path_recording(&entry.rel, &mut collect)
                .map_err(|_| ToolError::Failed)?;
        }
        if is_dir || !readable(root, &entry) {
            continue;
        }
        files.consume_file(entry.size)?;
        let pending = collect.found.len() < placeholders.len();
        if !pending {
            continue;
        }
        if screen.is_none() && reads >= SCREEN_AFTER_READS {
            let pending = forms
                .iter()
                .filter(|(_, wanted)| !collect.found.contains_key(wanted))
                .map(|(form, _)| form.as_str());
            screen = Some(screen_plan(pending).and_then(|plan| root.search_screen(&plan)));
        }
        // Holds no pending form (or is not text): reading it would find nothing.
        if let Some(Some(screen)) = &screen
            && !matches!(screen.screen(&entry), Screened::Read)
        {
            continue;
        }
        reads += 1;
        let shown = match root.content(&entry, false) {
            Ok(doc) => doc.text,
            // Vanished, changed or not text after all: nothing to find there.
            Err(e) if e.is_churn() || e == ViewError::NotText => continue,
            Err(e) => return Err(e.into()),
        };
        if shows_pending(&shown, &collect.found) {
            match root.record_raw(&entry.rel, &mut collect) {
                Ok(()) => {}
                Err(e) if e.is_churn() || e == ViewError::NotText => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    map.extend(collect.found);
    Ok(map)
}

/// Files read in walk order before the forms still pending get a screen each.
const SCREEN_AFTER_READS: usize = 32;

/// What a file's redacted text must hold to show one of `forms`: the grams of a form's
/// tail. The tail (hex digits) is selective enough, and fewer grams mean fewer postings
/// to read; a file holding a whole form holds its tail, so nothing that shows one is
/// ruled out.
fn screen_plan<'a>(forms: impl Iterator<Item = &'a str>) -> Option<GramPlan> {
    /// Characters of each form's end the plan asks for (10 grams).
    const TAIL: usize = 12;
    let tails: Vec<String> = forms
        .map(|form| {
            let folded = crate::engine::placeholder::casefold(form);
            let cut = folded
                .char_indices()
                .rev()
                .nth(TAIL - 1)
                .map_or(0, |(i, _)| i);
            folded[cut..].to_owned()
        })
        .collect();
    GramPlan::any_of(&tails)
}

/// The raw root-relative path an opaque reference names, if the walk would reach it.
fn path_of(root: &ServedRoot, token: &str, scope: &Scope) -> Option<String> {
    let id = token
        .strip_prefix("redctx://")
        .map_or_else(|| token.to_owned(), |bare| format!("@{bare}"));
    let entry = root.index().resolve_id(&id).ok()?;
    if scope.pruned(&entry.rel, entry.kind == EntryKind::Dir) {
        return None;
    }
    Some(entry.rel.to_string())
}

/// A file the reference reads for its map: text, not a document it cannot extract.
fn readable(root: &ServedRoot, entry: &crate::view::Entry) -> bool {
    let kind = ContentKind::of_name(entry.name());
    kind != ContentKind::LegacyOffice && kind.refusal().is_none() && root.is_text(entry)
}
