//! The per-root index: which entries a root serves, their metadata, the reference's
//! listing order, and opaque-id resolution, kept fresh without trusting it blindly.
//!
//! Ground truth is the disk. The tree is built by one parallel walk (rules applied while
//! walking, symlinks never followed), then kept current three ways: the watcher calls
//! [`Index::upsert`], [`Index::remove`] and [`Index::rescan_dir`]; [`Index::resolve`]
//! validates every path on disk and inserts entries created a moment ago; and
//! [`Index::children`] re-reads a directory whose `lstat` changed (or was too recent to be
//! trusted, see [`IndexOptions::racy_window_ns`]) and re-`lstat`s its files.

pub mod tree;
pub mod walk;

use crate::engine::Engine;
use crate::fs::{self, FsRules, GitignoreRules, PathInput, StatKey};
use crate::view::{Entry, EntryKind, PathId, ViewError};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};
use tree::{NodeId, ROOT, Tree, flags, id_key};
pub use walk::WalkSkips;

/// Which listing of a directory [`Index::listing_with`] hands out.
#[derive(Clone, Copy)]
enum Listed<'a> {
    /// Whatever the tree holds.
    Any,
    /// Only one read from the disk at least once.
    IfScanned,
    /// Only one read while the directory had this `lstat`, settled since.
    IfFresh(&'a StatKey),
}

/// Tuning of an index.
#[derive(Clone, Debug)]
pub struct IndexOptions {
    /// Honour `.gitignore` files inside the root (ours; the reference does not).
    pub gitignore: bool,
    /// Walk threads.
    pub threads: usize,
    /// Timestamps this close to "now" (nanoseconds) are not trusted to reveal the next
    /// change: filesystems stamp times with a coarse clock (a few ms on Linux, 1–2 s on
    /// HFS+/FAT/ext3), so a second change within the same tick keeps every stat field
    /// equal. Entries observed while still this fresh are re-checked on the next use.
    pub racy_window_ns: i64,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            gitignore: true,
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .min(8),
            racy_window_ns: 2_000_000_000,
        }
    }
}

/// Wall-clock now in nanoseconds since the epoch (the clock file timestamps use).
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Whether a stat observed at `observed_ns` is old enough that any later change must
/// alter it.
pub fn is_settled(stat: &StatKey, observed_ns: i64, racy_window_ns: i64) -> bool {
    observed_ns.saturating_sub(stat.mtime_ns.max(stat.ctime_ns)) >= racy_window_ns
}

/// One child of a listed directory, borrowed from the index while it is listed.
#[derive(Clone, Copy, Debug)]
pub struct Member<'a> {
    /// Root-relative POSIX path.
    pub rel: &'a str,
    /// Last path component.
    pub name: &'a str,
    /// The stat the index holds (a file's may predate an in-place rewrite).
    pub stat: &'a StatKey,
    /// Opaque id of `rel`.
    pub id: PathId,
}

/// The index of one root under one policy.
pub struct Index {
    root: PathBuf,
    engine: Arc<Engine>,
    rules: FsRules,
    gitignore: GitignoreRules,
    opts: IndexOptions,
    tree: RwLock<Tree>,
    skips: Mutex<WalkSkips>,
    /// Memoised [`Index::admitted`] verdicts of directories, with the `.gitignore`
    /// generation they were computed at: every file a whole-root call serves is checked,
    /// and its ancestors' verdicts are shared by all files below them.
    dir_verdicts: RwLock<HashMap<Box<str>, (u64, bool)>>,
    /// Bumped under the write lock by every change to the tree.
    generation: std::sync::atomic::AtomicU64,
    /// [`Index::indexed_children`] answers of the current generation: an unchanged tree
    /// lists the next whole-root walk from here.
    listings: Mutex<Listings>,
}

/// Every indexed file with its stat, as one read of the tree found them
/// ([`Index::listed_files`]).
pub struct ListedFiles {
    generation: u64,
    pub files: Vec<(String, StatKey)>,
    nodes: Vec<NodeId>,
}

/// Directory listings of one tree generation.
#[derive(Default)]
struct Listings {
    generation: u64,
    by_dir: HashMap<Box<str>, Arc<[Entry]>>,
}

/// The directory verdict memo is dropped wholesale past this size.
const MAX_DIR_VERDICTS: usize = 1 << 18;

fn kind_of(stat: &StatKey) -> EntryKind {
    if stat.is_dir() {
        EntryKind::Dir
    } else {
        EntryKind::File
    }
}

