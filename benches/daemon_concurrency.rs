//! Many agent sessions on one daemon while files change and the daemon is killed: the
//! availability and isolation figures of the hardening issue.
//!
//! Run: `cargo bench --bench daemon_concurrency` (about 30 s). Settings (environment):
//! `REDCTX_BENCH_SESSIONS` (32, split over two roots), `REDCTX_BENCH_SECONDS` (20; the
//! daemon is killed with SIGKILL halfway), `REDCTX_BENCH_FILES` (300 per root).
//!
//! 1. Two roots, each with its own marker word in every file and every file name
//!    (`alphaside` / `bravoside`), `src/` files that never change and `hot/` files that a
//!    writer per root replaces (write to a temporary name, rename over) about every
//!    10 ms, each time with the next version number.
//! 2. `REDCTX_BENCH_SESSIONS` real `redctx mcp` shims (rmcp clients), half per root, all
//!    started at once against one private daemon, each looping until the end: read a
//!    `src/` file, read a `hot/` file, search `hot/` for `version`, list `hot/`.
//! 3. Halfway, the daemon is killed with SIGKILL; the shims start a new one.
//!
//! Checked on every answer and printed:
//! - failed calls, inside and outside the restart window (from the kill to the first
//!   successful answer after it, plus one second); the target is 0 outside;
//! - cross-root answers (an answer on one root holding the other root's marker, or a read
//!   missing its own); target 0;
//! - stale reads: a `hot/` file read or found by search with a version older than the
//!   last one whose rename had completed before the call was sent; target 0;
//! - p50/p99 of the round trip per call kind, outside the window.
//!
//! Figures are printed with their targets, never asserted: the correctness of each
//! piece is asserted by the tests (`tests/hardening.rs`, `client/tests/mcp.rs`).

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::Env;

const HOT_FILES: usize = 8;

/// One root of the run: its marker and the other root's.
#[derive(Clone)]
struct Side {
    path: PathBuf,
    mine: &'static str,
    other: &'static str,
    files: usize,
    /// Last version of each hot file whose rename has completed.
    versions: Arc<Vec<AtomicU64>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    ReadSrc,
    ReadHot,
    SearchHot,
    ListHot,
}

