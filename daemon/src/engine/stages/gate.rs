//! Gates: keep a stage's regex off text where it cannot match, without changing a
//! single match. [`RunGated`] serves class-bounded patterns, [`LiteralGated`]
//! patterns that start with one of a few ASCII words. (A whole stage is skipped when the
//! detector layer's keyword pass saw none of its words: `patterns::GateWords`.)
//!
//! Several baseline patterns (cards, phones, IPv4 addresses, SSNs, long hex strings) only
//! ever match a run of characters from a small class (digits and separators, hex
//! digits). Their regexes have no literal to prefilter on, so the lazy DFA reads every
//! byte of every text, one pass per stage. A [`RunGated`] pattern first finds (with
//! [`class_runs`], 32 bytes at a time) a maximal run of class bytes long enough to
//! hold a match, and runs the regex only there: on the haystack cut one character past
//! the run, from the run's start. Every non-ASCII byte counts as a class byte (and as a
//! core byte), so Unicode digits and case-folding oddities fall to the regex, never
//! past it.
//!
//! Exactness rests on three properties of each gated pattern, stated where it is built
//! (`patterns.rs`): a match lies inside one run of class characters, holds at least
//! `min_len` bytes of which `min_core` are core bytes, and looks at most one character
//! past its end. The look-behind side is untouched: the haystack is never cut at the
//! front, so guards and `\b` see the real preceding character.

use crate::engine::prepass::byteclass::{ByteClass, class_runs};
use crate::engine::python::re::{FindCache, Finder, MatchAt, PyPattern};
use aho_corasick::{AhoCorasick, MatchKind};

/// `inner`'s first match starting in the run `hay[run_start..run_end]`, for a pattern
/// whose matches lie inside one such run and look at most one character past it: the
/// haystack is cut one character after the run (never at the front, so look-behinds see
/// the real text). Both ends must be character boundaries.
pub fn find_in_run<F: Finder + ?Sized>(
    inner: &F,
    hay: &str,
    run_start: usize,
    run_end: usize,
) -> Option<(usize, usize)> {
    let cut = run_end + hay[run_end..].chars().next().map_or(0, char::len_utf8);
    inner.find_from(&hay[..cut], run_start)
}

/// A pattern searched only inside runs of `class` bytes that could hold a match.
pub struct RunGated<F> {
    pub inner: F,
    /// Bytes a match may consist of.
    pub class: ByteClass,
    /// Bytes a match needs `min_core` of (digits, for the numeric patterns).
    pub core: ByteClass,
    /// Fewest bytes in a match.
    pub min_len: usize,
    /// Fewest core bytes in a match.
    pub min_core: usize,
}

impl<F: Finder> RunGated<F> {
    /// The runs at or after `start` that could hold a match, in order.
    fn runs<'b>(&'b self, b: &'b [u8], start: usize) -> impl Iterator<Item = (usize, usize)> + 'b {
        class_runs(b, start, self.min_len, &self.class).filter(move |&(s, e)| {
            b[s..e].iter().filter(|&&c| self.core.has(c)).count() >= self.min_core
        })
    }
}

impl<F: Finder> Finder for RunGated<F> {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        // A run starts at `start` (a boundary) or after a byte outside the class, and
        // its bytes are ASCII unless the class holds every non-ASCII byte, so both ends
        // are character boundaries.
        self.runs(hay.as_bytes(), start)
            .find_map(|(s, e)| find_in_run(&self.inner, hay, s, e))
    }

    fn uses_word_boundary(&self) -> bool {
        self.inner.uses_word_boundary()
    }
}

/// A case-insensitive pattern whose every match starts with one of a set of ASCII
/// literals (ASCII case ignored): the candidate starts come from one case-sensitive
/// Aho-Corasick scan (SIMD-accelerated for small sets) of the haystack with its ASCII
/// letters lowercased, and an anchored search checks each candidate. Alternations of
/// case-insensitive words get no literal prefilter from `regex`, so without the gate
/// the lazy DFA reads every byte.
///
/// Under IGNORECASE `ſ`, `K` (Kelvin), `İ` and `ı` also match ASCII letters; a text
/// holding any of them is searched with the plain pattern.
pub struct LiteralGated<P = PyPattern> {
    pub inner: P,
    /// Over the lowercased literals; `None` when some literal is not ASCII (then
    /// always the plain search).
    starts: Option<AhoCorasick>,
}

impl<P: MatchAt> LiteralGated<P> {
    /// `literals` must hold the text every match of `inner` starts with, for some
    /// literal, up to ASCII case.
    pub fn new<'a>(inner: P, literals: impl IntoIterator<Item = &'a str>) -> LiteralGated<P> {
        let literals: Vec<String> = literals
            .into_iter()
            .map(|l| l.to_ascii_lowercase())
            .collect();
        let usable = !literals.is_empty() && literals.iter().all(|l| !l.is_empty() && l.is_ascii());
        let starts = usable
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(&literals)
                    .ok()
            })
            .flatten();
        LiteralGated { inner, starts }
    }
}

