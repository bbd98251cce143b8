//! The redaction pipeline (spec 5.4). Interface first; the stage implementation lands
//! in this file.

use super::placeholder::{self, Category};
use super::policy::Policy;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Per-category substitution counts of one redaction (every occurrence counts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<Category, u64>);

impl Counts {
    pub fn add(&mut self, category: Category, n: u64) {
        if n > 0 {
            *self.0.entry(category).or_default() += n;
        }
    }

    pub fn merge(&mut self, other: &Counts) {
        for (category, n) in &other.0 {
            self.add(*category, *n);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Options of one content redaction.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedactOptions {
    /// Keep every line break a redacted value spanned, so line numbers do not shift.
    pub preserve_line_count: bool,
    /// The text is prose (Markdown, plain text, …). Only `Mode::Code` looks at this.
    pub prose: bool,
}

/// Redacted text plus what was replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    pub counts: Counts,
}

/// Failures of the engine itself; messages are fixed and never carry input.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EngineError {
    #[error("Could not allocate internal redaction markers.")]
    NoMarkerBlock,
    #[error("Placeholder collision for {0}.")]
    Collision(Category),
}

/// A compiled policy, ready to redact. Cheap to share between threads.
pub struct Engine {
    policy: Arc<Policy>,
}

impl Engine {
    pub fn new(policy: Arc<Policy>) -> Result<Engine, EngineError> {
        Ok(Engine { policy })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Redacts file content.
    pub fn redact(&self, text: &str, _opts: RedactOptions) -> Result<Redacted, EngineError> {
        // Interface stub: the stage pipeline replaces this body.
        Ok(Redacted { text: text.to_owned(), counts: Counts::default() })
    }

    /// Redacts a root-relative POSIX path (or a single name).
    pub fn redact_path(&self, rel: &str) -> Result<Redacted, EngineError> {
        Ok(Redacted { text: rel.to_owned(), counts: Counts::default() })
    }

    /// The opaque `@p_<12hex>` id of a root-relative POSIX path (`.` for the root).
    pub fn path_id(&self, rel: &str) -> String {
        placeholder::path_id(&self.policy.salt, rel)
    }
}

/// Whether `value` standing alone would lose characters before the configured-term
/// stage (an existing placeholder or an early baseline stage matches inside it). Alias
/// validation refuses such canonical values.
pub fn claimed_before_configured_terms(value: &str) -> bool {
    // Interface stub: completed with the early baseline stages.
    placeholder::PLACEHOLDER_RE.is_match(value)
}
