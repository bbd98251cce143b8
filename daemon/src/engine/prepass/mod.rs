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

use crate::engine::stages::patterns::{GATE_WORDS, SECRET_GATE_LITERALS};
use keywords::{KeywordBuilder, KeywordHits, KeywordScan, WordIds, WordSet};
use literals::Literals;
use runs::LongRuns;

/// The one keyword automaton of a set of detectors and a policy: each detector's
/// trigger words, the gate literals, and the words the pipeline's stages start from or
/// are gated by, each list with the ids it got.
pub(crate) struct KeywordPass {
    pub automaton: KeywordScan,
    /// Per detector, in the order given to [`KeywordPass::build`].
    pub detector_words: Vec<WordIds>,
    pub literal_words: WordIds,
    /// The pipeline's [`SECRET_GATE_LITERALS`], located (most are detectors' words).
    secret_gate_words: WordSet,
    /// The configured terms' first words the pipeline's terms stages start from.
    term_words: WordSet,
    /// The allow list's first words the pipeline's allow stage starts from.
    allow_words: WordSet,
    /// The pipeline's [`GATE_WORDS`], presence only.
    gate_words: WordIds,
}

impl KeywordPass {
    /// The pass for detectors whose words are `detector_words`, plus `term_words` and
    /// `allow_words` (lower-case ASCII) for the terms and allow stages. About a
    /// millisecond. `None` when the automaton would be too large (see
    /// [`KeywordBuilder::build`]).
    pub fn build<'a>(
        detector_words: impl IntoIterator<Item = Vec<&'a str>>,
        term_words: &[String],
        allow_words: &[String],
    ) -> Option<KeywordPass> {
        let mut words = KeywordBuilder::default();
        let detector_words = detector_words.into_iter().map(|w| words.add(w)).collect();
        let literal_words = words.add(literals::words());
        let secret_gate_words = words.add_shared(SECRET_GATE_LITERALS.iter());
        let term_words = words.add_shared(term_words);
        let allow_words = words.add_shared(allow_words);
        let gate_words = words.add_presence(GATE_WORDS.iter());
        Some(KeywordPass {
            automaton: words.build()?,
            detector_words,
            literal_words,
            secret_gate_words,
            term_words,
            allow_words,
            gate_words,
        })
    }

    /// What the pass saw of a text for the pipeline's stages: its gate words and, unless
    /// the text holds a character IGNORECASE equates with an ASCII letter, the starts of
    /// the secret literals (when `literal_starts`), terms and allow words. `shapes` are
    /// the numeric shapes the detectors' passes saw; `runs` adds what the long-run
    /// listing knows (it holds every run of hex digits and dashes as long).
    pub fn seen(
        &self,
        hits: &KeywordHits,
        literals: &Literals,
        runs: &LongRuns,
        shapes: Shapes,
        literal_starts: bool,
    ) -> Seen {
        let stand_in = literals.has_ascii_fold_stand_in();
        Seen {
            words: GateWords::scanned(stand_in, hits.present_words(self.gate_words)),
            secret_literal_starts: (literal_starts && !stand_in)
                .then(|| hits.starts_of_set(&self.secret_gate_words)),
            term_starts: (!stand_in && !self.term_words.is_empty())
                .then(|| hits.starts_of_set(&self.term_words)),
            allow_starts: (!stand_in && !self.allow_words.is_empty())
                .then(|| hits.starts_of_set(&self.allow_words)),
            fold_free: !stand_in,
            shapes: shapes
                .knowing(Shape::LongHex, runs.may_hold(64))
                .knowing(Shape::UuidLength, runs.may_hold(36)),
        }
    }
}
