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
//! once a `.env` is the safe mistake), and it holds only protected files (never-serve
//! names, policy files), a handful in most trees.
//!
//! What it cannot see: a protected file this daemon never looked at (in a directory no
//! walk enters, or in a root it never served) linked into a served root. COMPAT.md.

use std::collections::HashSet;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::sync::{LazyLock, RwLock};

static PROTECTED: LazyLock<RwLock<HashSet<(u64, u64)>>> = LazyLock::new(RwLock::default);

/// Remembers a protected file's identity, whatever its link count now: a link made
/// later, even from another root, must be refused too.
pub fn remember(meta: &Metadata) {
    if meta.is_file() {
        remember_identity(meta.dev(), meta.ino());
    }
}

/// Remembers a protected file's identity (policy files, stamped by device and inode).
pub fn remember_identity(dev: u64, ino: u64) {
    let known = PROTECTED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&(dev, ino));
    if !known {
        PROTECTED
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert((dev, ino));
    }
}

/// Whether a file about to be listed or served is another name of a protected file.
/// Costs nothing for the usual file with a single link.
pub fn is_link_to_protected(meta: &Metadata) -> bool {
    meta.nlink() > 1
        && PROTECTED
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(meta.dev(), meta.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hard_link_to_a_remembered_file_is_recognised_under_any_name() {
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
    }
}
