//! Command line of `redctx`: `redctx mcp`, `redctx daemon start|stop|restart|status|install|logs`,
//! the reference's file commands (`ls`, `cat`, `grep`, …; see [`files`]), `redctx benchmark`
//! (see [`benchmark`]), `redctx status`
//! and `redctx roots` (see [`status`]).
//!
//! Exit codes: 0 success, 1 failure (one line on stderr saying what failed and what to
//! do), 2 usage error (from clap).

use crate::daemon::{self, ClientError, Endpoint, Link};
use crate::mcp::Shim;
use crate::stdio_guard;
use clap::{Parser, Subcommand};
use redctx_proto::{Request, Response, RootLimits, RootSpec};
use rmcp::ServiceExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

mod benchmark;
mod detectors;
mod discover;
mod files;
mod github;
mod rehydrate;
mod service;
pub mod status;
mod writes;

/// redctx: let AI agents read a private codebase without seeing its secrets.
#[derive(Parser, Debug)]
#[command(name = "redctx", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    globals: files::Globals,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve one root to an AI agent as an MCP server on stdin/stdout, starting the
    /// daemon if needed.
    ///
    /// Example (in .mcp.json): "command": "redctx", "args": ["mcp", "--root", "/path/to/repo"]
    Mcp(McpArgs),
    /// Manage the background daemon that does the redaction work.
    Daemon {
        #[command(subcommand)]
        action: DaemonAction,
    },
    #[command(flatten)]
    File(files::FileCommand),
    /// Put the real values back into redacted text (a file, or every text file of a
    /// folder): placeholders and @p_<id> references the root's redaction knows.
    #[command(
        after_help = "Examples:\n  redctx rehydrate notes.md --allow-raw-output\n  \
        redctx --root ~/src/app rehydrate drafts --output restored --allow-raw-output"
    )]
    Rehydrate(rehydrate::RehydrateArgs),
    /// Time the daemon's own cold full-tree work on the root (walk and text detection,
    /// reading, redaction, search) and print the reference's report with its figures.
    #[command(after_help = "Examples:\n  redctx --root ~/src/app benchmark\n  \
        redctx benchmark --query TODO --no-ignore-case --format json")]
    Benchmark(benchmark::BenchmarkArgs),
    /// Draft raw redaction terms with a local LLM (Ollama) or your own detectors
    /// (--detector), for human review.
    ///
    /// Prints or writes the raw sensitive terms it finds: a human command, never run for
    /// an agent and never an MCP tool.
    #[command(after_help = "Examples:\n  redctx --root ~/src/app discover\n  \
        redctx discover docs --model llama3.2 --output .agent-context-redactor.toml\n  \
        redctx discover --detector patterns=rules.toml")]
    Discover(discover::DiscoverArgs),
    /// Merge terms a local LLM (or --detector) finds in documents into the redaction
    /// config.
    ///
    /// Only ever adds. Reads and writes raw terms: a human command, never run for an
    /// agent.
    #[command(
        after_help = "Examples:\n  redctx discover-update --input-jsonl docs.jsonl --check\n  \
        git show HEAD:notes.md | jq -Rs '{path:\"notes.md\",text:.}' -c | redctx discover-update --input-jsonl -"
    )]
    DiscoverUpdate(discover::DiscoverUpdateArgs),
    /// Show what the daemon serves: per root, files seen / indexed / pending, bytes, cache
    /// size, policy and watcher state. With --root it also starts serving that root.
    #[command(after_help = "Examples:\n  redctx status\n  redctx status --root ~/src/app --wait")]
    Status(status::StatusArgs),
    /// List the roots the daemon serves (path, state, files), or forget one.
    #[command(after_help = "Examples:\n  redctx roots\n  redctx roots forget ~/src/old-project")]
    Roots {
        #[command(subcommand)]
        action: Option<status::RootsAction>,
    },
}

