//! `redctx status [--wait] [--root DIR]` and `redctx roots [forget PATH]`: what the daemon
//! serves and how far indexing has come.
//!
//! `status --root DIR` also registers the root: the daemon starts indexing a root the
//! first time a client asks for it, so a cheap `redctx_doctor` call on it comes first.
//! `--wait` then asks `Request::WaitRoot` until the root is `ready`: the daemon answers
//! the moment its pass ends, or after a period with the progress then (an indicatif bar
//! on a terminal, updated five times a second; one plain line per second otherwise).

use super::files::{self, Globals};
use crate::daemon::{self, ClientError, Conn, Endpoint};
use clap::{Args, Subcommand};
use redctx_proto::{Request, Response, RootInfo, RootLimits, RootSpec};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// `status` options.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Show (and start serving) this root only (default: every served root; with --wait,
    /// the global --root or the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Wait until the root is indexed, showing progress.
    #[arg(long)]
    pub wait: bool,
}

/// `roots` subcommands.
#[derive(Subcommand, Debug)]
pub enum RootsAction {
    /// Stop serving a root and drop the daemon's in-memory state for it (its cache on disk
    /// is kept).
    #[command(after_help = "Example:\n  redctx roots forget ~/src/old-project")]
    Forget {
        /// The root directory, as it was served.
        path: PathBuf,
    },
}

/// Run `redctx status`.
pub fn status(globals: &Globals, args: &StatusArgs) -> ExitCode {
    let root = match (&args.root, &globals.root, args.wait) {
        (Some(r), _, _) => Some(r.clone()),
        (None, Some(r), _) => Some(r.clone()),
        (None, None, true) => Some(PathBuf::from(".")),
        (None, None, false) => None,
    };
    let spec = match root {
        Some(r) => match files::root_spec(globals, Some(&r), RootLimits::default()) {
            Ok(s) => Some(s),
            Err(msg) if msg != files::ROOT_NOT_DIRECTORY => return super::fail(msg),
            Err(_) => {
                return super::fail(format!(
                    "{} is not an existing directory; give the directory to serve with --root DIR",
                    r.display()
                ));
            }
        },
        None => None,
    };
    let (ep, rt) = match super::endpoint_and_runtime() {
        Ok(x) => x,
        Err(code) => return code,
    };
    rt.block_on(async move {
        let conn = match &spec {
            // Asking about a root starts the daemon, like any call on it would.
            Some(_) => match daemon::connect_or_start(&ep, daemon::START_TIMEOUT).await {
                Ok((c, _)) => c,
                Err(e) => return super::fail(e),
            },
            None => match daemon::connect(&ep).await {
                Ok(c) => c,
                Err(ClientError::NotRunning(_)) => return not_running(&ep),
                Err(e) => return super::fail(e),
            },
        };
        if let Some(spec) = &spec
            && let Err(code) = register(&conn, spec).await
        {
            return code;
        }
        let info = match conn.request(Request::Status).await {
            Ok(Response::Status(s)) => s,
            Ok(Response::Error(e)) => return super::fail(e.message),
            Ok(_) => return super::fail("unexpected answer from the daemon; see its log"),
            Err(e) => return super::fail(e),
        };
        if args.wait {
            let spec = spec.as_ref().expect("--wait always has a root");
            return wait(&conn, &spec.path).await;
        }
        println!(
            "redctx daemon {} (pid {}, up {}), socket {}",
            info.daemon_version,
            info.pid,
            super::human_duration(Duration::from_millis(info.uptime_ms)),
            ep.socket.display()
        );
        let shown: Vec<&RootInfo> = match &spec {
            Some(s) => info.roots.iter().filter(|r| r.path == s.path).collect(),
            None => info.roots.iter().collect(),
        };
        if shown.is_empty() {
            println!("no roots served yet; `redctx status --root DIR` starts serving one");
        }
        for r in shown {
            print!("{}", describe(r));
        }
        ExitCode::SUCCESS
    })
}

fn not_running(ep: &Endpoint) -> ExitCode {
    eprintln!(
        "redctx: the redctx daemon is not running (socket {}); start it with `redctx daemon start`, or give a root: `redctx status --root DIR`",
        ep.socket.display()
    );
    ExitCode::FAILURE
}

