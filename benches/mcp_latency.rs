//! Per-call latency of the MCP tools through the real `redctx mcp` shim, printed beside
//! the reference's `redctx-mcp` (0.10.1) answering the same calls on the same tree in the
//! same run, with the targets of the MCP-surface issue.
//!
//! Run: `cargo bench --bench mcp_latency` (a 100,000-file tree, as the targets assume;
//! generating it once takes a few minutes and about 0.5 GB). Quick run:
//! `REDCTX_BENCH_FILES=5000 REDCTX_BENCH_ITERS=50 cargo bench --bench mcp_latency`.
//!
//! 1. Generates (once, cached under `<target>/bench-corpus/mcp-<files>-s1/`) a
//!    `gen_monorepo.py` tree of `REDCTX_BENCH_FILES` files (seed 1) and a config with the
//!    generator's exact terms, and picks the call targets from it: a ~10 KB and a ~90 KB
//!    source file, the directory of the first, 33 small files for a bundle.
//! 2. Starts one `redctx mcp` session (rmcp client over stdio, a private daemon and
//!    state dir as in the e2e tests), warms it with a whole-root search (every file
//!    redacted into the cache), then times each call: `redctx_stat`, `redctx_list` of the
//!    directory, `redctx_read` of both files, `redctx_bundle` of the 33 files, `redctx_tree`
//!    depth 3 of the root, a whole-root literal `redctx_search` for a string that occurs
//!    nowhere (so every file is scanned), the same as a regex with that literal, a
//!    whole-root `redctx_retrieve` of common words, a `redctx_submit_doc` (below), and
//!    `initialize` to first answer (spawn a new shim, handshake, one `redctx_stat`). p50/p99 of the round trip as the client sees it;
//!    server-side p50/p99 from the daemon's own per-request timing (its `answered ...
//!    elapsed_us` debug line, enabled with `REDCTX_LOG` for this run only).
//! 3. The same calls against the reference's `redctx-mcp` (`.venv-oracle`, see
//!    `scripts/setup-oracle.sh`; `REDCTX_SKIP_ORACLE=1` leaves it out) in the same way,
//!    each call bounded by `REDCTX_BENCH_REF_TIMEOUT` seconds: a call that errors (the
//!    reference refuses whole-root work past its 10,000-entry and 50 MB caps) is reported
//!    as `failed: <its message>`, one that runs out of time as `timeout` (its session is
//!    then restarted). Round trip only: the reference reports no per-call timing.
//! 4. Unless the caps are lifted for the whole run, the whole-root search once more on
//!    both sides with the caps lifted (the default 50 MB per-call budget stops it on
//!    large trees), in a new session each.
//! 5. `rg -F` for the same literal over the same root (if `rg` is on PATH), the yardstick
//!    of the search target.
//! 6. The submission on a tree small enough for the reference's 80-file map budget
//!    (`REDCTX_BENCH_SUBMIT_FILES`, 60 files, seed 1), on both sides.
//!
//! The submission: both servers run with `--enable-writes`; the agent has read a few
//! source files spread over the walk (a quarter, half, three quarters in, and the last)
//! and writes a note quoting the redacted lines that carry their placeholders (up to two
//! per category) and their `@p_` ids, to a new `notes/bench-<n>.md` each call. The
//! write sub-directory (`incoming/`) is emptied before each run. On the large tree the
//! reference cannot build its map (`File limit exceeded.`).
//!
//! Settings (environment): `REDCTX_BENCH_FILES` (100000), `REDCTX_BENCH_ITERS` (samples
//! per call for redctx, 200), `REDCTX_BENCH_REF_ITERS` (for the reference, 20),
//! `REDCTX_BENCH_OP_SECONDS` (time budget per call kind for redctx, 10) and
//! `REDCTX_BENCH_REF_OP_SECONDS` (for the reference, 60), `REDCTX_BENCH_REF_TIMEOUT`
//! (seconds per reference call, 60), `REDCTX_BENCH_MODE` (redctx's mode, `code`; the
//! reference, which has no code mode, runs `balanced` then), `REDCTX_BENCH_LIFT_CAPS=1`
//! (both sides get `--max-total-raw-bytes 10^12 --max-traversal-entries 10^8`),
//! `REDCTX_BENCH_SUBMIT_FILES` (the small tree, 60; 0 leaves it out), `REDCTX_BENCH_ONLY`
//! (measure only the calls whose label contains this text, e.g. `submit`).
//! Figures are printed, never asserted.

#[path = "../tests/corpus/mod.rs"]
mod corpus;
#[path = "../tests/support/mod.rs"]
mod support;

use corpus::oracle::{self, OracleAvailability};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::{Env, bins};

/// A string that occurs in no generated file, so a search scans every byte.
const ABSENT_LITERAL: &str = "zq-redctx-bench-absent-7f3k";

/// What an agent might ask `redctx_retrieve` in a service monorepo: words the generated
/// code uses often, so many files hold one (the index cannot rule them out).
const RETRIEVE_QUERY: &str = "retry the connection after a timeout";

/// Flags that lift the per-call byte and entry budgets (both servers take them).
const LIFTED_CAPS: [&str; 4] = [
    "--max-total-raw-bytes",
    "1000000000000",
    "--max-traversal-entries",
    "100000000",
];

/// The daemon's per-request timing line is a debug event of the connection module.
const LOG_FILTER: &str = "info,redctx_daemon::server::conn=debug";

/// Run settings, from the environment.
struct Settings {
    files: usize,
    iters: usize,
    ref_iters: usize,
    op_budget: Duration,
    ref_op_budget: Duration,
    ref_timeout: Duration,
    mode: String,
    lift_caps: bool,
    submit_files: usize,
    only: Option<String>,
}

