//! The daemon's backend: which roots are served, under which policy, and how a tool call
//! becomes rendered text.
//!
//! For every request this module (1) finds or registers the root, (2) runs the live
//! policy check of spec 5.13 (stat the config and term files; reload, or block with the
//! fixed message), (3) takes the current snapshot ([`ServedRoot`]) and (4) reads the
//! arguments into the tool's typed struct from its contract ([`redctx_proto::tools`]:
//! names, defaults and the lenient reading of wrong types live there, not here) and hands
//! them to a renderer in [`crate::tools`]. The socket layer above knows nothing about
//! redaction; the renderers below know nothing about roots or policies.

use crate::agent_view::AgentView;
use crate::cache::Cache;
use crate::cancel::Stop;
use crate::engine::config::EnvOverrides;
use crate::engine::config::{BLOCKED_APPLY, ConfigError};
use crate::engine::{Counts, Engine, Mode, Policy};
use crate::github::GitHub;
use crate::policy_loader::{PolicySource, PolicyStamps, ReloadDecision};
use crate::root::{RootOptions, ServedRoot};
use crate::server::{Backend, Cancel};
use crate::tools::{self, Budget, ToolOutput};
use crate::view::{EntryKind, Limits, RootView, ViewError};
use crate::watch::{WatchOptions, Watcher};
use redctx_proto::tools::{self as contract, AuditFormat};
use redctx_proto::{
    BenchmarkParams, BenchmarkReport, Caller, ErrorKind, ErrorReply, ResourceEntry, ResourcePage,
    ResourceText, RootInfo, RootSpec, ToolResult, WriteOptions,
};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Resources per `resources/list` page.
const RESOURCE_PAGE: usize = 200;

/// A tool call that took this long read enough to leave freed memory worth handing back
/// ([`crate::budget::release_when_quiet`]); a whole-root `grep` of a 100k-file root takes
/// about this, a `read` of one file a hundredth of it.
const LARGE_CALL: Duration = Duration::from_millis(50);

/// What a client asked for, reduced to what makes two registrations the same root.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RootKey {
    path: PathBuf,
    config: Option<PathBuf>,
    mode: Option<String>,
    include_private: bool,
    gitignore: bool,
    documents: bool,
    detector_profile: Option<String>,
    limits: [Option<u64>; 4],
    detectors: Vec<String>,
}

impl RootKey {
    /// The options that differ from the defaults, for `redctx status` and `redctx roots`
    /// (shown to the local user only).
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = &self.mode {
            parts.push(format!("mode {m}"));
        }
        if let Some(p) = &self.detector_profile {
            parts.push(format!("detector profile {p}"));
        }
        if let Some(c) = &self.config {
            parts.push(format!("config {}", c.display()));
        }
        if self.include_private {
            parts.push("include-private".to_owned());
        }
        if !self.gitignore {
            parts.push("no-gitignore".to_owned());
        }
        if self.documents {
            parts.push("documents".to_owned());
        }
        let names = [
            "max-raw-bytes-per-file",
            "max-total-raw-bytes",
            "max-entries",
            "max-resource-bytes",
        ];
        for (name, value) in names.iter().zip(self.limits) {
            if let Some(v) = value {
                parts.push(format!("{name} {v}"));
            }
        }
        for spec in &self.detectors {
            // The name only: an argument may be a private path.
            let name = spec.split('=').next().unwrap_or_default();
            parts.push(format!("detector {name}"));
        }
        parts.join(", ")
    }

    fn of(spec: &RootSpec) -> RootKey {
        let l = &spec.limits;
        RootKey {
            path: spec.path.clone(),
            config: spec.config.clone(),
            mode: spec.mode.clone(),
            include_private: spec.include_private,
            gitignore: spec.gitignore,
            documents: spec.documents,
            detector_profile: spec.detector_profile.clone(),
            limits: [
                l.max_raw_bytes_per_file,
                l.max_total_raw_bytes,
                l.max_traversal_entries,
                l.max_resource_bytes,
            ],
            detectors: spec.detectors.clone(),
        }
    }
}

/// The current state of one registered root.
enum Snapshot {
    /// Serving under `policy`, loaded from files with `stamps`.
    Ready {
        policy: Arc<Policy>,
        stamps: PolicyStamps,
        root: Arc<ServedRoot>,
        /// Keeps the index fresh while this snapshot is served (dropped with it).
        watcher: Option<Watcher>,
    },
    /// Access blocked until the policy files are repaired; `last` is the last policy
    /// that was served (reloads compare against it).
    Blocked {
        message: &'static str,
        /// Why, for the local user (`redctx status`): the config error's own fixed,
        /// value-free sentence, or `message` when there is none.
        reason: String,
        last: Option<(Arc<Policy>, PolicyStamps)>,
    },
}