/// Make the daemon serve `spec` with the cheapest tool call there is.
async fn register(conn: &Conn, spec: &RootSpec) -> Result<(), ExitCode> {
    let request = Request::CallTool {
        root: spec.clone(),
        tool: "redctx_doctor".into(),
        arguments_json: "{}".into(),
        caller: redctx_proto::Caller::Operator,
    };
    match conn.request(request).await {
        // A blocked policy still registers the root; its state says why.
        Ok(Response::ToolResult(_)) => Ok(()),
        Ok(Response::Error(e)) => Err(super::fail(e.message)),
        Ok(_) => Err(super::fail(
            "unexpected answer from the daemon; see its log",
        )),
        Err(e) => Err(super::fail(e)),
    }
}

/// The root's path, and its serve options when they are not the defaults.
fn title(r: &RootInfo) -> String {
    match r.options.as_deref() {
        Some(o) if !o.is_empty() => format!("{} ({o})", r.path.display()),
        _ => r.path.display().to_string(),
    }
}

/// `1 file`, `2 files`.
fn files(n: u64) -> String {
    if n == 1 {
        "1 file".to_string()
    } else {
        format!("{n} files")
    }
}

fn or_unknown(v: Option<u64>) -> String {
    v.map_or_else(|| "unknown".to_string(), |n| n.to_string())
}

fn bytes_or_unknown(v: Option<u64>) -> String {
    v.map_or_else(|| "unknown".to_string(), human_bytes)
}

/// The multi-line block `status` prints for one root.
pub fn describe(r: &RootInfo) -> String {
    let watcher = match (r.watches_used, r.watch_limit, r.rescans) {
        (None, None, None) => "unknown".to_string(),
        (used, limit, rescans) => format!(
            "{}/{} watches, {} rescans",
            or_unknown(used),
            or_unknown(limit),
            or_unknown(rescans)
        ),
    };
    // Only for a root that serves documents.
    let documents = r.documents.map_or_else(String::new, |d| {
        format!(
            "  documents: {} extracted, {} failed, {} pending ({} in the root)\n",
            d.extracted, d.failed, d.pending, d.total
        )
    });
    // Once the first pass has built it.
    let search = r.search_index.map_or_else(String::new, |s| {
        let passages = if s.passage_segments >= s.segments {
            "retrieve ranks from it".to_owned()
        } else {
            format!(
                "retrieve's passage index {}/{} built (until then retrieve reads files)",
                s.passage_segments, s.segments
            )
        };
        format!("  search index: {} files; {passages}\n", s.files)
    });
    format!(
        "{}\n  state: {}\n  files: {} seen, {} indexed, {} pending ({} in the index)\n{documents}{search}  bytes: {} indexed, cache {}\n  policy: {}\n  watcher: {}\n",
        title(r),
        r.state,
        or_unknown(r.files_seen),
        or_unknown(r.files_indexed),
        or_unknown(r.files_pending),
        r.files,
        bytes_or_unknown(r.bytes),
        bytes_or_unknown(r.cache_bytes),
        r.policy.as_deref().unwrap_or("unknown"),
        watcher,
    )
}

/// `12345678` -> `11.8 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Where a root stands, for `--wait`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Indexing: files done so far and, when known, files the pass will look at.
    Indexing {
        done: u64,
        total: Option<u64>,
    },
    Ready {
        files: u64,
    },
    /// The policy cannot be loaded; the fixed reason when the daemon gives one.
    Blocked(String),
}

/// Read a root's progress from its [`RootInfo`]s: one path served under several option
/// sets is ready when all of them are, and blocked when any is.
pub fn progress(entries: &[RootInfo]) -> Progress {
    if let Some(b) = entries.iter().find(|r| r.state == "blocked") {
        return Progress::Blocked(
            b.policy
                .clone()
                .unwrap_or_else(|| "blocked (reason unknown)".into()),
        );
    }
    if entries.iter().all(|r| r.state == "ready") {
        return Progress::Ready {
            files: entries.iter().map(|r| r.files).max().unwrap_or(0),
        };
    }
    let busy = entries.iter().filter(|r| r.state != "ready");
    let (mut done, mut total) = (0, Some(0u64));
    for r in busy {
        done += r.files_indexed.unwrap_or(r.files);
        total = match (total, r.files_seen) {
            (Some(t), Some(s)) => Some(t + s),
            _ => None,
        };
    }
    Progress::Indexing {
        done,
        total: total.filter(|t| *t > 0),
    }
}

/// The plain line `--wait` prints each second when stdout is not a terminal.
pub fn plain_line(p: &Progress) -> String {
    match p {
        Progress::Indexing {
            done,
            total: Some(total),
        } => format!(
            "indexing: {done}/{total} files ({:.1}%)",
            *done as f64 * 100.0 / *total as f64
        ),
        Progress::Indexing { done, total: None } => format!("indexing: {done} files so far"),
        Progress::Ready { files: n } => format!("ready: {}", files(*n)),
        Progress::Blocked(why) => format!("policy {why}"),
    }
}

