//! Redaction policy building: config text, term-file contents, environment values and
//! the vault salt in, a validated [`Policy`] (or one fixed error message) out.
//!
//! Pure, like the rest of the engine: the caller (`policy_loader`) reads files and the
//! environment and hands the text over. Semantics follow the reference's config loader
//! (spec 5.1, 5.6.3): same keys, same coercions, same de-duplication, same validation
//! order and the same error texts. Errors never carry a configured value or a path.
//!
//! # Keys
//!
//! Keys come from the `[redaction]` table, or from the top level when that table is
//! absent: `clients`, `organizations`, `people`, `terms`, `allow`, `exclude_dirs`,
//! `exclude_globs`, `term_files` (string or list), `salt`, `detector_profile`,
//! `[redaction.aliases]`, plus the top-level `[github.repos.<alias>]` tables.
//!
//! Two keys are redctx extensions, ignored by the reference:
//! - `mode = "strict" | "balanced" | "code"`: the name-guessing mode used when the
//!   client does not ask for one (a client request wins; the default is `code`).
//! - `detectors = true | false`: the built-in secret/PII detector layer beyond the
//!   reference's baseline (default `true`; `false` keeps output byte-compatible).
//! - `documents = true | false`: document extraction (spec 8), as `--documents`. Either
//!   one turns it on; `false` cannot turn off a client's `--documents`.
//!
//! Any other value for them is refused with a fixed message.
//!
//! # Known deviations
//! - The TOML parser accepts TOML 1.1 additions the reference's parser (TOML 1.0) refuses.
//! - `str()` of nested containers holding strings with non-printable characters outside
//!   the common control and format ranges may escape differently from Python's `repr`.

use crate::engine::pipeline::claimed_before_configured_terms;
use crate::engine::placeholder::{self, Category, casefold, normalize_value};
pub use crate::engine::policy::GitHubRepo;
use crate::engine::policy::{
    AliasGroup, DetectorProfile, ExplicitCounts, Mode, Policy, SaltSource,
};
use crate::engine::python::text::is_py_space;
use crate::engine::wordlists::RESERVED_PLACEHOLDER_WORDS;
use std::collections::{HashMap, HashSet};
use toml::Value;

/// Most aliases one alias group may declare.
pub const MAX_ALIASES_PER_GROUP: usize = 64;
/// Longest alias-group value, in code points.
pub const MAX_ALIAS_VALUE_CHARS: usize = 256;
/// Most whitespace-separated words in one alias-group value.
pub const MAX_ALIAS_VALUE_WORDS: usize = 16;
/// Default config file name, looked up at the root (spec 5.1).
pub const LOCAL_CONFIG: &str = ".agent-context-redactor.toml";
/// Default GitHub API base URL of a `[github.repos.<alias>]` table.
pub const DEFAULT_GITHUB_API_URL: &str = "https://api.github.com";
/// Default token environment variable of a `[github.repos.<alias>]` table.
pub const DEFAULT_GITHUB_TOKEN_ENV: &str = "GITHUB_TOKEN";

/// Returned for every request while a changed policy failed to load (spec 5.13).
pub const BLOCKED_RELOAD: &str = "Redaction configuration could not be reloaded safely. Repair the local config and referenced term files, then retry. Context access is blocked.";
/// Returned for every request while a reloaded policy carries a different salt (spec 5.13).
pub const BLOCKED_SALT_CHANGED: &str = "Redaction salt changed. Restore the previous salt or restart the MCP server and obtain new opaque references. Context access is blocked.";
/// Returned for every request while a loaded policy could not be turned into an engine.
pub const BLOCKED_APPLY: &str = "Redaction configuration could not be applied safely. Repair the local config, then retry. Context access is blocked.";

/// A policy-loading failure. `Display` is the exact, fixed operator-facing message: it
/// names alias groups by 1-based position and types by Python name, never a value or path.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    #[error("Expected string or list in redaction config, got {0}.")]
    ExpectedStringOrList(&'static str),
    #[error("Expected [redaction.aliases] to map canonical values to alias lists.")]
    AliasesNotTable,
    #[error(
        "Alias group {0} must map a non-empty canonical value to a non-empty list of non-empty strings."
    )]
    AliasGroupShape(usize),
    #[error("Alias group {0} repeats the canonical value of alias group {1}.")]
    AliasRepeatsCanonical(usize, usize),
    #[error(
        "Alias group {0}: the canonical value must also be a configured client, organization, person, or term."
    )]
    AliasCanonicalNotConfigured(usize),
    #[error(
        "Alias group {0}: a built-in detector redacts the canonical value before configured terms; use a name or term as the canonical value and list emails, URLs, handles, and similar identifiers as its aliases."
    )]
    AliasCanonicalClaimed(usize),
    #[error("Alias group {0} declares more than 64 aliases.")]
    AliasTooMany(usize),
    #[error("Alias group {0} contains a reserved placeholder word.")]
    AliasReservedWord(usize),
    #[error("Alias group {0} contains a value over 256 characters or 16 words.")]
    AliasValueOverLimits(usize),
    #[error("Alias group {0} lists its canonical value as an alias.")]
    AliasListsOwnCanonical(usize),
    #[error("Alias group {0} lists the canonical value of alias group {1} as an alias.")]
    AliasListsOtherCanonical(usize, usize),
    #[error("Alias group {0} repeats an alias of alias group {1}.")]
    AliasRepeatsAlias(usize, usize),
    #[error("Alias group {0} lists an alias that is on the allow list.")]
    AliasOnAllowList(usize),
    #[error(
        "Alias group {0} has two aliases with the same form suffix under this salt; remove or reword one of them."
    )]
    AliasSuffixClash(usize),
    #[error("Expected [github.repos.<alias>] tables in redaction config.")]
    GithubReposNotTables,
    #[error("Expected each GitHub repo config to be a table.")]
    GithubRepoNotTable,
    #[error("GitHub repo config requires owner and repo.")]
    GithubRepoMissingOwnerRepo,
    #[error("detector_profile must be default or extended.")]
    DetectorProfile,
    #[error("Refusing path outside root.")]
    PathOutsideRoot,
    #[error("Root must be an existing directory.")]
    RootNotDirectory,
    #[error("The redacted-context state directory must be outside the served context root.")]
    StateDirInsideRoot,
    #[error("Could not initialize redacted-context vault salt.")]
    VaultInit,
    #[error("Could not read redacted-context vault salt.")]
    VaultRead,
    #[error(
        "The redacted-context vault salt is malformed. Restore a backup or delete it intentionally to rotate aliases."
    )]
    VaultMalformed,
    // Ours from here on: situations where the reference fails with a raw exception.
    #[error("Redaction config is not valid TOML.")]
    InvalidToml,
    #[error("Redaction config is not valid UTF-8.")]
    ConfigNotUtf8,
    #[error("Expected [redaction] to be a table in redaction config.")]
    RedactionNotTable,
    #[error("mode must be strict, balanced or code.")]
    InvalidMode,
    #[error("detectors must be true or false.")]
    InvalidDetectors,
    #[error("documents must be true or false.")]
    InvalidDocuments,
    #[error("root_terms must be true or false.")]
    InvalidRootTerms,
    #[error("plugged_detectors must be a list of \"NAME=ARGUMENT\" strings.")]
    InvalidPluggedDetectors,
    #[error("Policy input must be a regular file.")]
    NotRegularFile,
    #[error("Could not read redaction config.")]
    ConfigUnreadable,
    #[error("Could not read a redaction term file.")]
    TermFileUnreadable,
    /// A plugged detector could not be set up; the sentence names the detector or the
    /// rule number, never an argument or a regex.
    #[error("{0}")]
    PluggedDetector(String),
    #[error("Loaded config disappeared.")]
    ConfigDisappeared,
    #[error("Loaded term file disappeared.")]
    TermFileDisappeared,
    #[error("Policy changed while loading.")]
    ChangedWhileLoading,
    /// A reload produced a different salt (its message is [`BLOCKED_SALT_CHANGED`]).
    #[error(
        "Redaction salt changed. Restore the previous salt or restart the MCP server and obtain new opaque references. Context access is blocked."
    )]
    SaltChanged,
}