impl Settings {
    fn from_env() -> Settings {
        Settings {
            files: env_usize("REDCTX_BENCH_FILES", 100_000),
            iters: env_usize("REDCTX_BENCH_ITERS", 200).max(1),
            ref_iters: env_usize("REDCTX_BENCH_REF_ITERS", 20).max(1),
            op_budget: Duration::from_secs(env_usize("REDCTX_BENCH_OP_SECONDS", 10) as u64),
            ref_op_budget: Duration::from_secs(env_usize("REDCTX_BENCH_REF_OP_SECONDS", 60) as u64),
            ref_timeout: Duration::from_secs(env_usize("REDCTX_BENCH_REF_TIMEOUT", 60) as u64),
            mode: std::env::var("REDCTX_BENCH_MODE").unwrap_or_else(|_| "code".into()),
            lift_caps: std::env::var("REDCTX_BENCH_LIFT_CAPS").as_deref() == Ok("1"),
            submit_files: env_usize("REDCTX_BENCH_SUBMIT_FILES", 60),
            only: std::env::var("REDCTX_BENCH_ONLY")
                .ok()
                .filter(|v| !v.is_empty()),
        }
    }

    /// Extra flags both servers get.
    fn cap_flags(&self) -> Vec<String> {
        if self.lift_caps {
            LIFTED_CAPS.map(String::from).to_vec()
        } else {
            Vec::new()
        }
    }

    /// Whether the call labelled `label` is measured in this run.
    fn wants(&self, label: &str) -> bool {
        self.only.as_deref().is_none_or(|o| label.contains(o))
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// What a speed target is checked against.
#[derive(Clone, Copy)]
enum Target {
    /// p50 server side (and round trip, when given) in ms.
    Server(f64, Option<f64>),
    /// p50 round trip in ms.
    RoundTrip(f64),
    /// p50 round trip at most this many times `rg`'s p50.
    TimesRg(f64),
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::Server(s, Some(rt)) => format!("srv<={s} rt<={rt} ms"),
            Target::Server(s, None) => format!("srv<={s} ms"),
            Target::RoundTrip(rt) => format!("rt<={rt} ms"),
            Target::TimesRg(f) => format!("<={f}x rg"),
        }
    }
}

/// One kind of call.
struct Op {
    label: String,
    /// `None`: `initialize` to first answer (a new session per sample).
    tool: Option<&'static str>,
    args: Value,
    target: Target,
}

/// The targets picked from the tree.
struct Picks {
    small: (String, u64),
    large: (String, u64),
    dir: String,
    dir_entries: usize,
    bundle: Vec<String>,
    /// What the agent read before writing its note.
    note_files: Vec<String>,
}

/// How a series of calls went.
enum Series {
    Samples {
        /// Round trips, ms.
        rt: Vec<f64>,
        /// Server-side times, ms, when the daemon logged them.
        server: Option<Vec<f64>>,
    },
    Failed(String),
    Timeout(Duration),
    Skipped,
}

fn main() {
    let s = Settings::from_env();
    let base = bench_dir(s.files);
    let (root, config) = match prepare_tree(&base, s.files) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mcp_latency: cannot prepare the tree: {e}");
            std::process::exit(1);
        }
    };
    let picks = match pick_targets(&root) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mcp_latency: cannot pick call targets: {e}");
            std::process::exit(1);
        }
    };
    let reference = match oracle::oracle_python() {
        Ok(OracleAvailability::Ready(python)) => {
            let mcp = python.with_file_name("redctx-mcp");
            if mcp.is_file() {
                Ok(mcp)
            } else {
                Err(format!("{} not found", mcp.display()))
            }
        }
        Ok(OracleAvailability::Skipped) => Err("REDCTX_SKIP_ORACLE=1".to_owned()),
        Err(message) => Err(message),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(run(&s, &root, &config, &picks, reference));
}

