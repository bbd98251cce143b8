//! The external detector client against the test detector (`tests/detectors/`): each
//! protocol failure fails closed with spec 5.12's fixed sentence, a crash or a timeout
//! replaces the process and the next call after the back-off is answered again, and the
//! findings cache asks a detector once per text and identity.

use redctx_daemon::cache::Cache;
use redctx_daemon::detectors::{ExecDetector, Findings, StartError, Timeouts};
use redctx_daemon::engine::plugged::{PluggedError, SpanSource};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/detectors/test_detector.py")
}

/// A program that runs the test detector with `args` (the daemon passes none).
fn program(dir: &Path, name: &str, args: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    let body = format!("#!/bin/sh\nexec python3 {} {args}\n", script().display());
    std::fs::write(&path, body).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn quick() -> Timeouts {
    Timeouts {
        hello: Duration::from_secs(20),
        request: Duration::from_secs(20),
        backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(1),
    }
}

fn start(args: &str, timeouts: Timeouts) -> (tempfile::TempDir, Result<ExecDetector, StartError>) {
    let dir = tempfile::tempdir().unwrap();
    let path = program(dir.path(), "detector", args);
    let started = ExecDetector::start(&path, timeouts);
    (dir, started)
}

#[test]
fn spans_come_back_at_code_point_offsets() {
    let (_dir, d) = start("--name ner --version 7", quick());
    let d = d.unwrap();
    assert_eq!(
        (d.hello().name.as_str(), d.hello().version.as_str()),
        ("ner", "7")
    );
    let spans = d.detect("é EMP-1234 and Zorblax Quux").unwrap();
    let got: Vec<(u64, u64, &str)> = spans
        .iter()
        .map(|s| (s.start, s.end, s.category.as_str()))
        .collect();
    assert_eq!(got, [(2, 10, "ID"), (15, 27, "PERSON")]);
    assert!(d.detect("nothing here").unwrap().is_empty());
}

#[test]
fn a_bad_or_missing_hello_refuses_to_start() {
    assert_eq!(
        start("--mode bad-hello", quick()).1.unwrap_err(),
        StartError::BadHello
    );
    let short = Timeouts {
        hello: Duration::from_millis(300),
        ..quick()
    };
    assert_eq!(
        start("--mode no-hello", short).1.unwrap_err(),
        StartError::HelloTimeout
    );
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(
        ExecDetector::start(&dir.path().join("missing"), quick()).unwrap_err(),
        StartError::Spawn
    );
}

#[test]
fn each_broken_answer_fails_closed_with_its_sentence() {
    let cases = [
        ("--mode bad-json", PluggedError::Failed),
        ("--mode wrong-id", PluggedError::Failed),
        ("--mode error", PluggedError::Failed),
        ("--mode crash", PluggedError::Failed),
        ("--mode bad-category", PluggedError::UnsupportedCategory),
    ];
    for (args, want) in cases {
        let (_dir, d) = start(args, quick());
        assert_eq!(d.unwrap().detect("EMP-1234").unwrap_err(), want, "{args}");
    }
    // A span past the end is well-framed: the engine refuses it (`byte_spans`), as the
    // engine test `an_external_detector_s_spans_are_checked` shows end to end.
    let (_dir, d) = start("--mode wrong-span", quick());
    let spans = d.unwrap().detect("EMP-1234").unwrap();
    assert!(spans.iter().any(|s| s.end > 8));
}

#[test]
fn a_timeout_or_crash_replaces_the_process_and_the_next_call_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("crash");
    let path = program(
        dir.path(),
        "detector",
        &format!("--crash-while {}", flag.display()),
    );
    let d = ExecDetector::start(&path, quick()).unwrap();
    assert_eq!(d.detect("EMP-1234").unwrap().len(), 1);
    std::fs::write(&flag, "").unwrap();
    assert_eq!(d.detect("EMP-1234").unwrap_err(), PluggedError::Failed);
    // Restarted, it crashes again while the flag is there.
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(d.detect("EMP-1234").unwrap_err(), PluggedError::Failed);
    std::fs::remove_file(&flag).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(d.detect("EMP-1234").unwrap().len(), 1);
    assert_eq!(d.starts(), 3);

    let slow = Timeouts {
        request: Duration::from_millis(300),
        ..quick()
    };
    let (_dir, hang) = start("--mode hang", slow);
    let hang = hang.unwrap();
    assert_eq!(hang.detect("x").unwrap_err(), PluggedError::Failed);
    assert_eq!(hang.starts(), 1);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(hang.detect("x").unwrap_err(), PluggedError::Failed);
    assert_eq!(hang.starts(), 2, "the hung process was replaced");
}

#[test]
fn while_backing_off_calls_fail_without_a_restart() {
    let long = Timeouts {
        backoff: Duration::from_secs(600),
        max_backoff: Duration::from_secs(600),
        ..quick()
    };
    let (_dir, d) = start("--mode crash", long);
    let d = d.unwrap();
    assert_eq!(d.detect("a").unwrap_err(), PluggedError::Failed);
    assert_eq!(d.detect("a").unwrap_err(), PluggedError::Failed);
    assert_eq!(d.starts(), 1);
}

#[test]
fn findings_are_asked_once_per_text_and_identity() {
    let dir = tempfile::tempdir().unwrap();
    let count = dir.path().join("count");
    let state = dir.path().join("state");
    let cache = Arc::new(Cache::open(&state).unwrap());
    let calls = || {
        std::fs::read_to_string(&count)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let v1 = program(
        dir.path(),
        "v1",
        &format!("--version 1 --count-file {}", count.display()),
    );
    let v2 = program(
        dir.path(),
        "v2",
        &format!("--version 2 --count-file {}", count.display()),
    );
    let d1 = Arc::new(ExecDetector::start(&v1, quick()).unwrap());
    let f1 = Findings::new(d1.clone(), "/opt/ner", Some(cache.clone()), "salt");
    let first = f1.spans("EMP-1234 here").unwrap();
    assert_eq!(f1.spans("EMP-1234 here").unwrap(), first);
    assert_eq!(calls(), 1);
    // Another policy (salt) hashes texts differently: asked again.
    let other = Findings::new(d1, "/opt/ner", Some(cache.clone()), "salt2");
    other.spans("EMP-1234 here").unwrap();
    assert_eq!(calls(), 2);
    // A new version misses every entry.
    let d2 = Arc::new(ExecDetector::start(&v2, quick()).unwrap());
    let f2 = Findings::new(d2, "/opt/ner", Some(cache.clone()), "salt");
    f2.spans("EMP-1234 here").unwrap();
    assert_eq!(calls(), 3);
    // Committed and read back from the database after a reopen.
    cache.shutdown();
    drop((f1, f2, other, cache));
    let cache = Arc::new(Cache::open(&state).unwrap());
    let d1 = Arc::new(ExecDetector::start(&v1, quick()).unwrap());
    let again = Findings::new(d1, "/opt/ner", Some(cache), "salt");
    assert_eq!(again.spans("EMP-1234 here").unwrap(), first);
    assert_eq!(calls(), 3);
}
