//! Shared by the client's integration tests: where the binaries under test are.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The `redctx` binary built for these tests.
pub const REDCTX: &str = env!("CARGO_BIN_EXE_redctx");

/// `redctxd` next to `redctx`; built on demand when only this package was built.
pub fn redctxd() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = Path::new(REDCTX).parent().unwrap();
        let exe = dir.join("redctxd");
        if !exe.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
            let mut c = Command::new(cargo);
            c.args([
                "build",
                "-q",
                "-p",
                "redctx-daemon",
                "--bin",
                "redctxd",
                "--manifest-path",
            ])
            .arg(manifest);
            if dir.ends_with("release") {
                c.arg("--release");
            }
            let st = c.status().expect("run cargo");
            assert!(st.success(), "building redctxd failed");
        }
        exe
    })
}
