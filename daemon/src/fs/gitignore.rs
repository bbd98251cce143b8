//! `.gitignore` rules of one root, checked one path at a time.
//!
//! The reference does not honour `.gitignore`; redctx does by default (monorepos keep
//! build output and vendored trees there) and can be switched off. Only `.gitignore`
//! files inside the root count (no parent directories above the root, no global or
//! `.git/info/exclude` rules), so the answer depends on the served tree alone.
//! Precedence is git's: the deepest `.gitignore` with a matching rule decides, and
//! nothing below an ignored directory is visited.

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Larger `.gitignore` files are treated as absent (a guard against reading huge files).
const MAX_GITIGNORE_BYTES: u64 = 4 << 20;

/// Lazily loaded `.gitignore` matchers, one per directory (clones share the cache).
#[derive(Clone, Debug)]
pub struct GitignoreRules {
    root: PathBuf,
    enabled: bool,
    /// Shared so walk workers and the index see one cache.
    matchers: Arc<RwLock<HashMap<String, Option<Arc<Gitignore>>>>>,
    /// Bumped after every invalidation, so callers memoising verdicts can tell theirs
    /// may be stale.
    generation: Arc<AtomicU64>,
}

impl GitignoreRules {
    /// Rules for a canonical root; `enabled == false` ignores every `.gitignore`.
    pub fn new(root: &Path, enabled: bool) -> GitignoreRules {
        GitignoreRules {
            root: root.to_path_buf(),
            enabled,
            matchers: Arc::new(RwLock::new(HashMap::new())),
            generation: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Whether `.gitignore` files are honoured at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Forgets the cached matcher of a directory (call when its `.gitignore` changed).
    pub fn invalidate(&self, dir_rel: &str) {
        if let Ok(mut map) = self.matchers.write() {
            map.remove(dir_rel);
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Forgets every cached matcher.
    pub fn invalidate_all(&self) {
        if let Ok(mut map) = self.matchers.write() {
            map.clear();
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Changes after each invalidation (bumped once the matcher is gone, so a verdict
    /// computed after reading a generation never used a matcher older than it).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn matcher(&self, dir_rel: &str) -> Option<Arc<Gitignore>> {
        if let Some(found) = self
            .matchers
            .read()
            .ok()
            .and_then(|map| map.get(dir_rel).cloned())
        {
            return found;
        }
        let loaded = self.load(dir_rel).map(Arc::new);
        if let Ok(mut map) = self.matchers.write() {
            map.insert(dir_rel.to_owned(), loaded.clone());
        }
        loaded
    }

    fn load(&self, dir_rel: &str) -> Option<Gitignore> {
        let dir = super::paths::abs_path(&self.root, dir_rel);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(dir.join(".gitignore"))
            .ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut bytes = Vec::new();
        file.take(MAX_GITIGNORE_BYTES + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        if bytes.len() as u64 > MAX_GITIGNORE_BYTES {
            return None;
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut builder = GitignoreBuilder::new(&dir);
        for line in text.lines() {
            // A malformed line is skipped, as git does.
            let _ = builder.add_line(None, line);
        }
        builder.build().ok().filter(|g| !g.is_empty())
    }

    /// Whether `rel` itself is ignored by the `.gitignore` files of its ancestors, assuming
    /// its ancestors are not ignored (the walk's per-entry check).
    pub fn is_ignored_entry(&self, rel: &str, is_dir: bool) -> bool {
        if !self.enabled || rel == "." {
            return false;
        }
        let mut dir_end = rel.rfind('/');
        loop {
            let dir_rel = match dir_end {
                Some(end) => &rel[..end],
                None => ".",
            };
            if let Some(matcher) = self.matcher(dir_rel) {
                let below = match dir_end {
                    Some(end) => &rel[end + 1..],
                    None => rel,
                };
                match matcher.matched(below, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            match dir_end {
                Some(end) => dir_end = rel[..end].rfind('/'),
                None => return false,
            }
        }
    }

    /// Whether `rel` or any of its ancestor directories is ignored.
    pub fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        if !self.enabled || rel == "." {
            return false;
        }
        let mut from = 0;
        while let Some(pos) = rel[from..].find('/') {
            if self.is_ignored_entry(&rel[..from + pos], true) {
                return true;
            }
            from += pos + 1;
        }
        self.is_ignored_entry(rel, is_dir)
    }
}
