//! The reference's own redaction stages (spec 5.4): its baseline patterns, rewritten so
//! every match equals Python's ([`patterns`]); the two matchers that need real
//! backtracking (markdown headings and multi-word proper names, [`names`]); the gates
//! that keep a stage's regex off text where it cannot match ([`gate`]); and the
//! case-folded word set the name heuristics look words up in ([`folded`]). The pipeline
//! runs them in the reference's order.

pub(crate) mod folded;
pub(crate) mod gate;
pub(crate) mod names;
pub(crate) mod patterns;