async fn run(
    s: &Settings,
    root: &Path,
    config: &Path,
    picks: &Picks,
    reference: Result<PathBuf, String>,
) {
    empty_write_dir(root);
    let (n_files, bytes) = tree_size(root);
    println!(
        "mcp_latency: tree {} ({n_files} files, {:.1} MB), redctx mode {}, reference mode {}, caps {}",
        root.display(),
        bytes as f64 / 1e6,
        s.mode,
        reference_mode(&s.mode),
        if s.lift_caps { "lifted" } else { "default" }
    );
    println!(
        "targets: read {} ({} B), read {} ({} B), list {} ({} entries), bundle of {} files",
        picks.small.0,
        picks.small.1,
        picks.large.0,
        picks.large.1,
        picks.dir,
        picks.dir_entries,
        picks.bundle.len()
    );
    let mut ops: Vec<Op> = ops(picks)
        .into_iter()
        .filter(|op| s.wants(&op.label))
        .collect();
    let env = Env::new();

    // --- redctx ------------------------------------------------------------------------
    let ours_cmd = {
        let mut envs = env.envs();
        envs.push(("REDCTX_LOG".into(), Some(LOG_FILTER.into())));
        let mut args: Vec<OsString> = vec!["mcp".into(), "--root".into(), root.into()];
        args.extend(["--config".into(), config.into()]);
        args.extend(["--mode".into(), OsString::from(&s.mode)]);
        args.push("--enable-writes".into());
        args.extend(s.cap_flags().into_iter().map(OsString::from));
        Launcher {
            program: bins().redctx.clone(),
            args,
            envs,
            stderr: env.dir.path().join("shim.stderr"),
        }
    };
    let log = env.state().join("logs").join("redctxd.log");
    let mut ours = Side::new("redctx", ours_cmd, Duration::from_secs(600));
    let started = Instant::now();
    match ours
        .call("redctx_search", &json!({"query": ABSENT_LITERAL}))
        .await
    {
        Outcome::Ok(_) => println!(
            "redctx: warm-up (root indexed, every file redacted into the cache) took {:.1} s",
            started.elapsed().as_secs_f64()
        ),
        Outcome::Failed(m, _) => println!("redctx: warm-up search failed: {m}"),
        Outcome::Timeout => println!("redctx: warm-up search timed out"),
    }
    // The search index is built at the end of the indexing pass, which the warm-up
    // search does not wait for, and its passage index (retrieve's) in the background
    // after it: measure once both are in use, as a user a minute after start sees them.
    let waited = Instant::now();
    let index_ready = (0..3000).any(|_| {
        let seen = std::fs::read_to_string(&log).is_ok_and(|l| {
            l.contains("search index")
                && l.lines()
                    .any(|l| l.contains("passage index built") && l.contains("complete=true"))
        });
        if !seen {
            std::thread::sleep(Duration::from_millis(100));
        }
        seen
    });
    println!(
        "redctx: search and passage index {} {:.1} s after the warm-up",
        if index_ready {
            "in use"
        } else {
            "still not built"
        },
        waited.elapsed().as_secs_f64()
    );
    ours.timeout = s.ref_timeout.max(Duration::from_secs(60));
    if s.wants("submit") {
        match compose_note(&mut ours, None, &picks.note_files).await {
            Ok(op) => ops.insert(ops.len().saturating_sub(1), op),
            Err(why) => println!("redctx: no submission to measure ({why})"),
        }
    }
    let mut our_rows = Vec::new();
    for op in &ops {
        let series = ours
            .measure(op, s.iters, s.op_budget, Some(&log), s.iters.min(20))
            .await;
        our_rows.push(series);
    }
    ours.close().await;
    // The default per-call byte budget (50 MB, the reference's) stops a whole-root
    // search on a large tree; measure it once more with the caps lifted on both sides.
    let lifted_search = (!s.lift_caps && s.wants("search, caps lifted")).then(|| Op {
        label: "search, caps lifted".into(),
        tool: Some("redctx_search"),
        args: json!({"query": ABSENT_LITERAL}),
        target: Target::TimesRg(2.0),
    });
    if let Some(op) = &lifted_search {
        let mut launcher = ours.launcher.clone();
        launcher.args.extend(LIFTED_CAPS.map(OsString::from));
        let mut side = Side::new(
            "redctx",
            launcher,
            ours.timeout.max(Duration::from_secs(600)),
        );
        our_rows.push(side.measure(op, s.iters, s.op_budget, Some(&log), 1).await);
        side.close().await;
    }

    // --- rg --------------------------------------------------------------------------
    let rg = if s.wants("search") {
        measure_rg(root)
    } else {
        Err("search not measured in this run".into())
    };

    // --- reference -------------------------------------------------------------------
    let mut ref_rows = Vec::new();
    match &reference {
        Ok(mcp) => {
            let mut args: Vec<OsString> = vec!["--root".into(), root.into()];
            args.extend(["--config".into(), config.into()]);
            args.extend(["--mode".into(), reference_mode(&s.mode).into()]);
            args.push("--enable-writes".into());
            args.extend(s.cap_flags().into_iter().map(OsString::from));
            let mut envs: Vec<(OsString, Option<OsString>)> = vec![(
                "REDACTED_CONTEXT_STATE_DIR".into(),
                Some(env.vault().into()),
            )];
            for k in support::SCRUBBED_ENV {
                envs.push(((*k).into(), None));
            }
            let launcher = Launcher {
                program: mcp.clone(),
                args,
                envs,
                stderr: env.dir.path().join("reference.stderr"),
            };
            empty_write_dir(root);
            let mut side = Side::new("reference", launcher.clone(), s.ref_timeout);
            for op in &ops {
                let series = side
                    .measure(op, s.ref_iters, s.ref_op_budget, None, s.ref_iters.min(5))
                    .await;
                ref_rows.push(series);
            }
            side.close().await;
            if let Some(op) = &lifted_search {
                let mut launcher = launcher;
                launcher.args.extend(LIFTED_CAPS.map(OsString::from));
                let mut side = Side::new("reference", launcher, s.ref_timeout);
                ref_rows.push(
                    side.measure(op, s.ref_iters, s.ref_op_budget, None, 1)
                        .await,
                );
                side.close().await;
            }
        }
        Err(why) => {
            println!("reference: not measured ({why})");
            for _ in 0..our_rows.len() {
                ref_rows.push(Series::Skipped);
            }
        }
    }

    // --- report ------------------------------------------------------------------------
    println!();
    match &rg {
        Ok((ms, searched)) => println!(
            "rg -F (same literal, same root, {searched}): p50 {}",
            fmt_ms(*ms)
        ),
        Err(why) => println!("rg: not measured ({why})"),
    }
    println!(
        "{:<22} {:>19} {:>19} {:>23} {:>9}  {:<20} met",
        "call (p50 / p99)",
        "redctx round trip",
        "redctx server",
        "reference round trip",
        "ref/ours",
        "target (p50)",
    );
    for ((op, ours), theirs) in ops
        .iter()
        .chain(&lifted_search)
        .zip(&our_rows)
        .zip(&ref_rows)
    {
        let rg_ms = rg.as_ref().ok().map(|(ms, _)| *ms);
        println!("{}", row(op, ours, theirs, rg_ms));
    }
    println!(
        "(round trip: tools/call sent to answer parsed by the rmcp client; server: the daemon's \
         own time from request decoded to answer ready; initialize: spawning a new `redctx mcp` \
         / `redctx-mcp`, handshake and one redctx_stat answered)"
    );
    if let Some(i) = ops.iter().position(|op| op.label.starts_with("submit")) {
        println!("{}", percentiles("large tree", &our_rows[i], &ref_rows[i]));
    }
    if s.submit_files > 0 && s.wants("submit") {
        submit_small_tree(s, &env, &reference).await;
    }
}

