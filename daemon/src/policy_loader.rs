//! Loading a root's redaction policy from disk, and deciding at each request whether it
//! must be reloaded (spec 5.1, 5.13).
//!
//! This is the IO half of policy building: it resolves paths, reads the config and term
//! files and the environment, obtains the vault salt, and hands everything to the pure
//! [`build_policy`]. It also stamps every policy file (`dev, ino, size, mtime, ctime`) so
//! an unchanged policy costs a few `stat` calls per request, and it applies the
//! reference's fail-closed reload rule: a policy that changed while being read, a loaded
//! config or term file that vanished, or a changed salt blocks access instead of
//! silently falling back.

use crate::detectors;
use crate::engine::Mode;
use crate::engine::config::{self, ConfigError, EnvOverrides, LOCAL_CONFIG, PolicyInputs};
use crate::engine::plugged::{External, PluggedDef, PluggedKind, patterns};
use crate::engine::policy::Policy;
use crate::vault;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// Environment variable names the policy reads (shared with the reference).
pub const TERMS_ENV: &str = "REDACTED_CONTEXT_TERMS";
/// Salt override.
pub const SALT_ENV: &str = "REDACTED_CONTEXT_SALT";
/// Detector profile override.
pub const DETECTOR_PROFILE_ENV: &str = "REDACTED_CONTEXT_DETECTOR_PROFILE";
/// Vault state root.
pub const STATE_DIR_ENV: &str = "REDACTED_CONTEXT_STATE_DIR";

impl EnvOverrides {
    /// Reads the policy's environment variables once (they are never re-read on reload).
    pub fn from_process_env() -> EnvOverrides {
        let text = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        let state_dir = std::env::var_os(STATE_DIR_ENV).and_then(|raw| match raw.to_str() {
            Some(s) => Some(config::py_strip(s))
                .filter(|s| !s.is_empty())
                .map(PathBuf::from),
            None => Some(PathBuf::from(raw)),
        });
        EnvOverrides {
            terms: text(TERMS_ENV),
            salt: text(SALT_ENV),
            detector_profile: text(DETECTOR_PROFILE_ENV),
            state_dir,
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// Identity and version of one policy file: `(st_dev, st_ino, st_size, st_mtime_ns,
/// st_ctime_ns)` after following symlinks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileStamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

/// Stamps of every file a policy was built from: the config path and each referenced
/// term file, each `None` while missing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyStamps {
    entries: BTreeMap<PathBuf, Option<FileStamp>>,
}

impl PolicyStamps {
    /// Whether any policy file changed (or can no longer be stamped) since these stamps
    /// were taken. Cheap: one `stat` per file.
    pub fn stamps_changed(&self) -> bool {
        self.entries
            .iter()
            .any(|(path, stamp)| !file_stamp(path).is_ok_and(|now| now == *stamp))
    }

    /// The stamped paths (absolute), for watchers.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.entries.keys().map(PathBuf::as_path)
    }

    /// The stamp of one path, `None` when the path is not part of the policy.
    pub fn get(&self, path: &Path) -> Option<Option<FileStamp>> {
        self.entries.get(path).copied()
    }
}

/// What a request must do with the policy it is about to use (spec 5.13).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReloadDecision {
    /// No policy file changed: keep the policy, engine and caches.
    Reuse,
    /// Files changed but the policy they produce is identical: keep everything, adopt
    /// the new stamps.
    Unchanged(PolicyStamps),
    /// A different, validated policy: build a new engine, then publish it with these
    /// stamps and drop caches tied to the old policy.
    Changed(Box<Policy>, PolicyStamps),
    /// Refuse the request (and every later one until a reload succeeds). Show
    /// [`ConfigError::blocked_message`], never the inner error, to clients.
    Blocked(ConfigError),
}

impl ConfigError {
    /// The client-facing text while this error blocks access: the salt-change message
    /// for a changed salt, the generic reload message for everything else.
    pub fn blocked_message(&self) -> &'static str {
        match self {
            ConfigError::SaltChanged => config::BLOCKED_SALT_CHANGED,
            _ => config::BLOCKED_RELOAD,
        }
    }
}

/// Where one root's policy comes from. Paths are resolved once, at construction.
#[derive(Clone, Debug)]
pub struct PolicySource {
    root: PathBuf,
    root_name: String,
    config_path: PathBuf,
    protected: Vec<String>,
    mode: Option<Mode>,
    /// The client asked for `--documents` (the config's `documents` can only add to it).
    documents: bool,
    env: EnvOverrides,
    /// Plugged detectors from the launch (`--detector`): name and the rules file or
    /// program. When empty, the config's `plugged_detectors` apply.
    detectors: Vec<(String, PathBuf)>,
    /// Where external detectors' findings are kept (none: asked every time).
    findings: Option<std::sync::Arc<crate::cache::Cache>>,
}

/// Most plugged detectors one policy may load (the cache keeps counts for this many).
pub const MAX_PLUGGED: usize = 8;

/// The plugged detectors this build has.
const AVAILABLE: &str = "exec, patterns";

/// A detector read for a policy, before the salt is known.
enum LoadedDetector {
    Patterns(Vec<patterns::PatternRule>),
    Exec(std::sync::Arc<detectors::ExecDetector>, String),
}

/// The detectors `redctx discover --detector` drafts with (`specs` as
/// [`launch_detectors`] gives them), outside any policy: no findings cache, since a
/// draft is made once. Also returns the paths they protect (never sampled).
pub fn discovery_detectors(
    specs: &[(String, PathBuf)],
) -> Result<(Vec<PluggedDef>, Vec<PathBuf>), ConfigError> {
    let (loaded, protected) = load_detectors(specs)?;
    let defs = loaded
        .into_iter()
        .zip(specs)
        .map(|(loaded, (name, _))| plugged_def(name, loaded, None, ""))
        .collect();
    Ok((defs, protected))
}

