//! `redctx discover` and `redctx discover-update` (spec 11): a local model drafts the
//! redaction config. Human commands: they print and write raw terms, and no agent can
//! reach them (no MCP tool runs them).
//!
//! The daemon picks the files and hands their raw samples to this process over the
//! user-private socket (`Request::DiscoverySources`, as `rehydrate` gets raw values);
//! this process calls the model ([`super::ollama`]) and turns the answers into a draft
//! with the pure `redctx_daemon::discover` rules.

use super::files::{Globals, prepare, print_error};
use super::ollama::Ollama;
use crate::daemon;
use clap::Args;
use redctx_daemon::discover::{
    self as rules, DEFAULT_ENDPOINT, DEFAULT_MAX_CHARS, DEFAULT_MAX_FILES, DEFAULT_MODEL,
    Discovery, Document, TRUNCATION_NOTE, aliases, draft, merge,
};
use redctx_proto::{DiscoveryParams, DiscoverySources, Request, Response, RootLimits};
use std::io::{IsTerminal, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The config file the reference loads by default (never served).
const LOCAL_CONFIG: &str = ".agent-context-redactor.toml";
/// `--max-total-raw-bytes` / `--max-total-chars` default.
const DEFAULT_MAX_TOTAL: u64 = 50_000_000;

/// `discover` options.
#[derive(Args, Debug)]
#[command(args_override_self = true)]
pub struct DiscoverArgs {
    /// Paths to scan; empty scans the root.
    pub paths: Vec<String>,
    /// Model provider.
    #[arg(long, value_parser = ["ollama"], default_value = "ollama")]
    pub provider: String,
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
    /// Ollama URL (default http://localhost:11434); plain http must be loopback.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Allow non-loopback plain-http endpoints (sends private text off-machine).
    #[arg(long)]
    pub allow_remote_endpoint: bool,
    /// Ollama model tag (default gemma4:e4b).
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long, default_value_t = 120.0)]
    pub timeout: f64,
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

/// The root directory as the user named it, made absolute (the daemon canonicalizes).
fn root_dir(globals: &Globals) -> PathBuf {
    let root = globals.root.clone().unwrap_or_else(|| PathBuf::from("."));
    std::fs::canonicalize(&root).unwrap_or_else(|_| super::absolute(&root))
}

/// `resolve_under_root`: `value` (relative to the root) resolved, refused outside it.
fn under_root(root: &Path, value: &str, allow_missing: bool) -> Result<PathBuf, String> {
    let given = Path::new(value);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let resolved = resolve_lenient(&joined);
    if !resolved.starts_with(root) {
        return Err("Refusing path outside root.".into());
    }
    if !allow_missing && !resolved.exists() {
        return Err("Path does not exist.".into());
    }
    Ok(resolved)
}

/// `Path.resolve(strict=False)`: symlinks of the existing part followed, `..` applied.
fn resolve_lenient(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => {
                out.push(other);
                if let Ok(real) = std::fs::canonicalize(&out) {
                    out = real;
                }
            }
        }
    }
    out
}

fn timeout_of(seconds: f64) -> Duration {
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::from_secs(120))
}

/// One file through the model: the prompt, once more with the strict prompt when the
/// answer is not a JSON object, then the source check.
fn extract(ollama: &Ollama, rel: &str, text: &str, raw: bool) -> Result<Discovery, String> {
    let answer = ollama.generate(&rules::prompt(rel, text))?;
    if let Ok(result) = rules::parse_response(&answer, raw) {
        return Ok(rules::filter_to_source(&result, text));
    }
    let answer = ollama.generate(&rules::strict_prompt(rel, text))?;
    match rules::parse_response(&answer, raw) {
        Ok(result) => Ok(rules::filter_to_source(&result, text)),
        Err(_) => Err(
            "Local LLM did not return a JSON object after a stricter retry. Try a \
                       smaller --max-chars-per-file value such as 4000, or use a different \
                       model that follows JSON mode more reliably."
                .into(),
        ),
    }
}

/// A bar on stderr while files go through the model, only when stderr is a terminal.
fn progress(len: usize) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() || len < 2 {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len as u64),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("discover {bar:30} {pos}/{len} files, {elapsed}")
    {
        bar.set_style(style);
    }
    bar
}