/// The submission on a tree small enough for the reference's map budget, both sides.
async fn submit_small_tree(s: &Settings, env: &Env, reference: &Result<PathBuf, String>) {
    let base = bench_dir(s.files).with_file_name(format!("submit-{}-s1", s.submit_files));
    let (root, config) = match prepare_tree(&base, s.submit_files)
        .and_then(|(root, config)| drop_non_utf8(&root).map(|()| (root, config)))
    {
        Ok(v) => v,
        Err(e) => return println!("small tree: cannot prepare it: {e}"),
    };
    let sources = match sources(&root) {
        Ok(v) => v,
        Err(e) => return println!("small tree: cannot list it: {e}"),
    };
    empty_write_dir(&root);
    let (n_files, bytes) = tree_size(&root);
    let flags = |mode: &str| -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["--root".into(), root.clone().into()];
        args.extend(["--config".into(), config.clone().into()]);
        args.extend(["--mode".into(), mode.into(), "--enable-writes".into()]);
        args
    };
    let mut envs = env.envs();
    envs.push(("REDCTX_LOG".into(), Some(LOG_FILTER.into())));
    let mut args: Vec<OsString> = vec!["mcp".into()];
    args.extend(flags(&s.mode));
    let launcher = Launcher {
        program: bins().redctx.clone(),
        args,
        envs,
        stderr: env.dir.path().join("shim-small.stderr"),
    };
    let log = env.state().join("logs").join("redctxd.log");
    let mut ours = Side::new("redctx (small tree)", launcher, Duration::from_secs(600));
    if let Outcome::Failed(m, _) = ours
        .call("redctx_search", &json!({"query": ABSENT_LITERAL}))
        .await
    {
        println!("small tree: warm-up search failed: {m}");
    }
    // The reference, when there is one, must accept the same note (it knows only the
    // placeholders its own redaction makes).
    let mut theirs = match reference {
        Ok(mcp) => {
            let mut envs: Vec<(OsString, Option<OsString>)> = vec![(
                "REDACTED_CONTEXT_STATE_DIR".into(),
                Some(env.vault().into()),
            )];
            for k in support::SCRUBBED_ENV {
                envs.push(((*k).into(), None));
            }
            let launcher = Launcher {
                program: mcp.clone(),
                args: flags(reference_mode(&s.mode)),
                envs,
                stderr: env.dir.path().join("reference-small.stderr"),
            };
            Some(Side::new("reference (small tree)", launcher, s.ref_timeout))
        }
        Err(_) => None,
    };
    let op = match compose_note(&mut ours, theirs.as_mut(), &note_files(&sources)).await {
        Ok(op) => op,
        Err(why) => return println!("small tree: no submission to measure ({why})"),
    };
    empty_write_dir(&root);
    let mine = ours.measure(&op, s.iters, s.op_budget, Some(&log), 1).await;
    ours.close().await;
    let theirs = match theirs.as_mut() {
        Some(side) => {
            empty_write_dir(&root);
            let series = side
                .measure(&op, s.ref_iters, s.ref_op_budget, None, 1)
                .await;
            side.close().await;
            series
        }
        None => Series::Skipped,
    };
    println!(
        "{}",
        percentiles(
            &format!(
                "small tree {} ({n_files} files, {:.2} MB)",
                root.display(),
                bytes as f64 / 1e6
            ),
            &mine,
            &theirs
        )
    );
}

/// One line of submission figures: p50/p95 round trip and server time, and the
/// reference's round trip.
fn percentiles(what: &str, ours: &Series, theirs: &Series) -> String {
    let p50_95 = |v: &[f64]| format!("p50 {} p95 {}", fmt_ms(pct(v, 50.0)), fmt_ms(pct(v, 95.0)));
    let mine = match ours {
        Series::Samples { rt, server } => format!(
            "redctx round trip {} ({} samples), server {}",
            p50_95(rt),
            rt.len(),
            server
                .as_deref()
                .map(p50_95)
                .unwrap_or_else(|| "n/a".into())
        ),
        other => format!("redctx {}", brief(other)),
    };
    let reference = match theirs {
        Series::Samples { rt, .. } => {
            format!("reference round trip {} ({} samples)", p50_95(rt), rt.len())
        }
        other => format!("reference {}", brief(other)),
    };
    format!("submit, {what}: {mine}; {reference}")
}

