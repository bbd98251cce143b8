//! Dev tool: redact one file with the engine alone (no daemon, no cache) and print it as
//! `redctx cat` would. Used to score the detector layer with `shared/eval`.
//! Usage: engine_cat --root DIR [--mode code|balanced|strict] [--config FILE] PATH
//! (`--config` names a config file outside the root, e.g. one with `detectors = false`).
//! A PATH that is a directory prints every file under it, in path order (for comparing
//! the whole output of two builds). Files that fail the daemon's text sniff are skipped.
use redctx_daemon::engine::config::EnvOverrides;
use redctx_daemon::engine::{Engine, Mode, RedactOptions};
use redctx_daemon::fs::is_prose_path;
use redctx_daemon::policy_loader::load_policy;
use std::path::PathBuf;
use std::sync::Arc;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut root, mut mode, mut path) = (PathBuf::from("."), Mode::Code, String::new());
    let mut config: Option<PathBuf> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--root" => root = PathBuf::from(args.next().expect("--root DIR")),
            "--mode" => mode = Mode::parse(&args.next().expect("--mode M")).expect("mode"),
            "--config" => config = Some(PathBuf::from(args.next().expect("--config FILE"))),
            _ => path = a,
        }
    }
    let (policy, _) = match load_policy(
        &root,
        config.as_deref(),
        Some(mode),
        &EnvOverrides::from_process_env(),
    ) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let engine = Engine::new(Arc::new(policy)).expect("engine");
    let mut paths = Vec::new();
    collect(&root, &path, &mut paths);
    for path in paths {
        cat(&engine, &root, &path);
    }
}

/// `rel` itself when it is a file, else every file under it, sorted.
fn collect(root: &std::path::Path, rel: &str, out: &mut Vec<String>) {
    let full = root.join(rel);
    if !full.is_dir() {
        out.push(rel.to_owned());
        return;
    }
    let mut names: Vec<String> = std::fs::read_dir(&full)
        .expect("read dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        let child = if rel.is_empty() || rel == "." {
            name
        } else {
            format!("{rel}/{name}")
        };
        collect(root, &child, out);
    }
}

fn cat(engine: &Engine, root: &std::path::Path, path: &str) {
    let bytes = std::fs::read(root.join(path)).expect("read");
    // As the daemon: a file that fails the text sniff is not read as text (its bytes
    // may even fill every marker block, which the engine refuses).
    use redctx_daemon::fs::content::{self, Decoding};
    let decoding = Decoding::for_mode(engine.policy().mode);
    let Some(encoding) = content::text_encoding(&bytes, decoding) else {
        eprintln!("engine_cat: skipped, not text: {}", engine.path_id(path));
        return;
    };
    let text = decoding.decode(&bytes, encoding);
    let out = engine
        .redact(
            &text,
            RedactOptions {
                preserve_line_count: true,
                prose: is_prose_path(path),
                path,
            },
        )
        .expect("redact");
    let rpath = engine.redact_path(path).expect("path");
    let n = redctx_daemon::engine::python::text::splitlines(&out.text, false).len();
    print!(
        "--- {} {} lines 1-{} ---\n{}",
        engine.path_id(path),
        rpath.text,
        n,
        out.text
    );
    if !out.text.ends_with('\n') && !out.text.is_empty() {
        println!();
    }
}
