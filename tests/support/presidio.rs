//! The Presidio adapter (`adapters/presidio/`) as a program the daemon can start: a
//! wrapper script over `.venv-presidio` (scripts/setup-presidio.sh, run by
//! scripts/setup-clients.sh). A real spaCy model installed there is preferred; otherwise
//! the blank pipeline the set-up packages, so Presidio's pattern recognisers run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A wrapper that runs the adapter with the venv's best model, written into `dir`, or
/// `None` when `REDCTX_SKIP_CLIENTS=1`. Panics with the set-up instruction when the venv
/// is missing: CI must run these tests.
pub fn adapter(dir: &Path) -> Option<PathBuf> {
    if std::env::var("REDCTX_SKIP_CLIENTS").as_deref() == Ok("1") {
        println!("SKIPPED: REDCTX_SKIP_CLIENTS=1 (Presidio adapter)");
        return None;
    }
    let python = repo().join(".venv-presidio/bin/python");
    let probe = Command::new(&python)
        .args([
            "-c",
            "import presidio_analyzer, spacy\n\
             for m in ('en_core_web_lg', 'en_core_web_sm', 'en_redctx_blank'):\n\
             \x20   if spacy.util.is_package(m):\n\
             \x20       print(m); break",
        ])
        .output();
    let model = match probe {
        Ok(out) if out.status.success() && !out.stdout.is_empty() => {
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        }
        _ => panic!(
            "Presidio is not installed in .venv-presidio: run scripts/setup-clients.sh \
             (or set REDCTX_SKIP_CLIENTS=1 to skip these tests locally)"
        ),
    };
    let path = dir.join("redctx-presidio");
    let script = repo().join("adapters/presidio/redctx_presidio.py");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nexec {} {} --model {model}\n",
            python.display(),
            script.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(path)
}
