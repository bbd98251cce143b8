//! `redctx status --wait` on a generated 50,000-file monorepo, as a script sees it (stdout
//! is not a terminal): plain progress lines while the daemon indexes, then one ready line.
//!
//! The tree comes from the shared generator (`gen_monorepo.py`, deterministic for its
//! arguments) with `--size-scale 0.05`: the file count is what this test is about, and
//! small files keep generation (about 8 s of CPU) and indexing (about 11 s in a debug
//! build) inside a CI minute on two cores. One test function owns the tree, so it is
//! generated once per run and removed afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;

const FILES: usize = 50_000;

/// `gen_monorepo.py`: `REDCTX_GEN_MONOREPO`, else `shared/tools/` beside the checkout
/// (CI), else `/work/shared/tools/` (development machines).
fn generator() -> PathBuf {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/gen_monorepo.py");
    let found = std::env::var_os("REDCTX_GEN_MONOREPO")
        .map(PathBuf::from)
        .into_iter()
        .chain([beside, PathBuf::from("/work/shared/tools/gen_monorepo.py")])
        .find(|p| p.is_file());
    found.expect("gen_monorepo.py not found; set REDCTX_GEN_MONOREPO to its path")
}

/// One parsed `--wait` line.
#[derive(Debug, PartialEq)]
enum Line {
    Indexing { done: u64, total: Option<u64> },
    Ready(u64),
}

fn parse(line: &str) -> Option<Line> {
    if let Some(n) = line.strip_prefix("ready: ") {
        return Some(Line::Ready(n.strip_suffix(" files")?.parse().ok()?));
    }
    let rest = line.strip_prefix("indexing: ")?;
    if let Some(n) = rest.strip_suffix(" files so far") {
        return Some(Line::Indexing {
            done: n.parse().ok()?,
            total: None,
        });
    }
    let (counts, percent) = rest.split_once(" files (")?;
    let (done, total) = counts.split_once('/')?;
    let (done, total): (u64, u64) = (done.parse().ok()?, total.parse().ok()?);
    let percent: f64 = percent.strip_suffix("%)")?.parse().ok()?;
    // The percentage is the one the counts give, to one decimal.
    let want = format!("{:.1}", done as f64 * 100.0 / total as f64);
    (format!("{percent:.1}") == want).then_some(Line::Indexing {
        done,
        total: Some(total),
    })
}

#[test]
fn status_wait_on_a_50k_file_monorepo_prints_progress_then_ready() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("mono50k");
    let st = Command::new("python3")
        .arg(generator())
        .arg("--out")
        .arg(&root)
        .args([
            "--files",
            &FILES.to_string(),
            "--seed",
            "1",
            "--size-scale",
            "0.05",
        ])
        .arg("--manifest")
        .arg(work.path().join("manifest.json"))
        .stdout(Stdio::null())
        .status()
        .expect("run python3");
    assert!(st.success(), "gen_monorepo.py failed");

    let state = work.path().join("state");
    let redctx = |args: &[&str]| {
        let o = Command::new(common::REDCTX)
            .args(args)
            .env("REDCTX_STATE_DIR", &state)
            .env("REDCTX_SOCKET", state.join("d.sock"))
            .env("REDCTX_DAEMON", common::redctxd())
            .env("REDACTED_CONTEXT_STATE_DIR", work.path().join("vault"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            o.status.code().unwrap_or(-1),
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let root_arg = root.to_str().unwrap();

    let (code, out, err) = redctx(&["status", "--root", root_arg, "--wait"]);
    let stop = redctx(&["daemon", "stop"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(stop.0, 0, "{}", stop.2);
    let lines: Vec<Line> = out
        .lines()
        .map(|l| parse(l).unwrap_or_else(|| panic!("unexpected --wait line {l:?} in\n{out}")))
        .collect();
    let (last, progress) = lines.split_last().expect("some output");
    let Line::Ready(ready) = *last else {
        panic!("the last line is not the ready line:\n{out}")
    };
    // Every regular file the generator wrote outside git-ignored places is indexed
    // (ignored files, `.env` files and the like are not served).
    assert!(ready > 40_000 && ready <= FILES as u64, "{out}");
    // The first poll comes right after the metadata walk, long before 50k files are
    // redacted, so progress is always shown; it only moves forward and counts toward
    // the same total the ready line reports.
    assert!(!progress.is_empty(), "no progress line:\n{out}");
    let mut before = 0;
    for p in progress {
        let Line::Indexing { done, total } = *p else {
            panic!("ready before the end:\n{out}")
        };
        assert!(done >= before && done <= ready, "{out}");
        assert!(total.is_none_or(|t| t == ready), "{out}");
        before = done;
    }
    assert!(
        matches!(progress[0], Line::Indexing { done, .. } if done < ready),
        "{out}"
    );
}
