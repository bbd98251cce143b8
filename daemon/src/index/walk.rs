//! The parallel walk of a subtree, applying the root's rules while walking so excluded
//! and ignored directories (`node_modules`, `.git`, build output) are never entered.

use crate::fs::{FsRules, GitignoreRules, StatKey};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};
use std::path::Path;
use std::sync::Mutex;

/// One admitted entry below the walk's start.
#[derive(Debug)]
pub struct WalkItem {
    /// Root-relative POSIX path.
    pub rel: String,
    /// `lstat` taken before the entry's own children were read (for directories), so any
    /// later change to its membership changes the stored stat.
    pub stat: StatKey,
}

/// Counters of one walk (entries skipped for reasons the operator may want to know).
#[derive(Debug, Default, Clone, Copy)]
pub struct WalkSkips {
    /// Names that are not valid UTF-8 (the reference cannot id them either).
    pub non_utf8: u64,
    /// Entries that vanished or could not be `lstat`ed during the walk.
    pub unreadable: u64,
}

/// Whether a walk visitor admits `rel` (a child of an admitted directory).
pub fn admits(
    rules: &FsRules,
    gitignore: &GitignoreRules,
    rel: &str,
    name: &str,
    is_dir: bool,
) -> bool {
    !rules.is_child_excluded(rel, name) && !gitignore.is_ignored_entry(rel, is_dir)
}

fn rel_of<'a>(root: &Path, path: &'a Path) -> Option<&'a str> {
    path.strip_prefix(root).ok()?.to_str()
}

/// Walks everything below `start_rel` (which must be an admitted directory) with
/// `threads` workers, never following symlinks. The start itself is not returned.
pub fn walk_below(
    root: &Path,
    start_rel: &str,
    rules: &FsRules,
    gitignore: &GitignoreRules,
    threads: usize,
) -> (Vec<WalkItem>, WalkSkips) {
    let start = crate::fs::abs_path(root, start_rel);
    let root_owned = root.to_path_buf();
    let rules_f = rules.clone();
    let mut builder = WalkBuilder::new(&start);
    builder
        .standard_filters(false)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .same_file_system(false)
        .threads(threads.max(1));
    let gitignore_f = gitignore.clone();
    let non_utf8 = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let non_utf8_f = non_utf8.clone();
    builder.filter_entry(move |dent: &DirEntry| {
        if dent.depth() == 0 {
            return true;
        }
        let Some(ft) = dent.file_type() else {
            return false;
        };
        if ft.is_symlink() {
            return false;
        }
        let (Some(rel), Some(name)) = (rel_of(&root_owned, dent.path()), dent.file_name().to_str())
        else {
            non_utf8_f.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return false;
        };
        admits(&rules_f, &gitignore_f, rel, name, ft.is_dir())
    });
    let collected = Mutex::new((Vec::new(), WalkSkips::default()));
    let mut visitors = Collector {
        root,
        sink: &collected,
    };
    builder.build_parallel().visit(&mut visitors);
    let (items, mut skips) = collected.into_inner().unwrap_or_else(|e| e.into_inner());
    skips.non_utf8 += non_utf8.load(std::sync::atomic::Ordering::Relaxed);
    (items, skips)
}

struct Collector<'a> {
    root: &'a Path,
    sink: &'a Mutex<(Vec<WalkItem>, WalkSkips)>,
}

impl<'s> ParallelVisitorBuilder<'s> for Collector<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Worker {
            root: self.root,
            sink: self.sink,
            items: Vec::new(),
            skips: WalkSkips::default(),
        })
    }
}

struct Worker<'a> {
    root: &'a Path,
    sink: &'a Mutex<(Vec<WalkItem>, WalkSkips)>,
    items: Vec<WalkItem>,
    skips: WalkSkips,
}

impl ParallelVisitor for Worker<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let Ok(dent) = entry else {
            self.skips.unreadable += 1;
            return WalkState::Continue;
        };
        if dent.depth() == 0 {
            return WalkState::Continue;
        }
        let Some(rel) = rel_of(self.root, dent.path()) else {
            self.skips.non_utf8 += 1;
            return WalkState::Continue;
        };
        match std::fs::symlink_metadata(dent.path()) {
            Ok(meta) if !meta.file_type().is_symlink() => {
                self.items.push(WalkItem {
                    rel: rel.to_owned(),
                    stat: StatKey::of(&meta),
                });
                WalkState::Continue
            }
            Ok(_) => WalkState::Skip,
            Err(_) => {
                self.skips.unreadable += 1;
                WalkState::Skip
            }
        }
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        if let Ok(mut sink) = self.sink.lock() {
            sink.0.append(&mut self.items);
            sink.1.non_utf8 += self.skips.non_utf8;
            sink.1.unreadable += self.skips.unreadable;
        }
    }
}