/// A parsed config file: values coerced exactly as the reference does, not yet
/// de-duplicated, merged with term files or validated against each other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFile {
    pub clients: Vec<String>,
    pub organizations: Vec<String>,
    pub people: Vec<String>,
    pub terms: Vec<String>,
    pub allow: Vec<String>,
    pub exclude_dirs: Vec<String>,
    pub exclude_globs: Vec<String>,
    /// `[redaction.aliases]` in file order: whitespace-collapsed canonical value and its
    /// de-duplicated aliases.
    pub aliases: Vec<(String, Vec<String>)>,
    /// `str(salt).strip()`; empty when absent.
    pub salt: String,
    /// `str(detector_profile).strip()`, `default` when absent or blank; validated later.
    pub detector_profile: String,
    /// `term_files` entries exactly as written (the loader resolves them under the root).
    pub term_files: Vec<String>,
    /// Our `mode` key.
    pub mode: Option<Mode>,
    /// Our `detectors` key.
    pub detectors: Option<bool>,
    /// Our `documents` key.
    pub documents: Option<bool>,
    /// Our `root_terms` key: whether the root directory's name is a client term. Unset:
    /// yes in strict and balanced (the reference's rule), no in code mode, where the
    /// root is a checkout named after its project (`~/src/kafka`), not after a client.
    pub root_terms: Option<bool>,
    /// Our `plugged_detectors` key: `NAME=ARGUMENT` strings, used when the launch gave
    /// no `--detector` (the command line wins). Unset: none.
    pub plugged_detectors: Vec<String>,
    /// GitHub tables; an error is kept and raised by [`build_policy`], because the
    /// reference reports it only after term-file errors.
    github: Result<Vec<GitHubRepo>, ConfigError>,
}

impl ConfigFile {
    /// The `[github.repos]` tables, or the error their parsing produced.
    pub fn github_repos(&self) -> Result<&[GitHubRepo], ConfigError> {
        self.github.as_deref().map_err(Clone::clone)
    }
}

impl Default for ConfigFile {
    fn default() -> Self {
        ConfigFile {
            clients: Vec::new(),
            organizations: Vec::new(),
            people: Vec::new(),
            terms: Vec::new(),
            allow: Vec::new(),
            exclude_dirs: Vec::new(),
            exclude_globs: Vec::new(),
            aliases: Vec::new(),
            salt: String::new(),
            detector_profile: "default".to_owned(),
            term_files: Vec::new(),
            mode: None,
            detectors: None,
            documents: None,
            root_terms: None,
            plugged_detectors: Vec::new(),
            github: Ok(Vec::new()),
        }
    }
}

/// Environment values that shape a policy (spec 5.1). Plain data: `policy_loader`
/// fills it from the process environment, tests fill it by hand.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvOverrides {
    /// `REDACTED_CONTEXT_TERMS`: extra terms split on `,` and newlines.
    pub terms: Option<String>,
    /// `REDACTED_CONTEXT_SALT`: wins over the config and the vault when non-blank.
    pub salt: Option<String>,
    /// `REDACTED_CONTEXT_DETECTOR_PROFILE`: wins over the config when non-blank.
    pub detector_profile: Option<String>,
    /// `REDACTED_CONTEXT_STATE_DIR`: where the vault lives (used by `vault`).
    pub state_dir: Option<std::path::PathBuf>,
    /// `HOME`, for `~` expansion and the default state directory.
    pub home: Option<std::path::PathBuf>,
}

/// Everything [`build_policy`] needs, already read from disk.
#[derive(Clone, Copy, Debug)]
pub struct PolicyInputs<'a> {
    /// Last component of the resolved root path (derives the root CLIENT terms).
    pub root_name: &'a str,
    /// The parsed config, `None` when no config file exists.
    pub config: Option<&'a ConfigFile>,
    /// The config's term files in order: root-relative POSIX path of the resolved file and
    /// its text (`None` while missing).
    pub term_files: &'a [(String, Option<String>)],
    pub env: &'a EnvOverrides,
    /// The vault salt; required only when [`needs_vault_salt`] says so.
    pub vault_salt: Option<&'a str>,
    /// Mode requested by the client; wins over the config's `mode`.
    pub mode: Option<Mode>,
    /// Root-relative never-serve paths: an explicit config file under the root first,
    /// then launch-time private files (detector rule files).
    pub protected_paths: &'a [String],
}

/// Parses config text (spec 5.1). A leading BOM is dropped and line endings are
/// translated as Python's text mode does before the TOML parser sees them.
pub fn parse_config(text: &str) -> Result<ConfigFile, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = universal_newlines(text);
    let data: toml::Table = text.parse().map_err(|_| ConfigError::InvalidToml)?;
    let redaction = match data.get("redaction") {
        None => &data,
        Some(Value::Table(table)) => table,
        Some(_) => return Err(ConfigError::RedactionNotTable),
    };
    let list = |key: &str| as_string_list(redaction.get(key));
    let mut config = ConfigFile {
        clients: list("clients")?,
        organizations: list("organizations")?,
        people: list("people")?,
        terms: list("terms")?,
        allow: list("allow")?,
        exclude_dirs: list("exclude_dirs")?,
        exclude_globs: list("exclude_globs")?,
        aliases: parse_alias_groups(redaction.get("aliases"))?,
        salt: redaction
            .get("salt")
            .map(|v| py_strip(&py_str(v)).to_owned())
            .unwrap_or_default(),
        detector_profile: String::new(),
        term_files: Vec::new(),
        mode: None,
        detectors: None,
        documents: None,
        root_terms: None,
        plugged_detectors: Vec::new(),
        github: Ok(Vec::new()),
    };
    let profile = redaction
        .get("detector_profile")
        .map(|v| py_strip(&py_str(v)).to_owned())
        .unwrap_or_default();
    config.detector_profile = if profile.is_empty() {
        "default".to_owned()
    } else {
        profile
    };
    config.term_files = list("term_files")?;
    config.github = parse_github_repos(data.get("github"));
    config.mode = match redaction.get("mode") {
        None => None,
        Some(Value::String(s)) => Some(Mode::parse(s).ok_or(ConfigError::InvalidMode)?),
        Some(_) => return Err(ConfigError::InvalidMode),
    };
    config.detectors = match redaction.get("detectors") {
        None => None,
        Some(Value::Boolean(b)) => Some(*b),
        Some(_) => return Err(ConfigError::InvalidDetectors),
    };
    config.documents = match redaction.get("documents") {
        None => None,
        Some(Value::Boolean(b)) => Some(*b),
        Some(_) => return Err(ConfigError::InvalidDocuments),
    };
    config.root_terms = match redaction.get("root_terms") {
        None => None,
        Some(Value::Boolean(b)) => Some(*b),
        Some(_) => return Err(ConfigError::InvalidRootTerms),
    };
    config.plugged_detectors = match redaction.get("plugged_detectors") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or(ConfigError::InvalidPluggedDetectors)?,
        Some(_) => return Err(ConfigError::InvalidPluggedDetectors),
    };
    Ok(config)
}