fn sources(globals: &Globals, params: DiscoveryParams) -> Result<DiscoverySources, ExitCode> {
    let (root, ep, rt) = prepare(globals, RootLimits::default())?;
    rt.block_on(async move {
        let (conn, _) = daemon::connect_or_start(&ep, daemon::START_TIMEOUT)
            .await
            .map_err(super::fail)?;
        match conn
            .request(Request::DiscoverySources { root, params })
            .await
        {
            Ok(Response::DiscoverySources(s)) => Ok(s),
            Ok(Response::Error(e)) => Err(print_error(&e.message)),
            Ok(_) => Err(super::fail(
                "unexpected answer from the daemon; see its log",
            )),
            Err(e) => Err(super::fail(e)),
        }
    })
}

/// `redctx discover`.
pub fn run(globals: &Globals, args: &DiscoverArgs) -> ExitCode {
    let model = args.model.as_deref().unwrap_or(DEFAULT_MODEL);
    let ollama = match Ollama::new(
        args.endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT),
        model,
        timeout_of(args.timeout),
        args.allow_remote_endpoint,
    ) {
        Ok(o) => o,
        Err(msg) => return print_error(&msg),
    };
    let root = root_dir(globals);
    // Checked before any model call (the reference checks after; same message).
    let destination = match &args.output {
        None => None,
        Some(out) => match under_root(&root, out, true) {
            Err(msg) => return print_error(&msg),
            Ok(path) if path.exists() && !args.force => {
                return print_error("Output file already exists. Use --force to overwrite.");
            }
            Ok(path) => Some(path),
        },
    };
    let params = DiscoveryParams {
        paths: args.paths.clone(),
        globs: args.glob.clone(),
        max_files: args.max_files,
        max_chars_per_file: args.max_chars_per_file,
        max_total_raw_bytes: Some(args.max_total_raw_bytes),
    };
    let sources = match sources(globals, params) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let bar = progress(sources.files.len());
    let mut results = Vec::new();
    let mut texts = Vec::new();
    for sample in &sources.files {
        let mut text = sample.text.clone();
        if sample.truncated {
            if args.fail_on_truncation {
                bar.finish_and_clear();
                return print_error(&format!("Discovery input was truncated: {}", sample.rel));
            }
            text.push_str(TRUNCATION_NOTE);
        }
        match extract(&ollama, &sample.rel, &text, args.raw_discovery) {
            Ok(r) => results.push(rules::filter_to_source(&r, &text)),
            Err(msg) => {
                bar.finish_and_clear();
                return print_error(&msg);
            }
        }
        texts.push(text);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let merged = rules::merge_results(&results, args.raw_discovery, true);
    let result = aliases::finish_draft(merged, &texts, !args.raw_discovery, &sources.known_people);
    let output = if args.format == "json" {
        draft::json(&result)
    } else {
        draft::toml(&result, &format!("provider=ollama model={model} root=."))
    };
    let Some(path) = destination else {
        print!("{output}");
        return ExitCode::SUCCESS;
    };
    if path.exists() && !args.force {
        return print_error("Output file already exists. Use --force to overwrite.");
    }
    if std::fs::write(&path, output).is_err() {
        return print_error("Could not write discovery output.");
    }
    let rel = path.strip_prefix(&root).unwrap_or(&path);
    println!("Wrote discovery output to {}", rel.to_string_lossy());
    if !is_never_served(&path) {
        eprintln!(
            "Note: agents can read this file like any other in the root; keep the draft out \
             of the root or name it {LOCAL_CONFIG} (never served) once reviewed."
        );
    }
    ExitCode::SUCCESS
}

/// Whether the daemon never serves a file of this name (the reference's never-serve list).
fn is_never_served(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    name == LOCAL_CONFIG
        || name == ".env"
        || name.starts_with(".env.")
        || [".crt", ".key", ".pem"].iter().any(|s| name.ends_with(s))
}

fn read_config(path: &Path) -> Result<String, String> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
            let text = String::from_utf8(body.to_vec())
                .map_err(|_| "'utf-8' codec can't decode the redaction config.".to_owned())?;
            Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(_) => Err("Could not read the redaction config.".into()),
    }
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