/// `--detector` values as the client sends them (`NAME=ABSOLUTE PATH`), checked again
/// (the client showed the operator the reference's messages), as name and path; a spec
/// that still fails here is refused with a fixed sentence.
pub fn launch_detectors(specs: &[String]) -> Result<Vec<(String, PathBuf)>, &'static str> {
    const BAD: &str = "Invalid --detector value; expected NAME or NAME=ARGUMENT.";
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for spec in specs {
        let (name, argument) = spec.split_once('=').ok_or(BAD)?;
        let path = PathBuf::from(argument);
        if !matches!(name, patterns::NAME | "exec")
            || !path.is_absolute()
            || out.iter().any(|(n, _)| n == name)
        {
            return Err(BAD);
        }
        out.push((name.to_owned(), path));
    }
    Ok(out)
}

/// Reads and validates each rules file, starts (or finds) each external detector;
/// also returns the paths they protect (the rules file, the program, and what the
/// program's hello names).
fn load_detectors(
    list: &[(String, PathBuf)],
) -> Result<(Vec<LoadedDetector>, Vec<PathBuf>), ConfigError> {
    if list.len() > MAX_PLUGGED {
        return Err(ConfigError::PluggedDetector(format!(
            "At most {MAX_PLUGGED} detectors can be plugged in."
        )));
    }
    let unreadable = || {
        ConfigError::PluggedDetector("The patterns detector rules file could not be read.".into())
    };
    let mut loaded = Vec::new();
    let mut protected = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (name, path) in list {
        protected.push(path.clone());
        if name == "exec" {
            let detector =
                detectors::obtain(path).map_err(|e| ConfigError::PluggedDetector(e.to_string()))?;
            let hello = detector.hello();
            protected.extend(hello.protected_paths.iter().map(PathBuf::from));
            names.push(hello.name.clone());
            loaded.push(LoadedDetector::Exec(
                detector.clone(),
                path.to_string_lossy().into_owned(),
            ));
            continue;
        }
        match fs::metadata(path) {
            Ok(meta) if !meta.is_file() => return Err(unreadable()),
            Err(_) => return Err(unreadable()),
            Ok(_) => {}
        }
        let bytes = fs::read(path).map_err(|_| unreadable())?;
        let text = String::from_utf8(bytes).map_err(|_| unreadable())?;
        let rules = patterns::parse_rules(&text).map_err(ConfigError::PluggedDetector)?;
        names.push(name.clone());
        loaded.push(LoadedDetector::Patterns(rules));
    }
    // Receipts name detectors: an external one may not take another's name.
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(ConfigError::PluggedDetector(format!(
                "Detector '{name}' was given more than once."
            )));
        }
    }
    Ok((loaded, protected))
}

fn plugged_def(
    name: &str,
    loaded: LoadedDetector,
    findings: Option<std::sync::Arc<crate::cache::Cache>>,
    salt: &str,
) -> PluggedDef {
    match loaded {
        LoadedDetector::Patterns(rules) => PluggedDef {
            name: name.to_owned(),
            version: patterns::VERSION.to_owned(),
            kind: PluggedKind::Patterns(rules),
        },
        LoadedDetector::Exec(detector, argument) => {
            let hello = detector.hello().clone();
            let source = detectors::Findings::new(detector, &argument, findings, salt);
            PluggedDef {
                name: hello.name,
                version: hello.version,
                kind: PluggedKind::External(External {
                    argument,
                    source: std::sync::Arc::new(source),
                }),
            }
        }
    }
}

impl PolicySource {
    /// `self` with plugged detectors (spec 5.12): each a name and its rules file, read
    /// with the policy, stamped with it and never served.
    pub fn with_detectors(mut self, detectors: Vec<(String, PathBuf)>) -> PolicySource {
        for (_, path) in &detectors {
            if let Ok(rel) = path.strip_prefix(&self.root)
                && !rel.as_os_str().is_empty()
            {
                self.protected.push(rel_posix(rel));
            }
        }
        self.detectors = detectors;
        self
    }

    /// Resolves the root (must be an existing directory), the config path (`--config`,
    /// else `<root>/.agent-context-redactor.toml`) and launch-time private files (for
    /// example detector rule files) that every policy must keep out of reach.
    pub fn new(
        root: &Path,
        config_path: Option<&Path>,
        mode: Option<Mode>,
        env: EnvOverrides,
        extra_protected: &[PathBuf],
    ) -> Result<PolicySource, ConfigError> {
        let root = fs::canonicalize(expand_user(root, env.home.as_deref()))
            .map_err(|_| ConfigError::RootNotDirectory)?;
        if !root.is_dir() {
            return Err(ConfigError::RootNotDirectory);
        }
        let default_config = root.join(LOCAL_CONFIG);
        let config_path = match config_path {
            Some(p) => resolve_lenient(&expand_user(p, env.home.as_deref())),
            None => default_config.clone(),
        };
        let mut protected = Vec::new();
        // An explicit config under the root holds the same secrets as the default one,
        // so it is never served, even while it does not exist yet.
        if config_path != default_config
            && let Ok(rel) = config_path.strip_prefix(&root)
        {
            protected.push(rel_posix(rel));
        }
        for path in extra_protected {
            let resolved = resolve_lenient(&expand_user(path, env.home.as_deref()));
            if resolved != root
                && let Ok(rel) = resolved.strip_prefix(&root)
            {
                protected.push(rel_posix(rel));
            }
        }
        let root_name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(PolicySource {
            root,
            root_name,
            config_path,
            protected,
            mode,
            documents: false,
            env,
            detectors: Vec::new(),
            findings: None,
        })
    }

    /// Keeps external detectors' findings in `cache`.
    pub fn with_findings_cache(
        mut self,
        cache: Option<std::sync::Arc<crate::cache::Cache>>,
    ) -> PolicySource {
        self.findings = cache;
        self
    }

    /// Turns document extraction on whatever the config says (`--documents`).
    pub fn with_documents(mut self, documents: bool) -> PolicySource {
        self.documents = documents;
        self
    }

