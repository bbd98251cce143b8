//! `redctx discover` and `discover-update` end to end, for the operator's CLI: samples
//! (through the caller's `sample`, which holds the served root), the model's answers
//! ([`Ollama`]), the cleaning rules, the draft or the merged config, and the files
//! written. What the CLI prints comes back as text ([`Discovered`]); every failure is a
//! fixed sentence or the reference's.

use super::detected::Detected;
use super::jobs::Progress;
use super::ollama::Ollama;
use super::sources::{self, Samples};
use super::{
    self as rules, DEFAULT_ENDPOINT, DEFAULT_MODEL, Discovery, Document, TRUNCATION_NOTE, aliases,
    draft, merge,
};
use crate::cancel::Stop;
use redctx_proto::{DiscoverParams, DiscoverUpdateParams, Discovered, ModelParams};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The config file the reference loads by default (never served).
const LOCAL_CONFIG: &str = ".agent-context-redactor.toml";

/// Answered when the client went away mid-run (nobody reads it).
const CANCELLED: &str = "Discovery was cancelled.";

/// What the run needs from the caller: the root's path, a way to sample its files, and
/// where to report progress and find out about cancellation.
pub struct Context<'a> {
    /// The root, canonical (as `RootSpec::path`).
    pub root: &'a Path,
    pub sample: &'a dyn Fn(&sources::Params) -> Result<Samples, String>,
    pub progress: &'a Progress,
    pub stop: &'a Stop,
}

/// What drafts the terms: the local model, or the subcommand's `--detector`s (then no
/// request leaves the machine).
enum Drafter {
    /// The model's tag, and its client (or why the endpoint is refused: a
    /// `discover-update` without documents never asks, so never fails on it).
    Model(String, Result<Ollama, String>),
    Detectors(Detected),
}

/// Said when `--model` or `--endpoint` comes with `--detector` (the reference's).
pub const MODEL_WITH_DETECTOR: &str = "--model and --endpoint apply only to Ollama discovery; \
     remove them when drafting terms with --detector.";

impl Drafter {
    fn of(params: &ModelParams, detectors: &[String]) -> Result<Drafter, String> {
        if let Some(detected) = Detected::load(detectors)? {
            if params.model.is_some() || params.endpoint.is_some() {
                return Err(MODEL_WITH_DETECTOR.into());
            }
            return Ok(Drafter::Detectors(detected));
        }
        let model = params.model.as_deref().unwrap_or(DEFAULT_MODEL);
        let ollama = Ollama::new(
            params.endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT),
            model,
            Duration::from_millis(params.timeout_ms),
            params.allow_remote_endpoint,
        );
        Ok(Drafter::Model(model.to_owned(), ollama))
    }

    /// Fails now if the model's endpoint is refused.
    fn ready(&self) -> Result<(), String> {
        match self {
            Drafter::Model(_, Err(e)) => Err(e.clone()),
            _ => Ok(()),
        }
    }

    /// One file's terms, source-checked.
    fn extract(&self, rel: &str, text: &str, raw: bool) -> Result<Discovery, String> {
        match self {
            Drafter::Model(_, ollama) => {
                extract(ollama.as_ref().map_err(Clone::clone)?, rel, text, raw)
            }
            Drafter::Detectors(detected) => detected.extract(text, raw),
        }
    }

    /// Whether cleanup may move tool-like terms to `allow` (never a detector's).
    fn routes_tools(&self) -> bool {
        matches!(self, Drafter::Model(..))
    }

    /// The draft header's `# Source:` note.
    fn source_note(&self) -> String {
        match self {
            Drafter::Model(model, _) => format!("provider=ollama model={model} root=."),
            Drafter::Detectors(d) => format!("provider=detector detectors={} root=.", d.names()),
        }
    }

    /// Files never sampled: what the detectors read.
    fn unsampled(&self) -> Vec<PathBuf> {
        match self {
            Drafter::Model(..) => Vec::new(),
            Drafter::Detectors(d) => d.protected().to_vec(),
        }
    }
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