/// Options of `redctx mcp`; they select the served root and its policy.
#[derive(clap::Args, Debug)]
struct McpArgs {
    /// Directory to serve (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Redaction config file (TOML).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Redaction mode: strict, balanced or code (default: the config's `mode`, else code).
    #[arg(long, value_parser = ["strict", "balanced", "code"])]
    mode: Option<String>,
    /// Plug in a detector: `patterns=rules.toml` or `exec=/path/to/program`
    /// (repeatable; spec 5.12). Any `--detector` replaces the config's `plugged_detectors`.
    #[arg(long, value_name = "NAME[=ARGUMENT]")]
    detector: Vec<String>,
    /// Also serve files the default policy keeps private.
    #[arg(long)]
    include_private: bool,
    /// Do not honour .gitignore files.
    #[arg(long)]
    no_gitignore: bool,
    /// Serve .docx .pptx .xlsx .xls .pdf as extracted, redacted Markdown (also: the
    /// config's `documents = true`).
    #[arg(long)]
    documents: bool,
    /// Refuse files larger than this many bytes (default 5000000).
    #[arg(long, value_name = "BYTES")]
    max_raw_bytes_per_file: Option<u64>,
    /// Byte budget of one call across files (default 4000000000).
    #[arg(long, value_name = "BYTES")]
    max_total_raw_bytes: Option<u64>,
    /// Entry budget of one directory walk (default 1000000).
    #[arg(long, value_name = "N")]
    max_traversal_entries: Option<u64>,
    /// Largest file served as an MCP resource (default 1000000).
    #[arg(long, value_name = "BYTES")]
    max_resource_bytes: Option<u64>,
    /// Offer redctx_submit_doc: the agent may write documents, with their placeholders
    /// restored, into --write-subdir.
    #[arg(long)]
    enable_writes: bool,
    /// Root-relative directory redctx_submit_doc writes into.
    #[arg(long, value_name = "DIR", default_value = "incoming")]
    write_subdir: String,
    /// Fail a write whose placeholder lookup would read more than this many files
    /// (default: no limit).
    #[arg(long, value_name = "N")]
    max_submit_files: Option<u64>,
}

#[derive(Subcommand, Debug)]
enum DaemonAction {
    /// Start the daemon in the background (does nothing if it already runs).
    Start,
    /// Stop the running daemon.
    Stop,
    /// Stop the daemon, then start it again (e.g. after an upgrade).
    Restart,
    /// Show the daemon's version, pid, uptime and served roots.
    Status,
    /// Write a systemd user unit that starts the daemon at login, and say how to enable it.
    #[command(
        after_help = "Examples:\n  redctx daemon install\n  redctx daemon install --print > redctxd.service"
    )]
    Install(service::InstallArgs),
    /// Print the end of the daemon's log.
    #[command(after_help = "Examples:\n  redctx daemon logs -n 20\n  redctx daemon logs -f")]
    Logs(service::LogsArgs),
}

/// Entry point of the `redctx` binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => usage_error(e),
    };
    if cli.globals.is_set() && matches!(cli.command, Command::Mcp(_) | Command::Daemon { .. }) {
        use clap::CommandFactory;
        Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "options before `mcp` or `daemon` are not used by them; give `mcp` its options after it, e.g. `redctx mcp --root DIR`",
            )
            .exit();
    }
    match cli.command {
        Command::Mcp(args) => run_mcp(args),
        Command::Daemon { action } => run_daemon(action),
        Command::File(cmd) => files::run(&cli.globals, &cmd),
        Command::Rehydrate(args) => rehydrate::run(&cli.globals, &args),
        Command::Benchmark(args) => benchmark::run(&cli.globals, &args),
        Command::Discover(args) => discover::run(&cli.globals, &args),
        Command::DiscoverUpdate(args) => discover::run_update(&cli.globals, &args),
        Command::Status(args) => status::status(&cli.globals, &args),
        Command::Roots { action } => status::roots(action.as_ref()),
    }
}

/// Print a parse error and exit (2 for usage errors). Like the reference's argparse, a
/// usage error always shows the usage of the command it concerns, so the user sees what
/// was wrong and what the command accepts; clap leaves it out of some errors (an invalid
/// value, for one).
fn usage_error(e: clap::Error) -> ! {
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) || e.use_stderr() && e.render().to_string().contains("Usage:")
    {
        e.exit();
    }
    let mut cmd = Cli::command();
    cmd.build();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = args
        .iter()
        .find_map(|a| {
            cmd.get_subcommands()
                .find(|s| s.get_name() == a || s.get_all_aliases().any(|x| x == a))
        })
        .map_or_else(|| cmd.clone().render_usage(), |s| s.clone().render_usage());
    let text = e.render().to_string();
    let hint = "For more information, try '--help'.";
    let body = text
        .trim_end()
        .strip_suffix(hint)
        .unwrap_or(&text)
        .trim_end();
    eprint!("{body}\n\n{usage}\n\n{hint}\n");
    std::process::exit(e.exit_code());
}

