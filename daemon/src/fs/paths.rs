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
pub fn validate_components(root: &Path, rel: &str) -> Result<Metadata, ViewError> {
    let lstat = |path: &Path| match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(ViewError::Unsafe),
        Ok(meta) => Ok(meta),
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            Err(ViewError::Missing)
        }
        Err(_) => Err(ViewError::Internal),
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