/// Writes `text` at `path`, never through a symlink at its last component (`O_NOFOLLOW`:
/// the open fails), replacing a regular file only with `force`.
fn write_no_follow(path: &std::path::Path, text: &str, force: bool) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).custom_flags(libc::O_NOFOLLOW);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    options.open(path)?.write_all(text.as_bytes())
}

/// `redctx discover`: the draft printed, or written under the root.
pub fn discover(cx: &Context, params: &DiscoverParams) -> Result<Discovered, String> {
    let drafter = Drafter::of(&params.model, &params.detectors)?;
    drafter.ready()?;
    let root = cx.root;
    // Checked before any model call (the reference checks after; same message).
    let destination = match &params.output {
        None => None,
        Some(out) => match under_root(root, out, true)? {
            path if path.exists() && !params.force => {
                return Err("Output file already exists. Use --force to overwrite.".into());
            }
            path => Some(path),
        },
    };
    let samples = (cx.sample)(&sources::Params {
        paths: params.paths.clone(),
        globs: params.globs.clone(),
        max_files: params.max_files,
        max_chars_per_file: params.max_chars_per_file,
        max_total_raw_bytes: params.max_total_raw_bytes,
        unsampled: drafter.unsampled(),
    })?;
    cx.progress.start(samples.files.len());
    let mut results = Vec::new();
    let mut texts = Vec::new();
    for sample in &samples.files {
        cx.stop.check().map_err(|_| CANCELLED.to_owned())?;
        let mut text = sample.text.clone();
        if sample.truncated {
            if params.fail_on_truncation {
                return Err(format!("Discovery input was truncated: {}", sample.rel));
            }
            text.push_str(TRUNCATION_NOTE);
        }
        let r = drafter.extract(&sample.rel, &text, params.raw_discovery)?;
        results.push(rules::filter_to_source(&r, &text));
        texts.push(text);
        cx.progress.step();
    }
    let merged = rules::merge_results(&results, params.raw_discovery, drafter.routes_tools());
    let result =
        aliases::finish_draft(merged, &texts, !params.raw_discovery, &samples.known_people);
    let output = if params.json {
        draft::json(&result)
    } else {
        draft::toml(&result, &drafter.source_note())
    };
    let Some(path) = destination else {
        return Ok(Discovered {
            stdout: output,
            ..Discovered::default()
        });
    };
    // Checked again (the model calls took minutes), and written without following a
    // symlink at the name: a dangling link in the root passes `exists()` and the root
    // check, and `fs::write` would create its target, anywhere.
    let path = under_root(root, &path.to_string_lossy(), true)?;
    if path.symlink_metadata().is_ok() && !params.force {
        return Err("Output file already exists. Use --force to overwrite.".into());
    }
    if write_no_follow(&path, &output, params.force).is_err() {
        return Err("Could not write discovery output.".into());
    }
    let rel = path.strip_prefix(root).unwrap_or(&path);
    let mut done = Discovered {
        stdout: format!("Wrote discovery output to {}\n", rel.to_string_lossy()),
        ..Discovered::default()
    };
    if !is_never_served(&path) {
        done.stderr = format!(
            "Note: agents can read this file like any other in the root; keep the draft out \
             of the root or name it {LOCAL_CONFIG} (never served) once reviewed.\n"
        );
    }
    Ok(done)
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

/// `redctx discover-update`: the documents classified and merged into the config
/// (written unless `dry_run` or `check`).
pub fn update(cx: &Context, args: &DiscoverUpdateParams) -> Result<Discovered, String> {
    let drafter = Drafter::of(&args.model, &args.detectors)?;
    if args.merge_only && args.input_jsonl.is_some() {
        return Err("--merge-only cannot be combined with --input-jsonl.".into());
    }
    if args.from_root && (args.merge_only || args.input_jsonl.is_some()) {
        return Err("--from-root cannot be combined with --input-jsonl or --merge-only.".into());
    }
    let root = cx.root;
    let mut seen = Seen::default();
    let documents: Vec<Document> = if args.merge_only {
        Vec::new()
    } else if args.from_root {
        seen = Seen::load(root, &args.output_config);
        let sampled = root_documents(cx, args, drafter.unsampled())?;
        seen.pending = sampled
            .iter()
            .map(|d| (d.path.clone(), d.sha256.clone()))
            .collect();
        sampled
            .into_iter()
            .filter(|d| !args.changed || seen.files.get(&d.path) != Some(&d.sha256))
            .collect()
    } else {
        let Some(input) = args.input_jsonl.as_deref() else {
            return Err("--input-jsonl is required unless --merge-only is used.".into());
        };
        rules::parse_jsonl(input)?
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
    let config_path = under_root(root, &args.output_config, true)?;
    let existing = read_config(&config_path)?;
    let seed = match &args.seed_config {
        Some(s) => Some(read_config(&under_root(root, s, false)?)?),
        None => None,
    };
    let include_aliases = args.include_discovered_aliases;
    let alias_people = if include_aliases {
        merge::config_people(&[seed.as_deref(), Some(existing.as_str())])?
    } else {
        Vec::new()
    };
    let result = if documents.is_empty() {
        Discovery::default()
    } else {
        drafter.ready()?;
        cx.progress.start(documents.len());
        let mut results = Vec::new();
        for doc in &documents {
            cx.stop.check().map_err(|_| CANCELLED.to_owned())?;
            let r = drafter.extract(&doc.path, &doc.text, false)?;
            results.push(rules::filter_to_source(&r, &doc.text));
            cx.progress.step();
        }
        let mut merged = rules::merge_results(&results, false, drafter.routes_tools());
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
    let mut out = Discovered::default();
    if args.dry_run {
        out.stdout = update.config_text;
        if !out.stdout.ends_with('\n') {
            out.stdout.push('\n');
        }
        return Ok(out);
    }
    if args.check {
        out.stdout = format!("config_current: {}\n", !update.changed);
        out.failed = update.changed;
        return Ok(out);
    }
    if update.changed {
        write_atomically(&config_path, &update.config_text)?;
    }
    seen.save();
    let a = update.alias_counts;
    let s = &mut out.stdout;
    let _ = writeln!(s, "documents: {}", documents.len());
    match &drafter {
        Drafter::Model(model, _) if !documents.is_empty() => {
            let _ = writeln!(s, "model: {model}");
        }
        Drafter::Model(..) => s.push_str("model: skipped\n"),
        Drafter::Detectors(d) => {
            let _ = writeln!(s, "model: skipped\ndetectors: {}", d.names());
        }
    }
    let _ = writeln!(
        s,
        "discovered_counts: {{\"clients\":{},\"organizations\":{},\"people\":{},\"terms\":{}}}",
        result.clients.len(),
        result.organizations.len(),
        result.people.len(),
        result.terms.len()
    );
    let _ = writeln!(
        s,
        "alias_counts: {{\"discovered\":{},\"dropped\":{},\"seed\":{}}}",
        a.discovered, a.dropped, a.seed
    );
    let _ = writeln!(s, "config_changed: {}", update.changed);
    Ok(out)
}

/// The root's files as documents, each whole (a file longer than
/// --max-chars-per-document fails the run, as an oversized JSONL document does).
fn root_documents(
    cx: &Context,
    args: &DiscoverUpdateParams,
    unsampled: Vec<PathBuf>,
) -> Result<Vec<Document>, String> {
    let samples = (cx.sample)(&sources::Params {
        paths: Vec::new(),
        globs: args.globs.clone(),
        max_files: args.max_files.saturating_add(1),
        // Bytes: enough for any text of that many characters; checked in characters.
        max_chars_per_file: args.max_chars_per_document.saturating_mul(4),
        max_total_raw_bytes: args.max_total_chars.saturating_mul(4),
        unsampled,
    })?;
    let over = usize::try_from(args.max_chars_per_document)
        .unwrap_or(usize::MAX)
        .saturating_add(1);
    Ok(samples
        .files
        .into_iter()
        .map(|s| {
            let text = if s.truncated {
                // Longer than any allowed document: fails the size check.
                format!("{}{}", s.text, "x".repeat(over))
            } else {
                s.text
            };
            Document {
                path: s.rel,
                text,
                sha256: s.sha256,
            }
        })
        .collect())
}

/// What `discover-update --from-root` classified before, per root and config: each
/// file's SHA-256 at the last written run. Kept in the state dir (private, 0700, where
/// the cache already keys records by raw paths), never in the root, where agents could
/// read the file names.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Cancel;
    use sources::Sample;

    fn two_files(_: &sources::Params) -> Result<Samples, String> {
        let file = |rel: &str| Sample {
            rel: rel.into(),
            text: "Globex asked Initech.".into(),
            ..Sample::default()
        };
        Ok(Samples {
            files: vec![file("a.md"), file("b.md")],
            known_people: Vec::new(),
        })
    }

    fn params() -> DiscoverParams {
        DiscoverParams {
            // Nothing listens on the discard port: a model call would fail to connect.
            model: ModelParams {
                endpoint: Some("http://127.0.0.1:9".into()),
                timeout_ms: 2_000,
                ..ModelParams::default()
            },
            max_files: 10,
            max_chars_per_file: 100,
            max_total_raw_bytes: 1_000,
            ..DiscoverParams::default()
        }
    }

    /// A draft is never written through a symlink at its name: a dangling link in the
    /// root (pointing anywhere) passed the root check and `fs::write` created its target.
    #[test]
    fn the_draft_is_never_written_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.toml");
        let link = dir.path().join("draft.toml");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        for force in [false, true] {
            assert!(write_no_follow(&link, "x", force).is_err(), "force {force}");
        }
        assert!(!outside.exists());
        let plain = dir.path().join("plain.toml");
        write_no_follow(&plain, "one", false).unwrap();
        assert!(write_no_follow(&plain, "two", false).is_err());
        write_no_follow(&plain, "three", true).unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "three");
    }

    #[test]
    fn a_cancelled_run_stops_before_the_next_model_call() {
        let cancel = Cancel::new();
        cancel.cancel();
        let progress = Progress::default();
        let cx = Context {
            root: Path::new("/nonexistent-root"),
            sample: &two_files,
            progress: &progress,
            stop: &Stop::on(&cancel),
        };
        assert_eq!(discover(&cx, &params()), Err(CANCELLED.to_owned()));
        let update = DiscoverUpdateParams {
            model: params().model,
            input_jsonl: Some("{\"path\":\"a.md\",\"text\":\"Globex\"}\n".into()),
            max_files: 10,
            max_chars_per_document: 100,
            max_total_chars: 1_000,
            output_config: "c.toml".into(),
            dry_run: true,
            ..DiscoverUpdateParams::default()
        };
        assert_eq!(update_of(&cx, &update), Err(CANCELLED.to_owned()));
    }

    fn update_of(cx: &Context, params: &DiscoverUpdateParams) -> Result<Discovered, String> {
        update(cx, params)
    }

    #[test]
    fn progress_counts_the_samples_before_the_first_model_call() {
        let jobs = super::super::jobs::Jobs::default();
        let running = jobs.register(1);
        let cx = Context {
            root: Path::new("/nonexistent-root"),
            sample: &two_files,
            progress: &running.progress,
            stop: &Stop::never(),
        };
        let err = discover(&cx, &params()).unwrap_err();
        assert!(
            err.starts_with("Could not reach local Ollama at http://127.0.0.1:9."),
            "{err}"
        );
        assert_eq!(jobs.progress(1), (0, 2));
    }
}
