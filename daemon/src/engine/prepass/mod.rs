//! The shared scan pre-pass: the few reads of a text that every detector and baseline
//! stage asks about before looking closer, done once per text.
//!
//! What it is for: one keyword automaton locates every detector's trigger words, the
//! literals that gate their patterns and the words that gate the reference's stages;
//! one listing of long base64 runs serves the decoder and the rule pack's run gates;
//! and what was learnt about the stages' words and shapes travels to the pipeline as a
//! [`Seen`]. What it is not for: deciding what to redact (detectors and stages do).

pub mod byteclass;
pub(crate) mod keywords;
pub(crate) mod literals;
pub(crate) mod runs;
pub(crate) mod seen;

pub use seen::{GateWords, Seen, Shape, Shapes};