/// Whether [`build_policy`] will need the vault salt: neither the environment nor the
/// config supplies one.
pub fn needs_vault_salt(config: Option<&ConfigFile>, env: &EnvOverrides) -> bool {
    let env_salt = env.salt.as_deref().map(py_strip).unwrap_or("");
    env_salt.is_empty() && config.is_none_or(|c| c.salt.is_empty())
}

/// Builds the policy of one root (spec 5.1, 5.6.3), validating in the reference's order.
pub fn build_policy(inputs: PolicyInputs<'_>) -> Result<Policy, ConfigError> {
    let mode = inputs
        .mode
        .or(inputs.config.and_then(|c| c.mode))
        .unwrap_or_default();
    let root_terms = if root_terms_apply(inputs.config, mode) {
        derive_root_terms(inputs.root_name)
    } else {
        Vec::new()
    };
    let mut clients: Vec<String> = root_terms.clone();
    let mut organizations = Vec::new();
    let mut people = Vec::new();
    let mut terms = Vec::new();
    let mut allow = Vec::new();
    let mut exclude_dirs = Vec::new();
    let mut exclude_globs = Vec::new();
    let mut explicit_terms = Vec::new();
    let mut salt = String::new();
    let mut salt_source = SaltSource::LocalState;
    let mut profile = "default".to_owned();
    let mut term_file_names = Vec::new();
    let mut aliases: &[(String, Vec<String>)] = &[];
    let mut config_mode = None;
    let mut detectors = true;
    let mut documents = false;
    let mut github_repos = Vec::new();

    if let Some(config) = inputs.config {
        clients.extend(config.clients.iter().cloned());
        organizations.extend(config.organizations.iter().cloned());
        people.extend(config.people.iter().cloned());
        terms.extend(config.terms.iter().cloned());
        explicit_terms.extend(config.terms.iter().cloned());
        allow.extend(config.allow.iter().cloned());
        exclude_dirs.extend(config.exclude_dirs.iter().cloned());
        exclude_globs.extend(config.exclude_globs.iter().cloned());
        aliases = &config.aliases;
        if !config.salt.is_empty() {
            salt = config.salt.clone();
            salt_source = SaltSource::Config;
        }
        profile = config.detector_profile.clone();
        for (rel, contents) in inputs.term_files {
            term_file_names.push(rel.clone());
            if let Some(text) = contents {
                let file_terms = read_term_lines(text);
                terms.extend(file_terms.iter().cloned());
                explicit_terms.extend(file_terms);
            }
        }
        github_repos = config.github_repos()?.to_vec();
        for repo in &github_repos {
            terms.push(repo.owner.clone());
            terms.push(repo.repo.clone());
            terms.push(format!("{}/{}", repo.owner, repo.repo));
        }
        config_mode = config.mode;
        detectors = config.detectors.unwrap_or(true);
        documents = config.documents.unwrap_or(false);
    }

    let environment_terms = match inputs.env.terms.as_deref() {
        Some(value) if !value.is_empty() => split_env_terms(value),
        _ => Vec::new(),
    };
    terms.extend(environment_terms.iter().cloned());
    let env_salt = inputs.env.salt.as_deref().map(py_strip).unwrap_or("");
    if !env_salt.is_empty() {
        salt = env_salt.to_owned();
        salt_source = SaltSource::Environment;
    }
    if salt.is_empty() {
        salt = inputs.vault_salt.ok_or(ConfigError::VaultInit)?.to_owned();
        salt_source = SaltSource::LocalState;
    }
    let env_profile = inputs
        .env
        .detector_profile
        .as_deref()
        .map(py_strip)
        .unwrap_or("");
    if !env_profile.is_empty() {
        profile = env_profile.to_owned();
    }
    let detector_profile = DetectorProfile::parse(&profile).ok_or(ConfigError::DetectorProfile)?;

    let clients = dedupe(&clients);
    let organizations = dedupe(&organizations);
    let explicit_people = dedupe(&expand_person_terms(&people));
    let people = explicit_people.clone();
    let terms = dedupe(&terms);
    let allow = dedupe(&allow);
    let alias_groups = resolve_alias_groups(
        aliases,
        &[
            (Category::CLIENT, &clients),
            (Category::ORG, &organizations),
            (Category::PERSON, &people),
            (Category::SENSITIVE, &terms),
        ],
        &allow,
        &salt,
    )?;
    let explicit = ExplicitCounts {
        clients: inputs.config.map_or(0, |c| dedupe(&c.clients).len()),
        organizations: organizations.len(),
        people_terms: explicit_people.len(),
        terms: dedupe(&explicit_terms).len(),
    };
    let term_files = dedupe(&term_file_names);
    let mut protected_paths: Vec<String> = Vec::new();
    for path in inputs.protected_paths.iter().chain(term_files.iter()) {
        if !protected_paths.contains(path) {
            protected_paths.push(path.clone());
        }
    }
    Ok(Policy {
        salt,
        salt_source,
        mode: inputs.mode.or(config_mode).unwrap_or_default(),
        detector_profile,
        detectors,
        documents,
        clients,
        organizations,
        people,
        terms,
        allow,
        exclude_dirs: dedupe(&exclude_dirs),
        exclude_globs: dedupe(&exclude_globs),
        alias_groups,
        term_files,
        protected_paths,
        root_terms: dedupe(&root_terms),
        environment_terms: dedupe(&environment_terms),
        explicit,
        config_loaded: inputs.config.is_some(),
        github_repos,
        plugged: Vec::new(),
        plugged_files: Vec::new(),
    })
}

/// Whether the root directory's name becomes client terms: the config's `root_terms`
/// when set, else everywhere but code mode.
pub fn root_terms_apply(config: Option<&ConfigFile>, mode: Mode) -> bool {
    config
        .and_then(|c| c.root_terms)
        .unwrap_or(mode != Mode::Code)
}

/// CLIENT terms derived from the root directory's name (spec 5.1), longest first.
/// Among equal lengths the reference's order is hash-random; ours is the derivation
/// order below, which only decides which of two case variants survives `dedupe`.
pub fn derive_root_terms(root_name: &str) -> Vec<String> {
    let name = py_strip(root_name);
    if name.is_empty() {
        return Vec::new();
    }
    let mut terms: Vec<String> = Vec::new();
    let mut add = |term: String| {
        if !terms.contains(&term) {
            terms.push(term);
        }
    };
    add(name.to_owned());
    add(name.replace('-', " "));
    add(name.replace('_', " "));
    let parts: Vec<&str> = name
        .split(|c: char| c == '-' || c == '_' || is_py_space(c))
        .filter(|p| p.chars().count() >= 3)
        .collect();
    for part in &parts {
        add((*part).to_owned());
    }
    if parts.len() >= 2 {
        let acronym: String = parts.iter().filter_map(|p| p.chars().next()).collect();
        if acronym.chars().count() >= 2 {
            add(acronym.clone());
            add(acronym.to_uppercase());
        }
        let initial = parts[1]
            .chars()
            .next()
            .map(String::from)
            .unwrap_or_default();
        let first_plus_initial = format!("{}{}", parts[0], initial);
        add(first_plus_initial.clone());
        add(first_plus_initial.to_uppercase());
    }
    terms.sort_by_key(|t| std::cmp::Reverse(t.chars().count()));
    terms
}

