//! Python `re` match semantics on top of the linear-time `regex` crate.
//!
//! The reference's patterns use look-behind and look-ahead, which `regex` lacks. Every
//! pattern here is rewritten so that its match is exactly what Python's backtracking
//! `finditer` would return:
//! - a look-behind at the very start of a pattern only depends on the match position, so
//!   it becomes a [`Guard`] checked on the candidate; on failure the search restarts one
//!   character later (as Python tries the next start position);
//! - a negative look-ahead at the end becomes a consuming alternative after a capture
//!   group (`(MAIN)(?:[^X]|\z)`); the capture is the match. Because the alternative
//!   succeeds exactly when the look-ahead would, the priority-ordered (leftmost-first)
//!   result of `regex` equals Python's first backtracking solution.
//! Patterns that need more than that (proper-name runs, headings) are hand-written in
//! `names.rs`.

use super::text::{is_py_digit, is_py_word};
use regex::Regex;

/// Python's whitespace class `\s` (Unicode `White_Space` plus `\x1c`–`\x1f`).
pub const PY_SPACE: &str = r"[\s\x1C-\x1F]";
/// Python's `\w`: letters, numbers, underscore.
pub const PY_WORD: &str = r"[\p{L}\p{N}_]";

/// A condition on the character before a candidate match (a look-behind).
#[derive(Clone, Copy, Debug)]
pub enum Guard {
    /// Always satisfied.
    None,
    /// `(?<![A-Za-z])` under IGNORECASE (which also covers `İ ı ſ K`).
    NotLetterCi,
    /// `(?<![A-Za-z0-9])` under IGNORECASE.
    NotAlnumCi,
    /// `(?<![0-9a-f])` under IGNORECASE.
    NotHex,
    /// `(?<![0-9A-F:])` under IGNORECASE.
    NotHexOrColon,
    /// `(?<!\d)`.
    NotDigit,
    /// `(?<!\w)`.
    NotWord,
    /// `(?<![@/\w.-])`.
    NotDomainContext,
    /// `(?<![\w/])`.
    NotWordOrSlash,
    /// `(?<!\[)`.
    NotOpenBracket,
}

/// Characters Python's IGNORECASE equates with ASCII letters besides the letters themselves.
pub fn is_ci_letter_extra(ch: char) -> bool {
    matches!(ch, '\u{130}' | '\u{131}' | '\u{17F}' | '\u{212A}')
}

impl Guard {
    fn allows(self, prev: Option<char>) -> bool {
        let Some(c) = prev else { return true };
        match self {
            Guard::None => true,
            Guard::NotLetterCi => !(c.is_ascii_alphabetic() || is_ci_letter_extra(c)),
            Guard::NotAlnumCi => !(c.is_ascii_alphanumeric() || is_ci_letter_extra(c)),
            Guard::NotHex => !c.is_ascii_hexdigit(),
            Guard::NotHexOrColon => !(c.is_ascii_hexdigit() || c == ':'),
            Guard::NotDigit => !is_py_digit(c),
            Guard::NotWord => !is_py_word(c),
            Guard::NotDomainContext => !(is_py_word(c) || matches!(c, '@' | '/' | '.' | '-')),
            Guard::NotWordOrSlash => !(is_py_word(c) || c == '/'),
            Guard::NotOpenBracket => c != '[',
        }
    }
}

/// A pattern with Python `finditer` semantics.
#[derive(Clone, Debug)]
pub struct PyPattern {
    re: Regex,
    guard: Guard,
    /// Capture groups whose end is the match end (first present wins); empty = group 0.
    end_groups: Vec<usize>,
    /// Whether the match needs capture groups at all.
    needs_captures: bool,
    /// A condition on the text after the match; on failure the candidate is skipped.
    /// Only used where Python could not find a shorter match at the same start.
    after: Option<fn(&str) -> bool>,
}

