//! What the test suites of every redctx crate share. Test code only: no crate depends on
//! it outside `[dev-dependencies]`.
//!
//! Where the reference oracle (redacted-context-mcp 0.10.1) is: every differential test
//! finds it here, the same way, so none can pass silently without it. Also a seeded
//! random generator for tests that generate inputs, and builders of small documents
//! (`documents`).

use std::path::{Path, PathBuf};

/// The workspace root (where `Cargo.toml`, `scripts/` and `.venv-oracle/` live).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("test-support lives in the workspace")
        .to_path_buf()
}

/// The reference oracle of this run.
#[derive(Clone, Debug)]
pub enum Oracle {
    /// The `bin` directory of a venv with the reference installed.
    Ready(PathBuf),
    /// `REDCTX_SKIP_ORACLE=1`: the caller says SKIPPED out loud and returns. Only for
    /// local runs (the README says so); CI installs the oracle.
    Skipped,
}

impl Oracle {
    /// Finds the oracle: `REDCTX_ORACLE_PYTHON` names the venv's Python, else
    /// `<repo>/.venv-oracle/bin/python` (made by `scripts/setup-oracle.sh`). Panics with
    /// the fix when it is missing and not skipped: a differential test never passes
    /// without its oracle.
    pub fn find() -> Oracle {
        Oracle::locate().unwrap_or_else(|message| panic!("{message}"))
    }

    /// [`Oracle::find`], with a missing oracle as the message that says how to install
    /// it (for benches, which report instead of failing).
    pub fn locate() -> Result<Oracle, String> {
        if std::env::var("REDCTX_SKIP_ORACLE").as_deref() == Ok("1") {
            return Ok(Oracle::Skipped);
        }
        let python = match std::env::var_os("REDCTX_ORACLE_PYTHON") {
            Some(path) => PathBuf::from(path),
            None => repo_root().join(".venv-oracle/bin/python"),
        };
        if !python.is_file() {
            return Err(format!(
                "reference oracle not found at {}: run `scripts/setup-oracle.sh` (or set \
                 REDCTX_ORACLE_PYTHON to the Python of a venv with redacted-context-mcp==0.10.1, \
                 or REDCTX_SKIP_ORACLE=1 to skip locally)",
                python.display()
            ));
        }
        Ok(Oracle::Ready(
            python.parent().unwrap_or(Path::new("/")).to_path_buf(),
        ))
    }

    /// The venv's Python, or `None` when skipped.
    pub fn python(&self) -> Option<PathBuf> {
        self.program("python")
    }

    /// One of the reference's commands (`redctx`, `redctx-mcp`) in the venv, or `None`
    /// when skipped. Panics with the fix when the venv lacks it.
    pub fn program(&self, name: &str) -> Option<PathBuf> {
        match self {
            Oracle::Skipped => None,
            Oracle::Ready(bin) => {
                let path = bin.join(name);
                assert!(
                    path.is_file(),
                    "the oracle venv has no {name} at {}: run `scripts/setup-oracle.sh`",
                    path.display()
                );
                Some(path)
            }
        }
    }
}

impl Oracle {
    /// The reference's `redctx` with its `documents` extra (MarkItDown and the format
    /// libraries) from `<repo>/.venv-documents` (made by `scripts/setup-oracle.sh`; a
    /// venv of its own, so the main oracle stays the bare package), or `None` when the
    /// oracle is skipped. Panics with the fix when it is missing.
    pub fn documents() -> Option<PathBuf> {
        if let Oracle::Skipped = Oracle::find() {
            return None;
        }
        let program = repo_root().join(".venv-documents/bin/redctx");
        assert!(
            program.is_file(),
            "the documents oracle is missing at {}: run `scripts/setup-oracle.sh`",
            program.display()
        );
        Some(program)
    }
}

pub mod documents;

/// xorshift64*: a small deterministic generator, so every run of a test that generates
/// trees, queries or arguments sees the same ones (seed it with a non-zero constant).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