/// Reference `dedupe`: whitespace runs collapsed to one space, trimmed, blanks dropped,
/// case-insensitive (full case folding) first occurrence wins.
pub fn dedupe<S: AsRef<str>>(values: &[S]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for value in values {
        let cleaned = collapse_whitespace(py_strip(value.as_ref()));
        if cleaned.is_empty() {
            continue;
        }
        if seen.insert(casefold(&cleaned)) {
            out.push(cleaned);
        }
    }
    out
}

/// Reference `expand_person_terms`: each value, then each of its parts of three or
/// more characters (split on whitespace, `_`, `-`).
pub fn expand_person_terms<S: AsRef<str>>(people: &[S]) -> Vec<String> {
    let mut out = Vec::new();
    for person in people {
        let person = person.as_ref();
        out.push(person.to_owned());
        out.extend(
            person
                .split(|c: char| c == '_' || c == '-' || is_py_space(c))
                .filter(|p| p.chars().count() >= 3)
                .map(str::to_owned),
        );
    }
    out
}

/// `REDACTED_CONTEXT_TERMS` split on `,` and `\n`, each part trimmed, blanks dropped.
pub fn split_env_terms(value: &str) -> Vec<String> {
    value
        .split([',', '\n'])
        .map(py_strip)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Terms of one term file: every line (Python `splitlines`) trimmed, blank lines and
/// `#` comment lines dropped.
pub fn read_term_lines(text: &str) -> Vec<String> {
    crate::engine::python::text::splitlines(text, false)
        .into_iter()
        .map(py_strip)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

pub(crate) fn parse_alias_groups(
    value: Option<&Value>,
) -> Result<Vec<(String, Vec<String>)>, ConfigError> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Table(table) = value else {
        return Err(ConfigError::AliasesNotTable);
    };
    let mut groups = Vec::new();
    for (index, (canonical, aliases)) in table.iter().enumerate() {
        let number = index + 1;
        let items: Vec<&Value> = match aliases {
            Value::String(_) => vec![aliases],
            Value::Array(items) => items.iter().collect(),
            _ => return Err(ConfigError::AliasGroupShape(number)),
        };
        let strings: Option<Vec<&str>> = items
            .iter()
            .map(|v| v.as_str().filter(|s| !py_strip(s).is_empty()))
            .collect();
        let strings = match strings {
            Some(s) if !s.is_empty() && !py_strip(canonical).is_empty() => s,
            _ => return Err(ConfigError::AliasGroupShape(number)),
        };
        let canonical = dedupe(&[canonical.as_str()]).remove(0);
        groups.push((canonical, dedupe(&strings)));
    }
    Ok(groups)
}

fn resolve_alias_groups(
    groups: &[(String, Vec<String>)],
    categories: &[(Category, &Vec<String>)],
    allow: &[String],
    salt: &str,
) -> Result<Vec<AliasGroup>, ConfigError> {
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    let mut category_of: HashMap<String, Category> = HashMap::new();
    for (category, values) in categories {
        for value in values.iter() {
            category_of
                .entry(normalize_value(value))
                .or_insert(*category);
        }
    }
    let allowed: HashSet<String> = allow.iter().map(|t| normalize_value(t)).collect();
    let mut canonical_groups: HashMap<String, usize> = HashMap::new();
    for (index, (canonical, _)) in groups.iter().enumerate() {
        let key = normalize_value(canonical);
        if let Some(first) = canonical_groups.get(&key) {
            return Err(ConfigError::AliasRepeatsCanonical(index + 1, *first));
        }
        canonical_groups.insert(key, index + 1);
    }
    let mut alias_owner: HashMap<String, usize> = HashMap::new();
    let mut resolved = Vec::with_capacity(groups.len());
    for (index, (canonical, aliases)) in groups.iter().enumerate() {
        let number = index + 1;
        let key = normalize_value(canonical);
        let category = *category_of
            .get(&key)
            .ok_or(ConfigError::AliasCanonicalNotConfigured(number))?;
        if claimed_before_configured_terms(canonical) {
            return Err(ConfigError::AliasCanonicalClaimed(number));
        }
        if aliases.len() > MAX_ALIASES_PER_GROUP {
            return Err(ConfigError::AliasTooMany(number));
        }
        for value in std::iter::once(canonical).chain(aliases.iter()) {
            if RESERVED_PLACEHOLDER_WORDS.contains(&normalize_value(value).as_str()) {
                return Err(ConfigError::AliasReservedWord(number));
            }
            if alias_value_over_limits(value) {
                return Err(ConfigError::AliasValueOverLimits(number));
            }
        }
        let mut suffixes = HashSet::new();
        for alias in aliases {
            let normalized = normalize_value(alias);
            if normalized == key {
                return Err(ConfigError::AliasListsOwnCanonical(number));
            }
            if let Some(other) = canonical_groups.get(&normalized) {
                return Err(ConfigError::AliasListsOtherCanonical(number, *other));
            }
            if let Some(other) = alias_owner.get(&normalized) {
                return Err(ConfigError::AliasRepeatsAlias(number, *other));
            }
            if allowed.contains(&normalized) {
                return Err(ConfigError::AliasOnAllowList(number));
            }
            if !suffixes.insert(placeholder::alias_form_suffix(salt, &normalized)) {
                return Err(ConfigError::AliasSuffixClash(number));
            }
            alias_owner.insert(normalized, number);
        }
        resolved.push(AliasGroup {
            canonical: canonical.clone(),
            category,
            aliases: aliases.clone(),
        });
    }
    Ok(resolved)
}

pub(crate) fn alias_value_over_limits(value: &str) -> bool {
    value.chars().count() > MAX_ALIAS_VALUE_CHARS
        || value.split(is_py_space).filter(|w| !w.is_empty()).count() > MAX_ALIAS_VALUE_WORDS
}

fn parse_github_repos(value: Option<&Value>) -> Result<Vec<GitHubRepo>, ConfigError> {
    let Some(Value::Table(github)) = value else {
        return Ok(Vec::new());
    };
    let repos = match github.get("repos") {
        None => return Ok(Vec::new()),
        Some(Value::Table(repos)) => repos,
        Some(_) => return Err(ConfigError::GithubReposNotTables),
    };
    let mut parsed: Vec<GitHubRepo> = Vec::new();
    for (alias, raw) in repos {
        let alias = py_strip(alias);
        if alias.is_empty() {
            continue;
        }
        let Value::Table(raw) = raw else {
            return Err(ConfigError::GithubRepoNotTable);
        };
        let field = |key: &str| {
            raw.get(key)
                .map(|v| py_strip(&py_str(v)).to_owned())
                .unwrap_or_default()
        };
        let (owner, repo) = (field("owner"), field("repo"));
        if owner.is_empty() || repo.is_empty() {
            return Err(ConfigError::GithubRepoMissingOwnerRepo);
        }
        let field_or = |key: &str, default: &str| {
            let value = field(key);
            if value.is_empty() {
                default.to_owned()
            } else {
                value
            }
        };
        let entry = GitHubRepo {
            alias: alias.to_owned(),
            owner,
            repo,
            api_url: field_or("api_url", DEFAULT_GITHUB_API_URL),
            token_env: field_or("token_env", DEFAULT_GITHUB_TOKEN_ENV),
        };
        // A later alias equal after stripping replaces the earlier one in place, as a
        // Python dict update does.
        match parsed.iter_mut().find(|r| r.alias == entry.alias) {
            Some(existing) => *existing = entry,
            None => parsed.push(entry),
        }
    }
    Ok(parsed)
}

/// Reference `as_string_list`: a string is a one-element list (even when blank); list
/// items are `str()`-ed and blank ones dropped; anything else is refused by type name.
fn as_string_list(value: Option<&Value>) -> Result<Vec<String>, ConfigError> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => Ok(items
            .iter()
            .map(py_str)
            .filter(|s| !py_strip(s).is_empty())
            .collect()),
        Some(other) => Err(ConfigError::ExpectedStringOrList(py_type_name(other))),
    }
}

