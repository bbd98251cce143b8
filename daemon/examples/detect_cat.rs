//! Dev tool: prints a file with the detector layer's findings replaced, line counts kept.
//!
//! `detect_cat --root ROOT PATH` reads `ROOT/PATH` (UTF-8, lossy), replaces every finding
//! of `engine::detect::Detector` with `[CATEGORY_<32hex>]` (HMAC-SHA256 under the fixed
//! salt `eval-salt`), re-inserts the line breaks a value spanned, and prints a
//! `--- PATH ---` header followed by the text. `--stats` prints per-detector counts to
//! stderr; `--explain` prints `line, detector, category, value` of every finding to stderr
//! (a dev aid: it shows raw values). It measures the layer alone, without the reference's
//! baseline stages (`scripts/score-detect.sh` runs the CredData scorer on it).
//! Given a directory instead of a file it benchmarks the layer: MB/s on one thread and
//! findings per MB by detector.

use redctx_daemon::engine::detect::{DetectContext, Detector};
use redctx_daemon::engine::placeholder::ordinary_placeholder;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

const SALT: &str = "eval-salt";

fn main() -> ExitCode {
    let mut root = PathBuf::from(".");
    let mut path: Option<String> = None;
    let mut stats = false;
    let mut explain = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--root" => match args.next() {
                Some(r) => root = PathBuf::from(r),
                None => return usage(),
            },
            "--stats" => stats = true,
            "--explain" => explain = true,
            _ if path.is_none() => path = Some(a),
            _ => return usage(),
        }
    }
    let Some(path) = path else { return usage() };
    if path == "--bench" || root.join(&path).is_dir() {
        return bench(
            &root.join(if path == "--bench" { "." } else { &path }),
            explain,
        );
    }
    let bytes = match std::fs::read(root.join(&path)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("detect_cat: cannot read the file: {}", e.kind());
            return ExitCode::from(2);
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let detector = Detector::new();
    let findings = detector.detect(
        &text,
        &DetectContext {
            rel_path: &path,
            prose: false,
        },
    );
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut per_detector: BTreeMap<&str, usize> = BTreeMap::new();
    for f in &findings {
        out.push_str(&text[last..f.start]);
        let value = &text[f.start..f.end];
        out.push_str(&ordinary_placeholder(SALT, f.category, value));
        for _ in value.matches('\n') {
            out.push('\n');
        }
        last = f.end;
        *per_detector.entry(f.detector).or_default() += 1;
        if explain {
            let line = text[..f.start].matches('\n').count() + 1;
            eprintln!(
                "{line}\t{}\t{}\t{}",
                f.detector,
                f.category,
                value.escape_debug()
            );
        }
    }
    out.push_str(&text[last..]);
    let mut stdout = std::io::stdout().lock();
    let written =
        writeln!(stdout, "--- {path} ---").and_then(|()| stdout.write_all(out.as_bytes()));
    if written.is_err() {
        return ExitCode::from(1);
    }
    if stats {
        for (d, n) in per_detector {
            eprintln!("{n:6} {d}");
        }
    }
    ExitCode::SUCCESS
}

/// One detector pass over `files`: findings per detector. Not inlined, so a profiler can
/// collect this function alone (`valgrind --tool=callgrind --collect-atstart=no
/// --toggle-collect='*timed_pass*'`).
#[inline(never)]
fn timed_pass(detector: &Detector, files: &[(String, String)]) -> BTreeMap<&'static str, usize> {
    one_pass(detector, files)
}

/// The untimed warm-up pass: the same work as [`timed_pass`] under another name, so a
/// profiler collecting `timed_pass` sees one steady-state pass without the one-time
/// compilation of rules and lazy automata.
#[inline(never)]
fn warm_up_pass(detector: &Detector, files: &[(String, String)]) {
    one_pass(detector, files);
}

#[inline(always)]
fn one_pass(detector: &Detector, files: &[(String, String)]) -> BTreeMap<&'static str, usize> {
    let mut per_detector: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (rel, text) in files {
        for f in detector.detect(
            text,
            &DetectContext {
                rel_path: rel,
                prose: false,
            },
        ) {
            *per_detector.entry(f.detector).or_default() += 1;
        }
    }
    per_detector
}

/// `detect_cat --root DIR .` (a directory): runs the detector over every UTF-8 file under
/// it on one thread and prints MB/s and findings per MB by detector (no file content).
/// With `--explain` it also prints every finding of every file to stderr (`path, start,
/// end, detector, category, value`, files in path order), so a change to the layer can be
/// checked for identical output over a whole corpus in one run.
fn bench(dir: &std::path::Path, explain: bool) -> ExitCode {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p)
                && let Ok(text) = String::from_utf8(bytes)
            {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                files.push((rel, text));
            }
        }
    }
    files.sort();
    let total: usize = files.iter().map(|(_, t)| t.len()).sum();
    let detector = Detector::new();
    if explain {
        let mut err = std::io::stderr().lock();
        for (rel, text) in &files {
            let ctx = DetectContext {
                rel_path: rel,
                prose: false,
            };
            for f in detector.detect(text, &ctx) {
                let value = text[f.start..f.end].escape_debug();
                let line = format!(
                    "{rel}\t{}\t{}\t{}\t{}\t{value}",
                    f.start, f.end, f.detector, f.category
                );
                if writeln!(err, "{line}").is_err() {
                    return ExitCode::from(1);
                }
            }
        }
    }
    // Warm-up: one pass over every file, so rule compilation and lazy-DFA state building
    // stay outside the timed pass (a daemon pays them once).
    warm_up_pass(&detector, &files);
    let started = std::time::Instant::now();
    let per_detector = timed_pass(&detector, &files);
    let secs = started.elapsed().as_secs_f64();
    let mb = total as f64 / 1e6;
    let n: usize = per_detector.values().sum();
    println!(
        "files={} text_mb={mb:.1} seconds={secs:.2} mb_per_s={:.1} findings={n} per_mb={:.1}",
        files.len(),
        mb / secs,
        n as f64 / mb
    );
    for (d, c) in per_detector {
        println!("{c:8} {:8.2}/MB {d}", c as f64 / mb);
    }
    ExitCode::SUCCESS
}

fn usage() -> ExitCode {
    eprintln!("usage: detect_cat [--stats] [--explain] --root ROOT PATH");
    ExitCode::from(2)
}
