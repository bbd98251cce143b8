//! The human file commands (`ls`, `tree`, `cat`, `grep`, …): the reference CLI's
//! commands, answered by the daemon's tools.
//!
//! Each command becomes one `Request::CallTool` with the MCP tool name and a JSON
//! argument object (plus a few CLI-only keys: `head`/`tail` on `redctx_read`, `max_files`
//! on search and retrieve), sent over the same connection code as `redctx mcp` (the
//! daemon is started on demand). The tool text is the reference CLI's stdout except for
//! three MCP conventions this module undoes: an empty answer arrives as `OK\n`, a search
//! without matches as `No matches.\n` (the CLI prints nothing and exits 1), and an audit
//! with a FAIL as an error result carrying the report (the CLI prints it to stdout and
//! exits 1).
//!
//! Exit codes: 0 success, 1 a failed call (its message on stderr) or no match / audit
//! FAIL, 2 usage error (clap).

use crate::daemon::{self, Endpoint};
use clap::{Args, Subcommand};
use redctx_proto::{Request, Response, RootLimits, RootSpec};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Options before the subcommand: which root, and under which policy.
#[derive(Args, Debug, Default, Clone, PartialEq)]
pub struct Globals {
    /// Directory to read (default: the current directory).
    #[arg(long, value_name = "PATH")]
    pub root: Option<PathBuf>,
    /// Redaction config file, TOML (default: <root>/.agent-context-redactor.toml).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Redaction mode (default: code, redctx's own: secrets, personal data and configured
    /// terms everywhere, name heuristics only in prose files; the Python reference
    /// defaulted to strict).
    #[arg(long, value_parser = ["strict", "balanced", "code"])]
    pub mode: Option<String>,
    /// Built-in detector set; extended adds more identifier kinds and prompt-injection
    /// markers (default: the config's detector_profile, else default).
    #[arg(long, value_parser = ["default", "extended"])]
    pub detector_profile: Option<String>,
    /// Plug in a detector: `patterns=rules.toml` or `exec=/path/to/program`
    /// (repeatable; spec 5.12). Any `--detector` replaces the config's `plugged_detectors`.
    #[arg(long, value_name = "NAME[=ARGUMENT]")]
    pub detector: Vec<String>,
    /// Also serve files the default policy keeps private (caches, build output, …).
    #[arg(long)]
    pub include_private: bool,
    /// Do not honour .gitignore files.
    #[arg(long)]
    pub no_gitignore: bool,
    /// Serve .docx .pptx .xlsx .xls .pdf as extracted, redacted Markdown (also: the
    /// config's `documents = true`).
    #[arg(long)]
    pub documents: bool,
}

impl Globals {
    /// Whether any option was given (they only apply to the commands of this module).
    pub fn is_set(&self) -> bool {
        *self != Globals::default()
    }
}

/// `--max-entries` and `--max-seconds`: the budget every command has.
#[derive(Args, Debug, Clone, Default)]
pub struct WalkBudget {
    /// Most directory entries one walk may visit (default 1000000).
    #[arg(long, value_name = "N")]
    pub max_entries: Option<u64>,
    /// Give up after this many seconds with `Operation deadline exceeded.` (default: no
    /// deadline).
    #[arg(long, value_name = "SECONDS")]
    pub max_seconds: Option<f64>,
}

/// `--max-raw-bytes-per-file` and `--max-total-raw-bytes`: commands that read files.
#[derive(Args, Debug, Clone, Default)]
pub struct ByteBudget {
    /// Refuse files larger than this many bytes (default 5000000).
    #[arg(long, value_name = "BYTES")]
    pub max_raw_bytes_per_file: Option<u64>,
    /// Most raw bytes one command may read across files (default 4000000000).
    #[arg(long, value_name = "BYTES")]
    pub max_total_raw_bytes: Option<u64>,
}