/// One call as the client saw it.
struct Sample {
    kind: Kind,
    sent: Instant,
    took: Duration,
    failed: bool,
    /// The error text of a failed call (a tool error or the client's protocol error).
    error: Option<String>,
    cross_root: bool,
    stale: bool,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn hot_text(side: &Side, k: usize, version: u64) -> String {
    format!(
        "{} hot file {k}\nversion {version} of hot {k}\n{}\n",
        side.mine,
        "filler words for a few hundred bytes of text ".repeat(8)
    )
}

fn make_side(env: &Env, name: &str, mine: &'static str, other: &'static str, files: usize) -> Side {
    let path = env.root_dir("concurrency", name);
    let versions: Vec<AtomicU64> = (0..HOT_FILES).map(|_| AtomicU64::new(0)).collect();
    let side = Side {
        path,
        mine,
        other,
        files,
        versions: Arc::new(versions),
    };
    std::fs::create_dir_all(side.path.join("src")).unwrap();
    std::fs::create_dir_all(side.path.join("hot")).unwrap();
    for i in 0..files {
        std::fs::write(
            side.path.join(format!("src/{mine}_{i:04}.txt")),
            format!("{mine} source {i}\nnothing changes here\n"),
        )
        .unwrap();
    }
    for k in 0..HOT_FILES {
        std::fs::write(
            side.path.join(format!("hot/h{k}.txt")),
            hot_text(&side, k, 0),
        )
        .unwrap();
    }
    side
}

/// Replaces hot files in turn until `stop`, recording each completed version.
fn writer(side: Side, stop: Arc<AtomicBool>) -> u64 {
    let mut writes = 0u64;
    let mut k = 0;
    while !stop.load(Ordering::Relaxed) {
        let version = side.versions[k].load(Ordering::SeqCst) + 1;
        let tmp = side.path.join(format!("hot/.h{k}.tmp"));
        std::fs::write(&tmp, hot_text(&side, k, version)).unwrap();
        std::fs::rename(&tmp, side.path.join(format!("hot/h{k}.txt"))).unwrap();
        side.versions[k].store(version, Ordering::SeqCst);
        writes += 1;
        k = (k + 1) % HOT_FILES;
        std::thread::sleep(Duration::from_millis(10));
    }
    writes
}

/// `(hot file, version)` pairs an answer shows (`version V of hot K`).
fn versions_in(text: &str) -> Vec<(usize, u64)> {
    text.split("version ")
        .skip(1)
        .filter_map(|rest| {
            let mut words = rest.split_whitespace();
            let version = words.next()?.parse().ok()?;
            let _of = words.next()?;
            let _hot = words.next()?;
            let k = words.next()?.trim_end_matches(':').parse().ok()?;
            Some((k, version))
        })
        .collect()
}

async fn session(env: Arc<Env>, side: Side, seed: u64, until: Instant) -> Vec<Sample> {
    let client = env.client(&side.path, &[]).await;
    let mut samples = Vec::new();
    let mut state = seed | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let kinds = [Kind::ReadSrc, Kind::ReadHot, Kind::SearchHot, Kind::ListHot];
    while Instant::now() < until {
        let kind = kinds[(next() % 4) as usize];
        let hot = (next() % HOT_FILES as u64) as usize;
        let floor: Vec<u64> = side
            .versions
            .iter()
            .map(|v| v.load(Ordering::SeqCst))
            .collect();
        let (tool, args) = match kind {
            Kind::ReadSrc => (
                "redctx_read",
                json!({"path": format!("src/{}_{:04}.txt", side.mine, next() % side.files as u64)}),
            ),
            Kind::ReadHot => ("redctx_read", json!({"path": format!("hot/h{hot}.txt")})),
            Kind::SearchHot => (
                "redctx_search",
                json!({"query": "version", "paths": ["hot"]}),
            ),
            Kind::ListHot => ("redctx_list", json!({"path": "hot"})),
        };
        let sent = Instant::now();
        let answer = client.try_call(tool, args).await;
        let took = sent.elapsed();
        let error = match &answer {
            Err(e) => Some(format!("{kind:?}: {e}")),
            Ok(a) if a.is_error => Some(format!("{kind:?}: {}", a.text)),
            Ok(_) => None,
        };
        let (failed, cross_root, stale) = match &answer {
            Err(_) => (true, false, false),
            Ok(a) if a.is_error => (true, false, false),
            Ok(a) => {
                let foreign = a.text.contains(side.other);
                let own_missing =
                    matches!(kind, Kind::ReadSrc | Kind::ReadHot) && !a.text.contains(side.mine);
                let stale = versions_in(&a.text)
                    .iter()
                    .any(|&(k, v)| k < HOT_FILES && v < floor[k]);
                (false, foreign || own_missing, stale)
            }
        };
        samples.push(Sample {
            kind,
            sent,
            took,
            failed,
            error,
            cross_root,
            stale,
        });
    }
    drop(client);
    samples
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn verdict(count: usize) -> &'static str {
    if count == 0 { "OK" } else { "MISS" }
}

fn main() {
    let sessions = env_usize("REDCTX_BENCH_SESSIONS", 32).max(2);
    let seconds = env_usize("REDCTX_BENCH_SECONDS", 20).max(4) as u64;
    let files = env_usize("REDCTX_BENCH_FILES", 300).max(1);
    support::bins();
    let env = Arc::new(Env::new());
    let one = make_side(&env, "rootone", "alphaside", "bravoside", files);
    let two = make_side(&env, "roottwo", "bravoside", "alphaside", files);
    println!(
        "daemon_concurrency: {sessions} sessions over 2 roots of {} files, {seconds} s, SIGKILL at {} s",
        files + HOT_FILES,
        seconds / 2
    );

    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = [one.clone(), two.clone()]
        .into_iter()
        .map(|side| {
            let stop = stop.clone();
            std::thread::spawn(move || writer(side, stop))
        })
        .collect();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let killed_at: Arc<Mutex<Option<Instant>>> = Arc::default();
    let samples: Vec<Sample> = rt.block_on(async {
        let mut tasks = Vec::new();
        for s in 0..sessions {
            let side = if s % 2 == 0 { one.clone() } else { two.clone() };
            tasks.push(tokio::spawn(session(
                env.clone(),
                side,
                0x9e37_79b9_7f4a_7c15 ^ ((s as u64 + 1) * 0x1000_0001),
                until,
            )));
        }
        // Halfway: kill the daemon the sessions share.
        let killer = {
            let env = env.clone();
            let killed_at = killed_at.clone();
            tokio::task::spawn_blocking(move || {
                std::thread::sleep(Duration::from_secs(seconds / 2));
                if let Some(pid) = env.daemon_pid() {
                    // SAFETY: kill(2) on a pid we read from the daemon's own status.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                    *killed_at.lock().unwrap() = Some(Instant::now());
                }
            })
        };
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.expect("session task"));
        }
        killer.await.unwrap();
        all
    });
    stop.store(true, Ordering::Relaxed);
    let writes: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();

    let killed = *killed_at.lock().unwrap();
    let window = killed.map(|k| {
        let back = samples
            .iter()
            .filter(|s| !s.failed && s.sent >= k)
            .map(|s| s.sent + s.took)
            .min()
            .unwrap_or(until);
        (k, back + Duration::from_secs(1))
    });
    let in_window =
        |s: &Sample| window.is_some_and(|(from, to)| s.sent + s.took >= from && s.sent <= to);
    let failed_in = samples.iter().filter(|s| s.failed && in_window(s)).count();
    let failed_out = samples.iter().filter(|s| s.failed && !in_window(s)).count();
    let cross = samples.iter().filter(|s| s.cross_root).count();
    let stale = samples.iter().filter(|s| s.stale).count();

    println!(
        "calls: {} ({:.0}/s), hot-file replacements: {writes}",
        samples.len(),
        samples.len() as f64 / seconds as f64
    );
    match window {
        Some((from, to)) => println!(
            "restart window: {:.0} ms after SIGKILL at {:.1} s (until the first answer after it, plus 1 s)",
            (to - from).as_secs_f64() * 1000.0 - 1000.0,
            (from - started).as_secs_f64()
        ),
        None => println!("restart window: none (no daemon to kill)"),
    }
    println!(
        "failed calls outside the restart window: {failed_out}  (target 0: {})",
        verdict(failed_out)
    );
    println!("failed calls inside the restart window:  {failed_in}");
    let mut reasons: HashMap<(bool, &str), usize> = HashMap::new();
    for s in samples.iter().filter(|s| s.failed) {
        let text = s.error.as_deref().unwrap_or("?");
        *reasons.entry((in_window(s), text)).or_default() += 1;
    }
    let mut reasons: Vec<_> = reasons.into_iter().collect();
    reasons.sort();
    for ((inside, text), n) in reasons {
        let at = if inside { "inside" } else { "outside" };
        println!(
            "  {n:>5} {at}: {}",
            text.chars().take(160).collect::<String>()
        );
    }
    println!(
        "cross-root answers: {cross}  (target 0: {})",
        verdict(cross)
    );
    println!("stale reads: {stale}  (target 0: {})", verdict(stale));
    // What the shims told their operator (stderr), for the failures above.
    let mut told: HashMap<String, usize> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir(env.dir.path()) {
        for entry in dir.flatten() {
            if entry.file_name().to_string_lossy().ends_with(".stderr") {
                for line in std::fs::read_to_string(entry.path())
                    .unwrap_or_default()
                    .lines()
                {
                    *told.entry(line.chars().take(200).collect()).or_default() += 1;
                }
            }
        }
    }
    let mut told: Vec<_> = told.into_iter().collect();
    told.sort();
    for (line, n) in told {
        println!("  shim stderr x{n}: {line}");
    }
    let mut by_kind: HashMap<Kind, Vec<f64>> = HashMap::new();
    for s in samples.iter().filter(|s| !s.failed && !in_window(s)) {
        by_kind
            .entry(s.kind)
            .or_default()
            .push(s.took.as_secs_f64() * 1000.0);
    }
    let mut all: Vec<f64> = by_kind.values().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let mut kinds: Vec<_> = by_kind.into_iter().collect();
    kinds.sort_by_key(|(k, _)| *k);
    println!(
        "{:<28} {:>8} {:>10} {:>10}",
        "round trip (outside window)", "calls", "p50 ms", "p99 ms"
    );
    for (kind, mut v) in kinds {
        v.sort_by(f64::total_cmp);
        println!(
            "{:<28} {:>8} {:>10.2} {:>10.2}",
            format!("{kind:?}"),
            v.len(),
            pct(&v, 0.5),
            pct(&v, 0.99)
        );
    }
    println!(
        "{:<28} {:>8} {:>10.2} {:>10.2}",
        "all",
        all.len(),
        pct(&all, 0.5),
        pct(&all, 0.99)
    );
}