/// One registered root: where its policy comes from and what is served now.
struct RootHandle {
    source: PolicySource,
    options: RootOptions,
    snapshot: Mutex<Snapshot>,
    /// The launch's `--detector` values (receipts before a policy loaded).
    launch_detectors: Vec<String>,
}

/// Outcome of the per-request policy check.
enum Current {
    Ready(Arc<ServedRoot>),
    Blocked {
        message: &'static str,
        /// The receipt's policy part, from the last good policy.
        head: Head,
    },
}

/// The receipt's policy part: detector profile, whether the built-in detector layer
/// runs, and each plugged detector's name and version (the `detectors` array).
#[derive(Clone, Debug)]
struct Head {
    profile: String,
    builtin: bool,
    /// `None` when no detector is plugged (the key is then absent).
    plugged: Option<Vec<(String, String)>>,
}

impl Head {
    fn of(policy: &Policy) -> Head {
        Head {
            profile: policy.detector_profile.as_str().to_owned(),
            builtin: policy.detectors,
            plugged: (!policy.plugged.is_empty()).then(|| {
                policy
                    .plugged
                    .iter()
                    .map(|d| (d.name.clone(), d.version.clone()))
                    .collect()
            }),
        }
    }

    /// Before any policy loaded: the launch's detectors by their `--detector` names
    /// (an external one has not said its own yet).
    fn launch(detectors: &[String]) -> Head {
        Head {
            profile: "default".to_owned(),
            builtin: false,
            plugged: (!detectors.is_empty()).then(|| {
                detectors
                    .iter()
                    .map(|d| {
                        let name = d.split('=').next().unwrap_or_default();
                        let version = if name == crate::engine::plugged::patterns::NAME {
                            crate::engine::plugged::patterns::VERSION
                        } else {
                            ""
                        };
                        (name.to_owned(), version.to_owned())
                    })
                    .collect()
            }),
        }
    }
}

/// The real backend: policy, index, cache and renderers for any number of roots.
pub struct Service {
    cache: Option<Arc<Cache>>,
    /// The GitHub source's answer cache, shared by every root and session.
    github: GitHub,
    env: EnvOverrides,
    roots: Mutex<HashMap<RootKey, Arc<RootHandle>>>,
    pause_indexing_after: Option<u64>,
    discoveries: crate::discover::jobs::Jobs,
}

impl Service {
    /// A service persisting redacted content in `cache` (none: memory only).
    pub fn new(cache: Option<Arc<Cache>>, env: EnvOverrides) -> Service {
        if let Some(cache) = &cache {
            crate::watch::clear_cookie_parent(cache.state_dir());
        }
        Service {
            cache,
            github: GitHub::default(),
            env,
            roots: Mutex::new(HashMap::new()),
            pause_indexing_after: None,
            discoveries: Default::default(),
        }
    }

    /// TEST ONLY: every root's background pass pauses after `files` files (see
    /// [`RootOptions::pause_indexing_after`]), so tests can kill the daemon or call
    /// tools while indexing is in flight.
    pub fn with_index_pause_after(mut self, files: Option<u64>) -> Service {
        self.pause_indexing_after = files;
        self
    }

    /// TEST ONLY: lets every held background pass go on (`redctxd` does this on SIGUSR1
    /// when started with a pause), so a test decides when a pass ends.
    pub fn resume_indexing(&self) {
        for h in self.roots.lock().expect("roots lock").values() {
            if let Snapshot::Ready { root, .. } = &*h.snapshot.lock().expect("snapshot lock") {
                root.resume_indexing();
            }
        }
    }