fn endpoint_and_runtime() -> Result<(Endpoint, tokio::runtime::Runtime), ExitCode> {
    let ep = Endpoint::from_env().map_err(fail)?;
    let rt = runtime().map_err(fail)?;
    Ok((ep, rt))
}

fn absolute(p: &std::path::Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("redctx: {msg}");
    ExitCode::FAILURE
}

fn root_spec(args: &McpArgs) -> Result<RootSpec, String> {
    let path = match std::fs::canonicalize(&args.root) {
        Ok(p) if p.is_dir() => p,
        _ => {
            return Err(format!(
                "Root must be an existing directory (got --root {}); pass the directory to serve with --root",
                args.root.display()
            ));
        }
    };
    let config = args.config.as_ref().map(|c| {
        std::fs::canonicalize(c).unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|d| d.join(c))
                .unwrap_or_else(|_| c.clone())
        })
    });
    let detectors = detectors::resolve_here(&args.detector)?;
    Ok(RootSpec {
        path,
        config,
        mode: args.mode.clone(),
        detectors,
        include_private: args.include_private,
        gitignore: !args.no_gitignore,
        documents: args.documents,
        detector_profile: None,
        limits: RootLimits {
            max_raw_bytes_per_file: args.max_raw_bytes_per_file,
            max_total_raw_bytes: args.max_total_raw_bytes,
            max_traversal_entries: args.max_traversal_entries,
            max_resource_bytes: args.max_resource_bytes,
        },
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

fn run_mcp(args: McpArgs) -> ExitCode {
    let root = match root_spec(&args) {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    let writes = match writes::options(
        &root.path,
        args.enable_writes,
        &args.write_subdir,
        args.max_submit_files,
    ) {
        Ok(w) => w,
        Err(msg) => return files::print_error(msg),
    };
    let ep = match Endpoint::from_env() {
        Ok(ep) => ep,
        Err(e) => return fail(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    let code = rt.block_on(async move {
        // Start the daemon now so the first call is fast. If it cannot be reached, serve
        // anyway: the host then shows the server, every call that needs the daemon answers
        // a fixed error, and the reason is on stderr (once).
        let (conn, failed) = match daemon::connect_or_start(&ep, daemon::START_TIMEOUT).await {
            Ok((c, _)) => (Some(c), None),
            Err(e) => (None, Some(e)),
        };
        let shim = Shim::new(root, Link::new(ep, conn)).with_writes(writes);
        if let Some(e) = failed {
            shim.report(&e);
        }
        let stdio_guard::Guard {
            rmcp_input,
            rmcp_output,
            flushed,
        } = stdio_guard::spawn(tokio::io::stdin(), tokio::io::stdout());
        let code = match shim.serve((rmcp_input, rmcp_output)).await {
            Ok(service) => match service.waiting().await {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => fail(format!("MCP session ended abnormally: {e}")),
            },
            Err(e) => fail(format!("MCP session failed to start: {e}")),
        };
        // Answers still on their way to stdout (the guard's own, for a last bad line).
        let _ = tokio::time::timeout(Duration::from_secs(5), flushed).await;
        code
    });
    // tokio's stdin reader may still block on a read; leave without waiting for it.
    std::process::exit(if code == ExitCode::SUCCESS { 0 } else { 1 });
}

fn run_daemon(action: DaemonAction) -> ExitCode {
    let ep = match Endpoint::from_env() {
        Ok(ep) => ep,
        Err(e) => return fail(e),
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(e),
    };
    rt.block_on(async move {
        match action {
            DaemonAction::Start => start(&ep).await,
            DaemonAction::Stop => stop(&ep).await,
            DaemonAction::Restart => match stop(&ep).await {
                c if c == ExitCode::SUCCESS => start(&ep).await,
                c => c,
            },
            DaemonAction::Status => status(&ep).await,
            DaemonAction::Install(args) => service::install(&args),
            DaemonAction::Logs(args) => service::logs(&args, &ep).await,
        }
    })
}

async fn start(ep: &Endpoint) -> ExitCode {
    match daemon::connect_or_start(ep, daemon::START_TIMEOUT).await {
        Ok((c, true)) => {
            println!(
                "started redctx daemon {} (pid {}, socket {})",
                c.daemon_version,
                c.pid,
                ep.socket.display()
            );
            ExitCode::SUCCESS
        }
        Ok((c, false)) => {
            println!(
                "redctx daemon {} is already running (pid {})",
                c.daemon_version, c.pid
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

async fn stop(ep: &Endpoint) -> ExitCode {
    let pid = match daemon::connect(ep).await {
        Ok(conn) => match conn.request(Request::Shutdown).await {
            Ok(Response::Ok) => conn.pid,
            Ok(_) => return fail("the daemon refused to shut down; see its log"),
            Err(e) => return fail(e),
        },
        Err(ClientError::NotRunning(_)) => {
            println!("redctx daemon is not running");
            return ExitCode::SUCCESS;
        }
        Err(ClientError::Mismatch { pid, .. }) => {
            // An incompatible daemon cannot be asked; ask the process instead.
            // SAFETY: plain kill(2); the socket's peer credentials showed it is ours.
            if unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) } != 0 {
                return fail(format!(
                    "cannot stop the daemon (pid {pid}): {}",
                    std::io::Error::last_os_error()
                ));
            }
            pid
        }
        Err(e) => return fail(e),
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match daemon::connect(ep).await {
            Err(ClientError::NotRunning(_)) => break,
            _ if Instant::now() >= deadline => {
                return fail(format!(
                    "the daemon (pid {pid}) is still running after 5 s; stop it with `kill {pid}`"
                ));
            }
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    // The socket is gone; wait for the process too, so a following start finds the
    // state directory (and its cache lock) free.
    while process_alive(pid) {
        if Instant::now() >= deadline + Duration::from_secs(5) {
            return fail(format!(
                "the daemon (pid {pid}) closed its socket but is still exiting; wait or run `kill {pid}`"
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("stopped redctx daemon (pid {pid})");
    ExitCode::SUCCESS
}

/// Whether `pid` is a live process (a zombie waiting to be reaped counts as gone).
fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        // No procfs (not Linux): ask the kernel. SAFETY: signal 0 only checks existence.
        Err(_) => unsafe { libc::kill(pid as libc::pid_t, 0) == 0 },
    }
}

async fn status(ep: &Endpoint) -> ExitCode {
    let conn = match daemon::connect(ep).await {
        Ok(c) => c,
        Err(ClientError::NotRunning(_)) => {
            println!(
                "redctx daemon is not running (socket {})",
                ep.socket.display()
            );
            println!("start it with `redctx daemon start`, or let `redctx mcp` start it on demand");
            return ExitCode::FAILURE;
        }
        Err(e) => return fail(e),
    };
    let s = match conn.request(Request::Status).await {
        Ok(Response::Status(s)) => s,
        Ok(Response::Error(e)) => return fail(e.message),
        Ok(_) => return fail("unexpected answer from the daemon"),
        Err(e) => return fail(e),
    };
    println!("redctx daemon: running");
    println!(
        "version: {} (protocol {})",
        s.daemon_version, s.protocol_version
    );
    println!("pid: {}", s.pid);
    println!(
        "uptime: {}",
        human_duration(Duration::from_millis(s.uptime_ms))
    );
    println!("socket: {}", ep.socket.display());
    println!("log: {}", ep.log_file().display());
    println!("connections: {}", s.connections);
    println!("requests served: {}", s.requests_served);
    println!("roots: {}", s.roots.len());
    for r in &s.roots {
        println!("  {}\t{}\t{} files", r.path.display(), r.state, r.files);
    }
    ExitCode::SUCCESS
}

fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m {:02}s", s / 3600, (s / 60) % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(human_duration(Duration::from_secs(5)), "5s");
        assert_eq!(human_duration(Duration::from_secs(65)), "1m 05s");
        assert_eq!(human_duration(Duration::from_secs(3723)), "1h 02m 03s");
    }
}
