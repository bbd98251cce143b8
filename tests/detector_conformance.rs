//! The conformance suite third parties run on their detectors
//! (`scripts/detector_conformance.py`), run here against the test detector (it must
//! pass), against broken ones (it must fail), and against the Presidio adapter
//! (`.venv-presidio`, installed by scripts/setup-clients.sh).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A wrapper program that runs `command` (the daemon starts programs without arguments).
fn wrapper(dir: &Path, name: &str, command: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nexec {command}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn conformance(program: &Path, extra: &[&str]) -> (bool, String) {
    let out = Command::new("python3")
        .arg(repo().join("scripts/detector_conformance.py"))
        .args(["--deadline", "60"])
        .args(extra)
        .arg(program)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), text)
}

#[test]
fn the_test_detector_conforms_and_broken_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let script = repo().join("tests/detectors/test_detector.py");
    let good = wrapper(dir.path(), "good", &format!("python3 {}", script.display()));
    let (ok, out) = conformance(&good, &["--expect", "see EMP-1234 now", "EMP-1234"]);
    assert!(ok, "{out}");
    assert!(out.ends_with("conformant\n"), "{out}");
    for (mode, failing) in [
        ("bad-hello", "FAIL hello"),
        ("wrong-span", "FAIL text 2 of 4: invalid span"),
        ("bad-category", "unsupported category"),
        ("wrong-id", "answer carries id"),
        ("crash", "closed stdout"),
    ] {
        let bad = wrapper(
            dir.path(),
            mode,
            &format!("python3 {} --mode {mode}", script.display()),
        );
        let (ok, out) = conformance(&bad, &[]);
        assert!(!ok && out.contains(failing), "{mode}: {out}");
    }
}

#[test]
fn the_presidio_adapter_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = support::presidio::adapter(dir.path()) else {
        return;
    };
    // Pattern recognisers, so the blank pipeline of CI finds them too.
    let (ok, out) = conformance(
        &program,
        &[
            "--expect",
            "Please email ana@example.org today.",
            "ana@example.org",
            "--expect",
            "The card 4111 1111 1111 1111 is on file.",
            "4111 1111 1111 1111",
        ],
    );
    assert!(ok, "{out}");
    assert!(out.contains("ok   hello (presidio "), "{out}");
    assert!(out.ends_with("conformant\n"), "{out}");
}