/// Python `str.strip()` (Unicode whitespace as `str.isspace`).
pub fn py_strip(value: &str) -> &str {
    value.trim_matches(is_py_space)
}

pub(crate) fn collapse_whitespace(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut in_run = false;
    for ch in value.chars() {
        if is_py_space(ch) {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            out.push(ch);
            in_run = false;
        }
    }
    out
}

/// Python text-mode reading: `\r\n` and lone `\r` become `\n`.
pub(crate) fn universal_newlines(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\r') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// `type(value).__name__` of the value Python's `tomllib` would produce.
fn py_type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "str",
        Value::Integer(_) => "int",
        Value::Float(_) => "float",
        Value::Boolean(_) => "bool",
        Value::Array(_) => "list",
        Value::Table(_) => "dict",
        Value::Datetime(dt) => match (dt.date.is_some(), dt.time.is_some()) {
            (true, true) => "datetime",
            (true, false) => "date",
            _ => "time",
        },
    }
}

/// Python `str()` of the value `tomllib` would produce.
fn py_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Datetime(dt) => py_datetime(dt, false),
        other => py_repr(other),
    }
}

/// Python `repr()` of the value `tomllib` would produce.
fn py_repr(value: &Value) -> String {
    match value {
        Value::String(s) => py_repr_str(s),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => py_float_repr(*f),
        Value::Boolean(b) => (if *b { "True" } else { "False" }).to_owned(),
        Value::Datetime(dt) => py_datetime(dt, true),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Table(table) => format!(
            "{{{}}}",
            table
                .iter()
                .map(|(k, v)| format!("{}: {}", py_repr_str(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub(crate) fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return (if f > 0.0 { "inf" } else { "-inf" }).to_owned();
    }
    // `{:e}` gives the shortest round-trip digits; Python picks fixed notation when the
    // decimal point position lies in (-4, 16].
    let sci = format!("{:e}", f.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let point = exponent + 1;
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let body = if -4 < point && point <= 16 {
        if point <= 0 {
            format!("0.{}{}", "0".repeat(point.unsigned_abs() as usize), digits)
        } else if (point as usize) >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        }
    } else {
        let rest = if digits.len() > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        let exp = point - 1;
        format!(
            "{}{}e{}{:02}",
            &digits[..1],
            rest,
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        )
    };
    format!("{sign}{body}")
}

fn py_datetime(dt: &toml::value::Datetime, repr: bool) -> String {
    let micros = |t: &toml::value::Time| t.nanosecond / 1000;
    // tomllib: `Z` and `+00:00` are `timezone.utc`; other offsets a fixed timedelta.
    let offset_minutes = dt.offset.map(|o| match o {
        toml::value::Offset::Z => 0i32,
        toml::value::Offset::Custom { minutes } => i32::from(minutes),
    });
    if !repr {
        let mut out = String::new();
        if let Some(d) = dt.date {
            out.push_str(&format!("{:04}-{:02}-{:02}", d.year, d.month, d.day));
        }
        if let Some(t) = dt.time {
            if dt.date.is_some() {
                out.push(' ');
            }
            out.push_str(&format!("{:02}:{:02}:{:02}", t.hour, t.minute, t.second));
            if micros(&t) != 0 {
                out.push_str(&format!(".{:06}", micros(&t)));
            }
        }
        if let Some(m) = offset_minutes {
            let sign = if m < 0 { '-' } else { '+' };
            out.push_str(&format!("{sign}{:02}:{:02}", m.abs() / 60, m.abs() % 60));
        }
        return out;
    }
    let time_fields = |t: &toml::value::Time, always_minutes: bool| {
        let mut fields = vec![t.hour.to_string()];
        let us = micros(t);
        if always_minutes || t.minute != 0 || t.second != 0 || us != 0 {
            fields.push(t.minute.to_string());
        }
        if t.second != 0 || us != 0 {
            fields.push(t.second.to_string());
        }
        if us != 0 {
            fields.push(us.to_string());
        }
        fields
    };
    match (dt.date, dt.time) {
        (Some(d), None) => format!("datetime.date({}, {}, {})", d.year, d.month, d.day),
        (None, Some(t)) => format!("datetime.time({})", time_fields(&t, true).join(", ")),
        (Some(d), Some(t)) => {
            let mut fields = vec![d.year.to_string(), d.month.to_string(), d.day.to_string()];
            fields.extend(time_fields(&t, true));
            let tz = match offset_minutes {
                None => String::new(),
                Some(0) => ", tzinfo=datetime.timezone.utc".to_owned(),
                Some(m) => {
                    let seconds = i64::from(m) * 60;
                    let delta = if seconds < 0 {
                        format!("days=-1, seconds={}", 86_400 + seconds)
                    } else {
                        format!("seconds={seconds}")
                    };
                    format!(", tzinfo=datetime.timezone(datetime.timedelta({delta}))")
                }
            };
            format!("datetime.datetime({}{})", fields.join(", "), tz)
        }
        (None, None) => String::new(),
    }
}

pub(crate) fn py_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !py_printable(c) => {
                let n = c as u32;
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else if n < 0x10000 {
                    out.push_str(&format!("\\u{n:04x}"));
                } else {
                    out.push_str(&format!("\\U{n:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python `str.isprintable()` for one character, approximated: controls, separators
/// other than the space, common format characters and private use are non-printable.
fn py_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || is_py_space(c) {
        return false;
    }
    !matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890 | 0x891 | 0x8E2 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F
        | 0xD800..=0xF8FF | 0xFEFF | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F
        | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F
        | 0xF0000..=0x10FFFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALT: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn build_with(
        text: &str,
        root_name: &str,
        env: &EnvOverrides,
        term_files: &[(String, Option<String>)],
    ) -> Result<Policy, ConfigError> {
        let config = parse_config(text)?;
        // The reference's rules, root terms included, hold in its modes.
        let mode = Some(config.mode.unwrap_or(Mode::Balanced));
        build_in(&config, root_name, term_files, env, mode)
    }

    /// The policy of `config` for a root named `root_name`, with `mode` requested.
    fn build_in(
        config: &ConfigFile,
        root_name: &str,
        term_files: &[(String, Option<String>)],
        env: &EnvOverrides,
        mode: Option<Mode>,
    ) -> Result<Policy, ConfigError> {
        build_policy(PolicyInputs {
            root_name,
            config: Some(config),
            term_files,
            env,
            vault_salt: Some(SALT),
            mode,
            protected_paths: &[],
        })
    }

    fn build(text: &str) -> Result<Policy, ConfigError> {
        build_with(text, "root", &EnvOverrides::default(), &[])
    }

    /// Asserts the exact message and that no configured marker value leaks into it.
    fn assert_error(text: &str, expected: &str) {
        let err = build(text).expect_err(text);
        let message = err.to_string();
        assert_eq!(message, expected, "config: {text}");
        for marker in ["Zq", "zq", "ZQ", "Quux", "quux"] {
            assert!(
                !message.contains(marker),
                "message leaks a value: {message}"
            );
        }
    }

    #[test]
    fn list_keys_coerce_like_python_str() {
        // Expected strings printed by the reference's `as_string_list` on the same TOML.
        let text = r#"clients = [1, -0.0, 1e16, 1e15, 0.0001, 1.5e-5, 123.456, true, 1979-05-27T07:32:00-08:00, 1979-05-27T00:32:00.999999999Z, 1979-05-27, 07:32:00, 1979-05-27T07:32:00, [1, "a'b", "q\"", "\u0001x"], {a = 1, b = [2.5]}, "  ", "x", inf, -inf, nan, 2001-01-01T00:00:00+05:30, [1979-05-27T07:32:00+01:00, 07:32:05.25]]"#;
        let expected = [
            "1",
            "-0.0",
            "1e+16",
            "1000000000000000.0",
            "0.0001",
            "1.5e-05",
            "123.456",
            "True",
            "1979-05-27 07:32:00-08:00",
            "1979-05-27 00:32:00.999999+00:00",
            "1979-05-27",
            "07:32:00",
            "1979-05-27 07:32:00",
            r#"[1, "a'b", 'q"', '\x01x']"#,
            "{'a': 1, 'b': [2.5]}",
            "x",
            "inf",
            "-inf",
            "nan",
            "2001-01-01 00:00:00+05:30",
            "[datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.timezone(datetime.timedelta(seconds=3600))), datetime.time(7, 32, 5, 250000)]",
        ];
        assert_eq!(parse_config(text).unwrap().clients, expected);
    }

    #[test]
    fn non_list_values_are_refused_by_python_type_name() {
        for (value, name) in [
            ("5", "int"),
            ("1.5", "float"),
            ("true", "bool"),
            ("1979-05-27T07:32:00Z", "datetime"),
            ("1979-05-27T07:32:00", "datetime"),
            ("1979-05-27", "date"),
            ("07:32:00", "time"),
            ("{a = 1}", "dict"),
        ] {
            for key in [
                "clients",
                "organizations",
                "people",
                "terms",
                "allow",
                "exclude_dirs",
                "exclude_globs",
                "term_files",
            ] {
                assert_error(
                    &format!("{key} = {value}"),
                    &format!("Expected string or list in redaction config, got {name}."),
                );
            }
        }
    }

    #[test]
    fn redaction_table_wins_over_top_level_keys() {
        let policy = build("clients = [\"Top\"]\n[redaction]\nclients = [\"Inner\"]\n").unwrap();
        assert_eq!(policy.clients, ["root", "Inner"]);
        let policy = build("clients = \"Top\"\n").unwrap();
        assert_eq!(policy.clients, ["root", "Top"]);
        assert_error(
            "redaction = 5",
            "Expected [redaction] to be a table in redaction config.",
        );
    }

    #[test]
    fn bom_and_python_newlines_are_accepted() {
        let policy =
            build("\u{feff}[redaction]\r\nclients = [\"A1\"]\rterms = \"\"\"x\r\ny\"\"\"\r\n")
                .unwrap();
        assert_eq!(policy.clients, ["root", "A1"]);
        // Text-mode reading turned the CRLF inside the string into LF; dedupe then
        // collapsed it to a space.
        assert_eq!(policy.terms, ["x y"]);
        assert_eq!(
            build("clients = [").unwrap_err().to_string(),
            "Redaction config is not valid TOML."
        );
    }

    #[test]
    fn alias_structure_errors() {
        assert_error(
            "[redaction]\naliases = [\"Zq\"]",
            "Expected [redaction.aliases] to map canonical values to alias lists.",
        );
        let shape = |n: usize| {
            format!(
                "Alias group {n} must map a non-empty canonical value to a non-empty list of non-empty strings."
            )
        };
        for body in [
            "\"Zq\" = []",
            "\"Zq\" = [\"\"]",
            "\"Zq\" = [\" \\t\"]",
            "\"Zq\" = [1]",
            "\" \" = [\"Quux\"]",
            "\"Zq\" = {a = \"Quux\"}",
            "\"Zq\" = 5",
        ] {
            assert_error(
                &format!("people = [\"Zq\"]\n[aliases]\n\"Ok Person\" = \"Quux\"\n{body}\n"),
                &shape(2),
            );
        }
    }

    #[test]
    fn alias_validation_errors_name_groups_by_position_only() {
        let base = "people = [\"Zq Person\", \"Quux Person\"]\nterms = [\"[PERSON_0123456789abcdef0123456789abcdef]\", \"zq@example.invalid\"]\nallow = [\"Zq allowed\"]\n[aliases]\n";
        let cases: Vec<(String, String)> = vec![
            ("\"Zq Person\" = \"zq1\"\n\"zq  PERSON\" = \"zq2\"".into(), "Alias group 2 repeats the canonical value of alias group 1.".into()),
            ("\"Zq Nobody\" = \"zq1\"".into(), "Alias group 1: the canonical value must also be a configured client, organization, person, or term.".into()),
            (
                "\"[PERSON_0123456789abcdef0123456789abcdef]\" = \"zq1\"".into(),
                "Alias group 1: a built-in detector redacts the canonical value before configured terms; use a name or term as the canonical value and list emails, URLs, handles, and similar identifiers as its aliases.".into(),
            ),
            (
                "\"zq@example.invalid\" = \"zq1\"".into(),
                "Alias group 1: a built-in detector redacts the canonical value before configured terms; use a name or term as the canonical value and list emails, URLs, handles, and similar identifiers as its aliases.".into(),
            ),
            (
                format!("\"Zq Person\" = [{}]", (0..65).map(|i| format!("\"zq{i}\"")).collect::<Vec<_>>().join(", ")),
                "Alias group 1 declares more than 64 aliases.".into(),
            ),
            ("\"Zq Person\" = [\"zq1\", \"Client\"]".into(), "Alias group 1 contains a reserved placeholder word.".into()),
            ("\"Zq Person\" = [\"  ORGANIZATION \"]".into(), "Alias group 1 contains a reserved placeholder word.".into()),
            (format!("\"Zq Person\" = [\"zq{}\"]", "x".repeat(255)), "Alias group 1 contains a value over 256 characters or 16 words.".into()),
            (format!("\"Zq Person\" = [\"zq{}\"]", " w".repeat(16)), "Alias group 1 contains a value over 256 characters or 16 words.".into()),
            ("\"Zq Person\" = [\"zq1\", \"ZQ   person\"]".into(), "Alias group 1 lists its canonical value as an alias.".into()),
            ("\"Zq Person\" = [\"quux person\"]\n\"Quux Person\" = \"zq2\"".into(), "Alias group 1 lists the canonical value of alias group 2 as an alias.".into()),
            ("\"Zq Person\" = [\"zq1\"]\n\"Quux Person\" = [\"ZQ1\"]".into(), "Alias group 2 repeats an alias of alias group 1.".into()),
            ("\"Zq Person\" = [\"zq ALLOWED\"]".into(), "Alias group 1 lists an alias that is on the allow list.".into()),
        ];
        for (body, expected) in cases {
            assert_error(&format!("{base}{body}\n"), &expected);
        }
        // Exactly 64 aliases and a 256-character, 16-word value are within limits.
        let at_limit = format!(
            "{base}\"Zq Person\" = [{}, \"{}\", \"{}\"]\n",
            (0..62)
                .map(|i| format!("\"zq{i}\""))
                .collect::<Vec<_>>()
                .join(", "),
            "y".repeat(256),
            vec!["w"; 16].join(" ")
        );
        assert_eq!(build(&at_limit).unwrap().alias_groups[0].aliases.len(), 64);
    }

    #[test]
    fn alias_form_suffix_clash_is_refused() {
        // Found by searching with the reference's `alias_form_suffix`: both give 08dfdf2e.
        assert_eq!(
            placeholder::alias_form_suffix("golden-salt", "alias9082"),
            "08dfdf2e"
        );
        assert_eq!(
            placeholder::alias_form_suffix("golden-salt", "alias40814"),
            "08dfdf2e"
        );
        let env = EnvOverrides {
            salt: Some("golden-salt".into()),
            ..EnvOverrides::default()
        };
        let text = "people = [\"Zq Person\"]\n[aliases]\n\"Zq Person\" = [\"alias9082\", \"alias40814\"]\n";
        let err = build_with(text, "root", &env, &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Alias group 1 has two aliases with the same form suffix under this salt; remove or reword one of them."
        );
        let env = EnvOverrides {
            salt: Some("other-salt".into()),
            ..EnvOverrides::default()
        };
        assert!(build_with(text, "root", &env, &[]).is_ok());
    }

    #[test]
    fn alias_groups_take_the_first_category_holding_the_canonical() {
        let text = "clients = [\"Acme\"]\norganizations = [\"acme\", \"Org Co\"]\npeople = [\"Taylor Reed\"]\nterms = [\"Meridian\"]\n[aliases]\n\"ACME\" = [\"acme-corp\", \"Acme  Corp\", \"acme corp\"]\n\"taylor\" = \"treed@example.invalid\"\n\"Meridian\" = [\"proj-m\"]\n";
        let policy = build(text).unwrap();
        let groups: Vec<(&str, Category, Vec<&str>)> = policy
            .alias_groups
            .iter()
            .map(|g| {
                (
                    g.canonical.as_str(),
                    g.category,
                    g.aliases.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            groups,
            vec![
                ("ACME", Category::CLIENT, vec!["acme-corp", "Acme Corp"]),
                ("taylor", Category::PERSON, vec!["treed@example.invalid"]),
                ("Meridian", Category::SENSITIVE, vec!["proj-m"]),
            ]
        );
    }

    #[test]
    fn github_errors_and_terms() {
        assert_error(
            "[github]\nrepos = 5",
            "Expected [github.repos.<alias>] tables in redaction config.",
        );
        assert_error(
            "[github.repos]\nctx = \"Zq/quux\"",
            "Expected each GitHub repo config to be a table.",
        );
        assert_error(
            "[github.repos.ctx]\nowner = \"Zq\"",
            "GitHub repo config requires owner and repo.",
        );
        assert_error(
            "[github.repos.ctx]\nowner = \"Zq\"\nrepo = \"  \"",
            "GitHub repo config requires owner and repo.",
        );
        let text = "[redaction]\nterms = [\"t1\"]\n[github.repos.ctx]\nowner = \" Octo \"\nrepo = \"Hello\"\napi_url = \"\"\n[github.repos.\" \"]\nowner = 5\n";
        let config = parse_config(text).unwrap();
        let repos = config.github_repos().unwrap();
        assert_eq!(repos.len(), 1);
        assert_eq!(
            repos[0],
            GitHubRepo {
                alias: "ctx".into(),
                owner: "Octo".into(),
                repo: "Hello".into(),
                api_url: DEFAULT_GITHUB_API_URL.into(),
                token_env: DEFAULT_GITHUB_TOKEN_ENV.into()
            }
        );
        let policy = build(text).unwrap();
        assert_eq!(policy.github_repos, repos);
        assert_eq!(policy.terms, ["t1", "Octo", "Hello", "Octo/Hello"]);
        assert_eq!(
            policy.explicit.terms, 1,
            "GitHub-derived terms are not explicit"
        );
    }

    #[test]
    fn detector_profile_validation_and_env_override() {
        assert_error(
            "detector_profile = \"Zq\"",
            "detector_profile must be default or extended.",
        );
        assert_error(
            "detector_profile = 5",
            "detector_profile must be default or extended.",
        );
        assert_eq!(
            build("detector_profile = \"  \"").unwrap().detector_profile,
            DetectorProfile::Default
        );
        assert_eq!(
            build("detector_profile = \" extended \"")
                .unwrap()
                .detector_profile,
            DetectorProfile::Extended
        );
        let env = EnvOverrides {
            detector_profile: Some(" extended ".into()),
            ..EnvOverrides::default()
        };
        assert_eq!(
            build_with("", "root", &env, &[]).unwrap().detector_profile,
            DetectorProfile::Extended
        );
        let env = EnvOverrides {
            detector_profile: Some("Zq".into()),
            ..EnvOverrides::default()
        };
        assert_eq!(
            build_with("detector_profile = \"extended\"", "root", &env, &[]).unwrap_err(),
            ConfigError::DetectorProfile
        );
    }

    /// A checkout is named after its project (`~/src/kafka`), a knowledge folder after its
    /// client: in code mode the root's name is no client term unless the config asks.
    #[test]
    fn root_terms_follow_the_mode_unless_the_config_says() {
        let clients = |text: &str, mode: Option<Mode>| {
            let config = parse_config(text).unwrap();
            let env = EnvOverrides::default();
            build_in(&config, "kafka", &[], &env, mode).unwrap().clients
        };
        assert!(clients("", None).is_empty(), "code is the default mode");
        assert!(clients("", Some(Mode::Code)).is_empty());
        assert_eq!(clients("", Some(Mode::Balanced)), ["kafka"]);
        assert_eq!(clients("", Some(Mode::Strict)), ["kafka"]);
        assert_eq!(clients("mode = \"strict\"", None), ["kafka"]);
        assert_eq!(clients("root_terms = true", Some(Mode::Code)), ["kafka"]);
        assert!(clients("root_terms = false", Some(Mode::Balanced)).is_empty());
        assert_eq!(
            clients("[redaction]\nroot_terms = true\nclients = [\"Acme\"]", None),
            ["kafka", "Acme"]
        );
    }

    #[test]
    fn mode_and_detectors_extension_keys() {
        let config = parse_config("").unwrap();
        let policy = build_in(&config, "root", &[], &EnvOverrides::default(), None).unwrap();
        assert_eq!((policy.mode, policy.detectors), (Mode::Code, true));
        let policy = build("[redaction]\nmode = \"balanced\"\ndetectors = false\n").unwrap();
        assert_eq!((policy.mode, policy.detectors), (Mode::Balanced, false));
        assert_error("mode = \"Zq\"", "mode must be strict, balanced or code.");
        assert_error("mode = 1", "mode must be strict, balanced or code.");
        assert_error("detectors = \"Zq\"", "detectors must be true or false.");
        assert_error("root_terms = \"Zq\"", "root_terms must be true or false.");
        // The client's requested mode wins over the config.
        let config = parse_config("mode = \"balanced\"").unwrap();
        let policy = build_policy(PolicyInputs {
            root_name: "root",
            config: Some(&config),
            term_files: &[],
            env: &EnvOverrides::default(),
            vault_salt: Some(SALT),
            mode: Some(Mode::Strict),
            protected_paths: &[],
        })
        .unwrap();
        assert_eq!(policy.mode, Mode::Strict);
    }

    #[test]
    fn salt_precedence_is_env_then_config_then_vault() {
        let policy = build("salt = \"  cfg-salt \"").unwrap();
        assert_eq!(
            (policy.salt.as_str(), policy.salt_source),
            ("cfg-salt", SaltSource::Config)
        );
        let env = EnvOverrides {
            salt: Some(" env-salt\n".into()),
            ..EnvOverrides::default()
        };
        let policy = build_with("salt = \"cfg-salt\"", "root", &env, &[]).unwrap();
        assert_eq!(
            (policy.salt.as_str(), policy.salt_source),
            ("env-salt", SaltSource::Environment)
        );
        let policy = build("salt = \"  \"").unwrap();
        assert_eq!(
            (policy.salt.as_str(), policy.salt_source),
            (SALT, SaltSource::LocalState)
        );
        assert!(needs_vault_salt(None, &EnvOverrides::default()));
        assert!(!needs_vault_salt(None, &env));
        assert!(!needs_vault_salt(
            Some(&parse_config("salt = 7").unwrap()),
            &EnvOverrides::default()
        ));
        assert_eq!(parse_config("salt = 7").unwrap().salt, "7");
        let no_vault = build_policy(PolicyInputs {
            root_name: "root",
            config: None,
            term_files: &[],
            env: &EnvOverrides::default(),
            vault_salt: None,
            mode: None,
            protected_paths: &[],
        });
        assert_eq!(no_vault.unwrap_err(), ConfigError::VaultInit);
    }

    fn sorted_by_len(mut terms: Vec<String>) -> Vec<String> {
        terms.sort_by(|a, b| b.chars().count().cmp(&a.chars().count()).then(a.cmp(b)));
        terms
    }

    #[test]
    fn derived_root_terms_match_the_reference() {
        // Reference outputs; among equal lengths its order is hash-random, so compare
        // after ordering ties and check ours is longest-first.
        let cases: [(&str, &[&str]); 6] = [
            ("kb", &["kb"]),
            (
                "client-alpha_notes",
                &[
                    "client-alpha notes",
                    "client-alpha_notes",
                    "client alpha_notes",
                    "clienta",
                    "CLIENTA",
                    "client",
                    "notes",
                    "alpha",
                    "can",
                    "CAN",
                ],
            ),
            ("My Project", &["My Project", "Project"]),
            (
                "  Ünïcode café-ßtraße ",
                &[
                    "Ünïcode café ßtraße",
                    "Ünïcode café-ßtraße",
                    "Ünïcodec",
                    "ÜNÏCODEC",
                    "Ünïcode",
                    "ßtraße",
                    "ÜCSS",
                    "café",
                    "Ücß",
                ],
            ),
            (
                "x__yy--zzz",
                &["x__yy--zzz", "x__yy  zzz", "x  yy--zzz", "zzz"],
            ),
            ("", &[]),
        ];
        for (name, expected) in cases {
            let ours = derive_root_terms(name);
            let lens: Vec<usize> = ours.iter().map(|t| t.chars().count()).collect();
            assert!(lens.windows(2).all(|w| w[0] >= w[1]), "{name}: {ours:?}");
            assert_eq!(
                sorted_by_len(ours),
                sorted_by_len(expected.iter().map(|s| s.to_string()).collect()),
                "{name}"
            );
        }
        let policy = build_with("", "client-alpha_notes", &EnvOverrides::default(), &[]).unwrap();
        assert_eq!(
            policy.root_terms.len(),
            8,
            "`clienta`/`CLIENTA` and `can`/`CAN` fold together"
        );
        assert_eq!(policy.clients, policy.root_terms);
        assert_eq!(policy.explicit.clients, 0, "root terms are not explicit");
    }

    #[test]
    fn dedupe_collapses_whitespace_and_folds_case() {
        // Reference: ('Taylor Reed', 'Straße', 'x y').
        let values = [
            "  Taylor \t Reed ",
            "taylor reed",
            "TAYLOR\u{a0}REED",
            "Straße",
            "STRASSE",
            "",
            "  ",
            "x\u{2003}y",
        ];
        assert_eq!(dedupe(&values), ["Taylor Reed", "Straße", "x y"]);
    }

    #[test]
    fn person_terms_expand_to_parts_of_three_or_more_characters() {
        let expanded =
            expand_person_terms(&["Taylor Reed", "Mary-Jane_O'Neil", "Al Bo", "  Jo\tAnn  "]);
        assert_eq!(
            expanded,
            [
                "Taylor Reed",
                "Taylor",
                "Reed",
                "Mary-Jane_O'Neil",
                "Mary",
                "Jane",
                "O'Neil",
                "Al Bo",
                "  Jo\tAnn  ",
                "Ann"
            ]
        );
        let policy = build("people = [\"Taylor Reed\", \"taylor\", \"Reed Taylor\"]").unwrap();
        assert_eq!(
            policy.people,
            ["Taylor Reed", "Taylor", "Reed", "Reed Taylor"]
        );
        assert_eq!(policy.explicit.people_terms, 4);
    }

    #[test]
    fn env_terms_and_term_files_join_terms_in_reference_order() {
        assert_eq!(
            split_env_terms(" a, b ,\n\nc\r\n, ,d"),
            ["a", "b", "c", "d"]
        );
        let env = EnvOverrides {
            terms: Some("EnvOne, cfg1".into()),
            ..EnvOverrides::default()
        };
        let files = vec![
            (
                "terms/a.txt".to_owned(),
                Some("# comment\n  File One \n\n\u{feff}bom\r\nfile one\n".to_owned()),
            ),
            ("terms/missing.txt".to_owned(), None),
        ];
        let policy = build_with(
            "terms = [\"cfg1\"]\nterm_files = [\"terms/a.txt\", \"terms/missing.txt\"]",
            "root",
            &env,
            &files,
        )
        .unwrap();
        assert_eq!(policy.terms, ["cfg1", "File One", "\u{feff}bom", "EnvOne"]);
        assert_eq!(policy.environment_terms, ["EnvOne", "cfg1"]);
        assert_eq!(policy.explicit.terms, 3);
        assert_eq!(policy.term_files, ["terms/a.txt", "terms/missing.txt"]);
        assert_eq!(policy.protected_paths, ["terms/a.txt", "terms/missing.txt"]);
    }

    #[test]
    fn fingerprint_tracks_output_relevant_fields_only() {
        let a = build("terms = [\"ab\", \"c\"]").unwrap();
        let b = build("terms = [\"a\", \"bc\"]").unwrap();
        assert_ne!(
            a.fingerprint(),
            b.fingerprint(),
            "serialization is unambiguous"
        );
        assert_eq!(
            a.fingerprint(),
            build("terms = [\"ab\", \"c\"]").unwrap().fingerprint()
        );
        let mut other = a.clone();
        other.salt_source = SaltSource::Environment;
        other.explicit.terms = 99;
        assert_eq!(a.fingerprint(), other.fingerprint());
        for change in [
            |p: &mut Policy| p.salt.push('x'),
            |p: &mut Policy| p.mode = Mode::Strict,
            |p: &mut Policy| p.detector_profile = DetectorProfile::Extended,
            |p: &mut Policy| p.detectors = false,
            |p: &mut Policy| p.allow.push("x".into()),
            |p: &mut Policy| p.exclude_globs.push("*.x".into()),
            |p: &mut Policy| p.protected_paths.push("x".into()),
            |p: &mut Policy| {
                p.alias_groups.push(AliasGroup {
                    canonical: "c".into(),
                    category: Category::CLIENT,
                    aliases: vec!["a".into()],
                })
            },
        ] {
            let mut changed = a.clone();
            change(&mut changed);
            assert_ne!(a.fingerprint(), changed.fingerprint());
        }
    }
}