/// The root's entries once it is ready or blocked, or after `timeout` (the daemon waits;
/// a zero timeout answers at once).
async fn root_info(conn: &Conn, root: &Path, timeout: Duration) -> Result<Vec<RootInfo>, ExitCode> {
    let request = Request::WaitRoot {
        root: root.to_path_buf(),
        timeout_ms: timeout.as_millis() as u64,
    };
    match conn.request(request).await {
        Ok(Response::Roots(roots)) => Ok(roots.into_iter().filter(|r| r.path == root).collect()),
        Ok(Response::Error(e)) => Err(super::fail(e.message)),
        Ok(_) => Err(super::fail(
            "unexpected answer from the daemon; see its log",
        )),
        Err(e) => Err(super::fail(e)),
    }
}

async fn wait(conn: &Conn, root: &Path) -> ExitCode {
    let tty = std::io::stdout().is_terminal();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let period = if tty {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(1)
    };
    // The first answer at once (the state now), then one per period unless ready sooner.
    let mut timeout = Duration::ZERO;
    loop {
        let entries = match root_info(conn, root, timeout).await {
            Ok(e) if !e.is_empty() => e,
            Ok(_) => {
                if let Some(b) = bar.take() {
                    b.abandon();
                }
                return super::fail(
                    "the daemon stopped serving this root (was it forgotten?); run the command again",
                );
            }
            Err(code) => return code,
        };
        let p = progress(&entries);
        match &p {
            Progress::Ready { .. } => {
                if let Some(b) = bar.take() {
                    b.finish_and_clear();
                }
                println!("{}", plain_line(&p));
                return ExitCode::SUCCESS;
            }
            Progress::Blocked(_) => {
                if let Some(b) = bar.take() {
                    b.abandon();
                }
                return super::fail(format!(
                    "{}; nothing is served from this root until you repair its redaction config \
                     (.agent-context-redactor.toml in the root, or the --config file) and the term \
                     files it names; then run this command again",
                    plain_line(&p)
                ));
            }
            Progress::Indexing { done, total } if tty => {
                let b = bar.get_or_insert_with(new_bar);
                b.set_length(total.unwrap_or(0).max(*done));
                b.set_position(*done);
            }
            Progress::Indexing { .. } => println!("{}", plain_line(&p)),
        }
        timeout = period;
    }
}

fn new_bar() -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stdout());
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} indexing [{bar:30}] {human_pos}/{human_len} files, {rate}, ETA {eta}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
    .with_key(
        "rate",
        |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.0} files/s", s.per_sec());
        },
    )
    .progress_chars("=> ");
    b.set_style(style);
    b.enable_steady_tick(Duration::from_millis(120));
    b
}