    fn handle(&self, spec: &RootSpec) -> Result<Arc<RootHandle>, &'static str> {
        let key = RootKey::of(spec);
        if let Some(h) = self.roots.lock().expect("roots lock").get(&key) {
            return Ok(h.clone());
        }
        let (source, options) = self.prepare(spec)?;
        let snapshot = match source.load() {
            Ok((policy, stamps)) => self
                .open_root(&source, &options, Arc::new(policy), stamps)
                .unwrap_or_else(|message| Snapshot::Blocked {
                    message,
                    reason: message.to_owned(),
                    last: None,
                }),
            Err(e) => {
                tracing::warn!(root = %source.root().display(), "policy blocked: {e}");
                Snapshot::Blocked {
                    message: e.blocked_message(),
                    reason: e.to_string(),
                    last: None,
                }
            }
        };
        let handle = Arc::new(RootHandle {
            source,
            options,
            snapshot: Mutex::new(snapshot),
            launch_detectors: spec.detectors.clone(),
        });
        let mut roots = self.roots.lock().expect("roots lock");
        Ok(roots.entry(key).or_insert(handle).clone())
    }

    /// Where `spec`'s policy comes from and how its root is served, without registering it.
    fn prepare(&self, spec: &RootSpec) -> Result<(PolicySource, RootOptions), &'static str> {
        let mode = match spec.mode.as_deref() {
            None => None,
            Some(m) => Some(Mode::parse(m).ok_or("mode must be strict, balanced or code.")?),
        };
        let mut env = self.env.clone();
        // The CLI's --detector-profile wins over the config and the environment (spec 11).
        if let Some(profile) = &spec.detector_profile {
            env.detector_profile = Some(profile.clone());
        }
        let detectors = crate::policy_loader::launch_detectors(&spec.detectors)?;
        let source = PolicySource::new(&spec.path, spec.config.as_deref(), mode, env, &[])
            .map_err(|e| match e {
                ConfigError::RootNotDirectory => "Root must be an existing directory.",
                other => other.blocked_message(),
            })?
            .with_documents(spec.documents)
            .with_detectors(detectors)
            .with_findings_cache(self.cache.clone());
        let defaults = Limits::default();
        let l = &spec.limits;
        let limits = Limits {
            max_raw_bytes_per_file: l
                .max_raw_bytes_per_file
                .unwrap_or(defaults.max_raw_bytes_per_file),
            max_total_raw_bytes: l
                .max_total_raw_bytes
                .unwrap_or(tools::DEFAULT_TOTAL_RAW_BYTES),
            max_traversal_entries: l
                .max_traversal_entries
                .unwrap_or(tools::DEFAULT_TRAVERSAL_ENTRIES),
            max_resource_bytes: l.max_resource_bytes.unwrap_or(defaults.max_resource_bytes),
        };
        let mut options = RootOptions {
            include_private: spec.include_private,
            limits,
            pause_indexing_after: self.pause_indexing_after,
            ..RootOptions::default()
        };
        options.index.gitignore = spec.gitignore;
        Ok((source, options))
    }

    /// Builds a snapshot for `policy`: engine, index (walked now), background content
    /// indexing and a watcher over the tree and the policy files.
    fn open_root(
        &self,
        source: &PolicySource,
        options: &RootOptions,
        policy: Arc<Policy>,
        stamps: PolicyStamps,
    ) -> Result<Snapshot, &'static str> {
        let engine = Engine::new(policy.clone()).map_err(|_| BLOCKED_APPLY)?;
        let root = ServedRoot::open(
            source.root(),
            Arc::new(engine),
            self.cache.clone(),
            options.clone(),
        )
        .map_err(|_| BLOCKED_APPLY)?;
        let root = Arc::new(root);
        root.spawn_indexing();
        let policy_paths: Vec<PathBuf> = stamps.paths().map(Path::to_path_buf).collect();
        // Policy edits are caught by the per-request stamp check; the watcher keeps the
        // tree (new, deleted, renamed files) fresh. Its watches are added in the
        // background once the pass's warm-restart check is done: the first answer and
        // "ready" do not wait for them (answers check the disk themselves).
        let options = WatchOptions {
            cookie_parent: self
                .cache
                .as_ref()
                .map(|cache| crate::watch::cookie_parent(cache.state_dir())),
            ..WatchOptions::default()
        };
        let watcher = match Watcher::spawn(root.clone(), policy_paths, options, || {}) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!("file watcher unavailable, relying on per-request checks: {e}");
                None
            }
        };
        Ok(Snapshot::Ready {
            policy,
            stamps,
            root,
            watcher,
        })
    }

    /// The live policy check of spec 5.13, then the snapshot to answer from.
    fn current(&self, handle: &RootHandle) -> Current {
        let mut snap = handle.snapshot.lock().expect("snapshot lock");
        let decision = match &*snap {
            Snapshot::Ready { policy, stamps, .. } => handle.source.reload(policy, stamps),
            Snapshot::Blocked {
                last: Some((policy, stamps)),
                ..
            } => handle.source.reload(policy, stamps),
            Snapshot::Blocked { last: None, .. } => match handle.source.load() {
                Ok((policy, stamps)) => ReloadDecision::Changed(Box::new(policy), stamps),
                Err(e) => ReloadDecision::Blocked(e),
            },
        };
        match decision {
            ReloadDecision::Reuse => {}
            ReloadDecision::Unchanged(new_stamps) => match &mut *snap {
                Snapshot::Ready { stamps, .. } => *stamps = new_stamps,
                Snapshot::Blocked {
                    last: Some((policy, _)),
                    ..
                } => {
                    let policy = policy.clone();
                    *snap = self
                        .open_root(
                            &handle.source,
                            &handle.options,
                            policy.clone(),
                            new_stamps.clone(),
                        )
                        .unwrap_or_else(|message| Snapshot::Blocked {
                            message,
                            reason: message.to_owned(),
                            last: Some((policy, new_stamps)),
                        });
                }
                Snapshot::Blocked { .. } => {}
            },
            ReloadDecision::Changed(policy, stamps) => {
                let policy = Arc::new(*policy);
                *snap = self
                    .open_root(
                        &handle.source,
                        &handle.options,
                        policy.clone(),
                        stamps.clone(),
                    )
                    .unwrap_or_else(|message| Snapshot::Blocked {
                        message,
                        reason: message.to_owned(),
                        last: Some((policy, stamps)),
                    });
            }
            ReloadDecision::Blocked(e) => {
                // Config errors are fixed, value-free sentences: safe to log for the
                // operator, who otherwise only sees the generic blocked message.
                tracing::warn!(root = %handle.source.root().display(), "policy blocked: {e}");
                let last = match std::mem::replace(
                    &mut *snap,
                    Snapshot::Blocked {
                        message: "",
                        reason: String::new(),
                        last: None,
                    },
                ) {
                    Snapshot::Ready { policy, stamps, .. } => Some((policy, stamps)),
                    Snapshot::Blocked { last, .. } => last,
                };
                *snap = Snapshot::Blocked {
                    message: e.blocked_message(),
                    reason: e.to_string(),
                    last,
                };
            }
        }
        match &*snap {
            Snapshot::Ready { root, .. } => Current::Ready(root.clone()),
            Snapshot::Blocked { message, last, .. } => Current::Blocked {
                message,
                head: last.as_ref().map_or_else(
                    || Head::launch(&handle.launch_detectors),
                    |(p, _)| Head::of(p),
                ),
            },
        }
    }

    /// `head` is the receipt's policy part.
    fn answer(head: Head, out: ToolOutput) -> ToolResult {
        let detectors = plugged_receipts(head.plugged.as_deref(), &out.counts);
        let receipt = tools::Receipt {
            detector_profile: head.profile,
            counts: out.counts,
            detectors,
            builtin_detector: head.builtin,
        };
        ToolResult {
            text: out.text,
            is_error: out.is_error,
            receipt_json: receipt.to_json(),
        }
    }

    fn error(head: Head, message: &str) -> ToolResult {
        Self::answer(
            head,
            ToolOutput {
                text: message.to_owned(),
                is_error: true,
                counts: Default::default(),
            },
        )
    }

    /// The entries served at `root` (one per option set) and the served roots among them
    /// whose first pass is still running. The roots lock is released before a caller
    /// waits on them.
    fn root_state(&self, root: &Path) -> (Vec<RootInfo>, Vec<Arc<ServedRoot>>) {
        let roots = self.roots.lock().expect("roots lock");
        let mut entries = Vec::new();
        let mut busy = Vec::new();
        for (key, h) in roots.iter().filter(|(_, h)| h.source.root() == root) {
            let (info, running) = root_info(key, h);
            entries.push(info);
            busy.extend(running);
        }
        (entries, busy)
    }

    fn with_root<T>(
        &self,
        spec: &RootSpec,
        f: impl FnOnce(&Arc<ServedRoot>) -> T,
    ) -> Result<T, (&'static str, Head)> {
        let handle = self
            .handle(spec)
            .map_err(|m| (m, Head::launch(&spec.detectors)))?;
        match self.current(&handle) {
            Current::Ready(root) => Ok(f(&root)),
            Current::Blocked { message, head } => Err((message, head)),
        }
    }

    /// A discovery command for the operator (never an agent: it reads raw files and
    /// prints raw terms), registered as `job` for progress while it runs. Files are
    /// sampled under the live policy check; the rest needs only the root's path.
    fn run_discovery(
        &self,
        spec: &RootSpec,
        caller: Caller,
        job: u64,
        cancel: &Cancel,
        f: impl FnOnce(&crate::discover::run::Context) -> Result<redctx_proto::Discovered, String>,
    ) -> Result<redctx_proto::Discovered, ErrorReply> {
        if caller != Caller::Operator {
            return Err(ErrorReply::new(ErrorKind::Unsupported, DISCOVERY_REFUSED));
        }
        let running = self.discoveries.register(job);
        let stop = Stop::on(cancel);
        let sample = |params: &crate::discover::sources::Params| {
            self.with_root(spec, |root| {
                crate::discover::sources::sample(root, params, &stop).map_err(|e| e.to_string())
            })
            .unwrap_or_else(|(message, _)| Err(message.to_owned()))
        };
        let cx = crate::discover::run::Context {
            root: &spec.path,
            sample: &sample,
            progress: &running.progress,
            stop: &stop,
        };
        f(&cx).map_err(|message| resource_error(&message))
    }
}

