//! Where the daemon keeps its state and its socket.
//!
//! This lives in the protocol crate because it is part of the contract between client and
//! daemon: both must compute the same socket path from the same environment, or the
//! client would start a second daemon instead of finding the first.
//!
//! Rules, first match wins:
//! - state dir: `$REDCTX_STATE_DIR`, else `$XDG_STATE_HOME/redctx`, else
//!   `$HOME/.local/state/redctx`.
//! - socket: `$REDCTX_SOCKET`; else, when `$REDCTX_STATE_DIR` is set (a separate daemon
//!   instance, e.g. in tests), `<state dir>/run/redctxd.sock`; else
//!   `$XDG_RUNTIME_DIR/redctx/redctxd.sock`; else `<state dir>/run/redctxd.sock`.
//!
//! Empty variables count as unset; relative `XDG_*` values are ignored (as the XDG spec
//! asks) and relative `REDCTX_*` values are taken from the current directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Overrides the state directory (config cache, logs, socket dir).
pub const STATE_DIR_ENV: &str = "REDCTX_STATE_DIR";
/// Overrides the socket path.
pub const SOCKET_ENV: &str = "REDCTX_SOCKET";
/// Socket file name inside its directory.
pub const SOCKET_FILE: &str = "redctxd.sock";
/// Longest socket path we accept. Unix sockets allow about 107 bytes; staying under 100
/// leaves room for the platform's variations.
pub const MAX_SOCKET_PATH_BYTES: usize = 100;

/// Why no usable location could be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error(
        "cannot find a state directory: HOME is not set; set REDCTX_STATE_DIR to a directory redctx may use"
    )]
    NoHome,
    #[error(
        "socket path {path:?} is {len} bytes long, over the {MAX_SOCKET_PATH_BYTES}-byte limit of local sockets; set REDCTX_SOCKET to a shorter path"
    )]
    SocketPathTooLong { path: PathBuf, len: usize },
}

/// The state directory under the real environment.
pub fn state_dir() -> Result<PathBuf, PathError> {
    state_dir_from(&real_env)
}

/// The socket path under the real environment.
pub fn socket_path() -> Result<PathBuf, PathError> {
    socket_path_from(&real_env)
}

/// Where the daemon writes its logs.
pub fn log_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("logs")
}

/// [`state_dir`] with an injectable environment (for tests).
pub fn state_dir_from(env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, PathError> {
    if let Some(dir) = redctx_var(env, STATE_DIR_ENV) {
        return Ok(dir);
    }
    if let Some(dir) = xdg_var(env, "XDG_STATE_HOME") {
        return Ok(dir.join("redctx"));
    }
    match var(env, "HOME") {
        Some(home) => Ok(PathBuf::from(home).join(".local/state/redctx")),
        None => Err(PathError::NoHome),
    }
}

/// [`socket_path`] with an injectable environment (for tests).
pub fn socket_path_from(env: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf, PathError> {
    let path = if let Some(sock) = redctx_var(env, SOCKET_ENV) {
        sock
    } else if let Some(state) = redctx_var(env, STATE_DIR_ENV) {
        state.join("run").join(SOCKET_FILE)
    } else if let Some(run) = xdg_var(env, "XDG_RUNTIME_DIR") {
        run.join("redctx").join(SOCKET_FILE)
    } else {
        state_dir_from(env)?.join("run").join(SOCKET_FILE)
    };
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH_BYTES {
        return Err(PathError::SocketPathTooLong { path, len });
    }
    Ok(path)
}

fn real_env(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

fn var(env: &dyn Fn(&str) -> Option<OsString>, name: &str) -> Option<OsString> {
    env(name).filter(|v| !v.is_empty())
}

fn xdg_var(env: &dyn Fn(&str) -> Option<OsString>, name: &str) -> Option<PathBuf> {
    var(env, name)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

fn redctx_var(env: &dyn Fn(&str) -> Option<OsString>, name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(var(env, name)?);
    if p.is_absolute() {
        Some(p)
    } else {
        Some(std::env::current_dir().map(|cwd| cwd.join(&p)).unwrap_or(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn state_dir_prefers_override_then_xdg_then_home() {
        let e = env_of(&[
            ("REDCTX_STATE_DIR", "/s"),
            ("XDG_STATE_HOME", "/x"),
            ("HOME", "/h"),
        ]);
        assert_eq!(state_dir_from(&e).unwrap(), PathBuf::from("/s"));
        let e = env_of(&[("XDG_STATE_HOME", "/x"), ("HOME", "/h")]);
        assert_eq!(state_dir_from(&e).unwrap(), PathBuf::from("/x/redctx"));
        let e = env_of(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]);
        assert_eq!(
            state_dir_from(&e).unwrap(),
            PathBuf::from("/h/.local/state/redctx")
        );
        let e = env_of(&[("REDCTX_STATE_DIR", ""), ("HOME", "/h")]);
        assert_eq!(
            state_dir_from(&e).unwrap(),
            PathBuf::from("/h/.local/state/redctx")
        );
        assert_eq!(state_dir_from(&env_of(&[])), Err(PathError::NoHome));
    }

    #[test]
    fn socket_follows_override_state_override_runtime_dir_then_state() {
        let e = env_of(&[("REDCTX_SOCKET", "/tmp/a.sock"), ("REDCTX_STATE_DIR", "/s")]);
        assert_eq!(socket_path_from(&e).unwrap(), PathBuf::from("/tmp/a.sock"));
        let e = env_of(&[
            ("REDCTX_STATE_DIR", "/s"),
            ("XDG_RUNTIME_DIR", "/run/user/1"),
        ]);
        assert_eq!(
            socket_path_from(&e).unwrap(),
            PathBuf::from("/s/run/redctxd.sock")
        );
        let e = env_of(&[("XDG_RUNTIME_DIR", "/run/user/1"), ("HOME", "/h")]);
        assert_eq!(
            socket_path_from(&e).unwrap(),
            PathBuf::from("/run/user/1/redctx/redctxd.sock")
        );
        let e = env_of(&[("HOME", "/h")]);
        assert_eq!(
            socket_path_from(&e).unwrap(),
            PathBuf::from("/h/.local/state/redctx/run/redctxd.sock")
        );
    }

    #[test]
    fn overlong_socket_paths_are_refused_with_advice() {
        let e = env_of(&[(
            "REDCTX_STATE_DIR",
            "/a/very/long/state/directory/that/keeps/going/and/going/beyond/what/unix/sockets/allow/ok",
        )]);
        let err = socket_path_from(&e).unwrap_err();
        assert!(err.to_string().contains("set REDCTX_SOCKET"), "{err}");
    }
}
