//! The redaction engine: text and policy in, redacted text and a receipt out.
//!
//! Invariant: this module performs no IO. It never touches the filesystem, the clock,
//! the environment or a socket; callers pass in everything (config text, term-file
//! contents, the salt) and persist nothing for it. That keeps the boundary easy to
//! test exhaustively and safe to run on any thread.

pub mod detect;
pub mod pipeline;
pub mod placeholder;
pub mod policy;
pub mod text;
pub mod wordlists;

pub use placeholder::Category;
pub use policy::{AliasGroup, DetectorProfile, Mode, Policy, SaltSource};
pub use pipeline::{Counts, Engine, EngineError, RedactOptions, Redacted};