/// The answer to a discovery asked for an agent.
pub const DISCOVERY_REFUSED: &str = "Discovery is an operator command; agents cannot run it.";

/// The receipt's `detectors` array (spec 5.11): every plugged detector of the launch,
/// in its order, with this call's counts; `None` when none is plugged. Names and
/// versions only: an argument may be a private path.
fn plugged_receipts(
    plugged: Option<&[(String, String)]>,
    counts: &Counts,
) -> Option<Vec<tools::DetectorReceipt>> {
    let list = plugged?
        .iter()
        .enumerate()
        .map(|(i, (name, version))| {
            let (nominated, positional) = counts.1.get(i).copied().unwrap_or_default();
            tools::DetectorReceipt {
                name: name.clone(),
                version: version.clone(),
                nominated,
                positional,
            }
        })
        .collect();
    Some(list)
}

fn usize_of(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Symlinks under the root (audit): scanned per indexed directory, never followed.
fn scan_links(root: &ServedRoot) -> (Vec<String>, u64) {
    let mut links = Vec::new();
    let mut broken = 0;
    for dir in root.index().dirs() {
        let abs = if dir == "." {
            root.root().to_path_buf()
        } else {
            root.root().join(&dir)
        };
        let Ok(entries) = std::fs::read_dir(&abs) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            if !ft.is_symlink() {
                continue;
            }
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let rel = if dir == "." {
                name
            } else {
                format!("{dir}/{name}")
            };
            if !root.index().admitted(&rel, false) {
                continue;
            }
            if std::fs::metadata(entry.path()).is_err() {
                broken += 1;
            }
            links.push(rel);
        }
    }
    (links, broken)
}

