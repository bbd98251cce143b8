//! The long runs of base64 bytes in a text, listed once when first asked for and shared
//! by the decoder and the rule pack's run gates.

use super::byteclass::{ALNUM, ByteClass, class_runs};

/// ASCII letters, digits and `+ / _ -`: the bytes of base64 (both alphabets), which
/// hold most long tokens a family looks for.
pub const BASE64_BYTES: ByteClass = ByteClass::concat(ALNUM, b"+/_-", false);

/// Shortest run [`LongRuns`] keeps: the decoder's shortest base64 word.
pub const LONG_RUN: usize = 20;

/// The maximal runs of [`BASE64_BYTES`] of at least [`LONG_RUN`] bytes in one text,
/// found in one pass when a family first asks. The decoder reads its base64 and hex
/// words in them, and the rule pack's run gates ask them whether a narrower class has a
/// run that long: such a run lies inside one of them, so neither family needs a pass
/// of its own over the text.
pub struct LongRuns<'a> {
    bytes: &'a [u8],
    runs: std::cell::OnceCell<Vec<(usize, usize)>>,
}

impl<'a> LongRuns<'a> {
    pub fn new(text: &'a str) -> LongRuns<'a> {
        LongRuns {
            bytes: text.as_bytes(),
            runs: std::cell::OnceCell::new(),
        }
    }

    /// The text's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The runs, in text order.
    pub fn base64(&self) -> &[(usize, usize)] {
        self.runs
            .get_or_init(|| class_runs(self.bytes, 0, LONG_RUN, &BASE64_BYTES).collect())
    }

    /// Whether the text may hold a run of `len` or more [`BASE64_BYTES`] (`len` at least
    /// [`LONG_RUN`]): `true` unless the runs were listed (a family asked for them) and
    /// none is that long. Does not list them itself.
    pub fn may_hold(&self, len: usize) -> bool {
        debug_assert!(len >= LONG_RUN);
        self.runs
            .get()
            .is_none_or(|runs| runs.iter().any(|&(s, e)| e - s >= len))
    }

    /// Whether the text holds a run of at least `len` bytes of `class`, a subset of
    /// [`BASE64_BYTES`] (`len` at least [`LONG_RUN`]), read a byte at a time inside the
    /// long runs that are that long. `None` when those hold more than a quarter of the
    /// text (a list of file paths, base64 blobs): a pass over the whole text 64 bytes
    /// at a time then costs less.
    pub fn has_run(&self, class: &ByteClass, len: usize) -> Option<bool> {
        debug_assert!(class.is_subset(&BASE64_BYTES) && len >= LONG_RUN);
        let runs = self.base64();
        let long: usize = runs.iter().map(|&(s, e)| e - s).filter(|&n| n >= len).sum();
        if long * 4 > self.bytes.len() {
            return None;
        }
        Some(
            runs.iter()
                .any(|&(s, e)| e - s >= len && class.has_run_in(&self.bytes[s..e], len)),
        )
    }
}
