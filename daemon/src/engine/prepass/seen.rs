//! What the pre-pass learnt of a text for the baseline stages: which of their gate words
//! it holds, where their literals start, and which numeric shapes it may hold. A stage
//! whose needs are absent does not search the text at all.

use crate::engine::stages::gate::has_ascii_fold_stand_in;
use crate::engine::stages::patterns::GATE_WORDS;

/// A set of [`GATE_WORDS`] (matched up to ASCII case): those one of which every match of
/// a stage holds, or those a text holds.
///
/// Exactness: a stage's match holds one of its [`Stage::needs`] in the text the stage
/// searches: the original text with earlier matches replaced by markers (followed by
/// the value's line breaks when line counts are kept), or that text's `\b` shadow.
/// Markers hold no ASCII, a shadow turns non-ASCII characters into control bytes, no
/// word holds a line break or a control byte, and the words are ASCII, so any occurrence
/// lies in a piece of the original text: absent there, absent in every later text of
/// the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateWords(u64);

impl GateWords {
    /// As a stage's: it needs no word and always searches.
    pub const NONE: GateWords = GateWords(0);
    /// As a text's: nothing is known, every stage searches.
    pub const UNKNOWN: GateWords = GateWords(u64::MAX);

    /// The set of `words`, each one of [`GATE_WORDS`].
    pub fn of(words: &[&str]) -> GateWords {
        GateWords(words.iter().fold(0, |bits, w| {
            let i = GATE_WORDS
                .iter()
                .position(|g| g == w)
                .expect("a stage's words are gate words");
            bits | 1 << i
        }))
    }

    /// The words `text` holds, from `present` (their indices into [`GATE_WORDS`]). A text
    /// holding a character that IGNORECASE equates with an ASCII letter (`ſ` matches
    /// `s`) is [`GateWords::UNKNOWN`]: an ASCII scan cannot see those spellings.
    pub fn in_text(text: &str, present: impl IntoIterator<Item = usize>) -> GateWords {
        GateWords::scanned(has_ascii_fold_stand_in(text), present)
    }

    /// [`GateWords::in_text`] for a text whose scan found `present`, and a character
    /// IGNORECASE equates with an ASCII letter when `stand_in`.
    pub fn scanned(stand_in: bool, present: impl IntoIterator<Item = usize>) -> GateWords {
        if stand_in {
            return GateWords::UNKNOWN;
        }
        GateWords(present.into_iter().fold(0, |bits, i| bits | 1 << i))
    }

    /// Whether a text holding these words may hold a match of a stage that needs `needs`.
    pub fn may_match(self, needs: GateWords) -> bool {
        needs == GateWords::NONE || self.0 & needs.0 != 0
    }
}

/// A shape every match of a numeric baseline stage has, and which the detector layer's
/// own passes over a text can tell (its PII number pass and its list of long base64
/// runs).
///
/// Exactness: a stage's match holds its shape and consists of digits (ASCII, or the
/// non-ASCII characters `\d` reads as digits), ASCII hex letters and, for phones,
/// `+ ( ) . -` and whitespace. In a text the pipeline rewrote, a match holds no marker
/// (private-use characters, neither digits nor whitespace), and so none of the line
/// breaks kept after one either (no match starts with whitespace): it lies in one piece
/// of the original text, and so does its shape. A shape absent from the original text
/// is absent from every later text of the call and from their `\b` shadows (which keep
/// digits and ASCII as they are).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A `-` with a digit-like byte (an ASCII digit, or any byte of a multi-byte
    /// character) on each side: `\b\d{3}-\d{2}-\d{4}\b` holds one.
    DashInDigits,
    /// A `.` with a digit-like byte on each side and a second `.` after at most 13
    /// digit-like bytes: the first dot of `(?:\d{1,3}\.){3}\d{1,3}` (three digits of
    /// at most four bytes each).
    DottedDigits,
    /// 13 digits with only spaces and hyphens, any number, between them:
    /// `(?:\d[ -]*?){13,19}`.
    CardDigits,
    /// Two digit-like bytes side by side in a run of [`PHONE_RUN`] bytes that holds
    /// [`PHONE_DIGITS`] digit-like bytes: a phone number's groups and what lies between.
    PhoneDigits,
    /// 64 ASCII hex digits in a row (`[0-9a-f]{64,}`, case ignored).
    LongHex,
    /// 36 ASCII hex digits and dashes in a row: a UUID (its letters ASCII too: no
    /// character case-folds into `a`-`f`).
    UuidLength,
}

/// The [`Shape`]s a text may hold, as the detector layer's passes saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shapes(u8);

impl Shapes {
    /// Nothing is known: every shape may be there.
    pub const UNKNOWN: Shapes = Shapes(u8::MAX);

    /// These shapes, with `shape` known to be there or not.
    pub fn knowing(self, shape: Shape, present: bool) -> Shapes {
        let bit = 1 << shape as u8;
        Shapes(if present { self.0 | bit } else { self.0 & !bit })
    }

    /// Whether a text with these shapes may hold a match of a stage whose every match
    /// has `shape` (any text may, for a stage with none).
    pub fn may_match(self, shape: Option<Shape>) -> bool {
        shape.is_none_or(|shape| self.0 & 1 << shape as u8 != 0)
    }
}

/// What the detector layer's passes learnt of a text for the baseline stages: its
/// keyword pass the words and literal starts, its number and long-run passes the shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The [`GATE_WORDS`] the text holds.
    pub words: GateWords,
    /// Every start of a [`SECRET_GATE_LITERALS`](crate::engine::stages::patterns::SECRET_GATE_LITERALS) literal in the text (up to ASCII
    /// case), ascending, without repeats; `None` when unknown, or when the text holds a
    /// character IGNORECASE equates with an ASCII letter (the gates then search with the
    /// plain pattern). Offsets in the text as given; the pipeline moves them through
    /// its rewrites.
    pub secret_literal_starts: Option<Vec<usize>>,
    /// As `secret_literal_starts`, for the configured terms' first words the detector
    /// was built to locate ([`Detector::locating`]); `None` also when it locates
    /// none.
    ///
    /// [`Detector::locating`]: crate::engine::detect::Detector::locating
    pub term_starts: Option<Vec<usize>>,
    /// As `term_starts`, for the allow list's first words.
    pub allow_starts: Option<Vec<usize>>,
    /// The text holds none of the characters IGNORECASE equates with ASCII letters
    /// (`İ ı ſ K`), nor then does any rewrite of it (rewrites add only markers and line
    /// breaks); `false` when unknown.
    pub fold_free: bool,
    /// The numeric stages' shapes the text may hold.
    pub shapes: Shapes,
}

impl Seen {
    /// Nothing is known: every stage searches.
    pub const UNKNOWN: Seen = Seen {
        words: GateWords::UNKNOWN,
        secret_literal_starts: None,
        term_starts: None,
        allow_starts: None,
        fold_free: false,
        shapes: Shapes::UNKNOWN,
    };
}