/// Time budget of one `redctx_search` or `redctx_retrieve` call: the reference's MCP
/// deadline (`DEFAULT_MCP_SEARCH_SECONDS`), after which the call answers `Operation
/// deadline exceeded.`. Our whole-root searches of a 100k-file tree take about two
/// seconds, so only a pathological call meets it.
const SEARCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

fn run_tool(
    root: &ServedRoot,
    tool: &str,
    args: &Value,
    caller: Caller,
    cancel: &Cancel,
) -> Option<ToolOutput> {
    let agent_view;
    let view: &dyn RootView = match caller {
        Caller::Agent => {
            agent_view = AgentView(root);
            &agent_view
        }
        Caller::Operator => root,
    };
    let stop = Stop::on(cancel);
    // The call's stop is also this thread's ambient one while the renderer runs, so a
    // read that waits for a document's extraction worker ends it when the call ends.
    stop.around(|| render(root, view, tool, args, &stop))
}

/// The renderer of `tool` on `view` (see [`run_tool`]).
fn render(
    root: &ServedRoot,
    view: &dyn RootView,
    tool: &str,
    args: &Value,
    stop: &Stop,
) -> Option<ToolOutput> {
    let stop = stop.clone();
    Some(match tool {
        contract::TREE => {
            let a = contract::TreeArgs::from_json(args);
            tools::tree(
                view,
                &tools::TreeArgs {
                    path: a.path,
                    max_depth: Some(u32::try_from(a.max_depth).unwrap_or(u32::MAX)),
                },
                &stop,
            )
        }
        contract::LIST => {
            let a = contract::ListArgs::from_json(args);
            tools::list(
                view,
                &tools::ListArgs {
                    path: a.path,
                    recursive: a.recursive,
                    max_depth: a.max_depth.map(|d| u32::try_from(d).unwrap_or(u32::MAX)),
                },
                &stop,
            )
        }
        contract::READ => {
            let a = contract::ReadArgs::from_json(args);
            let max_chars = usize_of(a.max_chars);
            let lines = |lines| tools::LinesArgs {
                path: a.path.clone(),
                lines,
                max_chars,
                line_numbers: a.line_numbers,
            };
            match (a.head, a.tail) {
                (Some(n), _) => tools::head(view, &lines(n)),
                (None, Some(n)) => tools::tail(view, &lines(n)),
                (None, None) => tools::read(
                    view,
                    &tools::ReadArgs {
                        path: a.path.clone(),
                        start_line: a.start_line,
                        end_line: a.end_line,
                        max_chars,
                        line_numbers: a.line_numbers,
                    },
                ),
            }
        }
        contract::SEARCH => {
            let a = contract::SearchArgs::from_json(args);
            tools::search(
                view,
                &tools::SearchArgs {
                    query: a.query,
                    paths: a.paths,
                    ignore_case: a.ignore_case,
                    regex: a.regex,
                    context: usize_of(a.context),
                    glob: a.glob,
                    max_results: usize_of(a.max_results),
                    max_files: a.max_files,
                },
                &stop.within(SEARCH_DEADLINE),
            )
        }
        contract::RETRIEVE => {
            let a = contract::RetrieveArgs::from_json(args);
            tools::retrieve(
                view,
                &tools::RetrieveArgs {
                    query: a.query,
                    paths: a.paths,
                    glob: a.glob,
                    max_results: a.max_results,
                    max_chars: a.max_chars,
                    max_files: a.max_files,
                    max_passages: None,
                },
                &stop.within(SEARCH_DEADLINE),
            )
        }
        contract::STAT => tools::stat(view, &contract::StatArgs::from_json(args).path),
        contract::BUNDLE => {
            let a = contract::BundleArgs::from_json(args);
            tools::bundle(
                view,
                &tools::BundleArgs {
                    paths: a.paths,
                    glob: a.glob,
                    max_files: usize_of(a.max_files),
                    max_chars_per_file: usize_of(a.max_chars_per_file),
                    max_total_chars: usize_of(a.max_total_chars),
                },
                &stop,
            )
        }
        // Hidden and still callable: without `--enable-writes` it answers that writes
        // are disabled (`Service::submit_doc` serves sessions that may write).
        contract::SUBMIT_DOC => crate::writes::submit_doc(
            root,
            Path::new(""),
            None,
            &contract::SubmitDocArgs::from_json(args),
            &stop,
        ),
        contract::DOCTOR => {
            let plugged_detectors = root
                .engine()
                .policy()
                .plugged
                .iter()
                .map(|d| tools::PluggedDetector {
                    name: d.name.clone(),
                    version: d.version.clone(),
                })
                .collect();
            let args = tools::DoctorArgs {
                plugged_detectors,
                ..tools::DoctorArgs::default()
            };
            tools::doctor(view, &args)
        }
        contract::AUDIT => {
            let (links, broken_links) = scan_links(root);
            let format = match contract::AuditArgs::from_json(args).format {
                AuditFormat::Json => tools::AuditFormat::Json,
                AuditFormat::Text => tools::AuditFormat::Text,
            };
            tools::audit(
                view,
                &tools::AuditArgs {
                    format,
                    links,
                    broken_links,
                    plugged_detectors: root.engine().policy().plugged.len(),
                    ..tools::AuditArgs::default()
                },
            )
        }
        contract::REFRESH_INDEX => tools::refresh_index(|| {
            root.rescan_dir(".");
            // The reference rebuilds its path index under the traversal budget: the root
            // plus every indexed entry must fit.
            let entries = root.index().len() as u64 + 1;
            if entries > root.limits().max_traversal_entries {
                return Err(ViewError::EntryLimit);
            }
            Ok(())
        }),
        _ => return None,
    })
}