/// Whether `hay` holds a character Python's IGNORECASE equates with an ASCII letter
/// (`İ` U+0130, `ı` U+0131, `ſ` U+017F, `K` U+212A).
pub fn has_ascii_fold_stand_in(hay: &str) -> bool {
    if hay.is_ascii() {
        return false;
    }
    let b = hay.as_bytes();
    memchr::memchr3_iter(0xC4, 0xC5, 0xE2, b).any(|i| {
        matches!(
            (b[i], b.get(i + 1), b.get(i + 2)),
            (0xC4, Some(0xB0 | 0xB1), _) | (0xC5, Some(0xBF), _) | (0xE2, Some(0x84), Some(0xAA))
        )
    })
}

impl<P: MatchAt> Finder for LiteralGated<P> {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_from_cached(hay, start, &mut FindCache::default())
    }

    fn find_from_cached(
        &self,
        hay: &str,
        start: usize,
        cache: &mut FindCache,
    ) -> Option<(usize, usize)> {
        // Known starts list ASCII words only: a gate with another literal searches.
        if let Some(known) = cache
            .literal_starts
            .as_ref()
            .filter(|_| self.starts.is_some())
        {
            let first = known.partition_point(|&s| s < start);
            return known[first..]
                .iter()
                .find_map(|&candidate| self.inner.match_at(hay, candidate));
        }
        let Some(starts) = &self.starts else {
            return self.inner.find_from_cached(hay, start, cache);
        };
        let lowered = cache.ascii_lower.get_or_insert_with(|| {
            (!has_ascii_fold_stand_in(hay)).then(|| hay.to_ascii_lowercase())
        });
        let Some(lowered) = lowered.as_deref() else {
            return self.inner.find_from_cached(hay, start, cache);
        };
        let mut at = start;
        while at <= hay.len() {
            let candidate = starts.find(aho_corasick::Input::new(lowered).span(at..hay.len()))?;
            if let Some(found) = self.inner.match_at(hay, candidate.start()) {
                return Some(found);
            }
            // Candidates start with an ASCII byte: the next byte is a boundary.
            at = candidate.start() + 1;
        }
        None
    }

    fn uses_word_boundary(&self) -> bool {
        self.inner.uses_word_boundary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prepass::byteclass::DIGITS;
    use crate::engine::python::re::Guard;
    use crate::engine::testgen::texts;

    /// Every match, from every start, equals the ungated pattern's.
    fn assert_same<F: Finder>(gated: &RunGated<F>, hays: &[String]) {
        for hay in hays {
            let mut start = 0;
            while start <= hay.len() {
                assert_eq!(
                    gated.find_from(hay, start),
                    gated.inner.find_from(hay, start),
                    "from {start} in {hay:?}"
                );
                start += hay[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }

    #[test]
    fn gated_digit_runs_match_like_the_plain_pattern() {
        let gated = RunGated {
            inner: PyPattern::with_one_char_tail(
                r"((?:\d[ -]*?){4,6})(?:[^\d]|\z)",
                Guard::NotDigit,
            ),
            class: ByteClass::new(b"0123456789 -", true),
            core: ByteClass::new(DIGITS, true),
            min_len: 4,
            min_core: 4,
        };
        let pieces = [
            "1", "23", "456", " ", "-", "x", "\n", "٣", "é", "7890123", "--", "a1",
        ];
        assert_same(&gated, &texts(&pieces, 400, 24, 7));
    }

    #[test]
    fn gated_ascii_only_class_matches_like_the_plain_pattern() {
        let gated = RunGated {
            inner: PyPattern::new(r"(?i)[0-9a-f]{8,}", Guard::NotHex),
            class: ByteClass::new(b"0123456789abcdefABCDEF", false),
            core: ByteClass::new(b"0123456789abcdefABCDEF", false),
            min_len: 8,
            min_core: 8,
        };
        let pieces = [
            "deadbeef", "0", "Ab", "é", "g", " ", "123", "ſ", "K", "cafe",
        ];
        assert_same(&gated, &texts(&pieces, 400, 24, 5));
    }

    #[test]
    fn gated_word_bounded_pattern_matches_like_the_plain_pattern() {
        let gated = RunGated {
            inner: PyPattern::new(r"\b(?:\d{1,3}\.){3}\d{1,3}\b", Guard::None),
            class: ByteClass::new(b"0123456789.", true),
            core: ByteClass::new(DIGITS, true),
            min_len: 7,
            min_core: 4,
        };
        let pieces = [
            "10", ".", "0", "1.2.3.4", "255", "x", " ", "é", "٣", "1.2.3", "9999", "a",
        ];
        assert_same(&gated, &texts(&pieces, 400, 24, 11));
    }
}
