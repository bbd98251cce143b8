//! `redctx discover` and `redctx discover-update` (spec 11): a local model drafts the
//! redaction config. Human commands: they print and write raw terms, and no agent can
//! reach them (no MCP tool runs them).
//!
//! The daemon runs the whole command (`Request::Discover`, `Request::DiscoverUpdate`:
//! samples, model calls, cleaning, draft, merge, files written) for `Caller::Operator`;
//! this process parses the arguments, reads `--input-jsonl`, shows progress and prints.

use super::files::{Globals, prepare, print_error};
use crate::daemon;
use clap::Args;
use redctx_proto::{
    Caller, DiscoverParams, DiscoverUpdateParams, ModelParams, Request, Response, RootLimits,
};
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

/// The config file the reference loads by default (never served).
const LOCAL_CONFIG: &str = ".agent-context-redactor.toml";
/// `--max-files` default.
const DEFAULT_MAX_FILES: u64 = 80;
/// `--max-chars-per-file` / `--max-chars-per-document` default.
const DEFAULT_MAX_CHARS: u64 = 12_000;
/// How often the progress bar asks the daemon.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);
/// `--max-total-raw-bytes` / `--max-total-chars` default.
const DEFAULT_MAX_TOTAL: u64 = 50_000_000;

/// The local model's options, shared by `discover` and `discover-update`.
#[derive(Args, Debug)]
pub struct ModelArgs {
    /// Ollama URL (default http://localhost:11434); plain http must be loopback.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Allow non-loopback plain-http endpoints (sends private text off-machine).
    #[arg(long)]
    pub allow_remote_endpoint: bool,
    /// Ollama model tag (default gemma4:e4b).
    #[arg(long)]
    pub model: Option<String>,
    /// Seconds to wait for each model answer.
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
}