impl PyPattern {
    /// A pattern whose match is group 0.
    pub fn new(source: &str, guard: Guard) -> PyPattern {
        PyPattern {
            re: compile(source),
            guard,
            end_groups: Vec::new(),
            needs_captures: false,
            after: None,
        }
    }

    /// A pattern whose match starts at group 0's start and ends where the first present
    /// of `end_groups` ends (the rest of group 0 is a consumed look-ahead).
    pub fn with_end_groups(source: &str, guard: Guard, end_groups: &[usize]) -> PyPattern {
        PyPattern {
            re: compile(source),
            guard,
            end_groups: end_groups.to_vec(),
            needs_captures: true,
            after: None,
        }
    }

    /// Adds a check on the text following a match.
    pub fn with_after(mut self, after: fn(&str) -> bool) -> PyPattern {
        self.after = Some(after);
        self
    }

    /// The next match at or after byte `start`, as Python would find it.
    pub fn find_at(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        let mut at = start;
        loop {
            if at > hay.len() {
                return None;
            }
            let (s, e) = if self.needs_captures {
                let caps = self.re.captures_at(hay, at)?;
                let whole = caps.get(0).expect("group 0 is always present");
                let end = self
                    .end_groups
                    .iter()
                    .find_map(|&g| caps.get(g).map(|m| m.end()))
                    .unwrap_or(whole.end());
                (whole.start(), end)
            } else {
                let m = self.re.find_at(hay, at)?;
                (m.start(), m.end())
            };
            let prev = hay[..s].chars().next_back();
            let after_ok = self.after.is_none_or(|f| f(&hay[e..]));
            if self.guard.allows(prev) && after_ok {
                return Some((s, e));
            }
            at = s + hay[s..].chars().next().map_or(1, char::len_utf8);
        }
    }

    /// Whether the pattern matches anywhere in `hay`.
    pub fn is_match(&self, hay: &str) -> bool {
        self.find_at(hay, 0).is_some()
    }
}

fn compile(source: &str) -> Regex {
    regex::RegexBuilder::new(source)
        .size_limit(64 << 20)
        .dfa_size_limit(64 << 20)
        .build()
        .unwrap_or_else(|e| panic!("built-in pattern failed to compile: {e}"))
}

/// Several patterns tried as one Python alternation: the leftmost match wins, ties go to
/// the earlier pattern (Python tries alternatives in order at each position).
#[derive(Clone, Debug)]
pub struct Alternation(pub Vec<PyPattern>);

impl Alternation {
    pub fn find_at(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize)> = None;
        for p in &self.0 {
            if let Some((s, e)) = p.find_at(hay, start)
                && best.is_none_or(|(bs, _)| s < bs)
            {
                best = Some((s, e));
            }
        }
        best
    }
}

/// Anything that finds successive Python-style matches.
pub trait Finder {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)>;
}

impl Finder for PyPattern {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_at(hay, start)
    }
}

impl Finder for Alternation {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_at(hay, start)
    }
}

/// Python `pattern.sub(callback, text)`: replaces every match, left to right. Returns
/// `None` when nothing matched (so callers keep the text without copying).
pub fn substitute<F: Finder + ?Sized>(
    finder: &F,
    text: &str,
    mut replace: impl FnMut(&str) -> String,
) -> Option<String> {
    let mut out: Option<String> = None;
    let mut last = 0;
    let mut pos = 0;
    while let Some((s, e)) = finder.find_from(text, pos) {
        let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
        buf.push_str(&text[last..s]);
        buf.push_str(&replace(&text[s..e]));
        last = e;
        pos = if e > s {
            e
        } else {
            // An empty match: step over one character, as Python does.
            match text[e..].chars().next() {
                Some(c) => {
                    buf.push(c);
                    last = e + c.len_utf8();
                    e + c.len_utf8()
                }
                None => break,
            }
        };
    }
    if let Some(buf) = out.as_mut() {
        buf.push_str(&text[last..]);
    }
    out
}
