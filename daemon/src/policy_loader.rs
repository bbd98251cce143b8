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

use crate::engine::Mode;
use crate::engine::config::{self, ConfigError, EnvOverrides, LOCAL_CONFIG, PolicyInputs};
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
            .any(|(path, stamp)| file_stamp(path).map_or(true, |now| now != *stamp))
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
    env: EnvOverrides,
}

impl PolicySource {
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
            env,
        })
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
        config::build_policy(PolicyInputs {
            root_name: &self.root_name,
            config: config.as_ref(),
            term_files: &term_files,
            env: &self.env,
            vault_salt: vault_salt.as_deref(),
            mode: self.mode,
            protected_paths: &self.protected,
        })
    }

    /// Stamps of the config path and of `policy`'s term files.
    pub fn snapshot(&self, policy: Option<&Policy>) -> Result<PolicyStamps, ConfigError> {
        let mut paths = vec![self.config_path.clone()];
        if let Some(policy) = policy {
            paths.extend(policy.term_files.iter().map(|rel| self.root.join(rel)));
        }
        let mut entries = BTreeMap::new();
        for path in paths {
            let stamp = file_stamp(&path)?;
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