/// The entry of `rel` with the `lstat` just taken of it.
fn entry(rel: &str, stat: &StatKey) -> Entry {
    Entry {
        rel: Arc::from(rel),
        kind: kind_of(stat),
        size: stat.size,
        stat: Some(*stat),
        text: None,
    }
}

/// The entry of `rel` from the stat the index holds (no `lstat` now).
fn indexed_entry(rel: &str, stat: &StatKey) -> Entry {
    Entry {
        stat: None,
        ..entry(rel, stat)
    }
}

/// [`Index::listing_with`] on a tree already locked.
fn listing_in<T>(
    tree: &Tree,
    rel: &str,
    listed: Listed<'_>,
    mut row: impl FnMut(&str, &tree::Node) -> T,
) -> Option<Vec<T>> {
    let n = tree.node(tree.find(rel)?);
    if !n.is_dir() {
        return None;
    }
    let listed_ok = match listed {
        Listed::Any => true,
        Listed::IfScanned => n.flags & flags::SCANNED != 0,
        Listed::IfFresh(stat) => {
            let trusted = flags::SCANNED | flags::SETTLED;
            n.flags & trusted == trusted && n.stat == *stat
        }
    };
    if !listed_ok {
        return None;
    }
    let mut child_rel = String::new();
    Some(
        n.children
            .iter()
            .map(|&c| {
                let child = tree.node(c);
                child_rel.clear();
                if rel != "." {
                    child_rel.push_str(rel);
                    child_rel.push('/');
                }
                child_rel.push_str(&child.name);
                row(&child_rel, child)
            })
            .collect(),
    )
}

/// Records a text decision on a node still at `stat`; whether its flags changed.
fn set_text_bits(n: &mut tree::Node, stat: &StatKey, is_text: bool) -> bool {
    if n.stat != *stat || n.is_dir() {
        return false;
    }
    let before = n.flags;
    n.flags |= flags::TEXT_KNOWN;
    if is_text {
        n.flags |= flags::TEXT;
    } else {
        n.flags &= !flags::TEXT;
    }
    n.flags != before
}

fn parent_rel(rel: &str) -> &str {
    match rel.rfind('/') {
        Some(i) => &rel[..i],
        None => ".",
    }
}

fn join_rel(base: &str, name: &str) -> String {
    if base == "." {
        name.to_owned()
    } else {
        format!("{base}/{name}")
    }
}