/// Removes the write sub-directory (`incoming/`) of `root`: every run writes its notes
/// afresh, and the tree other calls see stays the generated one.
fn empty_write_dir(root: &Path) {
    let dir = root.join("incoming");
    if dir.is_dir() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// How many placeholders of one category the note quotes at most.
const NOTE_PER_CATEGORY: usize = 2;

/// One line of the note: its text, the placeholders it quotes (with their category) and
/// whether it cites an id.
struct NoteLine {
    text: String,
    quotes: Vec<(String, String)>,
    cites: bool,
}

/// Reads `files` and the planted client notes as the agent would (`redctx_read`,
/// `redctx_stat` for the ids) and builds the submission: a note quoting the redacted
/// lines that carry up to [`NOTE_PER_CATEGORY`] new placeholders of each category, and
/// citing by id the files whose path redacts. A line whose restored values would show on
/// read-back (the round-trip check refuses the note) is left out: the note is tried once
/// whole, then line by line.
async fn compose_note(
    side: &mut Side,
    mut also: Option<&mut Side>,
    files: &[String],
) -> Result<Op, String> {
    let placeholder = regex::Regex::new(r"\[([A-Z][A-Z_]*?)_[0-9a-f]{32}(?:\.[0-9a-f]{8})?\]")
        .expect("placeholder pattern");
    let mut files = files.to_vec();
    // The planted notes, by id: their raw paths hold terms an agent never sees.
    let listed = side
        .text(
            "redctx_list",
            &json!({"path": "clients", "recursive": true}),
        )
        .await?;
    files.extend(
        listed
            .lines()
            .filter(|l| l.split('\t').nth(1) == Some("file"))
            .filter_map(|l| l.split('\t').next().map(str::to_owned)),
    );
    let mut lines: Vec<NoteLine> = Vec::new();
    let mut per_category: std::collections::HashMap<String, usize> = Default::default();
    let mut seen = std::collections::HashSet::new();
    for file in &files {
        let stat = side.text("redctx_stat", &json!({"path": file})).await?;
        let id = stat
            .lines()
            .find_map(|l| l.strip_prefix("id: "))
            .ok_or("redctx_stat gave no id")?
            .to_owned();
        let text = side.text("redctx_read", &json!({"path": file})).await?;
        // Cited by id only when its path redacts (see `plant_client_notes`).
        let shown_path = stat.lines().find_map(|l| l.strip_prefix("path: "));
        let cites = shown_path.is_some_and(|p| placeholder.is_match(p));
        lines.push(NoteLine {
            text: if cites {
                format!("\n## From {id}\n")
            } else {
                "\n## From another file\n".into()
            },
            quotes: Vec::new(),
            cites,
        });
        for line in text.lines() {
            let fresh: Vec<(String, String)> = placeholder
                .captures_iter(line)
                .map(|c| (c[0].to_owned(), c[1].to_owned()))
                .filter(|(p, _)| !seen.contains(p))
                .collect();
            let wanted = fresh
                .iter()
                .any(|(_, cat)| per_category.get(cat).copied().unwrap_or(0) < NOTE_PER_CATEGORY);
            if !wanted {
                continue;
            }
            for (p, cat) in &fresh {
                *per_category.entry(cat.clone()).or_default() += 1;
                seen.insert(p.clone());
            }
            lines.push(NoteLine {
                text: format!("    {}\n", line.trim()),
                quotes: fresh,
                cites: false,
            });
        }
    }
    let render = |kept: &[&NoteLine]| {
        let mut note = String::from("# Review notes\n");
        for l in kept {
            note.push_str(&l.text);
        }
        note
    };
    let all: Vec<&NoteLine> = lines.iter().collect();
    let kept: Vec<&NoteLine> = match try_note(side, also.as_deref_mut(), &render(&all)).await {
        Ok(()) => all,
        Err(_) => {
            let mut kept: Vec<&NoteLine> = Vec::new();
            for line in &lines {
                kept.push(line);
                if try_note(side, also.as_deref_mut(), &render(&kept))
                    .await
                    .is_err()
                {
                    kept.pop();
                }
            }
            kept
        }
    };
    let quoted: Vec<&(String, String)> = kept.iter().flat_map(|l| &l.quotes).collect();
    let ids = kept.iter().filter(|l| l.cites).count();
    if quoted.is_empty() {
        return Err("the files read show no placeholder a note can quote".into());
    }
    let note = render(&kept);
    let mut categories: std::collections::BTreeMap<&str, usize> = Default::default();
    for (_, cat) in &quoted {
        *categories.entry(cat.as_str()).or_default() += 1;
    }
    eprintln!(
        "{}: the note quotes {} placeholders ({}) and {ids} ids ({} of {} lines kept), {} bytes",
        side.name,
        quoted.len(),
        categories
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        kept.len(),
        lines.len(),
        note.len()
    );
    Ok(Op {
        label: format!("submit ({} placeholders, {ids} ids)", quoted.len()),
        tool: Some("redctx_submit_doc"),
        args: json!({"target_path": "notes/bench-{n}.md", "text": note}),
        target: Target::Server(50.0, Some(50.0)),
    })
}

/// Submits `note` to a fixed trial file (replaced each time) on `side` and `also`.
async fn try_note(side: &mut Side, also: Option<&mut Side>, note: &str) -> Result<(), String> {
    let args = json!({"target_path": "notes/bench-trial.md", "text": note, "overwrite": true});
    side.text("redctx_submit_doc", &args).await?;
    if let Some(other) = also {
        other.text("redctx_submit_doc", &args).await?;
    }
    Ok(())
}

fn reference_mode(ours: &str) -> &str {
    match ours {
        "strict" => "strict",
        _ => "balanced",
    }
}

fn ops(p: &Picks) -> Vec<Op> {
    let op = |label: String, tool: Option<&'static str>, args: Value, target| Op {
        label,
        tool,
        args,
        target,
    };
    vec![
        op(
            "stat".into(),
            Some("redctx_stat"),
            json!({"path": p.small.0}),
            Target::Server(0.1, Some(0.5)),
        ),
        op(
            format!("list ({} entries)", p.dir_entries),
            Some("redctx_list"),
            json!({"path": p.dir}),
            Target::RoundTrip(0.5),
        ),
        op(
            format!("read {} KB", p.small.1 / 1000),
            Some("redctx_read"),
            json!({"path": p.small.0}),
            Target::Server(0.3, None),
        ),
        op(
            format!("read {} KB", p.large.1 / 1000),
            Some("redctx_read"),
            json!({"path": p.large.0}),
            Target::Server(1.0, None),
        ),
        op(
            format!("bundle {} files", p.bundle.len()),
            Some("redctx_bundle"),
            json!({"paths": p.bundle}),
            Target::RoundTrip(5.0),
        ),
        op(
            "tree depth 3".into(),
            Some("redctx_tree"),
            json!({"path": ".", "max_depth": 3}),
            Target::RoundTrip(20.0),
        ),
        op(
            "search whole root".into(),
            Some("redctx_search"),
            json!({"query": ABSENT_LITERAL}),
            Target::RoundTrip(50.0),
        ),
        op(
            "regex search (literal)".into(),
            Some("redctx_search"),
            json!({"query": format!("{ABSENT_LITERAL}-[0-9]+"), "regex": true}),
            Target::RoundTrip(150.0),
        ),
        op(
            "retrieve whole root".into(),
            Some("redctx_retrieve"),
            json!({"query": RETRIEVE_QUERY}),
            Target::RoundTrip(100.0),
        ),
        op(
            "initialize→1st answer".into(),
            None,
            json!({"path": p.small.0}),
            Target::RoundTrip(20.0),
        ),
    ]
}

/// How to start one server process.
#[derive(Clone)]
struct Launcher {
    program: PathBuf,
    args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    stderr: PathBuf,
}