impl ModelArgs {
    fn params(&self) -> ModelParams {
        let timeout = Duration::try_from_secs_f64(self.timeout).unwrap_or(Duration::from_secs(120));
        ModelParams {
            endpoint: self.endpoint.clone(),
            allow_remote_endpoint: self.allow_remote_endpoint,
            model: self.model.clone(),
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// The subcommand's `--detector` values as the daemon takes them, or the sentence to
/// print: the reference's start-up messages, then its refusal of model options.
fn discovery_detectors(detector: &[String], model: &ModelArgs) -> Result<Vec<String>, String> {
    let detectors = super::detectors::resolve_here(detector)?;
    if !detectors.is_empty() && (model.model.is_some() || model.endpoint.is_some()) {
        return Err(
            "--model and --endpoint apply only to Ollama discovery; remove them \
                    when drafting terms with --detector."
                .into(),
        );
    }
    Ok(detectors)
}

/// `discover` options.
#[derive(Args, Debug)]
#[command(args_override_self = true)]
pub struct DiscoverArgs {
    /// Paths to scan; empty scans the root.
    pub paths: Vec<String>,
    /// Model provider.
    #[arg(long, value_parser = ["ollama"], default_value = "ollama")]
    pub provider: String,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Draft the terms with a local detector instead of the Ollama model:
    /// `patterns=rules.toml` or `exec=/path/to/program` (repeatable). The global
    /// --detector does not apply to discovery.
    #[arg(long, value_name = "SPEC")]
    pub detector: Vec<String>,
    /// Only files matching this pattern (repeatable).
    #[arg(long)]
    pub glob: Vec<String>,
    #[arg(long, default_value_t = DEFAULT_MAX_FILES)]
    pub max_files: u64,
    /// Bytes of each file given to the model.
    #[arg(long, default_value_t = DEFAULT_MAX_CHARS)]
    pub max_chars_per_file: u64,
    #[arg(long, default_value_t = DEFAULT_MAX_TOTAL)]
    pub max_total_raw_bytes: u64,
    /// Fail instead of classifying a truncated file sample.
    #[arg(long)]
    pub fail_on_truncation: bool,
    #[arg(long, value_parser = ["toml", "json"], default_value = "toml")]
    pub format: String,
    /// Skip category cleanup and emit the model's categories after basic dedupe.
    #[arg(long)]
    pub raw_discovery: bool,
    /// Write the draft under the root, for example .agent-context-redactor.toml.
    #[arg(long)]
    pub output: Option<String>,
    /// Overwrite --output if it exists.
    #[arg(long)]
    pub force: bool,
}

/// `discover-update` options.
#[derive(Args, Debug)]
#[command(args_override_self = true)]
pub struct DiscoverUpdateArgs {
    /// JSONL file of {"path","text","sha256"?} objects, or - for stdin.
    #[arg(long)]
    pub input_jsonl: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Draft the terms with a local detector instead of the Ollama model:
    /// `patterns=rules.toml` or `exec=/path/to/program` (repeatable). The global
    /// --detector does not apply to discovery.
    #[arg(long, value_name = "SPEC")]
    pub detector: Vec<String>,
    #[arg(long, default_value_t = DEFAULT_MAX_FILES)]
    pub max_files: u64,
    /// Fail when any document exceeds this size; documents are never truncated.
    #[arg(long, default_value_t = DEFAULT_MAX_CHARS)]
    pub max_chars_per_document: u64,
    #[arg(long, default_value_t = DEFAULT_MAX_TOTAL)]
    pub max_total_chars: u64,
    /// Config path under the root.
    #[arg(long, default_value = LOCAL_CONFIG)]
    pub output_config: String,
    /// Optional reviewed config under the root; its policy settings are authoritative.
    #[arg(long)]
    pub seed_config: Option<String>,
    /// Allow model-discovered public terms to expand the allow-list.
    #[arg(long)]
    pub include_discovered_allow: bool,
    /// Merge proposed alias groups found in the documents (only valid, non-conflicting
    /// aliases; seed config aliases are always merged).
    #[arg(long)]
    pub include_discovered_aliases: bool,
    /// Merge the seed and existing config without reading documents or calling a model.
    #[arg(long)]
    pub merge_only: bool,
    /// Read the documents from the root's files (through the daemon) instead of
    /// --input-jsonl (ours; the reference has only --input-jsonl).
    #[arg(long)]
    pub from_root: bool,
    /// With --from-root: only files whose content changed since the last written run
    /// for this config (SHA-256 of each file, kept in the daemon's private state dir).
    #[arg(long, requires = "from_root")]
    pub changed: bool,
    /// With --from-root: only files matching this pattern (repeatable).
    #[arg(long, requires = "from_root")]
    pub glob: Vec<String>,
    /// Print the merged config without writing it.
    #[arg(long, conflicts_with = "check")]
    pub dry_run: bool,
    /// Exit 1 when the merged config would change.
    #[arg(long)]
    pub check: bool,
}

/// A number for this run's progress requests (only counts are ever shared by it).
fn job_number() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

/// A bar on stderr while documents go through the model (two or more).
fn bar(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("discover {bar:30} {pos}/{len} files, {elapsed}")
    {
        bar.set_style(style);
    }
    bar
}

/// Sends `request` (a discovery named `job`) and prints its outcome; while it runs, a
/// progress bar when stderr is a terminal.
fn send(
    globals: &Globals,
    job: u64,
    request: impl FnOnce(redctx_proto::RootSpec) -> Request,
) -> ExitCode {
    let (root, ep, rt) = match prepare(globals, RootLimits::default()) {
        Ok(parts) => parts,
        Err(code) => return code,
    };
    let answer = rt.block_on(async move {
        let (conn, _) = daemon::connect_or_start(&ep, daemon::START_TIMEOUT)
            .await
            .map_err(super::fail)?;
        let run = conn.request(request(root));
        if !std::io::stderr().is_terminal() {
            return Ok(run.await);
        }
        tokio::pin!(run);
        let mut shown: Option<indicatif::ProgressBar> = None;
        let answer = loop {
            tokio::select! {
                answer = &mut run => break answer,
                () = tokio::time::sleep(PROGRESS_EVERY) => {
                    if let Ok(Response::DiscoverProgress { done, total }) =
                        conn.request(Request::DiscoverProgress { job }).await
                        && total >= 2
                    {
                        shown.get_or_insert_with(|| bar(total)).set_position(done);
                    }
                }
            }
        };
        if let Some(b) = shown {
            b.finish_and_clear();
        }
        Ok(answer)
    });
    match answer {
        Err(code) => code,
        Ok(Ok(Response::Discovered(done))) => {
            let _ = std::io::stdout().lock().write_all(done.stdout.as_bytes());
            let _ = std::io::stderr().lock().write_all(done.stderr.as_bytes());
            if done.failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Ok(Ok(Response::Error(e))) => print_error(&e.message),
        Ok(Ok(_)) => super::fail("unexpected answer from the daemon; see its log"),
        Ok(Err(e)) => super::fail(e),
    }
}

/// `redctx discover`.
pub fn run(globals: &Globals, args: &DiscoverArgs) -> ExitCode {
    let detectors = match discovery_detectors(&args.detector, &args.model) {
        Ok(d) => d,
        Err(msg) => return print_error(&msg),
    };
    let job = job_number();
    let params = DiscoverParams {
        model: args.model.params(),
        detectors,
        paths: args.paths.clone(),
        globs: args.glob.clone(),
        max_files: args.max_files,
        max_chars_per_file: args.max_chars_per_file,
        max_total_raw_bytes: args.max_total_raw_bytes,
        fail_on_truncation: args.fail_on_truncation,
        json: args.format == "json",
        raw_discovery: args.raw_discovery,
        output: args.output.clone(),
        force: args.force,
    };
    send(globals, job, |root| Request::Discover {
        root,
        caller: Caller::Operator,
        job,
        params,
    })
}

fn read_input(name: &str) -> Result<String, String> {
    let mut text = String::new();
    if name == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|_| "Could not read discovery input.".to_owned())?;
        return Ok(text);
    }
    std::fs::read_to_string(name).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            format!("[Errno 2] No such file or directory: '{name}'")
        }
        _ => "Could not read discovery input.".to_owned(),
    })
}

