//! The redaction policy of one root: every value the pipeline needs, already parsed,
//! de-duplicated and validated. Built by `engine::config` from the config text, term
//! files, environment overrides and the salt; immutable afterwards.

use super::placeholder::Category;

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
}
