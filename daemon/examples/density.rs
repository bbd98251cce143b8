//! Dev tool: how many placeholders the whole engine puts into ordinary code, per MB.
//!
//! `density [--mode code|balanced|strict] [--no-detectors] [--exclude PREFIX]... ROOT`
//! walks ROOT (skipping `.git`, `target`, `node_modules` and every root-relative PREFIX
//! given), redacts each UTF-8 text file once with an empty policy (no configured terms,
//! so every placeholder comes from a built-in stage or detector), and prints MB scanned,
//! placeholders per MB by category, and the files with the most placeholders. It reads no
//! config and writes nothing; it is how README's "redactions per MB" figure is measured.

use redctx_daemon::engine::{Engine, Mode, Policy, RedactOptions};
use redctx_daemon::fs::is_prose_path;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut mode, mut detectors, mut excludes, mut root) = (Mode::Code, true, Vec::new(), None);
    let mut exts: Vec<String> = Vec::new();
    let mut show = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--mode" => mode = Mode::parse(&args.next().expect("--mode M")).expect("mode"),
            "--no-detectors" => detectors = false,
            "--exclude" => excludes.push(args.next().expect("--exclude PREFIX")),
            "--ext" => exts.push(args.next().expect("--ext EXT")),
            // Dev aid: print every redacted line (redacted text only, never raw values).
            "--show" => show = true,
            _ => root = Some(a),
        }
    }
    let root = root
        .expect("usage: density [--mode M] [--no-detectors] [--exclude P]... [--ext E]... ROOT");
    let policy = Policy {
        salt: "density-salt".to_owned(),
        mode,
        detectors,
        ..Policy::default()
    };
    let engine = Engine::new(Arc::new(policy)).expect("engine");
    let mut files = Vec::new();
    walk(Path::new(&root), "", &excludes, &mut files);
    files.sort();
    let (mut bytes, mut total, mut nfiles) = (0usize, 0u64, 0usize);
    let mut by_cat: BTreeMap<String, u64> = BTreeMap::new();
    let mut worst: Vec<(u64, String)> = Vec::new();
    for rel in files {
        if !exts.is_empty() && !exts.iter().any(|e| rel.ends_with(&format!(".{e}"))) {
            continue;
        }
        let Ok(raw) = std::fs::read(Path::new(&root).join(&rel)) else {
            continue;
        };
        let Ok(text) = String::from_utf8(raw) else {
            continue;
        };
        if text.contains('\0') {
            continue;
        }
        let out = engine
            .redact(
                &text,
                RedactOptions {
                    preserve_line_count: true,
                    prose: is_prose_path(&rel),
                    path: &rel,
                },
            )
            .expect("redact");
        let n: u64 = out.counts.0.values().sum();
        if show && n > 0 {
            for (i, line) in out.text.lines().enumerate() {
                if line.contains("_")
                    && line.contains('[')
                    && redctx_daemon::engine::placeholder::PLACEHOLDER_RE.is_match(line)
                {
                    println!("{rel}:{}: {}", i + 1, line.trim());
                }
            }
        }
        for (c, k) in &out.counts.0 {
            *by_cat.entry(c.as_str().to_owned()).or_default() += k;
        }
        bytes += text.len();
        total += n;
        nfiles += 1;
        if n > 0 {
            worst.push((n, rel));
        }
    }
    let mb = bytes as f64 / 1_000_000.0;
    println!(
        "{nfiles} files, {mb:.2} MB, {total} placeholders, {:.1} per MB",
        total as f64 / mb.max(1e-9)
    );
    for (c, k) in &by_cat {
        println!("  {c:<10} {k:>6}  {:>7.1}/MB", *k as f64 / mb.max(1e-9));
    }
    worst.sort_by(|a, b| b.cmp(a));
    for (n, rel) in worst.iter().take(12) {
        println!("  {n:>5}  {rel}");
    }
}

fn walk(root: &Path, rel: &str, excludes: &[String], out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(rel)) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if excludes.iter().any(|p| child.starts_with(p.as_str())) {
            continue;
        }
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            if ![".git", "target", "node_modules", ".venv-oracle"].contains(&name.as_str()) {
                walk(root, &child, excludes, out);
            }
        } else if ft.is_file() {
            out.push(child);
        }
    }
}
