//! Run gates: skip the text where a class-bounded pattern cannot match.
//!
//! Several baseline patterns (cards, phones, IPv4 addresses, SSNs, long hex strings) only
//! ever match a run of characters from a small class (digits and separators, hex
//! digits). Their regexes have no literal to prefilter on, so the lazy DFA reads every
//! byte of every text, one pass per stage. A [`RunGated`] pattern first finds, by
//! looking at one byte in every `min_len`, a maximal run of class bytes long enough to
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

use super::pyre::Finder;

/// A set of bytes, as a lookup table.
pub struct ByteClass([bool; 256]);

impl ByteClass {
    /// The ASCII bytes of `ascii` plus, when `non_ascii`, every byte of 0x80 and above.
    pub const fn new(ascii: &[u8], non_ascii: bool) -> ByteClass {
        let mut table = [false; 256];
        let mut i = 0;
        while i < ascii.len() {
            table[ascii[i] as usize] = true;
            i += 1;
        }
        if non_ascii {
            let mut b = 0x80;
            while b < 256 {
                table[b] = true;
                b += 1;
            }
        }
        ByteClass(table)
    }

    /// Whether `b` is in the set.
    pub fn has(&self, b: u8) -> bool {
        self.0[b as usize]
    }
}

/// ASCII digits.
pub const DIGITS: &[u8] = b"0123456789";

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
    /// The first run at or after `start` that could hold a match: `(run start, run end)`.
    fn next_run(&self, b: &[u8], start: usize) -> Option<(usize, usize)> {
        let step = self.min_len.max(1);
        let mut floor = start;
        // A run of `step` bytes starting at or after `floor` covers this position.
        let mut p = floor + step - 1;
        while p < b.len() {
            if !self.class.has(b[p]) {
                p += step;
                continue;
            }
            let mut run_start = p;
            while run_start > floor && self.class.has(b[run_start - 1]) {
                run_start -= 1;
            }
            let mut run_end = p + 1;
            while run_end < b.len() && self.class.has(b[run_end]) {
                run_end += 1;
            }
            if run_end - run_start >= self.min_len
                && b[run_start..run_end]
                    .iter()
                    .filter(|&&c| self.core.has(c))
                    .count()
                    >= self.min_core
            {
                return Some((run_start, run_end));
            }
            // The byte at `run_end` is outside the class: the next run starts after it.
            floor = run_end;
            p = run_end + step;
        }
        None
    }
}

impl<F: Finder> Finder for RunGated<F> {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        let b = hay.as_bytes();
        let mut from = start;
        while let Some((run_start, run_end)) = self.next_run(b, from) {
            // A run starts at `from` (a boundary) or after a byte outside the class, and
            // its bytes are ASCII unless the class holds every non-ASCII byte, so both
            // ends are character boundaries. Keep one character after the run for the
            // pattern's look-ahead.
            let cut = run_end + hay[run_end..].chars().next().map_or(0, char::len_utf8);
            if let Some(found) = self.inner.find_from(&hay[..cut], run_start) {
                return Some(found);
            }
            from = run_end;
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
    use crate::engine::pyre::{Guard, PyPattern};

    /// Deterministic pseudo-random haystacks built from `pieces`.
    fn haystacks(pieces: &[&str], count: usize, seed: u64) -> Vec<String> {
        let mut state = seed;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize % n
        };
        (0..count)
            .map(|_| {
                (0..1 + next(24))
                    .map(|_| pieces[next(pieces.len())])
                    .collect()
            })
            .collect()
    }

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
        assert_same(&gated, &haystacks(&pieces, 400, 7));
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
        assert_same(&gated, &haystacks(&pieces, 400, 5));
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
        assert_same(&gated, &haystacks(&pieces, 400, 11));
    }
}