/// `redctx discover-update`. The argument checks and reading the input happen here, in
/// the reference's order; everything after in the daemon.
pub fn run_update(globals: &Globals, args: &DiscoverUpdateArgs) -> ExitCode {
    let detectors = match discovery_detectors(&args.detector, &args.model) {
        Ok(d) => d,
        Err(msg) => return print_error(&msg),
    };
    if args.merge_only && args.input_jsonl.is_some() {
        return print_error("--merge-only cannot be combined with --input-jsonl.");
    }
    if args.from_root && (args.merge_only || args.input_jsonl.is_some()) {
        return print_error("--from-root cannot be combined with --input-jsonl or --merge-only.");
    }
    let input_jsonl = if args.merge_only || args.from_root {
        None
    } else {
        let Some(input) = args.input_jsonl.as_deref().filter(|s| !s.is_empty()) else {
            return print_error("--input-jsonl is required unless --merge-only is used.");
        };
        match read_input(input) {
            Ok(text) => Some(text),
            Err(msg) => return print_error(&msg),
        }
    };
    let job = job_number();
    let params = DiscoverUpdateParams {
        model: args.model.params(),
        detectors,
        input_jsonl,
        max_files: args.max_files,
        max_chars_per_document: args.max_chars_per_document,
        max_total_chars: args.max_total_chars,
        output_config: args.output_config.clone(),
        seed_config: args.seed_config.clone(),
        include_discovered_allow: args.include_discovered_allow,
        include_discovered_aliases: args.include_discovered_aliases,
        merge_only: args.merge_only,
        from_root: args.from_root,
        changed: args.changed,
        globs: args.glob.clone(),
        dry_run: args.dry_run,
        check: args.check,
    };
    send(globals, job, |root| Request::DiscoverUpdate {
        root,
        caller: Caller::Operator,
        job,
        params,
    })
}