    /// The resolved root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The resolved config path in effect (it may not exist).
    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    /// Loads the policy for first use, read twice around stamp snapshots so an edit
    /// during loading is detected. Errors are specific (for CLI output); servers show
    /// [`config::BLOCKED_RELOAD`] instead.
    pub fn load(&self) -> Result<(Policy, PolicyStamps), ConfigError> {
        match self.checked_load(None)? {
            Some((policy, stamps)) => Ok((policy, stamps)),
            None => Err(ConfigError::ChangedWhileLoading),
        }
    }

    /// The reload rule of spec 5.13, run before every request that serves context.
    pub fn reload(&self, current: &Policy, stamps: &PolicyStamps) -> ReloadDecision {
        match self.checked_load(Some((current, stamps))) {
            Ok(None) => ReloadDecision::Reuse,
            Ok(Some((policy, new_stamps))) if policy == *current => {
                ReloadDecision::Unchanged(new_stamps)
            }
            Ok(Some((policy, new_stamps))) => ReloadDecision::Changed(Box::new(policy), new_stamps),
            Err(err) => ReloadDecision::Blocked(err),
        }
    }

    /// Builds the policy once from the files as they are now, without consistency checks.
    pub fn load_once(&self) -> Result<Policy, ConfigError> {
        let config = match file_stamp(&self.config_path)
            .map_err(|_| ConfigError::ConfigUnreadable)?
        {
            None => None,
            Some(_) => {
                let bytes =
                    fs::read(&self.config_path).map_err(|_| ConfigError::ConfigUnreadable)?;
                let text = std::str::from_utf8(&bytes).map_err(|_| ConfigError::ConfigNotUtf8)?;
                Some(config::parse_config(text)?)
            }
        };
        let mut term_files = Vec::new();
        if let Some(config) = &config {
            for entry in &config.term_files {
                let path =
                    resolve_under_root(&self.root, Path::new(entry), self.env.home.as_deref())?;
                let rel = rel_posix(path.strip_prefix(&self.root).unwrap_or(Path::new("")));
                let contents = match fs::metadata(&path) {
                    Err(_) => None,
                    Ok(meta) if !meta.is_file() => return Err(ConfigError::NotRegularFile),
                    Ok(_) => {
                        let bytes = fs::read(&path).map_err(|_| ConfigError::TermFileUnreadable)?;
                        Some(String::from_utf8_lossy(&bytes).into_owned())
                    }
                };
                term_files.push((rel, contents));
            }
            // The reference reports GitHub table errors before touching the vault.
            config.github_repos()?;
        }
        let vault_salt = if config::needs_vault_salt(config.as_ref(), &self.env) {
            Some(vault::load_or_create_vault_salt(&self.root, &self.env)?)
        } else {
            None
        };
        let list = self.detector_list(config.as_ref())?;
        let (loaded, extra_protected) = load_detectors(&list)?;
        let mut protected = self.protected.clone();
        for path in extra_protected {
            if let Ok(rel) = path.strip_prefix(&self.root)
                && !rel.as_os_str().is_empty()
                && !protected.contains(&rel_posix(rel))
            {
                protected.push(rel_posix(rel));
            }
        }
        let mut policy = config::build_policy(PolicyInputs {
            root_name: &self.root_name,
            config: config.as_ref(),
            term_files: &term_files,
            env: &self.env,
            vault_salt: vault_salt.as_deref(),
            mode: self.mode,
            protected_paths: &protected,
        })?;
        policy.documents |= self.documents;
        policy.plugged = loaded
            .into_iter()
            .zip(&list)
            .map(|(loaded, (name, _))| {
                plugged_def(name, loaded, self.findings.clone(), &policy.salt)
            })
            .collect();
        policy.plugged_files = list.into_iter().map(|(_, path)| path).collect();
        Ok(policy)
    }

    /// The plugged detectors in effect: the launch's `--detector` list, else the
    /// config's `plugged_detectors`, whose relative arguments are resolved against the
    /// config file's directory (`~` is the home directory).
    fn detector_list(
        &self,
        config: Option<&config::ConfigFile>,
    ) -> Result<Vec<(String, PathBuf)>, ConfigError> {
        if !self.detectors.is_empty() {
            return Ok(self.detectors.clone());
        }
        let Some(config) = config else {
            return Ok(Vec::new());
        };
        let base = self.config_path.parent().unwrap_or(&self.root);
        let fail = |s: String| Err(ConfigError::PluggedDetector(s));
        let mut out: Vec<(String, PathBuf)> = Vec::new();
        for entry in &config.plugged_detectors {
            let Some((name, argument)) = entry.split_once('=') else {
                return fail("Invalid plugged_detectors entry; expected NAME=ARGUMENT.".into());
            };
            let (name, argument) = (name.trim(), argument.trim());
            if !detectors::protocol::valid_name(name) {
                return fail("Invalid plugged_detectors entry; expected NAME=ARGUMENT.".into());
            }
            if out.iter().any(|(n, _)| n == name) {
                return fail(format!("Detector '{name}' was given more than once."));
            }
            if !matches!(name, "patterns" | "exec") {
                return fail(format!(
                    "Unknown detector. Name: {name}. Available: {AVAILABLE}."
                ));
            }
            if argument.is_empty() {
                return fail(format!("The {name} detector requires an argument."));
            }
            let path = base.join(expand_user(Path::new(argument), self.env.home.as_deref()));
            out.push((name.to_owned(), resolve_lenient(&path)));
        }
        Ok(out)
    }

    /// Stamps of the config path and of `policy`'s term files.
    pub fn snapshot(&self, policy: Option<&Policy>) -> Result<PolicyStamps, ConfigError> {
        let mut paths = vec![self.config_path.clone()];
        if let Some(policy) = policy {
            paths.extend(policy.term_files.iter().map(|rel| self.root.join(rel)));
            paths.extend(policy.plugged_files.iter().cloned());
        }
        paths.extend(self.detectors.iter().map(|(_, p)| p.clone()));
        let mut entries = BTreeMap::new();
        for path in paths {
            let stamp = file_stamp(&path)?;
            if let Some(stamp) = &stamp {
                // A policy file is never served, under its name or another.
                crate::fs::protected::remember_identity(stamp.dev, stamp.ino);
            }
            entries.insert(path, stamp);
        }
        Ok(PolicyStamps { entries })
    }

