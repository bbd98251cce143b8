//! Dev tool: phase timings of serving a root from a state dir (cache open, stat-only
//! walk, indexing pass), for profiling warm restarts without the socket layer.
//!
//! `cargo run --release -p redctx-daemon --example index_probe -- <root> <state dir>
//! [config] [vault dir]`; run twice on the same state dir to see a warm restart.

use redctx_daemon::cache::Cache;
use redctx_daemon::engine::Engine;
use redctx_daemon::engine::config::EnvOverrides;
use redctx_daemon::policy_loader::PolicySource;
use redctx_daemon::root::{RootOptions, ServedRoot};
use redctx_daemon::view::RootView;
use redctx_daemon::watch::Watcher;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// CPU seconds (user + system) this process used so far, all threads.
fn cpu() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Peak resident memory of this process so far, MB (`VmHWM`).
fn peak_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let (Some(root), Some(state)) = (args.first(), args.get(1)) else {
        eprintln!("usage: index_probe <root> <state dir> [config] [vault dir]");
        std::process::exit(2);
    };
    if std::env::var("REDCTX_PROBE_LOG").is_ok() {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .init();
    }
    let env = EnvOverrides {
        state_dir: Some(args.get(3).cloned().unwrap_or_else(|| state.join("vault"))),
        ..EnvOverrides::default()
    };
    let t = Instant::now();
    let source = PolicySource::new(root, args.get(2).map(PathBuf::as_path), None, env, &[])
        .expect("policy source");
    let (policy, _) = source.load().expect("policy");
    let engine = Arc::new(Engine::new(Arc::new(policy)).expect("engine"));
    let policy_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let cache = Arc::new(Cache::open(state).expect("cache"));
    let open_s = t.elapsed().as_secs_f64();
    let (t, c) = (Instant::now(), cpu());
    let mut options = RootOptions::default();
    if std::env::var("REDCTX_PROBE_LIFT_CAPS").is_ok() {
        options.limits.max_total_raw_bytes = 1 << 40;
        options.limits.max_traversal_entries = 1 << 30;
    }
    let served = ServedRoot::open(root, engine, Some(cache.clone()), options).expect("serve");
    let walk_s = t.elapsed().as_secs_f64();
    let walk_cpu = cpu() - c;
    let (t, c) = (Instant::now(), cpu());
    served.index_all();
    let pass_s = t.elapsed().as_secs_f64();
    let pass_cpu = cpu() - c;
    let t = Instant::now();
    cache.flush();
    let flush_s = t.elapsed().as_secs_f64();
    let served = Arc::new(served);
    let (t, c) = (Instant::now(), cpu());
    let watcher = Watcher::start(served.clone(), Vec::new(), || {}).expect("watcher");
    let watch_s = t.elapsed().as_secs_f64();
    let watch_cpu = cpu() - c;
    let watches = watcher.stats().watches_used;
    let p = served.progress();
    println!(
        "policy {policy_s:.3}s cache-open {open_s:.3}s walk {walk_s:.3}s (cpu {walk_cpu:.3}s) \
         pass {pass_s:.3}s (cpu {pass_cpu:.3}s) flush {flush_s:.3}s \
         watch {watch_s:.3}s (cpu {watch_cpu:.3}s, {watches} dirs); \
         files {} read {} indexed {} skipped {} failed {}",
        p.files_seen, p.files_read, p.files_indexed, p.files_skipped, p.files_failed
    );
    // Searches below walk after a sync with the watcher once it vouches for the index
    // (REDCTX_PROBE_NO_WATCH: without it, stat'ing every file as before).
    let t = Instant::now();
    while !watcher.stats().started {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    println!(
        "watcher started after {:.3}s, synced walks: {}",
        t.elapsed().as_secs_f64(),
        watcher.stats().synced_walks
    );
    let watcher = std::env::var("REDCTX_PROBE_NO_WATCH")
        .is_err()
        .then_some(watcher);
    // REDCTX_PROBE_RETRIEVE=query: whole-root retrieve with the passage index (built
    // first, unless a stored one was loaded) and without it.
    if let Ok(query) = std::env::var("REDCTX_PROBE_RETRIEVE") {
        let args = redctx_daemon::tools::RetrieveArgs {
            query,
            ..Default::default()
        };
        let stop = redctx_daemon::cancel::Stop::never;
        let index = served.search_index();
        {
            let (t, c, before) = (Instant::now(), cpu(), peak_mb());
            served.build_passages();
            println!(
                "passage index built in {:.1} s (cpu {:.1} s), peak RSS before {before:.0} MB, after {:.0} MB",
                t.elapsed().as_secs_f64(),
                cpu() - c,
                peak_mb()
            );
        }
        let mut answers = Vec::new();
        // REDCTX_PROBE_NO_SCAN: indexed calls only (ten), for profiling them.
        let labels: &[&str] = if std::env::var("REDCTX_PROBE_NO_SCAN").is_ok() {
            &["with index"; 40]
        } else {
            &["with index, first call", "with index, second call", "scan"]
        };
        for &label in labels {
            if label == "scan" {
                served.set_search_index(None);
            }
            let t = Instant::now();
            let out = redctx_daemon::tools::retrieve(&*served, &args, &stop());
            println!(
                "retrieve {label}: {:.1} ms, {} lines",
                t.elapsed().as_secs_f64() * 1e3,
                out.text.lines().count()
            );
            answers.push(out.text);
        }
        served.set_search_index(index);
        assert!(
            answers.windows(2).all(|w| w[0] == w[1]),
            "retrieve answers differ"
        );
    }
    // REDCTX_PROBE_SEARCH=query: whole-root search with the search index and without it
    // (best of 5 each), the files it ruled out and its size in the database.
    if let Ok(query) = std::env::var("REDCTX_PROBE_SEARCH") {
        let args = redctx_daemon::tools::SearchArgs {
            query,
            regex: std::env::var("REDCTX_PROBE_REGEX").is_ok(),
            ..Default::default()
        };
        let stop = redctx_daemon::cancel::Stop::never;
        let index = served.search_index();
        let time = |label: &str| {
            let before = served
                .counters()
                .screened_out
                .load(std::sync::atomic::Ordering::Relaxed);
            let mut best = f64::MAX;
            let mut out = String::new();
            let rounds: usize = std::env::var("REDCTX_PROBE_ROUNDS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(5);
            for _ in 0..rounds {
                let t = Instant::now();
                out = redctx_daemon::tools::search(&*served, &args, &stop()).text;
                best = best.min(t.elapsed().as_secs_f64() * 1e3);
            }
            let after = served
                .counters()
                .screened_out
                .load(std::sync::atomic::Ordering::Relaxed);
            println!(
                "search {label}: best {best:.1} ms, {} lines, ruled out {} files per call",
                out.lines().count(),
                (after - before) / rounds as u64
            );
            out
        };
        let indexed = time("with index");
        if std::env::var("REDCTX_PROBE_INDEX_ONLY").is_ok() {
            return;
        }
        served.set_search_index(None);
        let scanned = time("scan");
        served.set_search_index(index.clone());
        assert_eq!(indexed, scanned, "indexed and scanned answers differ");
        let root_key = redctx_daemon::cache::root_key(served.root());
        println!(
            "search index: {} files, {:.1} MB in the database",
            index.map_or(0, |i| i.len()),
            cache
                .gram_bytes(
                    &root_key,
                    &redctx_daemon::cache::policy_fingerprint(served.engine().policy())
                )
                .map_or(0, |b| b.total()) as f64
                / 1e6
        );
    }
    // REDCTX_PROBE_FILE=rel: time redacting one file a few times in a row (first-use cost
    // against steady state).
    if let Ok(rel) = std::env::var("REDCTX_PROBE_FILE") {
        let text = std::fs::read_to_string(served.root().join(&rel)).expect("read");

        for round in 0..3 {
            let t = Instant::now();
            let out = served
                .engine()
                .redact(
                    &text,
                    redctx_daemon::engine::RedactOptions {
                        preserve_line_count: true,
                        prose: false,
                        path: &rel,
                    },
                )
                .expect("redact");
            println!(
                "redact {rel} round {round}: {:.2} ms ({} bytes out)",
                t.elapsed().as_secs_f64() * 1e3,
                out.text.len()
            );
        }
    }
    // REDCTX_PROBE_EDITS=N: the bench's in-process re-redaction of N edited `.py` files,
    // printing the slow ones.
    let edits: usize = std::env::var("REDCTX_PROBE_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if let Some(edits) = std::num::NonZeroUsize::new(edits) {
        let mut py: Vec<String> = served
            .index()
            .files()
            .into_iter()
            .map(|(rel, _)| rel)
            .filter(|r| r.ends_with(".py"))
            .collect();
        py.sort();
        let step = (py.len() / edits).max(1);
        let edits = edits.get();
        let mut times = Vec::new();
        for (i, rel) in py.iter().step_by(step).take(edits).enumerate() {
            let path = served.root().join(rel);
            let original = std::fs::read(&path).unwrap();
            let mut edited = original.clone();
            edited.extend_from_slice(format!("\n# in-process edit {i}\n").as_bytes());
            std::fs::write(&path, &edited).unwrap();
            let t = Instant::now();
            served.upsert(rel);
            let t1 = t.elapsed().as_secs_f64() * 1e3;
            let entry = served.resolve(rel).expect("resolve");
            let t2 = t.elapsed().as_secs_f64() * 1e3;
            served.content(&entry, true).expect("content");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if ms > 3.0 {
                println!(
                    "edit {i}: {ms:.2} ms (upsert {t1:.2}, resolve {:.2}), {} bytes",
                    t2 - t1,
                    original.len()
                );
            }
            times.push(ms);
            std::fs::write(&path, &original).unwrap();
        }
        times.sort_by(f64::total_cmp);
        println!(
            "edits: p50 {:.2} ms, max {:.2} ms",
            times[times.len() / 2],
            times[times.len() - 1]
        );
    }
    drop(watcher);
}