/// How often a `wait_root` waiting on a pass looks at the rest of the root's state.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// One registered root as `status` shows it, and its served root while a pass has not
/// completed yet (what `wait_root` sleeps on).
fn root_info(key: &RootKey, h: &RootHandle) -> (RootInfo, Option<Arc<ServedRoot>>) {
    let snap = h.snapshot.lock().expect("snapshot lock");
    let options = Some(key.describe());
    match &*snap {
        Snapshot::Ready { root, watcher, .. } => {
            let p = root.progress();
            let watch = watcher.as_ref().map(Watcher::stats);
            let info = RootInfo {
                path: h.source.root().to_path_buf(),
                state: if p.finished { "ready" } else { "indexing" }.to_owned(),
                files: p.files_seen,
                files_seen: Some(p.files_seen),
                files_indexed: Some(p.files_indexed),
                files_pending: Some(p.files_pending),
                bytes: Some(p.bytes_indexed),
                policy: Some("ok".to_owned()),
                options,
                watches_used: watch.map(|w| w.watches_used),
                watch_limit: watch.and_then(|w| w.watch_limit),
                rescans: watch.map(|w| w.rescans),
                documents: root
                    .document_counts()
                    .map(|c| redctx_proto::DocumentCounts {
                        total: c.total,
                        extracted: c.extracted,
                        failed: c.failed,
                        pending: c.pending,
                    }),
                search_index: root.search_index().map(|index| {
                    let (segments, passage_segments) = index.segments();
                    redctx_proto::SearchIndexInfo {
                        files: index.len() as u64,
                        segments,
                        passage_segments,
                    }
                }),
                ..RootInfo::default()
            };
            (info, (!p.finished).then(|| root.clone()))
        }
        Snapshot::Blocked { reason, .. } => {
            let info = RootInfo {
                path: h.source.root().to_path_buf(),
                state: "blocked".to_owned(),
                policy: Some(format!("blocked ({reason})")),
                options,
                ..RootInfo::default()
            };
            (info, None)
        }
    }
}

fn mime_type(name: &str) -> &'static str {
    let lower = crate::engine::placeholder::casefold(name);
    let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "md" | "docx" | "pptx" | "pdf" | "xlsx" | "xls" => "text/markdown",
        "json" | "jsonl" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        _ => "text/plain",
    }
}

fn resource_error(message: &str) -> ErrorReply {
    ErrorReply::new(ErrorKind::Resource, message)
}

impl Backend for Service {
    fn call_tool(
        &self,
        spec: &RootSpec,
        tool: &str,
        arguments_json: &str,
        caller: Caller,
        cancel: &Cancel,
    ) -> ToolResult {
        // Read per tool by its contract (`redctx_proto::tools`); not JSON, or not an
        // object, reads as `{}`.
        let args: Value = serde_json::from_str(arguments_json).unwrap_or(Value::Null);
        let started = Instant::now();
        let answer = match self.with_root(spec, |root| {
            let head = Head::of(root.engine().policy());
            let out = if crate::github::is_github_tool(tool) {
                Some(
                    self.github
                        .call(root.engine(), tool, &args, caller, &Stop::on(cancel)),
                )
            } else {
                run_tool(root, tool, &args, caller, cancel)
            };
            out.map_or_else(
                || Self::error(head.clone(), "Tool execution failed."),
                |out| Self::answer(head.clone(), out),
            )
        }) {
            Ok(result) => result,
            Err((message, head)) => Self::error(head, message),
        };
        if started.elapsed() >= LARGE_CALL {
            crate::budget::release_when_quiet();
        }
        answer
    }

