//! Atomic publication of a written document (spec 9.1 step 9).
//!
//! The text goes to a temporary `.<name>.<random>.tmp` beside the target, is fsynced,
//! then appears under the target name all at once: hard-linked when the target must not
//! exist (the link fails if it appeared meanwhile), renamed over it when overwriting. The
//! directory is fsynced after, and the temporary name is always removed.
//!
//! Every directory from the root down is opened relative to its parent with
//! `O_NOFOLLOW | O_DIRECTORY` (and created, mode 0700 like Python's `mkdir`, when
//! missing), and every later step is relative to the final directory's descriptor: a
//! component replaced by a symlink after the checks makes the publish fail instead of
//! writing through it.

use super::WriteError;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Publishes `text` at `rel` (root-relative, already checked) under `root`.
/// A failed publish removes the directories it made (when still empty), so a refused
/// write leaves the tree as it found it.
pub fn publish(root: &Path, rel: &str, text: &str, overwrite: bool) -> Result<(), WriteError> {
    let (dirs, name) = rel.rsplit_once('/').unwrap_or((".", rel));
    // Each directory's descriptor, and whether this call made it.
    let mut chain = vec![(open_dir(None, root.as_os_str().as_bytes(), false)?.0, false)];
    let mut result = Ok(());
    for part in dirs.split('/').filter(|p| *p != ".") {
        match open_dir(Some(&chain[chain.len() - 1].0), part.as_bytes(), true) {
            Ok(opened) => chain.push(opened),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result.is_ok() {
        let dir = &chain[chain.len() - 1].0;
        result = create_temp(dir, name).and_then(|(tmp, mut file)| {
            let linked = write_and_link(dir, &tmp, &mut file, name, text, overwrite);
            drop(file);
            // Gone already after a rename; after a link, or on failure, removed here.
            unsafe { libc::unlinkat(dir.as_raw_fd(), tmp.as_ptr(), 0) };
            linked
        });
    }
    if result.is_err() {
        let parts: Vec<&str> = dirs.split('/').filter(|p| *p != ".").collect();
        for i in (1..chain.len()).rev() {
            if chain[i].1 {
                let name = c_name(parts[i - 1].as_bytes())?;
                let parent = chain[i - 1].0.as_raw_fd();
                unsafe { libc::unlinkat(parent, name.as_ptr(), libc::AT_REMOVEDIR) };
            }
        }
    }
    result
}

fn write_and_link(
    dir: &OwnedFd,
    tmp: &CString,
    file: &mut std::fs::File,
    name: &str,
    text: &str,
    overwrite: bool,
) -> Result<(), WriteError> {
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|_| WriteError::Publish)?;
    let target = c_name(name.as_bytes())?;
    let fd = dir.as_raw_fd();
    let rc = if overwrite {
        unsafe { libc::renameat(fd, tmp.as_ptr(), fd, target.as_ptr()) }
    } else {
        unsafe { libc::linkat(fd, tmp.as_ptr(), fd, target.as_ptr(), 0) }
    };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        return Err(match err.raw_os_error() {
            Some(libc::EEXIST) if !overwrite => WriteError::OutputExists,
            _ => WriteError::Publish,
        });
    }
    // Best effort, as in the reference: the data itself is already synced.
    unsafe { libc::fsync(fd) };
    Ok(())
}

fn c_name(bytes: &[u8]) -> Result<CString, WriteError> {
    CString::new(bytes).map_err(|_| WriteError::Publish)
}

/// Opens directory `name` (relative to `parent`, or a path when `None`) without
/// following a symlink; with `create`, makes it first when missing. Says whether it made
/// it.
fn open_dir(
    parent: Option<&OwnedFd>,
    name: &[u8],
    create: bool,
) -> Result<(OwnedFd, bool), WriteError> {
    let c = c_name(name)?;
    let at = parent.map_or(libc::AT_FDCWD, |p| p.as_raw_fd());
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut fd = unsafe { libc::openat(at, c.as_ptr(), flags) };
    let mut made = false;
    if fd < 0 && create && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT) {
        made = unsafe { libc::mkdirat(at, c.as_ptr(), 0o777) } == 0;
        if !made && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(WriteError::Failed);
        }
        fd = unsafe { libc::openat(at, c.as_ptr(), flags) };
    }
    if fd < 0 {
        // A symlink (swapped in since the checks) fails the publish; a file where a
        // directory must go fails like the reference's `mkdir`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let found = unsafe { libc::fstatat(at, c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
        let is_link = found == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFLNK;
        return Err(if found == 0 && !is_link {
            WriteError::Failed
        } else {
            WriteError::Publish
        });
    }
    Ok((unsafe { OwnedFd::from_raw_fd(fd) }, made))
}

/// Creates `.<name>.<8 random>.tmp` (`:` in the name becomes `_`) in `dir`, mode 0600,
/// refusing to reuse an existing name.
fn create_temp(dir: &OwnedFd, name: &str) -> Result<(CString, std::fs::File), WriteError> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789_";
    for _ in 0..100 {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|_| WriteError::Publish)?;
        let suffix: String = random
            .iter()
            .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
            .collect();
        let tmp = c_name(format!(".{}.{suffix}.tmp", name.replace(':', "_")).as_bytes())?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let fd = unsafe { libc::openat(dir.as_raw_fd(), tmp.as_ptr(), flags, 0o600) };
        if fd >= 0 {
            return Ok((tmp, unsafe { std::fs::File::from_raw_fd(fd) }));
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(WriteError::Publish);
        }
    }
    Err(WriteError::Publish)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn links_or_renames_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        publish(root, "in/a/b.md", "one", false).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("in/a/b.md")).unwrap(),
            "one"
        );
        let mode = std::fs::metadata(root.join("in/a/b.md"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(matches!(
            publish(root, "in/a/b.md", "two", false),
            Err(WriteError::OutputExists)
        ));
        publish(root, "in/a/b.md", "two", true).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("in/a/b.md")).unwrap(),
            "two"
        );
        assert_eq!(names(&root.join("in/a")), ["b.md"]);
    }

    /// A directory replaced by a symlink after the checks (the race of issue #34): the
    /// publish fails and nothing appears where the link points.
    #[test]
    fn a_symlink_swapped_in_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("in")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("in/sub")).unwrap();
        assert!(matches!(
            publish(&root, "in/sub/x.md", "raw", false),
            Err(WriteError::Publish)
        ));
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        assert!(matches!(
            publish(&root, "link/x.md", "raw", true),
            Err(WriteError::Publish)
        ));
        assert!(names(&outside).is_empty());
        // A file where a directory must go fails like the reference's mkdir.
        std::fs::write(root.join("in/file"), "x").unwrap();
        assert!(matches!(
            publish(&root, "in/file/x.md", "raw", false),
            Err(WriteError::Failed)
        ));
        assert_eq!(names(&root.join("in")), ["file", "sub"]);
    }

    /// A publish that fails after making directories removes them again; directories
    /// that were there before stay.
    #[test]
    fn a_failed_publish_leaves_no_directory_it_made() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("in/kept")).unwrap();
        let too_long = format!("in/kept/new/deeper/{}.md", "y".repeat(300));
        assert!(matches!(
            publish(root, &too_long, "text", false),
            Err(WriteError::Publish)
        ));
        assert_eq!(names(&root.join("in")), ["kept"]);
        assert!(names(&root.join("in/kept")).is_empty());
    }
}
