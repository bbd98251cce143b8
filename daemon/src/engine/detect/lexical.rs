//! Lexical helpers the detector families share: char boundaries, lines, quote tokens,
//! key bytes, ASCII-case comparisons and `\b`.

/// Whether `text` holds the byte `b` (SIMD memchr).
pub fn has_byte(text: &str, b: u8) -> bool {
    memchr::memchr(b, text.as_bytes()).is_some()
}

/// Largest char boundary `<= i`.
pub fn floor_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Smallest char boundary `>= i`.
pub fn ceil_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Quote tokens recognised around keys and values, longest first.
pub const QUOTES: &[&str] = &[
    "\\\\\\\"", "&quot;", "&#34;", "&#39;", "\\\"", "\\'", "\"", "'", "`",
];

/// The quote token starting at `pos`, if any.
pub fn quote_at(text: &str, pos: usize) -> Option<&'static str> {
    let rest = text.get(pos..)?;
    QUOTES.iter().copied().find(|q| rest.starts_with(q))
}

/// The quote token ending exactly at `pos` (i.e. `text[pos-len..pos]`), if any.
pub fn quote_before(text: &str, pos: usize) -> Option<&'static str> {
    let head = text.get(..pos)?;
    QUOTES.iter().copied().find(|q| head.ends_with(q))
}

/// Finds the closing `quote` for a string whose content starts at `from`, on the same
/// line. Plain `"`/`'` honour backslash escapes. Returns the byte offset of the closer.
pub fn find_closing(text: &str, from: usize, quote: &str) -> Option<usize> {
    let b = text.as_bytes();
    let plain = quote.len() == 1 && quote != "`";
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            return None;
        }
        if plain && c == b'\\' {
            i += 2;
            continue;
        }
        if b[i..].starts_with(quote.as_bytes()) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether `b` may appear inside an identifier-like key token.
pub fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'
}

/// Whether `s` starts with `prefix` (lower-case ASCII) up to ASCII case. Values are
/// judged many times a file: no lower-cased copy.
pub fn starts_with_ignore_ascii_case(s: &str, prefix: &str) -> bool {
    debug_assert!(!prefix.bytes().any(|b| b.is_ascii_uppercase()));
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Whether `s` ends with `suffix` (lower-case ASCII) up to ASCII case.
pub fn ends_with_ignore_ascii_case(s: &str, suffix: &str) -> bool {
    debug_assert!(!suffix.bytes().any(|b| b.is_ascii_uppercase()));
    s.len() >= suffix.len()
        && s.as_bytes()[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
}

/// Whether `v` is one of `list` (lower-case ASCII words) up to ASCII case.
pub fn is_one_of_ignore_ascii_case(list: &[&str], v: &str) -> bool {
    list.iter().any(|w| w.eq_ignore_ascii_case(v))
}

/// Start of the line holding byte `at`: just after the `\n` before it.
pub fn line_start(text: &str, at: usize) -> usize {
    memchr::memrchr(b'\n', &text.as_bytes()[..at]).map_or(0, |i| i + 1)
}

/// The line holding byte `at`: from after the `\n` before it to the `\n` after it.
pub fn line_around(text: &str, at: usize) -> (usize, usize) {
    let end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |i| at + i);
    (line_start(text, at), end)
}

/// An ASCII digit or any byte of a multi-byte character (which may be a digit of
/// another script, as `\d` reads them).
pub fn digit_like(b: u8) -> bool {
    b.is_ascii_digit() || b >= 0x80
}

/// `\b` as the `regex` crate defines it by default (Unicode word characters), checked
/// around the byte span `start..end` of `text`.
pub fn is_word_bounded(text: &str, start: usize, end: usize) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let before = text[..start].chars().next_back().is_some_and(word);
    let after = text[end..].chars().next().is_some_and(word);
    let first = text[start..end].chars().next().is_some_and(word);
    let last = text[start..end].chars().next_back().is_some_and(word);
    before != first && after != last
}
