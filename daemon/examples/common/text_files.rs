//! The tree of text files the profiling examples read (`#[path]`-included by each; not an
//! example itself).

use std::path::Path;

/// The UTF-8 files under `root` as (path relative to `root`, `/`-separated; text), in
/// path order. Symlinks are not followed and files that are not UTF-8 are skipped; an
/// unreadable directory or file is an error.
pub fn text_files(root: &Path) -> std::io::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    collect(root, root, &mut out)?;
    out.sort();
    Ok(out)
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let (kind, path) = (entry.file_type()?, entry.path());
        if kind.is_dir() {
            collect(root, &path, out)?;
        } else if kind.is_file()
            && let Ok(text) = String::from_utf8(std::fs::read(&path)?)
        {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push((rel.to_string_lossy().replace('\\', "/"), text));
        }
    }
    Ok(())
}