/// `redctx discover-update`.
pub fn run_update(globals: &Globals, args: &DiscoverUpdateArgs) -> ExitCode {
    match update(globals, args) {
        Ok(code) => code,
        // Already printed (a daemon failure).
        Err(msg) if msg.is_empty() => ExitCode::FAILURE,
        Err(msg) => print_error(&msg),
    }
}

fn update(globals: &Globals, args: &DiscoverUpdateArgs) -> Result<ExitCode, String> {
    if args.merge_only && args.input_jsonl.is_some() {
        return Err("--merge-only cannot be combined with --input-jsonl.".into());
    }
    if args.from_root && (args.merge_only || args.input_jsonl.is_some()) {
        return Err("--from-root cannot be combined with --input-jsonl or --merge-only.".into());
    }
    let mut seen = Seen::default();
    let documents: Vec<Document> = if args.merge_only {
        Vec::new()
    } else if args.from_root {
        let root = root_dir(globals);
        seen = Seen::load(&root, &args.output_config);
        let sampled = root_documents(globals, args).map_err(|_| String::new())?;
        seen.pending = sampled
            .iter()
            .map(|d| (d.path.clone(), d.sha256.clone()))
            .collect();
        sampled
            .into_iter()
            .filter(|d| !args.changed || seen.files.get(&d.path) != Some(&d.sha256))
            .collect()
    } else {
        let Some(input) = args.input_jsonl.as_deref().filter(|s| !s.is_empty()) else {
            return Err("--input-jsonl is required unless --merge-only is used.".into());
        };
        rules::parse_jsonl(&read_input(input)?)?
    };
    if documents.len() as u64 > args.max_files {
        return Err(format!(
            "Discovery input exceeds --max-files={}.",
            args.max_files
        ));
    }
    if let Some(big) = documents
        .iter()
        .find(|d| d.text.chars().count() as u64 > args.max_chars_per_document)
    {
        return Err(format!(
            "{} exceeds --max-chars-per-document={}; refusing to classify a partial model input.",
            big.path, args.max_chars_per_document
        ));
    }
    let total: u64 = documents
        .iter()
        .map(|d| d.text.chars().count() as u64)
        .sum();
    if total > args.max_total_chars {
        return Err(format!(
            "Discovery input exceeds --max-total-chars={}.",
            args.max_total_chars
        ));
    }
    let root = root_dir(globals);
    let config_path = under_root(&root, &args.output_config, true)?;
    let existing = read_config(&config_path)?;
    let seed = match &args.seed_config {
        Some(s) => Some(read_config(&under_root(&root, s, false)?)?),
        None => None,
    };
    let include_aliases = args.include_discovered_aliases;
    let alias_people = if include_aliases {
        merge::config_people(&[seed.as_deref(), Some(existing.as_str())])?
    } else {
        Vec::new()
    };
    let model = args.model.as_deref().unwrap_or(DEFAULT_MODEL);
    let result = if documents.is_empty() {
        Discovery::default()
    } else {
        let ollama = Ollama::new(
            args.endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT),
            model,
            timeout_of(args.timeout),
            args.allow_remote_endpoint,
        )?;
        let bar = progress(documents.len());
        let mut results = Vec::new();
        for doc in &documents {
            let r = extract(&ollama, &doc.path, &doc.text, false).inspect_err(|_| {
                bar.finish_and_clear();
            })?;
            results.push(rules::filter_to_source(&r, &doc.text));
            bar.inc(1);
        }
        bar.finish_and_clear();
        let mut merged = rules::merge_results(&results, false, true);
        if include_aliases {
            let texts: Vec<String> = documents.iter().map(|d| d.text.clone()).collect();
            let mut people = merged.people.clone();
            people.extend(alias_people.iter().cloned());
            let mut groups = merged.aliases.clone();
            groups.extend(aliases::propose(&texts, &people, &alias_people));
            merged.aliases = rules::merge_alias_lists(groups);
        }
        merged
    };
    let update = merge::update(
        &existing,
        &result,
        seed.as_deref(),
        args.include_discovered_allow,
        include_aliases,
    )?;
    let mut stdout = std::io::stdout().lock();
    if args.dry_run {
        let _ = stdout.write_all(update.config_text.as_bytes());
        if !update.config_text.ends_with('\n') {
            let _ = stdout.write_all(b"\n");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.check {
        let _ = writeln!(stdout, "config_current: {}", !update.changed);
        return Ok(if update.changed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    if update.changed {
        write_atomically(&config_path, &update.config_text)?;
    }
    seen.save();
    let counts = format!(
        "{{\"clients\":{},\"organizations\":{},\"people\":{},\"terms\":{}}}",
        result.clients.len(),
        result.organizations.len(),
        result.people.len(),
        result.terms.len()
    );
    let a = update.alias_counts;
    let _ = writeln!(stdout, "documents: {}", documents.len());
    let _ = writeln!(
        stdout,
        "model: {}",
        if documents.is_empty() {
            "skipped"
        } else {
            model
        }
    );
    let _ = writeln!(stdout, "discovered_counts: {counts}");
    let _ = writeln!(
        stdout,
        "alias_counts: {{\"discovered\":{},\"dropped\":{},\"seed\":{}}}",
        a.discovered, a.dropped, a.seed
    );
    let _ = writeln!(stdout, "config_changed: {}", update.changed);
    Ok(ExitCode::SUCCESS)
}

/// The root's files as documents, each whole (a file longer than
/// --max-chars-per-document fails the run, as an oversized JSONL document does).
fn root_documents(globals: &Globals, args: &DiscoverUpdateArgs) -> Result<Vec<Document>, ()> {
    let params = DiscoveryParams {
        paths: Vec::new(),
        globs: args.glob.clone(),
        max_files: args.max_files.saturating_add(1),
        // Bytes: enough for any text of that many characters; checked in characters below.
        max_chars_per_file: args.max_chars_per_document.saturating_mul(4),
        max_total_raw_bytes: Some(args.max_total_chars.saturating_mul(4)),
    };
    let sources = sources(globals, params).map_err(|_| ())?;
    let documents: Vec<Document> = sources
        .files
        .into_iter()
        .map(|s| {
            let text = if s.truncated {
                // Longer than any allowed document: fails the size check below.
                format!(
                    "{}{}",
                    s.text,
                    "x".repeat(args.max_chars_per_document as usize + 1)
                )
            } else {
                s.text
            };
            Document {
                path: s.rel,
                text,
                sha256: s.sha256,
            }
        })
        .collect();
    Ok(documents)
}

/// What `discover-update --from-root` classified before, per root and config: each
/// file's SHA-256 at the last written run. Kept in the daemon's state dir (private,
/// 0700, where the cache already keys records by raw paths), never in the root, where
/// agents could read the file names.
#[derive(Default)]
struct Seen {
    path: Option<PathBuf>,
    files: std::collections::BTreeMap<String, String>,
    pending: std::collections::BTreeMap<String, String>,
}

impl Seen {
    fn load(root: &Path, config: &str) -> Seen {
        let Ok(state) = redctx_proto::paths::state_dir() else {
            return Seen::default();
        };
        let key = rules::sha256_hex(format!("{}\0{config}", root.display()).as_bytes());
        let path = state.join("discovery").join(format!("{key}.json"));
        let files = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Seen {
            path: Some(path),
            files,
            pending: Default::default(),
        }
    }

    /// Records this run's files (a failed save only means the next run redoes them).
    fn save(mut self) {
        let Some(path) = self.path.take() else {
            return;
        };
        self.files.append(&mut self.pending);
        let Some(dir) = path.parent() else {
            return;
        };
        if std::fs::create_dir_all(dir).is_ok()
            && let Ok(text) = serde_json::to_vec(&self.files)
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            let _ = write_atomically(&path, &String::from_utf8_lossy(&text));
        }
    }
}

/// The config written through a temporary file beside it, fsynced, then renamed.
fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let fail = || "Could not publish output atomically.".to_owned();
    let dir = path.parent().ok_or_else(fail)?;
    std::fs::create_dir_all(dir).map_err(|_| fail())?;
    let name = path.file_name().ok_or_else(fail)?.to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|_| fail());
    let _ = std::fs::remove_file(&tmp);
    result
}
