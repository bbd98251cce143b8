//! The redaction engine: text and policy in, redacted text and a receipt out.
//!
//! Invariant: this module performs no IO. It never touches the filesystem, the clock,
//! the environment or a socket; callers pass in everything (config text, term-file
//! contents, the salt) and persist nothing for it. That keeps the boundary easy to
//! test exhaustively and safe to run on any thread.

pub mod config;
pub mod detect;
pub(crate) mod pipeline;
pub mod placeholder;
pub mod plugged;
pub mod policy;
pub(crate) mod prepass;
pub mod python;
pub(crate) mod stages;
#[cfg(test)]
mod testgen;
pub mod wordlists;

/// Version of the redaction output. Bump it whenever the same policy and input could
/// produce different redacted text, so caches keyed by [`Policy::fingerprint`] miss.
pub const ENGINE_VERSION: u32 = 5;

pub use pipeline::{Counts, CountsSum, Engine, EngineError, Record, RedactOptions, Redacted};
pub use placeholder::Category;
pub use policy::{AliasGroup, DetectorProfile, Mode, Policy, SaltSource};