/// Run `redctx roots` (list) or `redctx roots forget PATH`.
pub fn roots(action: Option<&RootsAction>) -> ExitCode {
    let (ep, rt) = match super::endpoint_and_runtime() {
        Ok(x) => x,
        Err(code) => return code,
    };
    rt.block_on(async move {
        let conn = match daemon::connect(&ep).await {
            Ok(c) => c,
            Err(ClientError::NotRunning(_)) => {
                if action.is_none() {
                    println!("no roots served (the redctx daemon is not running)");
                    return ExitCode::SUCCESS;
                }
                return super::fail(
                    "the redctx daemon is not running, so it serves no root; nothing to forget",
                );
            }
            Err(e) => return super::fail(e),
        };
        match action {
            None => match conn.request(Request::Roots).await {
                Ok(Response::Roots(roots)) => {
                    if roots.is_empty() {
                        println!("no roots served");
                    }
                    for r in roots {
                        let mut line =
                            format!("{}\t{}\t{}", r.path.display(), r.state, files(r.files));
                        if let Some(o) = r.options.as_deref().filter(|o| !o.is_empty()) {
                            line.push('\t');
                            line.push_str(o);
                        }
                        println!("{line}");
                    }
                    ExitCode::SUCCESS
                }
                Ok(Response::Error(e)) => super::fail(e.message),
                Ok(_) => super::fail("unexpected answer from the daemon; see its log"),
                Err(e) => super::fail(e),
            },
            Some(RootsAction::Forget { path }) => {
                // A root that was deleted cannot be canonicalized; take it as given.
                let path = std::fs::canonicalize(path).unwrap_or_else(|_| super::absolute(path));
                match conn
                    .request(Request::ForgetRoot { root: path.clone() })
                    .await
                {
                    Ok(Response::Forgotten(true)) => {
                        println!("forgot {}", path.display());
                        ExitCode::SUCCESS
                    }
                    Ok(Response::Forgotten(false)) => super::fail(format!(
                        "{} is not served by the daemon; `redctx roots` lists the served roots",
                        path.display()
                    )),
                    Ok(Response::Error(e)) => super::fail(e.message),
                    Ok(_) => super::fail("unexpected answer from the daemon; see its log"),
                    Err(e) => super::fail(e),
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(state: &str) -> RootInfo {
        RootInfo {
            path: "/srv/repo".into(),
            state: state.into(),
            files: 10,
            ..Default::default()
        }
    }

    #[test]
    fn plain_progress_lines() {
        let mut r = info("indexing");
        r.files_seen = Some(50_000);
        r.files_indexed = Some(1_200);
        assert_eq!(
            plain_line(&progress(std::slice::from_ref(&r))),
            "indexing: 1200/50000 files (2.4%)"
        );
        // A second option set of the same path that is ready does not count.
        assert_eq!(
            plain_line(&progress(&[r.clone(), info("ready")])),
            "indexing: 1200/50000 files (2.4%)"
        );
        r.files_seen = None;
        assert_eq!(
            plain_line(&progress(std::slice::from_ref(&r))),
            "indexing: 1200 files so far"
        );
        assert_eq!(
            plain_line(&progress(&[info("ready"), info("ready")])),
            "ready: 10 files"
        );
        let mut one = info("ready");
        one.files = 1;
        assert_eq!(plain_line(&progress(&[one])), "ready: 1 file");
        let mut b = info("blocked");
        b.policy = Some("blocked (config cannot be parsed)".into());
        assert_eq!(
            progress(&[info("ready"), b]),
            Progress::Blocked("blocked (config cannot be parsed)".into())
        );
    }

    #[test]
    fn missing_fields_print_unknown() {
        let text = describe(&info("ready"));
        assert_eq!(
            text,
            "/srv/repo\n  state: ready\n  files: unknown seen, unknown indexed, unknown pending (10 in the index)\n  bytes: unknown indexed, cache unknown\n  policy: unknown\n  watcher: unknown\n"
        );
        let mut r = info("indexing");
        r.files_seen = Some(3);
        r.files_indexed = Some(2);
        r.files_pending = Some(1);
        r.bytes = Some(2048);
        r.cache_bytes = Some(5 * 1024 * 1024);
        r.policy = Some("ok".into());
        r.watches_used = Some(40);
        r.watch_limit = Some(8192);
        r.rescans = Some(0);
        r.options = Some("mode balanced".into());
        assert_eq!(
            describe(&r),
            "/srv/repo (mode balanced)\n  state: indexing\n  files: 3 seen, 2 indexed, 1 pending (10 in the index)\n  bytes: 2.0 KiB indexed, cache 5.0 MiB\n  policy: ok\n  watcher: 40/8192 watches, 0 rescans\n"
        );
        r.options = Some("documents".into());
        r.documents = Some(redctx_proto::DocumentCounts {
            total: 5,
            extracted: 3,
            failed: 1,
            pending: 1,
        });
        assert_eq!(
            describe(&r),
            "/srv/repo (documents)\n  state: indexing\n  files: 3 seen, 2 indexed, 1 pending (10 in the index)\n  documents: 3 extracted, 1 failed, 1 pending (5 in the root)\n  bytes: 2.0 KiB indexed, cache 5.0 MiB\n  policy: ok\n  watcher: 40/8192 watches, 0 rescans\n"
        );
        r.documents = None;
        r.search_index = Some(redctx_proto::SearchIndexInfo {
            files: 9,
            segments: 3,
            passage_segments: 1,
        });
        let line = |r: &RootInfo| describe(r).lines().nth(3).unwrap().to_owned();
        assert_eq!(
            line(&r),
            "  search index: 9 files; retrieve's passage index 1/3 built (until then retrieve reads files)"
        );
        r.search_index = r.search_index.map(|s| redctx_proto::SearchIndexInfo {
            passage_segments: 3,
            ..s
        });
        assert_eq!(line(&r), "  search index: 9 files; retrieve ranks from it");
    }

    #[test]
    fn byte_sizes_read_naturally() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(12_345_678), "11.8 MiB");
    }
}
