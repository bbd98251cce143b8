//! Dev tool: prints a file with the detector layer's findings replaced, line counts kept.
//!
//! `detect_cat --root ROOT PATH` reads `ROOT/PATH` (UTF-8, lossy), replaces every finding
//! of `engine::detect::Detector` with `[CATEGORY_<32hex>]` (HMAC-SHA256 under the fixed
//! salt `eval-salt`), re-inserts the line breaks a value spanned, and prints a
//! `--- PATH ---` header followed by the text. `--stats` prints per-detector counts to
//! stderr; `--explain` prints `line, detector, category, value` of every finding to stderr
//! (a dev aid: it shows raw values). It measures the layer alone, without the reference's
//! baseline stages (`scripts/score-detect.sh` runs the CredData scorer on it).

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

fn usage() -> ExitCode {
    eprintln!("usage: detect_cat [--stats] [--explain] --root ROOT PATH");
    ExitCode::from(2)
}