impl Launcher {
    async fn spawn(&self) -> Result<RunningService<RoleClient, ()>, String> {
        let cmd = tokio::process::Command::new(&self.program).configure(|c| {
            c.args(&self.args);
            for (k, v) in &self.envs {
                match v {
                    Some(v) => c.env(k, v),
                    None => c.env_remove(k),
                };
            }
        });
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.stderr)
            .map_err(|e| e.to_string())?;
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", self.program.display()))?;
        ().serve(transport)
            .await
            .map_err(|e| format!("MCP session did not start: {e}"))
    }
}

/// The result of one call.
enum Outcome {
    /// Round trip in ms.
    Ok(f64),
    /// The first line of the error text (fixed, input-free messages on both sides).
    Failed(String, f64),
    Timeout,
}

/// One server under test with its current session.
struct Side {
    name: &'static str,
    launcher: Launcher,
    session: Option<RunningService<RoleClient, ()>>,
    timeout: Duration,
    /// Calls made: a submission's `{n}` in its target path, so each writes a new file.
    calls: u64,
}

impl Side {
    fn new(name: &'static str, launcher: Launcher, timeout: Duration) -> Side {
        Side {
            name,
            launcher,
            session: None,
            timeout,
            calls: 0,
        }
    }

    /// The text of a successful call, or why there is none.
    async fn text(&mut self, tool: &str, args: &Value) -> Result<String, String> {
        self.ensure_session().await?;
        let session = self.session.as_ref().unwrap();
        let params = CallToolRequestParams::new(tool.to_owned())
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        let r = tokio::time::timeout(self.timeout, session.call_tool(params))
            .await
            .map_err(|_| format!("{tool} timed out"))?
            .map_err(|e| format!("{tool}: protocol error: {e}"))?;
        let text = r
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        if r.is_error == Some(true) {
            return Err(format!("{tool}: {}", shorten(&text)));
        }
        Ok(text)
    }

    async fn ensure_session(&mut self) -> Result<(), String> {
        if self.session.is_none() {
            match tokio::time::timeout(self.timeout, self.launcher.spawn()).await {
                Ok(Ok(s)) => self.session = Some(s),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err("session start timed out".into()),
            }
        }
        Ok(())
    }

    async fn call(&mut self, tool: &str, args: &Value) -> Outcome {
        if self.session.is_none() {
            match tokio::time::timeout(self.timeout, self.launcher.spawn()).await {
                Ok(Ok(s)) => self.session = Some(s),
                Ok(Err(e)) => return Outcome::Failed(e, 0.0),
                Err(_) => return Outcome::Timeout,
            }
        }
        self.calls += 1;
        let mut args = args.clone();
        if let Some(Value::String(target)) = args.get_mut("target_path") {
            *target = target.replace("{n}", &self.calls.to_string());
        }
        let args = &args;
        let session = self.session.as_ref().unwrap();
        let params = CallToolRequestParams::new(tool.to_owned())
            .with_arguments(args.as_object().cloned().unwrap_or_default());
        let t0 = Instant::now();
        match tokio::time::timeout(self.timeout, session.call_tool(params)).await {
            Ok(Ok(r)) => {
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                if r.is_error == Some(true) {
                    let text = r
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .map(|t| t.text.lines().next().unwrap_or("").to_owned())
                        .unwrap_or_default();
                    Outcome::Failed(shorten(&text), ms)
                } else {
                    Outcome::Ok(ms)
                }
            }
            Ok(Err(e)) => Outcome::Failed(shorten(&format!("protocol error: {e}")), 0.0),
            Err(_) => {
                // The server is still busy with it: start over with a new process.
                self.session = None;
                Outcome::Timeout
            }
        }
    }

    /// `initialize` to the first answer of a fresh process (its own session, closed
    /// afterwards).
    async fn first_answer(&self, args: &Value) -> Outcome {
        let t0 = Instant::now();
        let work = async {
            let session = self.launcher.spawn().await?;
            let params = CallToolRequestParams::new("redctx_stat".to_owned())
                .with_arguments(args.as_object().cloned().unwrap_or_default());
            let r = session
                .call_tool(params)
                .await
                .map_err(|e| format!("protocol error: {e}"))?;
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let _ = session.cancel().await;
            Ok::<_, String>((ms, r.is_error == Some(true)))
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(Ok((ms, false))) => Outcome::Ok(ms),
            Ok(Ok((ms, true))) => Outcome::Failed("redctx_stat answered an error".into(), ms),
            Ok(Err(e)) => Outcome::Failed(shorten(&e), 0.0),
            Err(_) => Outcome::Timeout,
        }
    }

    async fn one(&mut self, op: &Op) -> Outcome {
        match op.tool {
            Some(tool) => self.call(tool, &op.args).await,
            None => self.first_answer(&op.args).await,
        }
    }

    /// Up to `iters` samples of `op` within `budget` (at least 3 unless a call fails),
    /// after one untimed warm-up call.
    async fn measure(
        &mut self,
        op: &Op,
        iters: usize,
        budget: Duration,
        log: Option<&Path>,
        init_iters: usize,
    ) -> Series {
        let iters = if op.tool.is_none() { init_iters } else { iters };
        eprint!("{}: {} ...", self.name, op.label);
        let warm = self.one(op).await;
        if let Some(s) = failure(warm, self.timeout) {
            eprintln!(" {}", brief(&s));
            return s;
        }
        let log_start = log.map(log_len);
        let deadline = Instant::now() + budget;
        let mut rt = Vec::with_capacity(iters);
        while rt.len() < iters && (rt.len() < 3 || Instant::now() < deadline) {
            match self.one(op).await {
                Outcome::Ok(ms) => rt.push(ms),
                other => {
                    let s = failure(other, self.timeout).unwrap();
                    eprintln!(" {}", brief(&s));
                    return s;
                }
            }
        }
        let server = log.zip(log_start).and_then(|(log, start)| {
            let kind = if op.tool == Some("redctx_submit_doc") {
                "submit_doc"
            } else {
                "call_tool"
            };
            let v = server_times(log, start, kind);
            // Each timed call is one request to the daemon; anything else means the log
            // does not line up with the samples.
            (v.len() == rt.len()).then_some(v)
        });
        let s = Series::Samples { rt, server };
        eprintln!(" {}", brief(&s));
        s
    }