    fn submit_doc(
        &self,
        spec: &RootSpec,
        arguments_json: &str,
        writes: &WriteOptions,
        cancel: &Cancel,
    ) -> ToolResult {
        let args = contract::SubmitDocArgs::from_json(
            &serde_json::from_str(arguments_json).unwrap_or(Value::Null),
        );
        let handle = match self.handle(spec) {
            Ok(h) => h,
            Err(message) => return Self::error(Head::launch(&spec.detectors), message),
        };
        match self.current(&handle) {
            Current::Ready(root) => {
                let head = Head::of(root.engine().policy());
                let out = crate::writes::submit_doc(
                    &root,
                    handle.source.config_path(),
                    Some(writes),
                    &args,
                    &Stop::on(cancel),
                );
                Self::answer(head, out)
            }
            Current::Blocked { message, head } => Self::error(head, message),
        }
    }

    fn rehydrate(
        &self,
        spec: &RootSpec,
        texts: &[String],
        cancel: &Cancel,
    ) -> Result<Vec<String>, ErrorReply> {
        self.with_root(spec, |root| {
            crate::writes::rehydrate_texts(root, texts, &Stop::on(cancel))
                .map_err(|e| resource_error(&e.to_string()))
        })
        .unwrap_or_else(|(message, _)| Err(resource_error(message)))
    }

    fn discover(
        &self,
        spec: &RootSpec,
        caller: Caller,
        job: u64,
        params: &redctx_proto::DiscoverParams,
        cancel: &Cancel,
    ) -> Result<redctx_proto::Discovered, ErrorReply> {
        self.run_discovery(spec, caller, job, cancel, |cx| {
            crate::discover::run::discover(cx, params)
        })
    }

    fn discover_update(
        &self,
        spec: &RootSpec,
        caller: Caller,
        job: u64,
        params: &redctx_proto::DiscoverUpdateParams,
        cancel: &Cancel,
    ) -> Result<redctx_proto::Discovered, ErrorReply> {
        self.run_discovery(spec, caller, job, cancel, |cx| {
            crate::discover::run::update(cx, params)
        })
    }

    fn discover_progress(&self, job: u64) -> (u64, u64) {
        self.discoveries.progress(job)
    }

    fn reject_call(&self, spec: &RootSpec, _tool: &str, message: &str) -> ToolResult {
        match self.with_root(spec, |root| Head::of(root.engine().policy())) {
            Ok(head) => Self::error(head, message),
            Err((blocked, head)) => Self::error(head, blocked),
        }
    }

