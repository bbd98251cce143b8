//! A `redctxd` launched for a bench on its own socket and state directory, and the
//! protocol connection to it (shared by the benches that talk to the daemon directly).

use redctx_client::daemon::{Conn, Endpoint, connect};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running daemon; the bench owns its process and stops it.
pub struct Daemon {
    pub child: Child,
    pub rt: tokio::runtime::Runtime,
    pub conn: Conn,
}

/// Starts `redctxd` with its socket and cache in `state` (its salt vault under
/// `state/vault`, no salt or terms from the environment) and connects to it.
pub fn start(redctxd: &Path, state: &Path) -> Daemon {
    std::fs::create_dir_all(state.join("vault")).unwrap();
    let socket = state.join("bench.sock");
    let child = Command::new(redctxd)
        .arg("--socket")
        .arg(&socket)
        .arg("--state-dir")
        .arg(state)
        .env("REDACTED_CONTEXT_STATE_DIR", state.join("vault"))
        .env_remove("REDACTED_CONTEXT_SALT")
        .env_remove("REDACTED_CONTEXT_TERMS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redctxd");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ep = Endpoint {
        socket,
        state_dir: state.to_path_buf(),
    };
    let conn = rt.block_on(async {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match connect(&ep).await {
                Ok(c) => break c,
                Err(e) => {
                    assert!(Instant::now() < deadline, "redctxd did not answer: {e}");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }
    });
    Daemon { child, rt, conn }
}

/// A `usize` from the environment, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The workspace root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target directory for this run.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"))
}

/// Builds the release `redctxd` (a bench measures what users run) and returns its path.
pub fn build_redctxd() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-q", "--release", "-p", "redctx-daemon"])
        .args(["--bin", "redctxd", "--manifest-path"])
        .arg(repo().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir())
        .status()
        .expect("run cargo build");
    assert!(status.success(), "building redctxd failed");
    target_dir().join("release").join("redctxd")
}
