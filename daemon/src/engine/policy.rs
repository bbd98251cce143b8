//! The redaction policy of one root: every value the pipeline needs, already parsed,
//! de-duplicated and validated. Built by `engine::config` from the config text, term
//! files, environment overrides and the salt; immutable afterwards.

use crate::engine::placeholder::Category;

/// How aggressively names are guessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Reference `strict`: balanced plus every acronym and TitleCase word as ENTITY.
    Strict,
    /// Reference `balanced`: secrets, PII, configured terms and name heuristics.
    Balanced,
    /// Ours: secrets, PII and configured terms everywhere; name heuristics only in
    /// prose files, so source identifiers stay readable. The daemon's default.
    #[default]
    Code,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Strict => "strict",
            Mode::Balanced => "balanced",
            Mode::Code => "code",
        }
    }

    pub fn parse(value: &str) -> Option<Mode> {
        match value {
            "strict" => Some(Mode::Strict),
            "balanced" => Some(Mode::Balanced),
            "code" => Some(Mode::Code),
            _ => None,
        }
    }
}

/// Built-in detector profile (spec 5.4 step 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DetectorProfile {
    #[default]
    Default,
    Extended,
}

impl DetectorProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            DetectorProfile::Default => "default",
            DetectorProfile::Extended => "extended",
        }
    }

    pub fn parse(value: &str) -> Option<DetectorProfile> {
        match value {
            "default" => Some(DetectorProfile::Default),
            "extended" => Some(DetectorProfile::Extended),
            _ => None,
        }
    }
}

/// Where the salt came from (reported by doctor/audit, never the salt itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SaltSource {
    #[default]
    LocalState,
    Config,
    Environment,
}

impl SaltSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SaltSource::LocalState => "local-state",
            SaltSource::Config => "config",
            SaltSource::Environment => "environment",
        }
    }
}

/// A declared alias group (spec 5.6.3), already validated.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AliasGroup {
    pub canonical: String,
    /// The first of CLIENT, ORG, PERSON, SENSITIVE whose term list holds the canonical value.
    pub category: Category,
    pub aliases: Vec<String>,
}

/// One `[github.repos.<alias>]` table, validated (spec 5.1). Its owner and repo are
/// already in the policy's terms; the rest configures the GitHub source.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GitHubRepo {
    pub alias: String,
    pub owner: String,
    pub repo: String,
    pub api_url: String,
    pub token_env: String,
}

/// Counts of explicitly configured values, for doctor and audit.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExplicitCounts {
    pub clients: usize,
    pub organizations: usize,
    pub people_terms: usize,
    pub terms: usize,
}

/// Everything the engine needs to redact one root's text and paths.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Policy {
    pub salt: String,
    pub salt_source: SaltSource,
    pub mode: Mode,
    pub detector_profile: DetectorProfile,
    /// Built-in secret/PII detector layer (ours; off gives byte parity with the reference).
    pub detectors: bool,
    /// Document extraction (`--documents` or the config's `documents`): the five document
    /// globs are lifted and documents are served as extracted Markdown (spec 8).
    pub documents: bool,
    /// De-duplicated term lists, root-name terms included in `clients`, person terms expanded.
    pub clients: Vec<String>,
    pub organizations: Vec<String>,
    pub people: Vec<String>,
    pub terms: Vec<String>,
    /// Config `allow` entries (the built-in allow list is added by the engine).
    pub allow: Vec<String>,
    pub exclude_dirs: Vec<String>,
    pub exclude_globs: Vec<String>,
    pub alias_groups: Vec<AliasGroup>,
    /// Root-relative term files (protected even while missing).
    pub term_files: Vec<String>,
    /// Root-relative protected paths (explicit config under the root, term files, …).
    pub protected_paths: Vec<String>,
    pub root_terms: Vec<String>,
    pub environment_terms: Vec<String>,
    pub explicit: ExplicitCounts,
    /// Whether a config file existed when the policy was built.
    pub config_loaded: bool,
    /// GitHub repo aliases in config order (a later alias equal after trimming replaced
    /// an earlier one in place). Not part of [`Policy::fingerprint`]: they change no
    /// redacted output, but a changed table still makes a reload build new sources.
    pub github_repos: Vec<GitHubRepo>,
    /// Plugged detectors in launch order (spec 5.12), their rules included.
    pub plugged: Vec<crate::engine::plugged::PluggedDef>,
    /// The files plugged detectors were loaded from (rules files, programs), stamped
    /// with the policy. Not in the fingerprint: their contents are, through `plugged`.
    pub plugged_files: Vec<std::path::PathBuf>,
}

impl Policy {
    /// A 256-bit digest of everything in this policy that can change redacted output,
    /// plus [`crate::engine::ENGINE_VERSION`]. Caches use it as their namespace: equal
    /// fingerprints mean byte-identical redactions. Bookkeeping that never reaches the
    /// output (salt source, counts, whether a config existed, GitHub tables) is left out.
    pub fn fingerprint(&self) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"redctx-policy\0");
        h.update(&crate::engine::ENGINE_VERSION.to_le_bytes());
        // Every field is tagged and every string length-prefixed, so no two different
        // policies serialize to the same bytes.
        let field = |h: &mut blake3::Hasher, tag: u8, value: &str| {
            h.update(&[tag]);
            h.update(&(value.len() as u64).to_le_bytes());
            h.update(value.as_bytes());
        };
        let list = |h: &mut blake3::Hasher, tag: u8, values: &[String]| {
            h.update(&[tag]);
            h.update(&(values.len() as u64).to_le_bytes());
            for value in values {
                h.update(&(value.len() as u64).to_le_bytes());
                h.update(value.as_bytes());
            }
        };
        field(&mut h, 1, &self.salt);
        field(&mut h, 2, self.mode.as_str());
        field(&mut h, 3, self.detector_profile.as_str());
        h.update(&[4, u8::from(self.detectors)]);
        h.update(&[18, u8::from(self.documents)]);
        list(&mut h, 5, &self.clients);
        list(&mut h, 6, &self.organizations);
        list(&mut h, 7, &self.people);
        list(&mut h, 8, &self.terms);
        list(&mut h, 9, &self.allow);
        list(&mut h, 10, &self.exclude_dirs);
        list(&mut h, 11, &self.exclude_globs);
        h.update(&[12]);
        h.update(&(self.alias_groups.len() as u64).to_le_bytes());
        for group in &self.alias_groups {
            field(&mut h, 13, &group.canonical);
            field(&mut h, 14, group.category.as_str());
            list(&mut h, 15, &group.aliases);
        }
        list(&mut h, 16, &self.term_files);
        list(&mut h, 17, &self.protected_paths);
        h.update(&[18]);
        h.update(&(self.plugged.len() as u64).to_le_bytes());
        for def in &self.plugged {
            field(&mut h, 19, &def.name);
            field(&mut h, 20, &def.version);
            let rules = match &def.kind {
                crate::engine::plugged::PluggedKind::Patterns(rules) => rules,
                crate::engine::plugged::PluggedKind::External(e) => {
                    field(&mut h, 24, &e.argument);
                    continue;
                }
            };
            h.update(&(rules.len() as u64).to_le_bytes());
            for rule in rules {
                field(&mut h, 21, rule.category.as_str());
                field(&mut h, 22, &rule.regex);
                h.update(&[23, u8::from(rule.ignore_case)]);
            }
        }
        *h.finalize().as_bytes()
    }
}
