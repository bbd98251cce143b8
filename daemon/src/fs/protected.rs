//! Protected files known by identity, not only by name.
//!
//! Never-serve rules match names (`.env`, `*.pem`, the config and term files). A hard
//! link gives the same file a second, innocent name (`notes.txt`), and a name check
//! alone would serve its bytes. A hard link shares the file's `(device, inode)`, and
//! both names then report a link count above one, so it is enough to remember the
//! identity of every protected file seen and to refuse any served file with more than
//! one link whose identity is one of them (the usual file, with one link, costs no
//! lookup).
//!
//! The set is process-wide on purpose: one daemon serves many roots, and a protected
//! file of one root linked into another must be refused there too. It only grows (an
//! identity stays refused after the protected name is gone: refusing a file that was
//! once a `.env` is the safe mistake, and so is refusing a new multiply linked file that
//! happens to reuse a deleted protected file's inode number), and it holds only
//! protected files (never-serve names, policy files), a handful in most trees.
//!
//! What it cannot see: a protected file this daemon never looked at (in a directory no
//! walk enters, or in a root it never served) linked into a served root. COMPAT.md.

use std::collections::HashSet;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::sync::{LazyLock, RwLock};

/// A set of protected identities. The daemon uses one, process-wide ([`remember`],
/// [`is_link_to_protected`]); tests make their own.
#[derive(Debug, Default)]
pub struct ProtectedSet(RwLock<HashSet<(u64, u64)>>);

impl ProtectedSet {
    /// Remembers a protected file's identity, whatever its link count now: a link made
    /// later, even from another root, must be refused too.
    pub fn remember(&self, meta: &Metadata) {
        if meta.is_file() {
            self.remember_identity(meta.dev(), meta.ino());
        }
    }

    /// Remembers a protected file's identity (policy files, stamped by device and inode).
    pub fn remember_identity(&self, dev: u64, ino: u64) {
        let known = self
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(dev, ino));
        if !known {
            self.0
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert((dev, ino));
        }
    }

    /// Whether a file about to be listed or served is another name of a protected file.
    /// Costs nothing for the usual file with a single link.
    pub fn is_link_to_protected(&self, meta: &Metadata) -> bool {
        self.is_link_to_protected_stat(&super::StatKey::of(meta), meta.nlink())
    }

    /// [`ProtectedSet::is_link_to_protected`] from a stat key and link count.
    pub fn is_link_to_protected_stat(&self, stat: &super::StatKey, nlink: u64) -> bool {
        // Regular files only: a directory always has more than one link, and its inode
        // number may be one a deleted protected file had.
        stat.is_regular()
            && nlink > 1
            && self
                .0
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&(stat.dev, stat.ino))
    }
}

static PROTECTED: LazyLock<ProtectedSet> = LazyLock::new(ProtectedSet::default);

/// [`ProtectedSet::remember`] on the daemon's set.
pub fn remember(meta: &Metadata) {
    PROTECTED.remember(meta);
}

/// [`ProtectedSet::remember_identity`] on the daemon's set.
pub fn remember_identity(dev: u64, ino: u64) {
    PROTECTED.remember_identity(dev, ino);
}

/// [`ProtectedSet::is_link_to_protected`] on the daemon's set.
pub fn is_link_to_protected(meta: &Metadata) -> bool {
    PROTECTED.is_link_to_protected(meta)
}

/// [`ProtectedSet::is_link_to_protected_stat`] on the daemon's set.
pub fn is_link_to_protected_stat(stat: &super::StatKey, nlink: u64) -> bool {
    PROTECTED.is_link_to_protected_stat(stat, nlink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hard_link_to_a_remembered_file_is_recognised_under_any_name() {
        let set = ProtectedSet::default();
        let remember = |m: &Metadata| set.remember(m);
        let is_link_to_protected = |m: &Metadata| set.is_link_to_protected(m);
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join(".env");
        let other = dir.path().join("notes.txt");
        let single = dir.path().join("plain.txt");
        std::fs::write(&secret, "TOKEN=x\n").unwrap();
        std::fs::write(&single, "hello\n").unwrap();
        std::fs::hard_link(&secret, &other).unwrap();
        assert!(!is_link_to_protected(&std::fs::metadata(&other).unwrap()));
        remember(&std::fs::symlink_metadata(&secret).unwrap());
        assert!(is_link_to_protected(&std::fs::metadata(&other).unwrap()));
        assert!(is_link_to_protected(&std::fs::metadata(&secret).unwrap()));
        // A file with one link is never "another name", and unrelated files are not
        // affected.
        remember(&std::fs::metadata(&single).unwrap());
        assert!(!is_link_to_protected(&std::fs::metadata(&single).unwrap()));
        // Remembered before the link existed: the link made later is refused.
        let later = dir.path().join("id_rsa");
        std::fs::write(
            &later, "key
",
        )
        .unwrap();
        remember(&std::fs::metadata(&later).unwrap());
        let alias = dir.path().join("readme.txt");
        std::fs::hard_link(&later, &alias).unwrap();
        assert!(is_link_to_protected(&std::fs::metadata(&alias).unwrap()));
        assert!(!is_link_to_protected(
            &std::fs::metadata(dir.path().join("plain.txt")).unwrap()
        ));
        // A directory (two links or more, always) that gets a remembered inode number
        // back after the file that had it was deleted is never taken for a link.
        let gone = dir.path().join("gone.pem");
        std::fs::write(&gone, "x\n").unwrap();
        let gone_meta = std::fs::metadata(&gone).unwrap();
        remember(&gone_meta);
        std::fs::remove_file(&gone).unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let sub_meta = std::fs::metadata(&sub).unwrap();
        set.remember_identity(sub_meta.dev(), sub_meta.ino());
        assert!(sub_meta.nlink() > 1);
        assert!(!is_link_to_protected(&sub_meta));
    }
}

#[cfg(test)]
mod read_tests {
    #[test]
    fn a_verified_read_refuses_what_it_opened_when_that_is_a_protected_file() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("id_ed25519");
        let alias = dir.path().join("alias.txt");
        std::fs::write(&secret, "key material\n").unwrap();
        std::fs::hard_link(&secret, &alias).unwrap();
        let plain = dir.path().join("plain.txt");
        std::fs::write(&plain, "fine\n").unwrap();
        super::remember(&std::fs::metadata(&secret).unwrap());
        assert_eq!(
            crate::fs::read_verified(&alias, 1 << 20).map(|(b, _)| b),
            Err(crate::view::ViewError::Excluded)
        );
        assert_eq!(
            crate::fs::read_verified(&plain, 1 << 20).unwrap().0,
            b"fine\n"
        );
    }
}