    async fn close(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.cancel().await;
        }
    }
}

fn failure(o: Outcome, timeout: Duration) -> Option<Series> {
    match o {
        Outcome::Ok(_) => None,
        Outcome::Failed(m, ms) if ms > 0.0 => Some(Series::Failed(format!("{m} ({})", fmt_ms(ms)))),
        Outcome::Failed(m, _) => Some(Series::Failed(m)),
        Outcome::Timeout => Some(Series::Timeout(timeout)),
    }
}

fn shorten(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(90) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

fn brief(s: &Series) -> String {
    match s {
        Series::Samples { rt, .. } => {
            format!("{} samples, p50 {}", rt.len(), fmt_ms(pct(rt, 50.0)))
        }
        Series::Failed(m) => format!("failed: {m}"),
        Series::Timeout(t) => format!("timeout ({} s)", t.as_secs()),
        Series::Skipped => "not measured".to_owned(),
    }
}

fn log_len(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// `elapsed_us` of every request of `kind` (`call_tool`, `submit_doc`) answered after
/// byte `start` of the daemon log, ms.
fn server_times(log: &Path, start: u64, kind: &str) -> Vec<f64> {
    let Ok(bytes) = std::fs::read(log) else {
        return Vec::new();
    };
    let tail = String::from_utf8_lossy(&bytes[(start as usize).min(bytes.len())..]).into_owned();
    tail.lines()
        .filter(|l| l.contains("answered") && l.contains(kind))
        .filter_map(|l| {
            let v = l.split("elapsed_us=").nth(1)?;
            let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<f64>().ok().map(|us| us / 1e3)
        })
        .collect()
}

/// Nearest-rank percentile of unsorted samples.
fn pct(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1e3)
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.3} ms")
    }
}

fn pair(v: &[f64]) -> String {
    format!("{} / {}", fmt_ms(pct(v, 50.0)), fmt_ms(pct(v, 99.0)))
}

fn row(op: &Op, ours: &Series, theirs: &Series, rg_ms: Option<f64>) -> String {
    let (our_rt, our_srv, our_p50, our_srv_p50) = match ours {
        Series::Samples { rt, server } => (
            pair(rt),
            server.as_deref().map(pair).unwrap_or_else(|| "n/a".into()),
            Some(pct(rt, 50.0)),
            server.as_deref().map(|s| pct(s, 50.0)),
        ),
        other => (brief(other), "-".into(), None, None),
    };
    let (their_rt, ratio) = match theirs {
        Series::Samples { rt, .. } => {
            let p = pct(rt, 50.0);
            (
                pair(rt),
                our_p50
                    .map(|o| format!("{:.1}x", p / o))
                    .unwrap_or_default(),
            )
        }
        other => (brief(other), "-".into()),
    };
    let met = match (op.target, our_p50) {
        (_, None) => "no",
        (Target::Server(s, rt), Some(p)) => match our_srv_p50 {
            Some(srv) if srv <= s && rt.is_none_or(|rt| p <= rt) => "yes",
            Some(_) => "no",
            None => "? (no server figure)",
        },
        (Target::RoundTrip(t), Some(p)) => {
            if p <= t {
                "yes"
            } else {
                "no"
            }
        }
        (Target::TimesRg(f), Some(p)) => match rg_ms {
            Some(rg) if p <= f * rg => "yes",
            Some(_) => "no",
            None => "? (no rg)",
        },
    };
    let target = match (op.target, rg_ms) {
        (Target::TimesRg(f), Some(rg)) => format!("<={f}x rg = {}", fmt_ms(f * rg)),
        (t, _) => t.describe(),
    };
    format!(
        "{:<22} {:>19} {:>19} {:>23} {:>9}  {:<20} {met}",
        op.label, our_rt, our_srv, their_rt, ratio, target
    )
}

/// p50 of `rg -F` for the absent literal over the root (1 warm-up, 5 timed runs) and
/// what it searched.
fn measure_rg(root: &Path) -> Result<(f64, String), String> {
    let run = || {
        let t0 = Instant::now();
        let out = std::process::Command::new("rg")
            .args(["--no-config", "--stats", "-F", "-c", ABSENT_LITERAL, "."])
            .current_dir(root)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("`rg` not runnable: {e}"))?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        // Exit 1 = no match, the expected answer.
        if out.status.code() == Some(2) {
            return Err(format!(
                "rg failed: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
            ));
        }
        let stats = String::from_utf8_lossy(&out.stdout).into_owned();
        let searched = ["files searched", "bytes searched"]
            .iter()
            .filter_map(|k| stats.lines().find(|l| l.contains(k)).map(str::trim))
            .collect::<Vec<_>>()
            .join(", ");
        Ok((ms, searched))
    };
    let (_, searched) = run()?;
    let mut v = Vec::new();
    for _ in 0..5 {
        v.push(run()?.0);
    }
    Ok((pct(&v, 50.0), searched))
}

/// `<target>/bench-corpus/mcp-<files>-s1`, target = `CARGO_TARGET_DIR` or `<repo>/target`.
fn bench_dir(files: usize) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| corpus::repo_root().join("target"));
    target.join("bench-corpus").join(format!("mcp-{files}-s1"))
}

