//! User path input and containment (spec 6.1).
//!
//! Input is parsed without touching the disk (`~` expansion, absolute-under-root, `..`
//! refusal), then every component from the root down is `lstat`ed: a symlink anywhere is
//! refused, a missing component is "does not exist". Errors never carry the input.

use crate::view::ViewError;
use std::ffi::CStr;
use std::fs::Metadata;
use std::path::{Component, Path, PathBuf};

/// What a tool argument names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathInput {
    /// An opaque id, normalised to `@p_<12hex>`.
    Id(String),
    /// A root-relative POSIX path (`.` for the root), not yet checked on disk.
    Rel(String),
}

/// Whether `s` is `p_` followed by exactly 12 lowercase hex digits.
fn is_bare_id(s: &str) -> bool {
    s.len() == 14
        && s.starts_with("p_")
        && s[2..]
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Parses tool input: `@p_<id>`, `p_<id>`, `redctx://p_<id>`, or a path (relative to the
/// root, `~`-prefixed, or absolute under the root). `root` must be canonical.
///
/// Any other `@…` input is an unknown id, as in the reference; the returned error then
/// carries `@` plus the caller's text only when it has the id shape.
pub fn parse_input(input: &str, root: &Path) -> Result<PathInput, ViewError> {
    let id_part = input
        .strip_prefix('@')
        .or_else(|| input.strip_prefix("redctx://"))
        .unwrap_or(input);
    if is_bare_id(id_part) {
        return Ok(PathInput::Id(format!("@{id_part}")));
    }
    if input.starts_with('@') {
        return Err(ViewError::UnknownId("@p_…".to_owned()));
    }
    let expanded = expand_user(input);
    let candidate = Path::new(&expanded);
    let mut parts: Vec<&str> = Vec::new();
    if candidate.is_absolute() {
        let Ok(rest) = candidate.strip_prefix(root) else {
            return Err(ViewError::OutsideRoot);
        };
        for component in rest.components() {
            match component {
                Component::Normal(part) => parts.push(part.to_str().ok_or(ViewError::Missing)?),
                Component::CurDir => {}
                _ => return Err(ViewError::OutsideRoot),
            }
        }
    } else {
        for part in expanded.split('/') {
            match part {
                "" | "." => {}
                ".." => return Err(ViewError::OutsideRoot),
                other => parts.push(other),
            }
        }
    }
    if parts.is_empty() {
        Ok(PathInput::Rel(".".to_owned()))
    } else {
        Ok(PathInput::Rel(parts.join("/")))
    }
}

/// Python's `os.path.expanduser` on POSIX: `~` and `~/…` use `$HOME` (else the password
/// database), `~name/…` the home of `name`; an unknown user leaves the input unchanged.
pub fn expand_user(input: &str) -> String {
    let Some(rest) = input.strip_prefix('~') else {
        return input.to_owned();
    };
    let (user, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let home = if user.is_empty() {
        std::env::var("HOME").ok().or_else(|| home_of(None))
    } else {
        home_of(Some(user))
    };
    let Some(home) = home else {
        return input.to_owned();
    };
    let home = home.trim_end_matches('/');
    let joined = format!("{home}{tail}");
    if joined.is_empty() {
        "/".to_owned()
    } else {
        joined
    }
}

fn home_of(user: Option<&str>) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    let rc = match user {
        None => unsafe {
            libc::getpwuid_r(
                libc::getuid(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        },
        Some(name) => {
            let name = std::ffi::CString::new(name).ok()?;
            unsafe {
                libc::getpwnam_r(
                    name.as_ptr(),
                    &mut pwd,
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut result,
                )
            }
        }
    };
    if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
        return None;
    }
    // SAFETY: getpw*_r succeeded, so pw_dir points into `buf` as a NUL-terminated string.
    let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
    dir.to_str().ok().map(str::to_owned)
}

/// Absolute path of a root-relative POSIX path.
pub fn abs_path(root: &Path, rel: &str) -> PathBuf {
    if rel == "." {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

/// Checks every component of `rel` under `root` with `lstat`, returning the metadata of
/// the last one: a symlink anywhere is `Refusing unsafe path.`, a missing component is
/// `Path does not exist.`, any other OS error is an internal failure (as the reference's
/// uncaught `OSError`).
///
/// On Linux this is one `openat2(O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS)` and an
/// `fstat`: the kernel walks the components once, in order, and refuses a symlink at any
/// of them (or returns the symlink itself when it is the last one), which is the same
/// answer as an `lstat` per component without re-walking the path from `/` for each of
/// them (whole-root calls validate every file they serve). Where `openat2` is missing
/// (kernels before 5.6, seccomp filters) the `lstat` loop runs.
pub fn validate_components(root: &Path, rel: &str) -> Result<Metadata, ViewError> {
    #[cfg(target_os = "linux")]
    if let Some(answer) = beneath::validate(root, rel) {
        return answer;
    }
    validate_by_lstat(root, rel)
}

/// `root/rel` opened for reading, refusing a symlink at any component (`openat2` with
/// `RESOLVE_NO_SYMLINKS`), without blocking on a FIFO or taking a terminal. `None` when
/// it cannot be opened that way, or `openat2` is unavailable: for callers, such as the
/// read-ahead, that may simply skip the file.
pub fn open_for_read_no_symlinks(root: &Path, rel: &str) -> Option<std::fs::File> {
    open_beneath(root, rel)?.ok()
}

/// `root/rel` opened for reading, refusing a symlink at any component, as
/// [`validate_components`] answers: `Refusing unsafe path.` for a symlink, `Path does not
/// exist.` for a missing component. Opens without blocking on a FIFO or taking a
/// terminal. `None` where `openat2` is unavailable: the caller then validates by path
/// and reads with [`super::read_verified`].
pub fn open_beneath(root: &Path, rel: &str) -> Option<Result<std::fs::File, ViewError>> {
    #[cfg(target_os = "linux")]
    return beneath::open_checked(root, rel);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (root, rel);
        None
    }
}

/// Maps an OS error of a component check to the client's fixed message. A path the OS
/// cannot open for its length (`ENAMETOOLONG`) cannot be served: it does not exist for
/// the tools.
fn component_error(err: &std::io::Error) -> ViewError {
    if err.kind() == std::io::ErrorKind::NotFound
        || matches!(err.raw_os_error(), Some(libc::ENOTDIR | libc::ENAMETOOLONG))
    {
        ViewError::Missing
    } else {
        ViewError::Internal
    }
}

/// [`validate_components`] with one `lstat` per component.
fn validate_by_lstat(root: &Path, rel: &str) -> Result<Metadata, ViewError> {
    let lstat = |path: &Path| match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ViewError::Unsafe),
        Ok(meta) => Ok(meta),
        Err(err) => Err(component_error(&err)),
    };
    if rel == "." {
        return lstat(root);
    }
    let mut current = root.to_path_buf();
    let mut last = None;
    for part in rel.split('/') {
        current.push(part);
        last = Some(lstat(&current)?);
    }
    last.ok_or(ViewError::Missing)
}

#[cfg(target_os = "linux")]
mod beneath {
    use super::component_error;
    use crate::view::ViewError;
    use std::ffi::CString;
    use std::fs::{File, Metadata};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Set once `openat2` turned out to be unavailable; the `lstat` loop is used after.
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);

    /// `root/rel` opened with `flags` by `openat2` refusing a symlink at any component;
    /// `None` when `openat2` cannot be used here (the caller falls back).
    fn open_no_symlinks(root: &Path, rel: &str, flags: i32) -> Option<std::io::Result<File>> {
        if UNAVAILABLE.load(Ordering::Relaxed) {
            return None;
        }
        let mut path = root.as_os_str().as_bytes().to_vec();
        if rel != "." {
            path.push(b'/');
            path.extend_from_slice(rel.as_bytes());
        }
        let Ok(path) = CString::new(path) else {
            return Some(Err(std::io::ErrorKind::NotFound.into()));
        };
        // SAFETY: `open_how` is plain integers; all-zero is its documented default.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (flags | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64;
        how.resolve = libc::RESOLVE_NO_SYMLINKS;
        // SAFETY: a valid NUL-terminated path and a fully initialised `open_how` of the
        // size passed; the returned descriptor is owned below.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                libc::AT_FDCWD,
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            let err = std::io::Error::last_os_error();
            if matches!(
                err.raw_os_error(),
                Some(libc::ENOSYS | libc::EPERM | libc::EINVAL | libc::E2BIG)
            ) {
                UNAVAILABLE.store(true, Ordering::Relaxed);
                return None;
            }
            return Some(Err(err));
        }
        // SAFETY: `fd` is a descriptor we just opened and nobody else owns.
        Some(Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd as i32) })))
    }

    /// [`open_no_symlinks`] with its error as the client's fixed message: a symlink
    /// anywhere is `Unsafe` (`ELOOP`).
    fn open_or_refuse(root: &Path, rel: &str, flags: i32) -> Option<Result<File, ViewError>> {
        Some(match open_no_symlinks(root, rel, flags)? {
            Ok(file) => Ok(file),
            Err(err) if err.raw_os_error() == Some(libc::ELOOP) => Err(ViewError::Unsafe),
            Err(err) => Err(component_error(&err)),
        })
    }

    /// `None` when `openat2` cannot be used here (the caller falls back).
    pub(super) fn validate(root: &Path, rel: &str) -> Option<Result<Metadata, ViewError>> {
        let file = match open_or_refuse(root, rel, libc::O_PATH)? {
            Ok(file) => file,
            Err(err) => return Some(Err(err)),
        };
        Some(match file.metadata() {
            Ok(meta) if meta.file_type().is_symlink() => Err(ViewError::Unsafe),
            Ok(meta) => Ok(meta),
            Err(err) => Err(component_error(&err)),
        })
    }

    /// `root/rel` opened for reading without following a symlink at any component and
    /// without blocking or taking a terminal; `None` when `openat2` cannot be used here.
    pub(super) fn open_checked(root: &Path, rel: &str) -> Option<Result<File, ViewError>> {
        open_or_refuse(
            root,
            rel,
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn opening_for_read_refuses_a_symlink_at_any_component() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::write(root.join("a/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("dir-link")).unwrap();
        std::os::unix::fs::symlink(root.join("a/f.txt"), root.join("file-link")).unwrap();
        assert!(open_for_read_no_symlinks(root, "a/f.txt").is_some());
        assert!(open_for_read_no_symlinks(root, "dir-link/f.txt").is_none());
        assert!(open_for_read_no_symlinks(root, "file-link").is_none());
        assert!(open_for_read_no_symlinks(root, "a/missing").is_none());
    }

    #[test]
    fn ids_in_every_accepted_shape() {
        let root = Path::new("/r");
        for input in [
            "@p_0123456789ab",
            "p_0123456789ab",
            "redctx://p_0123456789ab",
        ] {
            assert_eq!(
                parse_input(input, root),
                Ok(PathInput::Id("@p_0123456789ab".into()))
            );
        }
        assert_eq!(
            parse_input("@whatever", root),
            Err(ViewError::UnknownId("@p_…".into()))
        );
        assert_eq!(
            parse_input("p_0123456789AB", root),
            Ok(PathInput::Rel("p_0123456789AB".into()))
        );
    }

    #[test]
    fn dotdot_and_outside_absolute_paths_are_refused_lexically() {
        let root = Path::new("/r/root");
        assert_eq!(parse_input("../x", root), Err(ViewError::OutsideRoot));
        assert_eq!(parse_input("a/../b", root), Err(ViewError::OutsideRoot));
        assert_eq!(
            parse_input("/etc/passwd", root),
            Err(ViewError::OutsideRoot)
        );
        assert_eq!(
            parse_input("/r/root/../x", root),
            Err(ViewError::OutsideRoot)
        );
        assert_eq!(parse_input("/r/rootx/a", root), Err(ViewError::OutsideRoot));
        assert_eq!(
            parse_input("/r/root/a//b/./c/", root),
            Ok(PathInput::Rel("a/b/c".into()))
        );
        assert_eq!(parse_input("/r/root", root), Ok(PathInput::Rel(".".into())));
        assert_eq!(parse_input("", root), Ok(PathInput::Rel(".".into())));
        assert_eq!(
            parse_input("./docs/", root),
            Ok(PathInput::Rel("docs".into()))
        );
    }

    #[test]
    fn tilde_expands_to_home() {
        let home = std::env::var("HOME").unwrap();
        assert_eq!(
            expand_user("~/x"),
            format!("{}/x", home.trim_end_matches('/'))
        );
        assert_eq!(expand_user("a~"), "a~");
        assert_eq!(expand_user("~no_such_user_zz/x"), "~no_such_user_zz/x");
    }

    #[test]
    fn component_checks_refuse_symlinks_anywhere_and_agree_with_the_lstat_loop() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "x").unwrap();
        std::fs::write(root.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b/f.txt"), root.join("a/b/last")).unwrap();
        let expected: &[(&str, Result<bool, ViewError>)] = &[
            (".", Ok(true)),
            ("a", Ok(true)),
            ("a/b/f.txt", Ok(false)),
            ("link", Err(ViewError::Unsafe)),
            ("link/b/f.txt", Err(ViewError::Unsafe)),
            ("a/b/last", Err(ViewError::Unsafe)),
            ("a/missing/f.txt", Err(ViewError::Missing)),
            ("a/file/below", Err(ViewError::Missing)),
            ("a/b/none", Err(ViewError::Missing)),
        ];
        for (rel, want) in expected {
            let fast = validate_components(&root, rel).map(|m| m.is_dir());
            let slow = validate_by_lstat(&root, rel).map(|m| m.is_dir());
            assert_eq!(&fast, want, "{rel}");
            assert_eq!(&slow, want, "{rel}");
        }
        let fast = validate_components(&root, "a/b/f.txt").unwrap();
        let slow = validate_by_lstat(&root, "a/b/f.txt").unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!((fast.ino(), fast.size()), (slow.ino(), slow.size()));
    }
}