    /// `Ok(None)`: reuse the current policy (stamps unchanged).
    fn checked_load(
        &self,
        previous: Option<(&Policy, &PolicyStamps)>,
    ) -> Result<Option<(Policy, PolicyStamps)>, ConfigError> {
        let before = self.snapshot(previous.map(|(p, _)| p))?;
        let Some((current, stamps)) = previous else {
            return self.load_twice(&before, None).map(Some);
        };
        if before == *stamps {
            return Ok(None);
        }
        // Removing a loaded config must not silently fall back to built-in detectors
        // and a vault salt.
        if matches!(stamps.get(&self.config_path), Some(Some(_)))
            && matches!(before.get(&self.config_path), Some(None))
        {
            return Err(ConfigError::ConfigDisappeared);
        }
        self.load_twice(&before, Some((current, stamps))).map(Some)
    }

    fn load_twice(
        &self,
        before: &PolicyStamps,
        previous: Option<(&Policy, &PolicyStamps)>,
    ) -> Result<(Policy, PolicyStamps), ConfigError> {
        let candidate = self.load_once()?;
        let middle = self.snapshot(Some(&candidate))?;
        if before
            .entries
            .iter()
            .any(|(path, stamp)| middle.entries.get(path).is_some_and(|now| now != stamp))
        {
            return Err(ConfigError::ChangedWhileLoading);
        }
        if let Some((_, stamps)) = previous
            && stamps.entries.iter().any(|(path, stamp)| {
                stamp.is_some() && matches!(middle.entries.get(path), Some(None))
            })
        {
            // Missing term files are fine at startup, but once loaded they may not
            // vanish while still referenced.
            return Err(ConfigError::TermFileDisappeared);
        }
        let verified = self.load_once()?;
        let after = self.snapshot(Some(&verified))?;
        if candidate != verified || middle != after {
            return Err(ConfigError::ChangedWhileLoading);
        }
        if let Some((current, _)) = previous
            && candidate.salt != current.salt
        {
            return Err(ConfigError::SaltChanged);
        }
        Ok((candidate, after))
    }
}

/// Loads a root's policy for first use (see [`PolicySource::load`]).
pub fn load_policy(
    root: &Path,
    config_path: Option<&Path>,
    mode: Option<Mode>,
    env: &EnvOverrides,
) -> Result<(Policy, PolicyStamps), ConfigError> {
    PolicySource::new(root, config_path, mode, env.clone(), &[])?.load()
}

/// Stamp of one policy file: `None` when it does not exist, an error when it is not a
/// regular file or cannot be examined.
fn file_stamp(path: &Path) -> Result<Option<FileStamp>, ConfigError> {
    match fs::metadata(path) {
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(_) => Err(ConfigError::ConfigUnreadable),
        Ok(meta) if !meta.is_file() => Err(ConfigError::NotRegularFile),
        Ok(meta) => Ok(Some(FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        })),
    }
}

/// A `term_files` entry as a path under the root: `~` expanded, relative entries taken
/// from the root, symlinks resolved; anything resolving outside the root is refused.
fn resolve_under_root(
    root: &Path,
    value: &Path,
    home: Option<&Path>,
) -> Result<PathBuf, ConfigError> {
    let candidate = expand_user(value, home);
    let candidate = if candidate.is_absolute() {
        candidate
    } else {
        root.join(candidate)
    };
    let resolved = resolve_lenient(&candidate);
    if resolved.starts_with(root) {
        Ok(resolved)
    } else {
        Err(ConfigError::PathOutsideRoot)
    }
}