/// Generates the tree unless a complete one is cached; returns (root, config path).
fn prepare_tree(base: &Path, files: usize) -> Result<(PathBuf, PathBuf), String> {
    let root = base.join("mono");
    let config = base.join("redaction.toml");
    let stamp = base.join("complete");
    if !(stamp.is_file() && root.is_dir()) {
        std::fs::create_dir_all(base).map_err(|e| e.to_string())?;
        eprintln!(
            "mcp_latency: generating a {files}-file tree in {}",
            root.display()
        );
        corpus::run_gen_monorepo(&root, files, 1)?;
        std::fs::write(&stamp, "").map_err(|e| e.to_string())?;
    }
    if !config.is_file() {
        let toml = corpus::config_from_manifest(&base.join("mono.manifest.json"))?;
        std::fs::write(&config, toml).map_err(|e| e.to_string())?;
    }
    plant_client_notes(&root, &config)?;
    Ok((root, config))
}

/// Two engagement notes under `clients/<client>/<person> notes.md` (the generator names
/// no directory after a configured term): a note may only cite by `@p_` id a file whose
/// path redacts, since a restored path must not show on read-back (spec 9.1 step 7).
fn plant_client_notes(root: &Path, config: &Path) -> Result<(), String> {
    let toml = std::fs::read_to_string(config).map_err(|e| e.to_string())?;
    let list = |key: &str| -> Vec<String> {
        toml.lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default()
    };
    let (clients, people, terms) = (list("clients"), list("people"), list("terms"));
    for i in 0..2 {
        let (Some(client), Some(person), Some(term)) =
            (clients.get(i), people.get(i), terms.get(i))
        else {
            return Err("the config names too few terms to plant the client notes".into());
        };
        let email = format!("{}@example.com", person.to_lowercase().replace(' ', "."));
        let text = format!(
            "# {client} engagement\n\nOwner: {person} <{email}>\n\
             {term} for {client} waits on the vendor review.\n\
             Deploy with DB_PASSWORD=\"Vq7-{i}-p4ssw0rd-rotate-me\" until the vault is ready.\n"
        );
        let dir = root.join("clients").join(client);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let path = dir.join(format!("{person} notes.md"));
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Removes the files that are not UTF-8 text: the reference's submission map stops its
/// process on one (`Refusing to print non-text file.` on stderr, the session closed).
fn drop_non_utf8(root: &Path) -> Result<(), String> {
    let (files, _) = corpus::walk(root).map_err(|e| e.to_string())?;
    for rel in files {
        let path = root.join(&rel);
        let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
        if bytes.contains(&0) || std::str::from_utf8(&bytes).is_err() {
            std::fs::remove_file(&path).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Directories neither side serves, or that `.gitignore` hides from redctx.
const SKIP_DIRS: &[&str] = &["node_modules", "build", "target", "personal", "dist"];
const SOURCE_EXT: &[&str] = &["rs", "go", "py", "ts", "js", "java", "c", "h"];

/// Picks the call targets: the source files nearest 10 KB and 90 KB (ASCII names, in
/// directories both sides serve), the first one's directory, and 33 small source files.
fn pick_targets(root: &Path) -> Result<Picks, String> {
    let sources = sources(root)?;
    let nearest = |want: u64| {
        sources
            .iter()
            .min_by_key(|(_, n)| n.abs_diff(want))
            .cloned()
            .ok_or("no source files in the tree")
    };
    let small = nearest(10_000)?;
    let large = nearest(90_000)?;
    let dir = small
        .0
        .rsplit_once('/')
        .map(|(d, _)| d)
        .unwrap_or(".")
        .to_owned();
    let dir_entries = std::fs::read_dir(root.join(&dir))
        .map_err(|e| e.to_string())?
        .count();
    let bundle: Vec<String> = sources
        .iter()
        .filter(|(_, n)| *n <= 4_000)
        .take(33)
        .map(|(p, _)| p.clone())
        .collect();
    if bundle.len() < 33 {
        return Err(format!(
            "only {} small source files for the bundle",
            bundle.len()
        ));
    }
    Ok(Picks {
        small,
        large,
        dir,
        dir_entries,
        bundle,
        note_files: note_files(&sources),
    })
}

/// The files an agent read before its note: spread over the walk, so the map has to
/// look far into the tree (a quarter, half, three quarters in, and the last).
fn note_files(sources: &[(String, u64)]) -> Vec<String> {
    let mut sorted: Vec<&str> = sources.iter().map(|(p, _)| p.as_str()).collect();
    sorted.sort_unstable();
    let n = sorted.len();
    let mut picked: Vec<String> = [n / 4, n / 2, 3 * n / 4, n.saturating_sub(1)]
        .into_iter()
        .filter_map(|i| sorted.get(i).map(|p| (*p).to_owned()))
        .collect();
    picked.dedup();
    picked
}

/// Text source files in walk order with their sizes (ASCII names, in directories both
/// sides serve).
fn sources(root: &Path) -> Result<Vec<(String, u64)>, String> {
    let (files, _) = corpus::walk(root).map_err(|e| e.to_string())?;
    let mut sources: Vec<(String, u64)> = Vec::new();
    for rel in files {
        let parts: Vec<&str> = rel.split('/').collect();
        let dirs = &parts[..parts.len() - 1];
        if dirs
            .iter()
            .any(|d| d.starts_with('.') || SKIP_DIRS.contains(d))
            || !rel.is_ascii()
        {
            continue;
        }
        let ext = rel.rsplit('.').next().unwrap_or("");
        if !SOURCE_EXT.contains(&ext) {
            continue;
        }
        let bytes = std::fs::read(root.join(&rel)).map_err(|e| e.to_string())?;
        if !corpus::is_probably_text(&bytes) || std::str::from_utf8(&bytes).is_err() {
            continue;
        }
        sources.push((rel, bytes.len() as u64));
    }
    Ok(sources)
}

/// Regular files and their bytes under `root`.
fn tree_size(root: &Path) -> (usize, u64) {
    let (files, _) = corpus::walk(root).unwrap_or_default();
    let bytes = files
        .iter()
        .filter_map(|f| std::fs::symlink_metadata(root.join(f)).ok())
        .map(|m| m.len())
        .sum();
    (files.len(), bytes)
}