impl Index {
    /// An index of `root` (canonical, absolute) holding only the root; call
    /// [`Index::scan`] to walk it.
    pub fn new(
        root: &Path,
        engine: Arc<Engine>,
        rules: FsRules,
        opts: IndexOptions,
    ) -> Result<Index, ViewError> {
        let meta = std::fs::symlink_metadata(root).map_err(|_| ViewError::Missing)?;
        let stat = StatKey::of(&meta);
        if !stat.is_dir() {
            return Err(ViewError::NotADirectory);
        }
        let root_id = id_key(&engine.path_id(".")).ok_or(ViewError::Internal)?;
        Ok(Index {
            root: root.to_path_buf(),
            gitignore: GitignoreRules::new(root, opts.gitignore),
            engine,
            rules,
            opts,
            tree: RwLock::new(Tree::new(stat, root_id)),
            skips: Mutex::new(WalkSkips::default()),
            dir_verdicts: RwLock::new(HashMap::new()),
            generation: std::sync::atomic::AtomicU64::new(0),
            listings: Mutex::new(Listings::default()),
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The exclusion rules in force.
    pub fn rules(&self) -> &FsRules {
        &self.rules
    }

    /// The options in force.
    pub fn options(&self) -> &IndexOptions {
        &self.opts
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tree> {
        self.tree.read().unwrap_or_else(|e| e.into_inner())
    }

    fn listings(&self) -> std::sync::MutexGuard<'_, Listings> {
        self.listings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tree for a change; the generation moves while the lock is held, so a reader
    /// that sees a generation under the read lock sees the tree of that generation.
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tree> {
        let tree = self.tree.write().unwrap_or_else(|e| e.into_inner());
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tree
    }

    fn id_of(&self, rel: &str) -> u64 {
        id_key(&self.engine.path_id(rel)).unwrap_or(u64::MAX)
    }

    /// Whether `rel` may be served: neither it nor an ancestor is excluded, protected or
    /// git-ignored. (Stricter than the reference, which admits a file inside an excluded
    /// directory when it is named directly; its walk never shows such files.)
    pub fn admitted(&self, rel: &str, is_dir: bool) -> bool {
        if self.rules.is_excluded(rel) {
            return false;
        }
        if let Some(end) = rel.rfind('/')
            && !self.dir_admitted(&rel[..end])
        {
            return false;
        }
        !self.gitignore.is_ignored_entry(rel, is_dir)
    }

    /// [`Index::admitted`] of a directory, memoised below the root: a listing checks the
    /// directory it lists, and a tree lists a thousand of them per call.
    fn dir_is_admitted(&self, rel: &str) -> bool {
        if rel == "." {
            self.admitted(rel, true)
        } else {
            self.dir_admitted(rel)
        }
    }

    /// [`Index::admitted`] of an ancestor directory (never `.`), memoised: the rules
    /// are fixed for the index's life and `.gitignore` changes bump the generation.
    fn dir_admitted(&self, dir: &str) -> bool {
        let generation = self.gitignore.generation();
        if let Some(&(seen, verdict)) = self
            .dir_verdicts
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(dir)
            && seen == generation
        {
            return verdict;
        }
        let verdict = !self.rules.is_excluded(dir)
            && dir
                .rfind('/')
                .is_none_or(|end| self.dir_admitted(&dir[..end]))
            && !self.gitignore.is_ignored_entry(dir, true);
        let mut memo = self.dir_verdicts.write().unwrap_or_else(|e| e.into_inner());
        if memo.len() >= MAX_DIR_VERDICTS {
            memo.clear();
        }
        memo.insert(dir.into(), (generation, verdict));
        verdict
    }

    /// Walks the whole root and replaces the tree. Metadata calls keep answering from the
    /// previous tree while the walk runs.
    pub fn scan(&self) -> WalkSkips {
        let Ok(meta) = std::fs::symlink_metadata(&self.root) else {
            return WalkSkips::default();
        };
        let root_stat = StatKey::of(&meta);
        let started = now_ns();
        let mut fresh = Tree::new(root_stat, self.id_of("."));
        let skips = if self.rules.is_excluded(".") {
            WalkSkips::default()
        } else {
            let (items, skips) = walk::walk_below(
                &self.root,
                ".",
                &self.rules,
                &self.gitignore,
                self.opts.threads,
                &|rel| self.id_of(rel),
            );
            self.insert_items(&mut fresh, ROOT, ".", items, started);
            skips
        };
        mark_scanned(fresh.node_mut(ROOT), started, self.opts.racy_window_ns);
        fresh.shrink_to_fit();
        *self.write() = fresh;
        // A walk of a large root allocates several times the tree's final size.
        crate::budget::release_free_memory();
        *self.skips.lock().unwrap_or_else(|e| e.into_inner()) = skips;
        skips
    }

    /// Entries the last full walk could not index (non-UTF-8 names, vanished entries).
    pub fn skips(&self) -> WalkSkips {
        *self.skips.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Inserts walked items below `start` (already in `tree`, with no children).
    fn insert_items(
        &self,
        tree: &mut Tree,
        start: NodeId,
        start_rel: &str,
        mut items: Vec<walk::WalkItem>,
        started: i64,
    ) {
        items.sort_by_cached_key(|item| item.rel.bytes().filter(|&b| b == b'/').count());
        let mut dirs: HashMap<String, NodeId> = HashMap::new();
        dirs.insert(start_rel.to_owned(), start);
        let mut touched = vec![start];
        for item in items {
            let (parent, name) = match item.rel.rfind('/') {
                Some(i) => (&item.rel[..i], &item.rel[i + 1..]),
                None => (".", item.rel.as_str()),
            };
            let Some(&parent_id) = dirs.get(parent) else {
                continue;
            };
            let node = tree.add_child(parent_id, name, item.stat, item.id, false);
            if item.stat.is_dir() {
                mark_scanned(tree.node_mut(node), started, self.opts.racy_window_ns);
                dirs.insert(item.rel, node);
                touched.push(node);
            }
        }
        for dir in touched {
            tree.sort_children(dir);
        }
    }

    /// Number of indexed (files, directories), the root excluded.
    pub fn counts(&self) -> (u64, u64) {
        let tree = self.read();
        (tree.files, tree.dirs)
    }

    /// The indexed entry of `rel`, without touching the disk.
    pub fn entry(&self, rel: &str) -> Option<Entry> {
        let tree = self.read();
        let node = tree.find(rel)?;
        Some(indexed_entry(rel, &tree.node(node).stat))
    }

    /// The indexed stat of `rel`, without touching the disk.
    pub fn indexed_stat(&self, rel: &str) -> Option<StatKey> {
        let tree = self.read();
        tree.find(rel).map(|n| tree.node(n).stat)
    }

    /// Every indexed non-directory entry with its indexed stat (for background indexing).
    pub fn files(&self) -> Vec<(String, StatKey)> {
        let mut out = Vec::with_capacity(self.file_count());
        self.each_file(|rel, stat, _| out.push((rel, stat)));
        out
    }

    /// [`Index::files`], with what [`Index::set_listed_text_flags`] needs to find them
    /// again without a lookup.
    pub fn listed_files(&self) -> ListedFiles {
        let count = self.file_count();
        let (mut files, mut nodes) = (Vec::with_capacity(count), Vec::with_capacity(count));
        let generation = self.each_file(|rel, stat, node| {
            files.push((rel, stat));
            nodes.push(node);
        });
        ListedFiles {
            generation,
            files,
            nodes,
        }
    }

    /// How many files the tree holds now (a capacity hint: it may change before a walk).
    fn file_count(&self) -> usize {
        self.read().files as usize
    }

    /// Calls `each` for every indexed non-directory entry under one read lock; returns
    /// the generation of the tree it saw.
    fn each_file(&self, mut each: impl FnMut(String, StatKey, NodeId)) -> u64 {
        let tree = self.read();
        let generation = self.generation.load(std::sync::atomic::Ordering::SeqCst);
        let mut stack = vec![(ROOT, ".".to_owned())];
        while let Some((dir, rel)) = stack.pop() {
            for &child in &tree.node(dir).children {
                let node = tree.node(child);
                let child_rel = join_rel(&rel, &node.name);
                if node.is_dir() {
                    stack.push((child, child_rel));
                } else {
                    each(child_rel, node.stat, child);
                }
            }
        }
        generation
    }

    /// Every indexed directory, root (`.`) first: the set a watcher should watch
    /// (excluded and ignored trees are not in it).
    pub fn dirs(&self) -> Vec<String> {
        self.dirs_with(|_| ())
            .into_iter()
            .map(|(rel, ())| rel)
            .collect()
    }

    /// Every indexed directory (root first, then depth-first) with `of(node)`, read
    /// under one lock.
    fn dirs_with<T>(&self, of: impl Fn(&tree::Node) -> T) -> Vec<(String, T)> {
        let tree = self.read();
        let mut out = vec![(".".to_owned(), of(tree.node(ROOT)))];
        let mut stack = vec![(ROOT, ".".to_owned())];
        while let Some((dir, rel)) = stack.pop() {
            for &child in &tree.node(dir).children {
                let node = tree.node(child);
                if node.is_dir() {
                    let child_rel = join_rel(&rel, &node.name);
                    out.push((child_rel.clone(), of(node)));
                    stack.push((child, child_rel));
                }
            }
        }
        out
    }

    /// Indexed directories (pre-order, root first) whose `lstat` now differs from the one
    /// their listing was read at, or whose listing was read while that stat was too fresh
    /// to trust: what a watcher must re-walk once its watches are in place. One `lstat`
    /// per directory, no listing.
    pub fn stale_dirs(&self) -> Vec<String> {
        let dirs = self.dirs_with(|n| {
            let settled =
                n.flags & (flags::SCANNED | flags::SETTLED) == flags::SCANNED | flags::SETTLED;
            (n.stat, settled)
        });
        dirs.into_iter()
            .filter(|(rel, (stat, trusted))| {
                !trusted
                    || std::fs::symlink_metadata(fs::abs_path(&self.root, rel))
                        .map(|m| StatKey::of(&m))
                        .ok()
                        != Some(*stat)
            })
            .map(|(rel, _)| rel)
            .collect()
    }

    /// Resolves tool input (opaque id or path) with the containment checks of spec 6.1
    /// and the exclusions of 6.2. A path that exists and is admitted but is not indexed
    /// yet (created a moment ago) is inserted and served.
    pub fn resolve(&self, input: &str) -> Result<Entry, ViewError> {
        match fs::parse_input(input, &self.root)? {
            PathInput::Id(id) => self.resolve_id(&id),
            PathInput::Rel(rel) => self.resolve_rel(&rel),
        }
    }

    /// Resolves an `@p_<12hex>` id, re-validating its path on disk each time (a symlink
    /// swapped in after listing is refused).
    pub fn resolve_id(&self, id: &str) -> Result<Entry, ViewError> {
        let unknown = || ViewError::UnknownId(id.to_owned());
        let key = id_key(id).ok_or_else(unknown)?;
        let rel = {
            let tree = self.read();
            match tree.by_id(key) {
                Err(()) => return Err(ViewError::IdCollision),
                Ok(None) => return Err(unknown()),
                Ok(Some(node)) => tree.rel(node),
            }
        };
        match self.resolve_rel(&rel) {
            Ok(found) => Ok(found),
            Err(err) => {
                // As the reference: refresh, and report the id unknown once it is gone.
                self.upsert(&rel);
                match self.read().by_id(key) {
                    Ok(Some(_)) => Err(err),
                    _ => Err(unknown()),
                }
            }
        }
    }

    /// Validates a root-relative path on disk and returns its entry, indexing it if new.
    pub fn resolve_rel(&self, rel: &str) -> Result<Entry, ViewError> {
        let meta = fs::validate_components(&self.root, rel)?;
        let stat = StatKey::of(&meta);
        if !self.admitted(rel, stat.is_dir()) {
            return Err(ViewError::Excluded);
        }
        self.note(rel, stat);
        Ok(entry(rel, &stat))
    }

    /// Records a freshly observed stat of an admitted path: inserts it (and missing
    /// ancestors) or updates a file's metadata. Directory stats are left to
    /// [`Index::children`], which must re-read a directory before trusting a new stat.
    pub fn note(&self, rel: &str, stat: StatKey) {
        {
            let tree = self.read();
            if let Some(node) = tree.find(rel) {
                let n = tree.node(node);
                if n.is_dir() == stat.is_dir() && (n.is_dir() || n.stat == stat) {
                    return;
                }
            }
        }
        let mut tree = self.write();
        self.note_locked(&mut tree, rel, stat);
    }

    fn note_locked(&self, tree: &mut Tree, rel: &str, stat: StatKey) -> Option<NodeId> {
        if rel == "." {
            return Some(ROOT);
        }
        let mut at = ROOT;
        let mut prefix_end = 0;
        let parts: Vec<&str> = rel.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            prefix_end += if i == 0 { part.len() } else { part.len() + 1 };
            let prefix = &rel[..prefix_end];
            let is_last = i == parts.len() - 1;
            let part_stat = if is_last {
                stat
            } else {
                match tree.child(at, part) {
                    Some(c) if tree.node(c).is_dir() => {
                        at = c;
                        continue;
                    }
                    _ => StatKey::of(
                        &std::fs::symlink_metadata(fs::abs_path(&self.root, prefix)).ok()?,
                    ),
                }
            };
            if !tree.node(at).is_dir() {
                return None;
            }
            match tree.child(at, part) {
                Some(c) if tree.node(c).is_dir() == part_stat.is_dir() => {
                    if !part_stat.is_dir() && tree.node(c).stat != part_stat {
                        let node = tree.node_mut(c);
                        node.stat = part_stat;
                        node.flags &= !(flags::TEXT_KNOWN | flags::TEXT);
                    }
                    at = c;
                }
                existing => {
                    if let Some(c) = existing {
                        tree.remove(c, &|r| self.id_of(r));
                    }
                    at = tree.add_child(at, part, part_stat, self.id_of(prefix), true);
                }
            }
        }
        Some(at)
    }

    /// Watcher entry point: `rel` was created, modified or replaced. Re-validates it on
    /// disk and inserts, updates or removes it.
    pub fn upsert(&self, rel: &str) {
        if rel != "." && rel.rsplit('/').next() == Some(".gitignore") {
            self.gitignore_changed(parent_rel(rel));
        }
        match fs::validate_components(&self.root, rel) {
            Ok(meta) => {
                let stat = StatKey::of(&meta);
                if self.rules.is_protected(rel) {
                    fs::protected::remember(&meta);
                }
                if self.admitted(rel, stat.is_dir()) && !fs::protected::is_link_to_protected(&meta)
                {
                    self.note(rel, stat);
                } else {
                    self.remove(rel);
                }
            }
            Err(ViewError::Missing) | Err(ViewError::Unsafe) => self.remove(rel),
            Err(_) => {}
        }
    }

    /// Watcher entry point: `rel` was deleted or renamed away. The root is never removed
    /// (its children are).
    pub fn remove(&self, rel: &str) {
        if rel != "." && rel.rsplit('/').next() == Some(".gitignore") {
            self.gitignore_changed(parent_rel(rel));
        }
        let mut tree = self.write();
        if let Some(node) = tree.find(rel) {
            tree.remove(node, &|r| self.id_of(r));
        }
    }

    fn gitignore_changed(&self, dir_rel: &str) {
        if !self.gitignore.enabled() {
            return;
        }
        self.gitignore.invalidate(dir_rel);
        self.rescan_dir(dir_rel);
    }

    /// Watcher entry point: re-walk a directory's whole subtree (a new directory, a
    /// changed `.gitignore`, an event queue overflow with `"."`).
    pub fn rescan_dir(&self, rel: &str) {
        if rel == "." {
            self.gitignore.invalidate_all();
            self.scan();
            return;
        }
        let meta = match fs::validate_components(&self.root, rel) {
            Ok(meta) => meta,
            Err(ViewError::Missing) | Err(ViewError::Unsafe) => return self.remove(rel),
            Err(_) => return,
        };
        let stat = StatKey::of(&meta);
        if !self.admitted(rel, stat.is_dir()) {
            return self.remove(rel);
        }
        if !stat.is_dir() {
            return self.note(rel, stat);
        }
        let started = now_ns();
        let (items, _) = walk::walk_below(
            &self.root,
            rel,
            &self.rules,
            &self.gitignore,
            self.opts.threads,
            &|rel| self.id_of(rel),
        );
        let mut tree = self.write();
        let Some(node) = self.note_locked(&mut tree, rel, stat) else {
            return;
        };
        tree.clear_children(node, &|r| self.id_of(r));
        tree.node_mut(node).stat = stat;
        mark_scanned(tree.node_mut(node), started, self.opts.racy_window_ns);
        self.insert_items(&mut tree, node, rel, items, started);
    }

    /// The current stat of directory `rel` once it may be listed: a path without symlinks
    /// to a directory the index admits.
    fn listable_dir(&self, rel: &str) -> Result<StatKey, ViewError> {
        let meta = fs::validate_components(&self.root, rel)?;
        let dir_stat = StatKey::of(&meta);
        if !dir_stat.is_dir() {
            return Err(ViewError::NotADirectory);
        }
        if !self.dir_is_admitted(rel) {
            return Err(ViewError::Excluded);
        }
        Ok(dir_stat)
    }

    /// Children of an admitted directory in reference order, fresh against the disk: the
    /// directory is re-read when its `lstat` changed or was too recent to trust, and file
    /// children are re-`lstat`ed so sizes are current.
    pub fn children(&self, rel: &str) -> Result<Vec<Entry>, ViewError> {
        let dir_stat = self.listable_dir(rel)?;
        let (listed, reread) = match self.listing(rel, Listed::IfFresh(&dir_stat)) {
            Some(listed) => (listed, false),
            None => {
                self.read_dir_into_index(rel, dir_stat);
                (
                    self.listing(rel, Listed::Any).ok_or(ViewError::Missing)?,
                    true,
                )
            }
        };
        if reread {
            return Ok(listed.iter().map(|(r, s)| entry(r, s)).collect());
        }
        let mut out = Vec::with_capacity(listed.len());
        // Children are stat'ed by name in the directory just validated: one lookup each
        // instead of a walk of the whole path (most of a whole-root search's time).
        let opened = fs::statat::OpenDir::open(&fs::abs_path(&self.root, rel));
        let lstat = |child_rel: &str| match &opened {
            Some(dir) => dir.lstat(child_rel.rsplit('/').next().unwrap_or(child_rel)),
            None => std::fs::symlink_metadata(fs::abs_path(&self.root, child_rel))
                .ok()
                .map(|m| fs::statat::ChildStat {
                    key: StatKey::of(&m),
                    nlink: m.nlink(),
                }),
        };
        for (child_rel, stat) in listed {
            if stat.is_dir() {
                out.push(indexed_entry(&child_rel, &stat));
                continue;
            }
            match lstat(&child_rel) {
                Some(child)
                    if !child.key.is_symlink()
                        && !child.key.is_dir()
                        && !fs::protected::is_link_to_protected_stat(&child.key, child.nlink) =>
                {
                    let now = child.key;
                    if now != stat {
                        self.note(&child_rel, now);
                    }
                    out.push(entry(&child_rel, &now));
                }
                _ => {
                    // A child vanished or changed kind while the directory's stat did not
                    // move (coarse timestamps): re-read the directory.
                    self.read_dir_into_index(rel, dir_stat);
                    let listed = self.listing(rel, Listed::Any).ok_or(ViewError::Missing)?;
                    return Ok(listed.iter().map(|(r, s)| entry(r, s)).collect());
                }
            }
        }
        Ok(out)
    }

    /// [`Index::children`] from the tree alone, each file with the stat indexed for it
    /// (its `stat` set as if just taken): for walks whose watcher vouched for the tree
    /// (`crate::watch::sync`). `None` when `rel` is not an indexed directory whose
    /// listing was read.
    ///
    /// Listings are kept until the tree next changes: a whole-root search on a quiet tree
    /// then costs no tree lookup per directory and no allocation per path.
    pub fn indexed_children(&self, rel: &str) -> Option<Arc<[Entry]>> {
        use std::sync::atomic::Ordering::SeqCst;
        {
            let listings = self.listings();
            if listings.generation == self.generation.load(SeqCst)
                && let Some(listed) = listings.by_dir.get(rel)
            {
                return Some(listed.clone());
            }
        }
        let (generation, listed) = {
            let tree = self.read();
            let generation = self.generation.load(SeqCst);
            let rows = listing_in(&tree, rel, Listed::IfScanned, |child_rel, node| {
                let known = node.flags & flags::TEXT_KNOWN != 0;
                (!node.stat.is_symlink()).then(|| Entry {
                    text: known.then_some(node.flags & flags::TEXT != 0),
                    ..entry(child_rel, &node.stat)
                })
            })?;
            let listed: Arc<[Entry]> = rows.into_iter().flatten().collect();
            (generation, listed)
        };
        let mut listings = self.listings();
        if generation > listings.generation {
            listings.by_dir.clear();
            listings.generation = generation;
        }
        if generation == listings.generation {
            listings.by_dir.insert(rel.into(), listed.clone());
        }
        Some(listed)
    }

    /// Children of an admitted directory in reference order with their ids, as fresh in
    /// membership and kinds as [`Index::children`] but with the sizes indexed: what a
    /// tree prints. The directory itself is validated on disk (no symlink component) and
    /// re-read when its `lstat` changed or was too recent to trust, exactly as for
    /// `children`; its files are not re-`lstat`ed. That is still a fresh answer, because
    /// every change to the set of names in a directory or to their kinds (create,
    /// unlink, mkdir, rmdir, rename in, out or over, a symlink put in a file's place)
    /// goes through the directory entry and so moves the directory's mtime and ctime,
    /// and a listing is trusted only while the directory's stat is the settled one it
    /// was read at (a file's type cannot change in place). Symlinks never enter a
    /// listing (the walk and the re-read skip them), so none is shown or expanded.
    ///
    /// `row` maps each child, under the index's read lock.
    pub fn members<T>(
        &self,
        rel: &str,
        mut row: impl FnMut(Member<'_>) -> T,
    ) -> Result<Vec<T>, ViewError> {
        let dir_stat = self.listable_dir(rel)?;
        let mut member = |child_rel: &str, node: &tree::Node| {
            row(Member {
                rel: child_rel,
                name: &node.name,
                stat: &node.stat,
                id: PathId(node.id),
            })
        };
        if let Some(rows) = self.listing_with(rel, Listed::IfFresh(&dir_stat), &mut member) {
            return Ok(rows);
        }
        self.read_dir_into_index(rel, dir_stat);
        self.listing_with(rel, Listed::Any, &mut member)
            .ok_or(ViewError::Missing)
    }

    /// The indexed children of `rel` as (rel, stat), if the tree holds a listing `listed`.
    fn listing(&self, rel: &str, listed: Listed<'_>) -> Option<Vec<(String, StatKey)>> {
        self.listing_with(rel, listed, |child_rel, node| {
            (child_rel.to_owned(), node.stat)
        })
    }

    /// [`Index::listing`] with each child mapped by `row(child_rel, node)` under the
    /// same read lock.
    fn listing_with<T>(
        &self,
        rel: &str,
        listed: Listed<'_>,
        row: impl FnMut(&str, &tree::Node) -> T,
    ) -> Option<Vec<T>> {
        listing_in(&self.read(), rel, listed, row)
    }

    /// Re-reads one directory's entries (not deeper) into the tree.
    fn read_dir_into_index(&self, rel: &str, dir_stat: StatKey) {
        let started = now_ns();
        let dir_path = fs::abs_path(&self.root, rel);
        let mut found: Vec<(String, StatKey)> = Vec::new();
        if let Ok(read) = std::fs::read_dir(&dir_path) {
            for dent in read.flatten() {
                let Ok(name) = dent.file_name().into_string() else {
                    continue;
                };
                let Ok(ft) = dent.file_type() else { continue };
                if ft.is_symlink() {
                    continue;
                }
                let child_rel = join_rel(rel, &name);
                if let walk::Child::Admitted(m) =
                    walk::classify_child(&self.rules, &self.gitignore, &child_rel, &name, &dent, ft)
                {
                    found.push((name, StatKey::of(&m)));
                }
            }
        }
        let mut tree = self.write();
        let Some(node) = self.note_locked(&mut tree, rel, dir_stat) else {
            return;
        };
        if !tree.node(node).is_dir() {
            return;
        }
        let mut existing: HashMap<String, NodeId> = tree
            .node(node)
            .children
            .iter()
            .map(|&c| (tree.node(c).name.to_string(), c))
            .collect();
        for (name, stat) in found {
            match existing.remove(&name) {
                Some(c) if tree.node(c).is_dir() == stat.is_dir() => {
                    if !stat.is_dir() && tree.node(c).stat != stat {
                        let n = tree.node_mut(c);
                        n.stat = stat;
                        n.flags &= !(flags::TEXT_KNOWN | flags::TEXT);
                    }
                }
                other => {
                    if let Some(c) = other {
                        tree.remove(c, &|r| self.id_of(r));
                    }
                    let child_rel = join_rel(rel, &name);
                    tree.add_child(node, &name, stat, self.id_of(&child_rel), true);
                }
            }
        }
        for (_, gone) in existing {
            tree.remove(gone, &|r| self.id_of(r));
        }
        let n = tree.node_mut(node);
        n.stat = dir_stat;
        mark_scanned(n, started, self.opts.racy_window_ns);
    }

    /// The cached text decision for `rel` if it was made for exactly this `stat`.
    pub fn text_flag(&self, rel: &str, stat: &StatKey) -> Option<bool> {
        let tree = self.read();
        let n = tree.node(tree.find(rel)?);
        (n.stat == *stat && n.flags & flags::TEXT_KNOWN != 0).then_some(n.flags & flags::TEXT != 0)
    }

    /// Remembers the text decision for `rel` at `stat`.
    pub fn set_text_flag(&self, rel: &str, stat: &StatKey, is_text: bool) {
        {
            let tree = self.read();
            let Some(n) = tree.find(rel).map(|n| tree.node(n)) else {
                return;
            };
            let known = n.flags & flags::TEXT_KNOWN != 0;
            if n.stat != *stat || (known && (n.flags & flags::TEXT != 0) == is_text) {
                // The entry moved on, or this is known: a write would only move the
                // generation (and drop the listings kept for the next walk).
                return;
            }
        }
        let mut tree = self.write();
        if let Some(node) = tree.find(rel) {
            set_text_bits(tree.node_mut(node), stat, is_text);
        }
    }

    /// Remembers the text decisions of files of `listed` (by position), under one write
    /// lock and with no path lookup: a warm restart knows every reused file's decision
    /// from its record, and one at a time the first whole-root call would look each up
    /// in the cache and move the generation once per file. Skipped when the tree changed
    /// since `listed` was taken (the decisions are only a shortcut).
    pub fn set_listed_text_flags(&self, listed: &ListedFiles, decided: &[(usize, bool)]) {
        use std::sync::atomic::Ordering::SeqCst;
        if decided.is_empty() {
            return;
        }
        let mut tree = self.tree.write().unwrap_or_else(|e| e.into_inner());
        if self.generation.load(SeqCst) != listed.generation {
            return;
        }
        let mut changed = false;
        for &(i, is_text) in decided {
            if let (Some(&node), Some((_, stat))) = (listed.nodes.get(i), listed.files.get(i)) {
                changed |= set_text_bits(tree.node_mut(node), stat, is_text);
            }
        }
        if changed {
            // Listings kept for the next walk carry the old decisions.
            self.generation.fetch_add(1, SeqCst);
        }
    }

    /// Whether `rel` is indexed (for tests and status).
    pub fn contains(&self, rel: &str) -> bool {
        self.read().find(rel).is_some()
    }

    /// Number of live tree nodes, root included (for memory accounting).
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the index holds only the root.
    pub fn is_empty(&self) -> bool {
        self.len() <= 1
    }
}

fn mark_scanned(node: &mut tree::Node, observed_ns: i64, racy_window_ns: i64) {
    node.flags |= flags::SCANNED;
    if is_settled(&node.stat, observed_ns, racy_window_ns) {
        node.flags |= flags::SETTLED;
    } else {
        node.flags &= !flags::SETTLED;
    }
}