/// The file commands.
#[derive(Subcommand, Debug)]
pub enum FileCommand {
    /// List a directory's entries: opaque id, kind, size and redacted path, tab-separated.
    #[command(
        after_help = "Examples:\n  redctx ls\n  redctx ls -r --max-depth 2 docs\n  \
        redctx --root ~/src/app ls @p_3e6e02b9c77a"
    )]
    Ls(LsArgs),
    /// Show the directory hierarchy as an indented outline of opaque ids and redacted
    /// names.
    #[command(after_help = "Examples:\n  redctx tree\n  redctx tree --max-depth 1 src")]
    Tree(TreeArgs),
    /// Print a redacted text file, or a range of its lines, after a header line.
    #[command(
        visible_alias = "read",
        after_help = "Examples:\n  redctx cat README.md\n  \
            redctx cat -n --start-line 10 --end-line 20 @p_bad6cf103171"
    )]
    Cat(CatArgs),
    /// Print the first lines of a redacted text file.
    #[command(after_help = "Example:\n  redctx head -n 5 docs/readme.txt")]
    Head(LinesArgs),
    /// Print the last lines of a redacted text file.
    #[command(after_help = "Example:\n  redctx tail -n 5 --line-numbers docs/readme.txt")]
    Tail(LinesArgs),
    /// Print the lines of redacted text that contain QUERY, grep-style; exits 1 when
    /// nothing matches.
    #[command(
        visible_alias = "search",
        after_help = "Case-sensitive by default (the MCP tool ignores case by default).\n\n\
            Examples:\n  redctx grep TODO\n  redctx grep -i -C 2 --glob '*.md' 'retention policy' docs\n  \
            redctx grep -E 'fn [a-z_]+\\(' src\n  redctx grep '[PERSON_b6e03a41'"
    )]
    Grep(GrepArgs),
    /// Rank passages of redacted text by how well they match the words of QUERY, with
    /// line citations.
    #[command(after_help = "Example:\n  redctx retrieve 'database backup recovery' --glob '*.md'")]
    Retrieve(RetrieveArgs),
    /// Show the metadata of a file or directory: id, redacted path, type, size, lines.
    #[command(after_help = "Example:\n  redctx stat docs/readme.txt")]
    Stat(StatArgs),
    /// Print several redacted text files one after the other, each between BEGIN/END
    /// marker lines.
    #[command(
        after_help = "Examples:\n  redctx bundle docs\n  redctx bundle --glob '*.md' \
        --max-files 10"
    )]
    Bundle(BundleArgs),
    /// Summarize the redaction setup in force (counts only, never the terms).
    #[command(after_help = "Example:\n  redctx --root ~/src/app doctor")]
    Doctor,
    /// Run the safety checks (symlinks, salt, configured terms, a synthetic leak test);
    /// exits 1 when a check FAILs.
    #[command(after_help = "Examples:\n  redctx audit\n  redctx audit --format json")]
    Audit(AuditArgs),
    /// Read the issues of the configured GitHub repo aliases, redacted (the daemon's
    /// environment holds the tokens).
    #[command(
        visible_alias = "gh",
        after_help = "Examples:\n  redctx gh repos\n  redctx gh issues context --limit 5\n  \
        redctx gh issue context 42 --comments"
    )]
    Github(super::github::GithubArgs),
}

