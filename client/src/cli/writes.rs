//! `redctx mcp --enable-writes --write-subdir DIR`: the start-up check of the write
//! sub-directory (spec 9.1), with the reference's messages.
//!
//! Checked at every start, writes enabled or not, as the reference does, so a bad value
//! is found before an agent ever calls the tool. The daemon checks the path again on
//! each write (a symlink can appear later).

use redctx_proto::WriteOptions;
use std::path::Path;

/// Python's `str.isspace` (Rust's `char::is_whitespace` leaves out U+001C..U+001F).
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The root-relative form of `value` (`.` and empty parts dropped) when it names a
/// sub-directory strictly under `root` (canonical) with no symlink on the way.
pub fn check_subdir(root: &Path, value: &str) -> Result<String, &'static str> {
    let value = value.trim_matches(is_py_space);
    if value.is_empty() {
        return Err("--write-subdir must not be empty.");
    }
    let parts: Vec<&str> = value
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if value.starts_with('/') || parts.is_empty() || parts.contains(&"..") {
        return Err("--write-subdir must be a relative subdirectory under root.");
    }
    let mut path = root.to_path_buf();
    for part in &parts {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err("--write-subdir must not contain symlinks or reparse points.");
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Ok(parts.join("/"))
}

/// What `redctx mcp` tells the daemon about writes: `None` without `--enable-writes`.
pub fn options(
    root: &Path,
    enable: bool,
    subdir: &str,
    max_submit_files: Option<u64>,
) -> Result<Option<WriteOptions>, &'static str> {
    let subdir = check_subdir(root, subdir)?;
    Ok(enable.then_some(WriteOptions {
        subdir,
        max_submit_files,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_messages_in_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
        let check = |v: &str| check_subdir(&root, v);
        assert_eq!(check(" \t"), Err("--write-subdir must not be empty."));
        for bad in ["/tmp/x", ".", "./.", "a/../b", ".."] {
            assert_eq!(
                check(bad),
                Err("--write-subdir must be a relative subdirectory under root."),
                "{bad}"
            );
        }
        assert_eq!(
            check("link/inbox"),
            Err("--write-subdir must not contain symlinks or reparse points.")
        );
        assert_eq!(check(" incoming "), Ok("incoming".to_owned()));
        assert_eq!(check("./real//drafts/"), Ok("real/drafts".to_owned()));
    }
}
