//! Claiming the daemon's socket: private directory, 0600 socket file, one daemon only.
//!
//! A killed daemon leaves its socket file behind; binding then fails with `AddrInUse`.
//! The recipe (rust-stack.md 5b): never overwrite blindly, because that would silently
//! steal a live daemon's name. Instead
//! 1. take an exclusive `flock` on `<socket>.lock` (held for the daemon's lifetime), so
//!    two daemons starting at once cannot both decide the file is stale;
//! 2. bind; on `AddrInUse`, connect to the file: an answer means a live daemon (refuse
//!    to start), `ConnectionRefused` means a stale file (remove it, bind again).

use interprocess::local_socket::tokio::{Listener, Stream, prelude::*};
use interprocess::local_socket::{GenericFilePath, ListenerOptions, Name, ToFsName};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use redctx_proto::{Hello, HelloReply, read_frame, write_frame};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A claimed socket, ready for [`super::serve`].
pub struct Bound {
    pub(crate) listener: Listener,
    /// Held open for the daemon's lifetime: the flock is the single-instance guarantee.
    pub(crate) lock: File,
    pub(crate) path: PathBuf,
}

impl Bound {
    /// Path of the socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Why the socket could not be claimed. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error(
        "another redctx daemon{} is already running on {socket}; stop it first with `redctx daemon stop`",
        describe(pid, version)
    )]
    AlreadyRunning {
        socket: PathBuf,
        pid: Option<u32>,
        version: Option<String>,
    },
    #[error("cannot prepare the socket directory {dir}: {source}")]
    Dir { dir: PathBuf, source: io::Error },
    #[error(
        "the socket directory {dir} belongs to another user; remove it or point REDCTX_SOCKET elsewhere"
    )]
    DirNotOwned { dir: PathBuf },
    #[error("cannot lock {path}: {source}")]
    Lock { path: PathBuf, source: io::Error },
    #[error("cannot listen on {socket}: {source}")]
    Bind { socket: PathBuf, source: io::Error },
}

fn describe(pid: &Option<u32>, version: &Option<String>) -> String {
    match (pid, version) {
        (Some(p), Some(v)) => format!(" (pid {p}, version {v})"),
        (Some(p), None) => format!(" (pid {p})"),
        _ => String::new(),
    }
}

/// Claim `socket`. With `dedicated_dir`, its parent directory is ours alone: created
/// 0700 if missing, tightened to 0700 if looser, refused if another user owns it.
/// Otherwise (a user-chosen `REDCTX_SOCKET`) the directory must already exist and is
/// left as it is; the socket file itself is always 0600.
pub async fn bind(socket: &Path, dedicated_dir: bool) -> Result<Bound, BindError> {
    let dir = socket
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    prepare_dir(dir, dedicated_dir)?;

    let lock_path = lock_path(socket);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode_0600()
        .open(&lock_path)
        .map_err(|source| BindError::Lock {
            path: lock_path.clone(),
            source,
        })?;
    // SAFETY: flock on a descriptor we own; no memory is shared with the kernel.
    let rc = unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let (pid, version) = probe(socket).await.unwrap_or_default();
            return Err(BindError::AlreadyRunning {
                socket: socket.to_path_buf(),
                pid,
                version,
            });
        }
        return Err(BindError::Lock {
            path: lock_path,
            source: err,
        });
    }

    let name = fs_name(socket).map_err(|source| BindError::Bind {
        socket: socket.into(),
        source,
    })?;
    let listener = match listen(name.clone()) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            match Stream::connect(name.clone()).await {
                Ok(stream) => {
                    // Something answers although we hold the lock (e.g. a daemon from a
                    // build without the lock file). Never take over a live socket.
                    let (pid, version) = handshake_probe(stream).await.unwrap_or_default();
                    return Err(BindError::AlreadyRunning {
                        socket: socket.to_path_buf(),
                        pid,
                        version,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    tracing::info!(socket = %socket.display(), "removing stale socket file");
                    std::fs::remove_file(socket).map_err(|source| BindError::Bind {
                        socket: socket.into(),
                        source,
                    })?;
                    listen(name).map_err(|source| BindError::Bind {
                        socket: socket.into(),
                        source,
                    })?
                }
                Err(source) => {
                    return Err(BindError::Bind {
                        socket: socket.into(),
                        source,
                    });
                }
            }
        }
        Err(source) => {
            return Err(BindError::Bind {
                socket: socket.into(),
                source,
            });
        }
    };
    Ok(Bound {
        listener,
        lock,
        path: socket.to_path_buf(),
    })
}

/// The lock file guarding `socket`.
pub(crate) fn lock_path(socket: &Path) -> PathBuf {
    let mut s = socket.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

fn fs_name(socket: &Path) -> io::Result<Name<'static>> {
    socket.to_path_buf().to_fs_name::<GenericFilePath>()
}

fn listen(name: Name<'_>) -> io::Result<Listener> {
    ListenerOptions::new().name(name).mode(0o600).create_tokio()
}

fn prepare_dir(dir: &Path, dedicated: bool) -> Result<(), BindError> {
    let err = |source| BindError::Dir {
        dir: dir.to_path_buf(),
        source,
    };
    if dedicated {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(err)?;
        let md = std::fs::metadata(dir).map_err(err)?;
        // SAFETY: geteuid has no preconditions.
        if md.uid() != unsafe { libc::geteuid() } {
            return Err(BindError::DirNotOwned {
                dir: dir.to_path_buf(),
            });
        }
        if md.mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
        }
    } else if !dir.is_dir() {
        return Err(err(io::Error::new(
            io::ErrorKind::NotFound,
            "directory does not exist",
        )));
    }
    Ok(())
}

/// Ask whoever listens on `socket` who they are.
async fn probe(socket: &Path) -> Option<(Option<u32>, Option<String>)> {
    let stream = Stream::connect(fs_name(socket).ok()?).await.ok()?;
    handshake_probe(stream).await
}

async fn handshake_probe(stream: Stream) -> Option<(Option<u32>, Option<String>)> {
    let fut = async move {
        let (mut rd, mut wr) = tokio::io::split(stream);
        write_frame(&mut wr, &Hello::current()).await.ok()?;
        match read_frame::<_, HelloReply>(&mut rd).await.ok()?? {
            HelloReply::Ok {
                daemon_version,
                pid,
            } => Some((Some(pid), Some(daemon_version))),
            HelloReply::Mismatch {
                daemon_version,
                pid,
                ..
            } => Some((Some(pid), Some(daemon_version))),
        }
    };
    tokio::time::timeout(Duration::from_secs(2), fut)
        .await
        .ok()
        .flatten()
}

trait Mode0600 {
    fn mode_0600(&mut self) -> &mut Self;
}

impl Mode0600 for OpenOptions {
    fn mode_0600(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600)
    }
}