/// `ls` options.
#[derive(Args, Debug)]
pub struct LsArgs {
    /// Directory (root-relative path or @p_<id>; default: the root).
    #[arg(default_value = ".")]
    pub path: String,
    /// List the whole subtree, starting with PATH itself.
    #[arg(short, long)]
    pub recursive: bool,
    /// With -r: levels below PATH to descend (default: unlimited).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u64>,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `tree` options.
#[derive(Args, Debug)]
pub struct TreeArgs {
    /// Where to start (root-relative path or @p_<id>; default: the root).
    #[arg(default_value = ".")]
    pub path: String,
    /// Levels below PATH to show.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_depth: u64,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `cat` / `read` options.
#[derive(Args, Debug)]
pub struct CatArgs {
    /// The file (root-relative path or @p_<id>).
    pub path: String,
    /// First line to print, 1-based (default: 1).
    #[arg(long, value_name = "N")]
    pub start_line: Option<u64>,
    /// Last line to print, inclusive (default: the last line).
    #[arg(long, value_name = "N")]
    pub end_line: Option<u64>,
    /// Most characters of file text; longer text ends with [TRUNCATED].
    #[arg(long, value_name = "N", default_value_t = 120_000)]
    pub max_chars: u64,
    /// Prefix each line with its number and a tab.
    #[arg(short = 'n', long)]
    pub line_numbers: bool,
    #[command(flatten)]
    pub bytes: ByteBudget,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `head` / `tail` options.
#[derive(Args, Debug)]
pub struct LinesArgs {
    /// The file (root-relative path or @p_<id>).
    pub path: String,
    /// How many lines.
    #[arg(short = 'n', long, value_name = "N", default_value_t = 40)]
    pub lines: u64,
    /// Most characters of file text; longer text ends with [TRUNCATED].
    #[arg(long, value_name = "N", default_value_t = 120_000)]
    pub max_chars: u64,
    /// Prefix each line with its number and a tab.
    #[arg(long)]
    pub line_numbers: bool,
    #[command(flatten)]
    pub bytes: ByteBudget,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `grep` / `search` options.
#[derive(Args, Debug)]
pub struct GrepArgs {
    /// Text to find within one line (a regular expression with -E).
    pub query: String,
    /// Files or directories to search (default: the whole root).
    pub paths: Vec<String>,
    /// Ignore case.
    #[arg(short, long)]
    pub ignore_case: bool,
    /// QUERY is a regular expression (Rust regex syntax).
    #[arg(short = 'E', long)]
    pub regex: bool,
    /// Lines of context before and after each match.
    #[arg(short = 'C', long, value_name = "N", default_value_t = 0)]
    pub context: u64,
    /// Only files whose root-relative path, as `ls` shows it (redacted), matches this shell pattern (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub glob: Vec<String>,
    /// Most output lines; more end with [TRUNCATED].
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub max_results: u64,
    /// Most files to read (default: unlimited).
    #[arg(long, value_name = "N")]
    pub max_files: Option<u64>,
    #[command(flatten)]
    pub bytes: ByteBudget,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `retrieve` options.
#[derive(Args, Debug)]
pub struct RetrieveArgs {
    /// Words describing what you are after.
    pub query: String,
    /// Files or directories to rank (default: the whole root).
    pub paths: Vec<String>,
    /// Only files whose root-relative path, as `ls` shows it (redacted), matches this shell pattern (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub glob: Vec<String>,
    /// Most passages (1 to 50).
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub max_results: u64,
    /// Character budget of the whole answer (256 to 100000).
    #[arg(long, value_name = "N", default_value_t = 12_000)]
    pub max_chars: u64,
    /// Most files to read (default: unlimited; the reference stopped at 80).
    #[arg(long, value_name = "N")]
    pub max_files: Option<u64>,
    #[command(flatten)]
    pub bytes: ByteBudget,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `stat` options.
#[derive(Args, Debug)]
pub struct StatArgs {
    /// A file or directory (root-relative path or @p_<id>).
    pub path: String,
    #[command(flatten)]
    pub bytes: ByteBudget,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `bundle` options.
#[derive(Args, Debug)]
pub struct BundleArgs {
    /// Files or directories to include (default: the whole root).
    pub paths: Vec<String>,
    /// Only files whose root-relative path, as `ls` shows it (redacted), matches this shell pattern (repeatable).
    #[arg(long, value_name = "GLOB")]
    pub glob: Vec<String>,
    /// Most files.
    #[arg(long, value_name = "N", default_value_t = 80)]
    pub max_files: u64,
    /// Most characters kept from each file.
    #[arg(long, value_name = "N", default_value_t = 30_000)]
    pub max_chars_per_file: u64,
    /// No further file is started after this many characters.
    #[arg(long, value_name = "N", default_value_t = 300_000)]
    pub max_total_chars: u64,
    #[command(flatten)]
    pub bytes: ByteBudget,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// `audit` options.
#[derive(Args, Debug)]
pub struct AuditArgs {
    /// Report format.
    #[arg(long, value_parser = ["text", "json"], default_value = "text")]
    pub format: String,
    #[command(flatten)]
    pub walk: WalkBudget,
}

/// How a tool's answer becomes stdout and an exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printing {
    /// Print the text; an `OK\n` answer (MCP's "empty") prints nothing.
    Plain,
    /// Like `Plain`; `No matches.\n` prints nothing and exits 1.
    Search,
    /// An error result that carries a report (a FAIL) goes to stdout and exits 1.
    Audit,
}

/// One tool call built from a command line.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// MCP tool name the daemon dispatches on.
    pub tool: &'static str,
    /// The argument object.
    pub arguments: Map<String, Value>,
    /// Budget flags that are per-root limits in the daemon.
    pub limits: RootLimits,
    /// `--max-seconds`.
    pub deadline: Option<Duration>,
    pub printing: Printing,
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn limits(walk: &WalkBudget, bytes: Option<&ByteBudget>) -> RootLimits {
    RootLimits {
        max_raw_bytes_per_file: bytes.and_then(|b| b.max_raw_bytes_per_file),
        max_total_raw_bytes: bytes.and_then(|b| b.max_total_raw_bytes),
        max_traversal_entries: walk.max_entries,
        max_resource_bytes: None,
    }
}

impl FileCommand {
    /// The tool call this command line asks for.
    pub fn call(&self) -> Call {
        let plain = |tool, arguments: Value, walk: &WalkBudget, bytes: Option<&ByteBudget>| Call {
            tool,
            arguments: object(arguments),
            limits: limits(walk, bytes),
            deadline: walk.max_seconds.map(seconds),
            printing: Printing::Plain,
        };
        match self {
            FileCommand::Ls(a) => {
                let mut args = json!({"path": a.path, "recursive": a.recursive});
                if let Some(d) = a.max_depth {
                    args["max_depth"] = json!(d);
                }
                plain("redctx_list", args, &a.walk, None)
            }
            FileCommand::Tree(a) => plain(
                "redctx_tree",
                json!({"path": a.path, "max_depth": a.max_depth}),
                &a.walk,
                None,
            ),
            FileCommand::Cat(a) => {
                let mut args = json!({"path": a.path});
                // The reference treats 0 like "not given" for both ends.
                if let Some(s) = a.start_line.filter(|s| *s > 0) {
                    args["start_line"] = json!(s);
                }
                if let Some(e) = a.end_line.filter(|e| *e > 0) {
                    args["end_line"] = json!(e);
                }
                args["max_chars"] = json!(a.max_chars);
                args["line_numbers"] = json!(a.line_numbers);
                plain("redctx_read", args, &a.walk, Some(&a.bytes))
            }
            FileCommand::Head(a) | FileCommand::Tail(a) => {
                let key = if matches!(self, FileCommand::Head(_)) {
                    "head"
                } else {
                    "tail"
                };
                let mut args = json!({"path": a.path});
                args[key] = json!(a.lines);
                args["max_chars"] = json!(a.max_chars);
                args["line_numbers"] = json!(a.line_numbers);
                plain("redctx_read", args, &a.walk, Some(&a.bytes))
            }
            FileCommand::Grep(a) => {
                let mut args = json!({
                    "query": a.query,
                    "paths": a.paths,
                    "ignore_case": a.ignore_case,
                    "regex": a.regex,
                    "context": a.context,
                    "glob": a.glob,
                    "max_results": a.max_results,
                });
                if let Some(n) = a.max_files {
                    args["max_files"] = json!(n);
                }
                Call {
                    printing: Printing::Search,
                    ..plain("redctx_search", args, &a.walk, Some(&a.bytes))
                }
            }
            FileCommand::Retrieve(a) => {
                let mut args = json!({
                    "query": a.query,
                    "paths": a.paths,
                    "glob": a.glob,
                    "max_results": a.max_results,
                    "max_chars": a.max_chars,
                });
                if let Some(n) = a.max_files {
                    args["max_files"] = json!(n);
                }
                plain("redctx_retrieve", args, &a.walk, Some(&a.bytes))
            }
            FileCommand::Stat(a) => plain(
                "redctx_stat",
                json!({"path": a.path}),
                &a.walk,
                Some(&a.bytes),
            ),
            FileCommand::Bundle(a) => plain(
                "redctx_bundle",
                json!({
                    "paths": a.paths,
                    "glob": a.glob,
                    "max_files": a.max_files,
                    "max_chars_per_file": a.max_chars_per_file,
                    "max_total_chars": a.max_total_chars,
                }),
                &a.walk,
                Some(&a.bytes),
            ),
            FileCommand::Doctor => plain("redctx_doctor", json!({}), &WalkBudget::default(), None),
            FileCommand::Audit(a) => Call {
                printing: Printing::Audit,
                ..plain("redctx_audit", json!({"format": a.format}), &a.walk, None)
            },
            FileCommand::Github(a) => a.command.call(),
        }
    }
}

/// `--max-seconds` as a duration (negative = already over).
pub fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX)
}

/// Message of a reference CLI whose root is not a directory (spec 11).
pub const ROOT_NOT_DIRECTORY: &str = "Root must be an existing directory.";

/// The served root the global options select; `root` overrides `--root` when given.
pub fn root_spec(
    g: &Globals,
    root: Option<&PathBuf>,
    limits: RootLimits,
) -> Result<RootSpec, String> {
    let given = root
        .or(g.root.as_ref())
        .cloned()
        .unwrap_or_else(|| ".".into());
    let path = match std::fs::canonicalize(expand_home(&given)) {
        Ok(p) if p.is_dir() => p,
        _ => return Err(ROOT_NOT_DIRECTORY.into()),
    };
    let detectors = super::detectors::resolve_here(&g.detector)?;
    let config = g.config.as_ref().map(|c| {
        let c = expand_home(c);
        std::fs::canonicalize(&c).unwrap_or_else(|_| {
            std::env::current_dir()
                .map(|d| d.join(&c))
                .unwrap_or_else(|_| c.clone())
        })
    });
    Ok(RootSpec {
        path,
        config,
        mode: g.mode.clone(),
        include_private: g.include_private,
        gitignore: !g.no_gitignore,
        documents: g.documents,
        detector_profile: g.detector_profile.clone(),
        limits,
        detectors,
    })
}

/// `~` and `~/x` as the reference's `expanduser` reads them (a shell normally does this).
fn expand_home(p: &std::path::Path) -> PathBuf {
    let home = || std::env::var_os("HOME").filter(|h| !h.is_empty());
    match p.strip_prefix("~") {
        Ok(rest) => match home() {
            Some(h) => PathBuf::from(h).join(rest),
            None => p.to_path_buf(),
        },
        Err(_) => p.to_path_buf(),
    }
}

/// What a command answered by the daemon needs first: the root as the daemon should
/// serve it, the socket, and a runtime. On failure the message is already printed.
pub(super) fn prepare(
    globals: &Globals,
    limits: RootLimits,
) -> Result<(RootSpec, Endpoint, tokio::runtime::Runtime), ExitCode> {
    let root = root_spec(globals, None, limits).map_err(|msg| {
        eprintln!("{msg}");
        ExitCode::FAILURE
    })?;
    let ep = Endpoint::from_env().map_err(super::fail)?;
    let rt = super::runtime().map_err(super::fail)?;
    Ok((root, ep, rt))
}

/// Run one file command against the daemon and print its answer.
pub fn run(globals: &Globals, command: &FileCommand) -> ExitCode {
    let call = command.call();
    let (root, ep, rt) = match prepare(globals, call.limits.clone()) {
        Ok(parts) => parts,
        Err(code) => return code,
    };
    rt.block_on(async move {
        let (conn, _) = match daemon::connect_or_start(&ep, daemon::START_TIMEOUT).await {
            Ok(c) => c,
            Err(e) => return super::fail(e),
        };
        let root_path = root.path.clone();
        let request = Request::CallTool {
            root,
            tool: call.tool.to_string(),
            arguments_json: Value::Object(call.arguments.clone()).to_string(),
            caller: redctx_proto::Caller::Operator,
        };
        let answer = match call.deadline {
            // Dropping the request on timeout cancels it in the daemon.
            Some(d) => match tokio::time::timeout(d, conn.request(request)).await {
                Ok(a) => a,
                Err(_) => return print_error("Operation deadline exceeded."),
            },
            None => conn.request(request).await,
        };
        match answer {
            Ok(Response::ToolResult(t)) if t.is_error && is_blocked(&t.text) => {
                // The reference CLI loads the config per run and prints the config error
                // itself; the daemon knows it as the root's blocked reason.
                let reason = blocked_reason(&conn, &root_path).await;
                print_error(reason.as_deref().unwrap_or(&t.text))
            }
            Ok(Response::ToolResult(t)) => print_result(call.printing, &t.text, t.is_error),
            Ok(Response::Error(e)) => print_error(&e.message),
            Ok(_) => super::fail("unexpected answer from the daemon; see its log"),
            Err(e) => super::fail(e),
        }
    })
}

/// Whether a failed call's text is the daemon's "policy blocked" answer (spec 5.13).
fn is_blocked(text: &str) -> bool {
    text.ends_with("Context access is blocked.") || text.starts_with("Context access is blocked")
}

/// The config error that blocks `root`, from the daemon's root list (`policy: blocked
/// (<reason>)`), when it knows one.
async fn blocked_reason(conn: &daemon::Conn, root: &std::path::Path) -> Option<String> {
    let Ok(Response::Roots(roots)) = conn.request(Request::Roots).await else {
        return None;
    };
    roots
        .into_iter()
        .filter(|r| r.path == root && r.state == "blocked")
        .find_map(|r| {
            let reason = r
                .policy?
                .strip_prefix("blocked (")?
                .strip_suffix(')')?
                .to_owned();
            (!reason.is_empty()).then_some(reason)
        })
}

/// What a tool result prints where, and the exit code (see [`Printing`]).
pub fn render(printing: Printing, text: &str, is_error: bool) -> (Output<'_>, ExitCode) {
    if is_error {
        // A report ends with a newline; a failed call's message never does.
        if printing == Printing::Audit && text.ends_with('\n') {
            return (Output::Stdout(text), ExitCode::FAILURE);
        }
        return (Output::Stderr(text), ExitCode::FAILURE);
    }
    match (printing, text) {
        (Printing::Search, "No matches.\n") => (Output::Nothing, ExitCode::FAILURE),
        (_, "OK\n") => (Output::Nothing, ExitCode::SUCCESS),
        _ => (Output::Stdout(text), ExitCode::SUCCESS),
    }
}

/// Where [`render`] sends a text.
#[derive(Debug, PartialEq, Eq)]
pub enum Output<'a> {
    Nothing,
    Stdout(&'a str),
    /// Printed with a final newline added when missing.
    Stderr(&'a str),
}

fn print_result(printing: Printing, text: &str, is_error: bool) -> ExitCode {
    let (out, code) = render(printing, text, is_error);
    match out {
        Output::Nothing => {}
        Output::Stdout(t) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = stdout.write_all(t.as_bytes()).and_then(|()| stdout.flush());
        }
        Output::Stderr(t) => return print_error(t),
    }
    code
}

/// Print a failed call's message on stderr as the reference does; exit code 1.
pub fn print_error(text: &str) -> ExitCode {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    if !text.ends_with('\n') {
        let _ = stderr.write_all(b"\n");
    }
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct T {
        #[command(flatten)]
        g: Globals,
        #[command(subcommand)]
        c: FileCommand,
    }

    fn call(args: &[&str]) -> Call {
        let mut v = vec!["redctx"];
        v.extend_from_slice(args);
        T::try_parse_from(v).unwrap().c.call()
    }

    fn args_json(args: &[&str]) -> String {
        Value::Object(call(args).arguments).to_string()
    }

    #[test]
    fn reference_defaults_become_explicit_arguments() {
        assert_eq!(args_json(&["ls"]), r#"{"path":".","recursive":false}"#);
        assert_eq!(
            args_json(&["tree", "docs"]),
            r#"{"path":"docs","max_depth":3}"#
        );
        assert_eq!(
            args_json(&["cat", "a.md"]),
            r#"{"path":"a.md","max_chars":120000,"line_numbers":false}"#
        );
        assert_eq!(
            args_json(&["grep", "x"]),
            r#"{"query":"x","paths":[],"ignore_case":false,"regex":false,"context":0,"glob":[],"max_results":200}"#
        );
        assert_eq!(
            args_json(&["retrieve", "a b"]),
            r#"{"query":"a b","paths":[],"glob":[],"max_results":8,"max_chars":12000}"#
        );
        assert_eq!(
            args_json(&["bundle"]),
            r#"{"paths":[],"glob":[],"max_files":80,"max_chars_per_file":30000,"max_total_chars":300000}"#
        );
        assert_eq!(args_json(&["doctor"]), "{}");
        assert_eq!(args_json(&["audit"]), r#"{"format":"text"}"#);
    }

    #[test]
    fn head_and_tail_use_read_with_their_line_count() {
        let c = call(&["head", "-n", "2", "a.md"]);
        assert_eq!(c.tool, "redctx_read");
        assert_eq!(
            Value::Object(c.arguments).to_string(),
            r#"{"path":"a.md","head":2,"max_chars":120000,"line_numbers":false}"#
        );
        assert_eq!(
            args_json(&["tail", "--lines", "3", "--line-numbers", "a.md"]),
            r#"{"path":"a.md","tail":3,"max_chars":120000,"line_numbers":true}"#
        );
    }

    #[test]
    fn cat_dash_n_is_line_numbers_and_zero_lines_mean_unset() {
        assert_eq!(
            args_json(&["read", "-n", "--start-line", "0", "--end-line", "4", "a"]),
            r#"{"path":"a","end_line":4,"max_chars":120000,"line_numbers":true}"#
        );
    }

    #[test]
    fn budgets_split_into_root_limits_and_call_arguments() {
        let c = call(&[
            "search",
            "-i",
            "-E",
            "-C",
            "1",
            "--glob",
            "*.md",
            "--glob",
            "*.txt",
            "--max-files",
            "7",
            "--max-entries",
            "9",
            "--max-raw-bytes-per-file",
            "11",
            "--max-seconds",
            "1.5",
            "q",
            "docs",
            "@p_0123456789ab",
        ]);
        assert_eq!(c.tool, "redctx_search");
        assert_eq!(c.printing, Printing::Search);
        assert_eq!(
            Value::Object(c.arguments).to_string(),
            r#"{"query":"q","paths":["docs","@p_0123456789ab"],"ignore_case":true,"regex":true,"context":1,"glob":["*.md","*.txt"],"max_results":200,"max_files":7}"#
        );
        assert_eq!(c.limits.max_traversal_entries, Some(9));
        assert_eq!(c.limits.max_raw_bytes_per_file, Some(11));
        assert_eq!(c.limits.max_total_raw_bytes, None);
        assert_eq!(c.deadline, Some(Duration::from_millis(1500)));
        assert_eq!(call(&["ls"]).limits, RootLimits::default());
    }

    #[test]
    fn mcp_conventions_are_undone_for_the_terminal() {
        use Output::*;
        let ok = ExitCode::SUCCESS;
        let fail = ExitCode::FAILURE;
        assert_eq!(render(Printing::Plain, "OK\n", false), (Nothing, ok));
        assert_eq!(render(Printing::Plain, "a\n", false), (Stdout("a\n"), ok));
        assert_eq!(
            render(Printing::Plain, "No matches.\n", false),
            (Stdout("No matches.\n"), ok)
        );
        assert_eq!(
            render(Printing::Search, "No matches.\n", false),
            (Nothing, fail)
        );
        assert_eq!(
            render(Printing::Plain, "Path does not exist.", true),
            (Stderr("Path does not exist."), fail)
        );
        assert_eq!(
            render(Printing::Audit, "paths: symlinks FAIL\n", true),
            (Stdout("paths: symlinks FAIL\n"), fail)
        );
        assert_eq!(
            render(Printing::Audit, "Path index limit exceeded.", true),
            (Stderr("Path index limit exceeded."), fail)
        );
    }

    #[test]
    fn usage_errors_are_clap_errors() {
        for bad in [
            &["cat"][..],
            &["head", "-n", "x", "a"],
            &["audit", "--format", "xml"],
            &["grep"],
            &["tail", "-n", "-1", "a"],
        ] {
            let mut v = vec!["redctx"];
            v.extend_from_slice(bad);
            assert!(T::try_parse_from(v).is_err(), "{bad:?}");
        }
    }
}
