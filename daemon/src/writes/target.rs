//! Where a write may land (spec 9.1 step 5): a rehydrated `target_path`, checked as the
//! reference does and in its order, becomes a root-relative path inside the write
//! sub-directory.
//!
//! The checks are lexical plus one `lstat` per component, so they only say the target
//! was safe *when checked*; the publish step re-walks every component with `O_NOFOLLOW`
//! (`publish.rs`), so a symlink swapped in afterwards is refused there.

use super::WriteError;
use crate::engine::placeholder::casefold;
use crate::engine::python::text::is_py_space;
use crate::fs::FsRules;
use std::path::Path;

/// The root-relative components of a relative path as Python's `pathlib` reads it (`.`
/// and empty parts dropped); `None` for an absolute path, one with `..`, or nothing.
pub fn relative_parts(value: &str) -> Option<Vec<&str>> {
    if value.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = value
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return None;
    }
    Some(parts)
}

/// Python's `str.strip()`.
pub fn py_strip(value: &str) -> &str {
    value.trim_matches(is_py_space)
}

/// The root-relative path `target` (already rehydrated) names inside `write_rel` (the
/// write sub-directory, root-relative), or the first rule it breaks. `config` is the
/// config file's absolute path, which is never a target even outside the never-serve
/// names.
pub fn resolve(
    root: &Path,
    write_rel: &str,
    target: &str,
    rules: &FsRules,
    config: &Path,
) -> Result<String, WriteError> {
    let value = py_strip(target);
    if value.is_empty() {
        return Err(WriteError::TargetEmpty);
    }
    if value.contains(':') {
        return Err(WriteError::TargetColon);
    }
    let parts = relative_parts(value).ok_or(WriteError::TargetNotRelative)?;
    let rel = format!("{write_rel}/{}", parts.join("/"));
    if has_symlink_component(root, &rel) {
        return Err(WriteError::TargetSymlink);
    }
    // Cannot happen after the lexical checks; kept as the rule the others serve.
    if !rel.starts_with(&format!("{write_rel}/")) {
        return Err(WriteError::TargetEscapes);
    }
    let is_config = config
        .strip_prefix(root)
        .ok()
        .and_then(|p| p.to_str())
        .is_some_and(|c| casefold(c) == casefold(&rel));
    if is_config || rules.is_protected(&rel) {
        return Err(WriteError::Protected);
    }
    Ok(rel)
}

/// Whether any component of `rel` under `root` (the write sub-directory's included) is a
/// symlink now. Components that do not exist yet are no symlinks.
pub fn has_symlink_component(root: &Path, rel: &str) -> bool {
    let mut path = root.to_path_buf();
    for part in rel.split('/') {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathlib_reading_of_relative_paths() {
        assert_eq!(relative_parts("a/./b//c/"), Some(vec!["a", "b", "c"]));
        assert_eq!(relative_parts("./."), None);
        assert_eq!(relative_parts("/etc/passwd"), None);
        assert_eq!(relative_parts("a/../b"), None);
        assert_eq!(relative_parts("..."), Some(vec!["..."]));
        // Look-alikes of `.` and `/` are ordinary name characters on POSIX.
        assert_eq!(
            relative_parts("\u{2024}\u{2024}\u{2215}x"),
            Some(vec!["\u{2024}\u{2024}\u{2215}x"])
        );
        assert_eq!(py_strip(" \u{3000}a b\x1c"), "a b");
    }
}
