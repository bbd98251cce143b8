//! The detector boundary: what every source of findings implements, and what it is
//! given.
//!
//! A family reads one text with the pre-pass's facts about it and adds [`Candidate`]s;
//! overlap resolution, the decoder's rescan and everything the pipeline does with the
//! findings are not its business. The built-in families are listed in
//! [`super::builtin_families`]; a policy may add more (a user's patterns file, an
//! external process) through [`super::Detector::with_extra`], and their trigger words
//! join the same single keyword pass.

use super::Candidate;
use super::filekind::{FileKind, Quoting};
use crate::engine::prepass::Shapes;
use crate::engine::prepass::keywords::{KeywordHits, WordIds};
use crate::engine::prepass::literals::Literals;
use crate::engine::prepass::runs::LongRuns;

/// What the pre-pass learnt of one text, shared by every family that scans it.
pub(crate) struct Facts<'t> {
    pub text: &'t str,
    /// Root-relative POSIX path (file-kind hints).
    pub rel_path: &'t str,
    /// How the file's unquoted values read.
    pub kind: FileKind,
    /// Which quotes delimit strings in the file.
    pub quoting: Quoting,
    /// The shared keyword pass over `text`.
    pub hits: &'t KeywordHits,
    /// The gate literals `text` holds, read from `hits`.
    pub literals: &'t Literals<'t>,
    /// The long base64 runs of `text`, listed when first asked for.
    pub runs: &'t LongRuns<'t>,
}

/// Where a family puts what it found in one text.
pub(crate) struct Sink {
    pub candidates: Vec<Candidate>,
    /// The baseline's numeric shapes the text may hold, for a family whose passes can
    /// tell (PII's number pass); unknown otherwise.
    pub shapes: Shapes,
}

/// One source of findings.
pub(crate) trait Family: Send + Sync {
    /// Short name for profiles and debugging, e.g. `S2 provider tokens`.
    fn name(&self) -> &'static str;

    /// The words the shared keyword pass locates for this family (ASCII, matched up to
    /// ASCII case); [`Family::scan`] receives the ids they got.
    fn words(&self) -> Vec<&str> {
        Vec::new()
    }

    /// Whether the family also scans text decoded from base64, hex or percent-encoding
    /// (PII does not: a decoded blob's digits are not a phone number).
    fn scans_decoded(&self) -> bool {
        true
    }

    /// Adds the candidates of `facts.text` to `out`. `words` are the ids of
    /// [`Family::words`] in `facts.hits`.
    fn scan(&self, facts: &Facts, words: WordIds, out: &mut Sink);
}
