//! The parallel walk of a subtree, applying the root's rules while walking so excluded
//! and ignored directories (`node_modules`, `.git`, build output) are never entered.
//!
//! One task per directory on a small rayon pool: the directory is listed once
//! (`getdents`), each admitted child is `lstat`ed relative to the open directory (no
//! path resolution from the root per file, which is what dominates a stat-only walk of a
//! deep monorepo), its opaque id is computed on the worker, and each subdirectory becomes
//! a new task. Symlinks are never followed (their `d_type` says so; they are skipped).

use crate::fs::{FsRules, GitignoreRules, StatKey};
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
    /// The index's id key of `rel` (computed on the walk's workers).
    pub id: u64,
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

/// What a directory child (not a symlink, per its `d_type`) is to the index.
pub enum Child {
    /// Not held: excluded, ignored, protected, a symlink after all, or another name of
    /// a protected file.
    Skipped,
    /// Vanished or could not be `lstat`ed.
    Unreadable,
    /// Held, with its `lstat`.
    Admitted(std::fs::Metadata),
}

/// Classifies one child `rel` (named `name`) of an admitted directory, for the walk and
/// for a directory re-read alike. The `lstat` (relative to the open directory) is paid
/// for admitted children and for protected names, whose identity is remembered so that
/// their hard links are refused under any name (`fs::protected`).
pub fn classify_child(
    rules: &FsRules,
    gitignore: &GitignoreRules,
    rel: &str,
    name: &str,
    dent: &std::fs::DirEntry,
    ft: std::fs::FileType,
) -> Child {
    if !admits(rules, gitignore, rel, name, ft.is_dir()) {
        if ft.is_file()
            && rules.is_protected(rel)
            && let Ok(meta) = dent.metadata()
        {
            crate::fs::protected::remember(&meta);
        }
        return Child::Skipped;
    }
    match dent.metadata() {
        Ok(meta) if meta.file_type().is_symlink() => Child::Skipped,
        Ok(meta) if crate::fs::protected::is_link_to_protected(&meta) => Child::Skipped,
        Ok(meta) => Child::Admitted(meta),
        Err(_) => Child::Unreadable,
    }
}

/// What every task of one walk shares.
struct Walk<'a> {
    root: &'a Path,
    rules: &'a FsRules,
    gitignore: &'a GitignoreRules,
    id_of: &'a (dyn Fn(&str) -> u64 + Sync),
    sink: Mutex<(Vec<WalkItem>, WalkSkips)>,
}

/// Walks everything below `start_rel` (which must be an admitted directory) with
/// `threads` workers, never following symlinks. The start itself is not returned.
/// `id_of` gives the id key of a root-relative path.
pub fn walk_below(
    root: &Path,
    start_rel: &str,
    rules: &FsRules,
    gitignore: &GitignoreRules,
    threads: usize,
    id_of: &(dyn Fn(&str) -> u64 + Sync),
) -> (Vec<WalkItem>, WalkSkips) {
    let walk = Walk {
        root,
        rules,
        gitignore,
        id_of,
        sink: Mutex::new((Vec::new(), WalkSkips::default())),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("redctx-walk-{i}"))
        .build();
    match pool {
        Ok(pool) => pool.scope(|s| visit(s, &walk, start_rel.to_owned())),
        // No threads to be had: walk on this one.
        Err(_) => rayon::scope(|s| visit(s, &walk, start_rel.to_owned())),
    }
    walk.sink.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Lists one directory, records its admitted children and queues its subdirectories.
fn visit<'s>(scope: &rayon::Scope<'s>, walk: &'s Walk<'s>, dir_rel: String) {
    let mut items = Vec::new();
    let mut skips = WalkSkips::default();
    match std::fs::read_dir(crate::fs::abs_path(walk.root, &dir_rel)) {
        Err(_) => skips.unreadable += 1,
        Ok(read) => {
            for dent in read {
                let Ok(dent) = dent else {
                    skips.unreadable += 1;
                    continue;
                };
                let Ok(ft) = dent.file_type() else {
                    skips.unreadable += 1;
                    continue;
                };
                if ft.is_symlink() {
                    continue;
                }
                let name = dent.file_name();
                let Some(name) = name.to_str() else {
                    skips.non_utf8 += 1;
                    continue;
                };
                let rel = if dir_rel == "." {
                    name.to_owned()
                } else {
                    format!("{dir_rel}/{name}")
                };
                match classify_child(walk.rules, walk.gitignore, &rel, name, &dent, ft) {
                    Child::Admitted(meta) => {
                        let stat = StatKey::of(&meta);
                        if stat.is_dir() {
                            let child = rel.clone();
                            scope.spawn(move |s| visit(s, walk, child));
                        }
                        let id = (walk.id_of)(&rel);
                        items.push(WalkItem { rel, stat, id });
                    }
                    Child::Skipped => {}
                    Child::Unreadable => skips.unreadable += 1,
                }
            }
        }
    }
    if let Ok(mut sink) = walk.sink.lock() {
        sink.0.append(&mut items);
        sink.1.non_utf8 += skips.non_utf8;
        sink.1.unreadable += skips.unreadable;
    }
}