    fn list_resources(
        &self,
        spec: &RootSpec,
        cursor: Option<&str>,
        _cancel: &Cancel,
    ) -> Result<ResourcePage, ErrorReply> {
        let offset = match cursor {
            None => 0,
            Some(c) if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) => {
                c.parse::<usize>().map_err(|_| {
                    ErrorReply::new(ErrorKind::InvalidParams, "cursor must be a string offset.")
                })?
            }
            Some(_) => {
                return Err(ErrorReply::new(
                    ErrorKind::InvalidParams,
                    "cursor must be a string offset.",
                ));
            }
        };
        self.with_root(spec, |root| {
            let view: &dyn RootView = &**root;
            let start = view
                .resolve(".")
                .map_err(|e| resource_error(&e.to_string()))?;
            let mut budget = Budget::from_limits(view.limits());
            let mut resources = Vec::new();
            let mut seen = 0usize;
            let mut more = false;
            for item in tools::walk(view, start, None, false, &mut budget) {
                let (entry, _) =
                    item.map_err(|_| resource_error("Resource listing limit exceeded."))?;
                let legacy = crate::fs::ContentKind::of_name(entry.name())
                    == crate::fs::ContentKind::LegacyOffice;
                if entry.kind != EntryKind::File || legacy || !view.is_text(&entry) {
                    continue;
                }
                if seen < offset {
                    seen += 1;
                    continue;
                }
                if resources.len() == RESOURCE_PAGE {
                    more = true;
                    break;
                }
                let path = view.path(&entry.rel);
                resources.push(ResourceEntry {
                    id: path.id.trim_start_matches('@').to_owned(),
                    title: path.text.to_string(),
                    mime_type: mime_type(entry.name()).to_owned(),
                    size: entry.size,
                });
            }
            Ok(ResourcePage {
                resources,
                next_cursor: more.then(|| (offset + RESOURCE_PAGE).to_string()),
            })
        })
        .unwrap_or_else(|(message, _)| Err(resource_error(message)))
    }

    fn read_resource(
        &self,
        spec: &RootSpec,
        uri: &str,
        _cancel: &Cancel,
    ) -> Result<ResourceText, ErrorReply> {
        let not_found = || resource_error("Resource not found.");
        let id = uri.strip_prefix("redctx://").ok_or_else(not_found)?;
        let valid = id.len() == 14
            && id.starts_with("p_")
            && id[2..]
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !valid {
            return Err(not_found());
        }
        self.with_root(spec, |root| {
            let view: &dyn RootView = &**root;
            let entry = view.resolve(&format!("@{id}")).map_err(|e| match e {
                ViewError::UnknownId(_) | ViewError::Missing | ViewError::Excluded => not_found(),
                other => resource_error(&other.to_string()),
            })?;
            let legacy = crate::fs::ContentKind::of_name(entry.name()) == crate::fs::ContentKind::LegacyOffice;
            if entry.kind != EntryKind::File || legacy || !view.is_text(&entry) {
                return Err(not_found());
            }
            if entry.size > view.limits().max_resource_bytes {
                return Err(resource_error(
                    "Resource exceeds the server resource byte limit. Use redctx_read with a narrower range.",
                ));
            }
            let doc = view.content(&entry, false).map_err(|e| resource_error(&e.to_string()))?;
            let document = matches!(crate::fs::ContentKind::of_name(entry.name()), crate::fs::ContentKind::Document(_));
            if document && doc.text.len() as u64 > view.limits().max_resource_bytes {
                return Err(resource_error(
                    "Extracted resource exceeds the server resource byte limit. Use redctx_read with a narrower range.",
                ));
            }
            Ok(ResourceText { uri: uri.to_owned(), mime_type: mime_type(entry.name()).to_owned(), text: doc.text.to_string() })
        })
        .unwrap_or_else(|(message, _)| Err(resource_error(message)))
    }

    fn roots(&self) -> Vec<RootInfo> {
        let roots = self.roots.lock().expect("roots lock");
        roots.iter().map(|(key, h)| root_info(key, h).0).collect()
    }

    /// Sleeps on the first busy entry's pass ([`ServedRoot::wait_finished`]), in slices
    /// of [`WAIT_SLICE`] so that a policy swap, a block, a `forget` or a cancel is
    /// noticed too; the moment the pass ends is not one of the things it polls for.
    fn wait_root(&self, root: &Path, timeout: Duration, cancel: &Cancel) -> Vec<RootInfo> {
        let deadline = Instant::now() + timeout;
        loop {
            let (entries, busy) = self.root_state(root);
            let settled = busy.is_empty() || entries.iter().any(|r| r.state == "blocked");
            let now = Instant::now();
            if settled || now >= deadline || cancel.is_cancelled() {
                return entries;
            }
            busy[0].wait_finished((deadline - now).min(WAIT_SLICE));
        }
    }

    fn benchmark(
        &self,
        spec: &RootSpec,
        params: &BenchmarkParams,
        cancel: &Cancel,
    ) -> Result<BenchmarkReport, ErrorReply> {
        let fail = |message: &str| resource_error(message);
        // A served root answers under its live policy check; any other root is measured
        // without registering it, so the benchmark starts no indexing that would compete
        // with it.
        let served = self
            .roots
            .lock()
            .expect("roots lock")
            .get(&RootKey::of(spec))
            .cloned();
        let (path, engine, options) = match served {
            Some(handle) => match self.current(&handle) {
                Current::Ready(root) => (
                    root.root().to_path_buf(),
                    root.engine_handle(),
                    handle.options.clone(),
                ),
                // The CLI's user gets the config error itself, as the reference CLI
                // prints it when it loads the config.
                Current::Blocked { message, .. } => {
                    let snap = handle.snapshot.lock().expect("snapshot lock");
                    return Err(match &*snap {
                        Snapshot::Blocked { reason, .. } if !reason.is_empty() => fail(reason),
                        _ => fail(message),
                    });
                }
            },
            None => {
                let (source, options) = self.prepare(spec).map_err(fail)?;
                // A fresh load, as the reference CLI does per run: its specific message.
                let (policy, _) = source.load().map_err(|e| fail(&e.to_string()))?;
                let engine = Engine::new(Arc::new(policy)).map_err(|_| fail(BLOCKED_APPLY))?;
                (source.root().to_path_buf(), Arc::new(engine), options)
            }
        };
        crate::bench_report::run(&path, engine, options, params, cancel)
            .map_err(|e| fail(&e.to_string()))
    }

    fn forget_root(&self, root: &Path) -> bool {
        let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let mut roots = self.roots.lock().expect("roots lock");
        let before = roots.len();
        roots.retain(|k, h| k.path != root && h.source.root() != canonical);
        before != roots.len()
    }
}