/// A relative path as POSIX text, `.` when empty.
fn rel_posix(rel: &Path) -> String {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// Python `Path.expanduser` for `~` and `~/…` (other users' `~name` stay as written).
pub fn expand_user(path: &Path, home: Option<&Path>) -> PathBuf {
    let mut components = path.components();
    match (components.next(), home) {
        (Some(Component::Normal(first)), Some(home)) if first == OsStr::new("~") => {
            home.join(components.as_path())
        }
        _ => path.to_path_buf(),
    }
}

/// Python `Path.resolve(strict=False)` (POSIX `realpath` that tolerates missing parts):
/// absolute, symlinks resolved where they exist, `.`/`..` applied, the missing remainder
/// appended as written. Symlink loops stop resolving after 40 hops.
pub fn resolve_lenient(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut pending: Vec<PathBuf> = absolute
        .components()
        .rev()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut result = PathBuf::from("/");
    let mut hops = 0;
    while let Some(part) = pending.pop() {
        let name = part.as_os_str();
        if name == OsStr::new("/") || name.as_bytes().is_empty() {
            result = PathBuf::from("/");
            continue;
        }
        if name == OsStr::new(".") {
            continue;
        }
        if name == OsStr::new("..") {
            result.pop();
            continue;
        }
        let next = result.join(name);
        match fs::symlink_metadata(&next) {
            Ok(meta) if meta.file_type().is_symlink() && hops < 40 => {
                hops += 1;
                match fs::read_link(&next) {
                    Ok(target) => {
                        if target.is_absolute() {
                            result = PathBuf::from("/");
                        }
                        pending.extend(
                            target
                                .components()
                                .rev()
                                .map(|c| PathBuf::from(c.as_os_str())),
                        );
                    }
                    Err(_) => result = next,
                }
            }
            _ => result = next,
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::{BLOCKED_RELOAD, BLOCKED_SALT_CHANGED};
    use crate::engine::policy::SaltSource;

    /// A root directory named `name` plus a separate state directory for the vault.
    struct Fixture {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        env: EnvOverrides,
    }

    impl Fixture {
        fn new(name: &str) -> Fixture {
            let tmp = tempfile::tempdir().unwrap();
            let base = fs::canonicalize(tmp.path()).unwrap();
            let root = base.join(name);
            fs::create_dir(&root).unwrap();
            fs::create_dir(base.join("home")).unwrap();
            let env = EnvOverrides {
                state_dir: Some(base.join("state")),
                home: Some(base.join("home")),
                ..EnvOverrides::default()
            };
            Fixture {
                _tmp: tmp,
                root,
                env,
            }
        }

        fn write(&self, rel: &str, text: &str) {
            let path = self.root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            // Replace through a rename so the inode (and so the stamp) always changes,
            // whatever the filesystem's timestamp granularity.
            let tmp = path.with_extension("tmp-write");
            fs::write(&tmp, text).unwrap();
            fs::rename(&tmp, &path).unwrap();
        }

        fn source(&self) -> PolicySource {
            PolicySource::new(&self.root, None, None, self.env.clone(), &[]).unwrap()
        }
    }

    #[test]
    fn missing_config_uses_builtins_and_the_vault_salt() {
        let fx = Fixture::new("kb");
        let (policy, stamps) = fx.source().load().unwrap();
        assert!(!policy.config_loaded);
        assert_eq!(policy.salt_source, SaltSource::LocalState);
        assert_eq!(policy.salt.len(), 64);
        // Code mode, the default: the root's name is no client term (COMPAT).
        assert!(policy.clients.is_empty());
        let balanced = PolicySource::new(&fx.root, None, Some(Mode::Balanced), fx.env.clone(), &[])
            .unwrap()
            .load()
            .unwrap()
            .0;
        assert_eq!(balanced.clients, ["kb"]);
        assert_eq!(stamps.get(&fx.root.join(LOCAL_CONFIG)), Some(None));
        assert!(!stamps.stamps_changed());
        // The same vault salt on every load.
        assert_eq!(fx.source().load().unwrap().0.salt, policy.salt);
    }

    #[test]
    fn config_and_term_files_are_read_from_the_root() {
        let fx = Fixture::new("kb");
        fx.write(LOCAL_CONFIG, "\u{feff}[redaction]\nterms = [\"t1\"]\nterm_files = [\"private/terms.txt\", \"private/later.txt\"]\n");
        fx.write("private/terms.txt", "");
        fs::write(
            fx.root.join("private/terms.txt"),
            b"# c\nFile Term\n\xffbad byte\n",
        )
        .unwrap();
        let (policy, stamps) = fx.source().load().unwrap();
        assert!(policy.config_loaded);
        assert_eq!(policy.terms, ["t1", "File Term", "\u{fffd}bad byte"]);
        assert_eq!(
            policy.term_files,
            ["private/terms.txt", "private/later.txt"]
        );
        assert_eq!(policy.protected_paths, policy.term_files);
        assert_eq!(stamps.paths().count(), 3);
        assert_eq!(stamps.get(&fx.root.join("private/later.txt")), Some(None));
    }

    #[test]
    fn term_files_outside_the_root_are_refused_without_echoing_the_path() {
        let fx = Fixture::new("kb");
        let outside = fx.root.parent().unwrap().join("outside-secret.txt");
        fs::write(&outside, "x").unwrap();
        std::os::unix::fs::symlink(&outside, fx.root.join("link.txt")).unwrap();
        for entry in [
            "../outside-secret.txt",
            outside.to_str().unwrap(),
            "link.txt",
            "~/x.txt",
        ] {
            fx.write(LOCAL_CONFIG, &format!("term_files = [\"{entry}\"]\n"));
            let err = fx.source().load().unwrap_err();
            assert_eq!(err.to_string(), "Refusing path outside root.", "{entry}");
        }
    }

    #[test]
    fn unusable_policy_files_give_fixed_errors() {
        let fx = Fixture::new("kb");
        fs::create_dir(fx.root.join(LOCAL_CONFIG)).unwrap();
        assert_eq!(
            fx.source().load().unwrap_err().to_string(),
            "Policy input must be a regular file."
        );
        fs::remove_dir(fx.root.join(LOCAL_CONFIG)).unwrap();
        fs::write(fx.root.join(LOCAL_CONFIG), b"terms = [\"\xff\"]").unwrap();
        assert_eq!(
            fx.source().load().unwrap_err().to_string(),
            "Redaction config is not valid UTF-8."
        );
        fx.write(LOCAL_CONFIG, "term_files = [\"dir\"]");
        fs::create_dir(fx.root.join("dir")).unwrap();
        assert_eq!(fx.source().load().unwrap_err(), ConfigError::NotRegularFile);
        let missing = fx.root.join("nope");
        let err = PolicySource::new(&missing, None, None, fx.env.clone(), &[]).unwrap_err();
        assert_eq!(err.to_string(), "Root must be an existing directory.");
    }

    #[test]
    fn explicit_config_and_private_files_under_the_root_are_protected() {
        let fx = Fixture::new("kb");
        let outside = fx.root.parent().unwrap().join("outside.toml");
        let source = PolicySource::new(
            &fx.root,
            Some(&fx.root.join("conf/./redaction.toml")),
            None,
            fx.env.clone(),
            &[
                fx.root.join("rules/detector.yaml"),
                outside.clone(),
                fx.root.clone(),
            ],
        )
        .unwrap();
        let (policy, _) = source.load().unwrap();
        assert!(
            !policy.config_loaded,
            "a missing explicit config is allowed"
        );
        assert_eq!(
            policy.protected_paths,
            ["conf/redaction.toml", "rules/detector.yaml"]
        );
        let source =
            PolicySource::new(&fx.root, Some(&outside), None, fx.env.clone(), &[]).unwrap();
        assert!(source.load().unwrap().0.protected_paths.is_empty());
        let source = PolicySource::new(
            &fx.root,
            Some(&fx.root.join(LOCAL_CONFIG)),
            None,
            fx.env.clone(),
            &[],
        )
        .unwrap();
        assert!(
            source.load().unwrap().0.protected_paths.is_empty(),
            "the default config is never served anyway"
        );
    }

    #[test]
    fn reload_reuses_adopts_or_replaces() {
        let fx = Fixture::new("kb");
        fx.write(
            LOCAL_CONFIG,
            "terms = [\"one\"]\nterm_files = [\"t.txt\"]\n",
        );
        fx.write("t.txt", "alpha\n");
        let source = fx.source();
        let (policy, stamps) = source.load().unwrap();
        assert_eq!(source.reload(&policy, &stamps), ReloadDecision::Reuse);

        fx.write("t.txt", "alpha\n");
        assert!(stamps.stamps_changed());
        let ReloadDecision::Unchanged(stamps) = source.reload(&policy, &stamps) else {
            panic!("same content")
        };
        assert!(!stamps.stamps_changed());

        fx.write("t.txt", "alpha\nbeta\n");
        let ReloadDecision::Changed(new_policy, stamps) = source.reload(&policy, &stamps) else {
            panic!("changed")
        };
        assert_eq!(new_policy.terms, ["one", "alpha", "beta"]);
        assert_eq!(new_policy.salt, policy.salt);
        assert_eq!(source.reload(&new_policy, &stamps), ReloadDecision::Reuse);
    }

    #[test]
    fn reload_blocks_fail_closed_and_recovers() {
        let fx = Fixture::new("kb");
        fx.write(
            LOCAL_CONFIG,
            "terms = [\"one\"]\nterm_files = [\"t.txt\"]\n",
        );
        fx.write("t.txt", "alpha\n");
        let source = fx.source();
        let (policy, stamps) = source.load().unwrap();

        // An invalid edit blocks with the generic message, then a repair recovers.
        fx.write(LOCAL_CONFIG, "terms = [\n");
        let ReloadDecision::Blocked(err) = source.reload(&policy, &stamps) else {
            panic!("blocked")
        };
        assert_eq!(err, ConfigError::InvalidToml);
        assert_eq!(err.blocked_message(), BLOCKED_RELOAD);
        fx.write(
            LOCAL_CONFIG,
            "terms = [\"one\"]\nterm_files = [\"t.txt\"]\n",
        );
        assert!(matches!(
            source.reload(&policy, &stamps),
            ReloadDecision::Unchanged(_)
        ));

        // A loaded term file may not vanish while referenced.
        fs::remove_file(fx.root.join("t.txt")).unwrap();
        assert_eq!(
            source.reload(&policy, &stamps),
            ReloadDecision::Blocked(ConfigError::TermFileDisappeared)
        );
        fx.write("t.txt", "alpha\n");

        // A loaded config may not vanish.
        fs::remove_file(fx.root.join(LOCAL_CONFIG)).unwrap();
        let ReloadDecision::Blocked(err) = source.reload(&policy, &stamps) else {
            panic!("blocked")
        };
        assert_eq!(err, ConfigError::ConfigDisappeared);
        assert_eq!(err.blocked_message(), BLOCKED_RELOAD);

        // A new salt is refused with its own message.
        fx.write(
            LOCAL_CONFIG,
            "salt = \"new\"\nterms = [\"one\"]\nterm_files = [\"t.txt\"]\n",
        );
        let ReloadDecision::Blocked(err) = source.reload(&policy, &stamps) else {
            panic!("blocked")
        };
        assert_eq!(err, ConfigError::SaltChanged);
        assert_eq!(err.blocked_message(), BLOCKED_SALT_CHANGED);
        assert_eq!(err.to_string(), BLOCKED_SALT_CHANGED);
    }

    #[test]
    fn config_created_after_startup_is_picked_up_with_the_vault_salt() {
        let fx = Fixture::new("kb");
        let source = fx.source();
        let (policy, stamps) = source.load().unwrap();
        fx.write(LOCAL_CONFIG, "clients = [\"Acme\"]\n");
        let ReloadDecision::Changed(new_policy, _) = source.reload(&policy, &stamps) else {
            panic!("changed")
        };
        assert_eq!(new_policy.clients, ["Acme"]);
        assert_eq!(new_policy.salt, policy.salt);
        fx.write(LOCAL_CONFIG, "salt = \"declared\"\n");
        assert_eq!(
            source.reload(&policy, &stamps),
            ReloadDecision::Blocked(ConfigError::SaltChanged)
        );
    }

    #[test]
    fn path_helpers_follow_python_semantics() {
        let home = Path::new("/home/u");
        assert_eq!(expand_user(Path::new("~"), Some(home)), home);
        assert_eq!(
            expand_user(Path::new("~/a/b"), Some(home)),
            home.join("a/b")
        );
        assert_eq!(
            expand_user(Path::new("~x/a"), Some(home)),
            Path::new("~x/a")
        );
        assert_eq!(expand_user(Path::new("a/~"), Some(home)), Path::new("a/~"));
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        std::os::unix::fs::symlink("real/../real", base.join("rel-link")).unwrap();
        assert_eq!(
            resolve_lenient(&base.join("link/missing/../x")),
            base.join("real/x")
        );
        assert_eq!(
            resolve_lenient(&base.join("rel-link/./y")),
            base.join("real/y")
        );
        std::os::unix::fs::symlink("loop", base.join("loop")).unwrap();
        let _ = resolve_lenient(&base.join("loop/z")); // terminates
    }

    /// The Python interpreter of the reference oracle, found as every differential test
    /// finds it: `REDCTX_ORACLE_PYTHON`, else `<repo>/.venv-oracle/bin/python`
    /// (`scripts/setup-oracle.sh`). `None` only with `REDCTX_SKIP_ORACLE=1`; a missing
    /// oracle otherwise fails the test with the fix, never passes it silently.
    fn oracle_python() -> Option<PathBuf> {
        redctx_test_support::Oracle::find().python()
    }

    /// Reads `[{root, config, env}, …]` as JSON on stdin and prints one JSON line per
    /// case: the reference's loaded config, or its exit message.
    const ORACLE_SCRIPT: &str = r#"
import json, os, sys
from pathlib import Path
from redacted_context_mcp.config import load_config
for case in json.load(sys.stdin):
    for name in ("REDACTED_CONTEXT_TERMS", "REDACTED_CONTEXT_SALT", "REDACTED_CONTEXT_DETECTOR_PROFILE"):
        os.environ.pop(name, None)
    os.environ.update(case["env"])
    os.environ["HOME"] = case["home"]
    os.environ["REDACTED_CONTEXT_STATE_DIR"] = case["state"]
    try:
        c = load_config(Path(case["root"]), Path(case["config"]) if case["config"] else None)
        out = {
            "clients": c.clients, "organizations": c.organizations, "people": c.people,
            "terms": c.terms, "allow": c.allow, "exclude_dirs": c.exclude_dirs,
            "exclude_globs": c.exclude_globs, "root_terms": c.root_terms,
            "environment_terms": c.environment_terms, "salt": c.salt,
            "salt_source": c.salt_source, "detector_profile": c.detector_profile,
            "term_files": c.term_files, "protected_paths": c.protected_paths,
            "alias_groups": [[g.canonical, g.category, list(g.aliases)] for g in c.alias_groups],
            "explicit": [len(c.explicit_clients), len(c.explicit_organizations),
                         len(c.explicit_people), len(c.explicit_terms)],
        }
    except SystemExit as e:
        out = {"error": str(e)}
    print(json.dumps(out))
"#;

    /// Orders the first `n` entries (the derived root terms, whose order among equal
    /// lengths is hash-random in the reference) and case-folds them.
    fn canon_root_prefix(values: &[String], n: usize) -> Vec<String> {
        let mut prefix: Vec<String> = values[..n]
            .iter()
            .map(|v| crate::engine::placeholder::casefold(v))
            .collect();
        prefix.sort_by(|a, b| b.chars().count().cmp(&a.chars().count()).then(a.cmp(b)));
        prefix.extend(values[n..].iter().cloned());
        prefix
    }

    fn ours_as_json(result: Result<Policy, ConfigError>) -> serde_json::Value {
        let p = match result {
            Ok(p) => p,
            Err(e) => return serde_json::json!({ "error": e.to_string() }),
        };
        let k = p.root_terms.len();
        serde_json::json!({
            "clients": canon_root_prefix(&p.clients, k),
            "organizations": p.organizations,
            "people": p.people,
            "terms": p.terms,
            "allow": p.allow,
            "exclude_dirs": p.exclude_dirs,
            "exclude_globs": p.exclude_globs,
            "root_terms": canon_root_prefix(&p.root_terms, k),
            "environment_terms": p.environment_terms,
            "salt": p.salt,
            "salt_source": p.salt_source.as_str(),
            "detector_profile": p.detector_profile.as_str(),
            "term_files": p.term_files,
            "protected_paths": p.protected_paths,
            "alias_groups": p.alias_groups.iter().map(|g| serde_json::json!([g.canonical, g.category.as_str(), g.aliases])).collect::<Vec<_>>(),
            "explicit": [p.explicit.clients, p.explicit.organizations, p.explicit.people_terms, p.explicit.terms],
        })
    }

    /// Brings the reference's output into our shape: root-term prefix canonicalized, and
    /// term files appended to the protected paths (our policy keeps one never-serve list).
    fn theirs_normalized(mut v: serde_json::Value) -> serde_json::Value {
        if v.get("error").is_some() {
            return v;
        }
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_owned())
                .collect()
        };
        let k = strings(&v["root_terms"]).len();
        v["clients"] = serde_json::json!(canon_root_prefix(&strings(&v["clients"]), k));
        v["root_terms"] = serde_json::json!(canon_root_prefix(&strings(&v["root_terms"]), k));
        let mut protected = strings(&v["protected_paths"]);
        for t in strings(&v["term_files"]) {
            if !protected.contains(&t) {
                protected.push(t);
            }
        }
        v["protected_paths"] = serde_json::json!(protected);
        v
    }

    struct Case {
        name: &'static str,
        root_name: &'static str,
        files: Vec<(&'static str, &'static [u8])>,
        /// Explicit `--config`, relative to the root.
        config: Option<&'static str>,
        env: Vec<(&'static str, &'static str)>,
    }

    #[test]
    fn differential_against_the_reference_loader() {
        let Some(python) = oracle_python() else {
            eprintln!("SKIPPED differential_against_the_reference_loader: REDCTX_SKIP_ORACLE=1");
            return;
        };
        let fixture_a: &[u8] = b"[redaction]\nclients = [\"Client Alpha\", \"CA\"]\norganizations = [\"Riverton Partners\"]\npeople = [\"Taylor Reed\", \"Jordan Vale\"]\nterms = [\"Project Meridian\"]\nallow = [\"Azure\", \"PostgreSQL\"]\n";
        let cases = vec![
            Case { name: "fixture A", root_name: "kb", files: vec![(LOCAL_CONFIG, fixture_a)], config: None, env: vec![] },
            Case {
                name: "aliases",
                root_name: "client-alpha_notes",
                files: vec![(
                    LOCAL_CONFIG,
                    b"[redaction]\nsalt = \"spec-salt\"\nclients = [\"Acme\"]\norganizations = [\"acme\", \"Org Co\"]\npeople = [\"Taylor Reed\", \"Jordan Vale\"]\nterms = [\"Meridian\"]\nallow = [\"Azure\"]\n[redaction.aliases]\n\"Taylor Reed\" = [\"taylor.reed@example.invalid\", \"@taylorr\", \"T. Reed\"]\n\"ACME\" = [\"acme-corp\", \"Acme  Corp\", \"acme corp\"]\n\"jordan\" = \"jv\"\n\"Meridian\" = [\"proj-m\"]\n",
                )],
                config: None,
                env: vec![],
            },
            Case {
                name: "term files and env",
                root_name: "My Project",
                files: vec![
                    (LOCAL_CONFIG, b"terms = \"cfg\"\nterm_files = [\"private/terms.txt\", \"private/missing.txt\", \"./private/../private/terms.txt\", \"more.txt\"]\nexclude_dirs = [\"build\", \" build \"]\nexclude_globs = \"*.log\"\n"),
                    ("private/terms.txt", b"\xef\xbb\xbfbom first\r\n# comment\n  spaced   term \n\n\xffbad\nCFG\n"),
                    ("more.txt", b"\x0bvt\x1cfs\xc2\x85nel\xe2\x80\xa8ls\n"),
                ],
                config: None,
                env: vec![("REDACTED_CONTEXT_TERMS", " env one,\nEnv Two ,, cfg"), ("REDACTED_CONTEXT_DETECTOR_PROFILE", " extended ")],
            },
            Case {
                name: "whitespace and case duplicates",
                root_name: "acme_corp",
                files: vec![(
                    "conf/explicit.toml",
                   "clients = [\"  Acme\\tCorp \", \"acme corp\", \"ACME  CORP\", \"\", \" \", 7, 1.5, true]\npeople = [\"Mary-Jane_O'Neil\", \"mary jane\", \"Al Bo\", \"  Jo\\tAnn  \"]\norganizations = \"Straße GmbH\"\nallow = [\"STRASSE gmbh\"]\nsalt = \"  cfg-salt  \"\ndetector_profile = \"  \"\n".as_bytes(),
                )],
                config: Some("conf/explicit.toml"),
                env: vec![],
            },
            Case {
                name: "unicode",
                root_name: "  Ünïcode café-ßtraße ",
                files: vec![(LOCAL_CONFIG, "[redaction]\npeople = [\"Zoë Straße\", \"ZOË STRASSE\", \"Ⅻ İstanbul\"]\nterms = [\"a\u{a0}b\", \"A B\", \"ﬁle\", \"FILE\"]\n[github.repos.ctx]\nowner = \"Öwner\"\nrepo = \"répo\"\n[github.repos.\" ctx \"]\nowner = \"second\"\nrepo = \"r2\"\n".as_bytes())],
                config: None,
                env: vec![("REDACTED_CONTEXT_SALT", " env-salt ")],
            },
            Case {
                name: "alias error",
                root_name: "kb",
                files: vec![(LOCAL_CONFIG, b"people = [\"Taylor Reed\"]\n[aliases]\n\"Taylor Reed\" = \"tr\"\n\"taylor  reed\" = \"t2\"\n")],
                config: None,
                env: vec![],
            },
            Case {
                name: "term file outside root",
                root_name: "kb",
                files: vec![(LOCAL_CONFIG, b"term_files = \"../x.txt\"\n[github]\nrepos = 1\n")],
                config: None,
                env: vec![],
            },
            Case {
                name: "github error after term files",
                root_name: "kb",
                files: vec![(LOCAL_CONFIG, b"term_files = \"t.txt\"\ndetector_profile = \"bad\"\n[github.repos.x]\nowner = \"o\"\n")],
                config: None,
                env: vec![],
            },
            Case {
                name: "profile error",
                root_name: "kb",
                files: vec![(LOCAL_CONFIG, b"detector_profile = 5\n")],
                config: None,
                env: vec![],
            },
            Case {
                name: "type error",
                root_name: "kb",
                files: vec![(LOCAL_CONFIG, b"people = 1979-05-27\n")],
                config: None,
                env: vec![],
            },
        ];
        // Lay out every case, run the reference once over all of them (it runs first, so
        // a vault salt it creates is the one we must read), then load each ourselves.
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let mut jobs = Vec::new();
        for (index, case) in cases.iter().enumerate() {
            let dir = base.join(format!("case{index}"));
            let root = dir.join(case.root_name);
            fs::create_dir_all(&root).unwrap();
            for (rel, bytes) in &case.files {
                let path = root.join(rel);
                fs::create_dir_all(path.parent().unwrap()).unwrap();
                fs::write(path, bytes).unwrap();
            }
            let config = case.config.map(|c| root.join(c));
            jobs.push(serde_json::json!({
                "root": root,
                "config": config.as_ref().map(|c| c.to_str().unwrap()).unwrap_or(""),
                "home": dir,
                "state": dir.join("state"),
                "env": case.env.iter().map(|(k, v)| ((*k).to_owned(), serde_json::json!(v))).collect::<serde_json::Map<_, _>>(),
            }));
        }
        let mut child = std::process::Command::new(&python)
            .arg("-c")
            .arg(ORACLE_SCRIPT)
            .env_clear()
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("oracle starts");
        std::io::Write::write_all(
            &mut child.stdin.take().unwrap(),
            serde_json::to_string(&jobs).unwrap().as_bytes(),
        )
        .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "oracle failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let lines: Vec<&str> = std::str::from_utf8(&output.stdout)
            .unwrap()
            .lines()
            .collect();
        assert_eq!(lines.len(), cases.len());
        for ((index, case), line) in cases.iter().enumerate().zip(lines) {
            let theirs: serde_json::Value = serde_json::from_str(line).unwrap();
            let dir = base.join(format!("case{index}"));
            let root = dir.join(case.root_name);
            let get = |name: &str| {
                case.env
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            };
            let env = EnvOverrides {
                terms: get(TERMS_ENV),
                salt: get(SALT_ENV),
                detector_profile: get(DETECTOR_PROFILE_ENV),
                state_dir: Some(dir.join("state")),
                home: Some(dir.clone()),
            };
            let config = case.config.map(|c| root.join(c));
            // The reference's rules (root terms included) hold in its modes.
            let ours = PolicySource::new(&root, config.as_deref(), Some(Mode::Balanced), env, &[])
                .and_then(|s| s.load().map(|(p, _)| p));
            assert_eq!(
                ours_as_json(ours),
                theirs_normalized(theirs),
                "case {}",
                case.name
            );
        }
    }
}
