//! Python `str` semantics the reference's outputs depend on: which characters count as
//! whitespace and word characters, how text splits into lines, and how output is cut
//! without breaking a placeholder.

use crate::engine::placeholder::PLACEHOLDER_RE;
use std::sync::LazyLock;

/// Python `str.isspace()` for one character.
pub fn is_py_space(ch: char) -> bool {
    matches!(
        ch,
        '\t' | '\n'
            | '\x0b'
            | '\x0c'
            | '\r'
            | '\x1c'..='\x1f'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// The ranges of a Unicode class, sorted: a binary search answers for one character
/// far faster than a regex match (the shadow asks for every non-ASCII character).
struct CharClass(Vec<(char, char)>);

impl CharClass {
    fn new(source: &str) -> CharClass {
        use regex_syntax::hir::{Class, HirKind};
        let hir = regex_syntax::Parser::new()
            .parse(source)
            .expect("class compiles");
        let HirKind::Class(Class::Unicode(class)) = hir.kind() else {
            panic!("not a Unicode class");
        };
        CharClass(
            class
                .ranges()
                .iter()
                .map(|r| (r.start(), r.end()))
                .collect(),
        )
    }

    fn contains(&self, ch: char) -> bool {
        let i = self.0.partition_point(|&(_, end)| end < ch);
        self.0.get(i).is_some_and(|&(start, _)| start <= ch)
    }
}

static NON_ASCII_WORD: LazyLock<CharClass> = LazyLock::new(|| CharClass::new(r"[\p{L}\p{N}]"));

/// Python's `\w` for one character: `str.isalnum()` or `_`.
pub fn is_py_word(ch: char) -> bool {
    if ch.is_ascii() {
        return ch.is_ascii_alphanumeric() || ch == '_';
    }
    NON_ASCII_WORD.contains(ch)
}

/// The `regex` crate's Unicode `\w` for one character (it differs from Python's on
/// marks, `²` and connector punctuation; see `pyre::shadow`).
pub fn is_regex_word(ch: char) -> bool {
    static W: LazyLock<CharClass> = LazyLock::new(|| CharClass::new(r"\w"));
    if ch.is_ascii() {
        return ch.is_ascii_alphanumeric() || ch == '_';
    }
    W.contains(ch)
}

/// Python's `\d` for one character (Unicode decimal digit).
pub fn is_py_digit(ch: char) -> bool {
    if ch.is_ascii() {
        return ch.is_ascii_digit();
    }
    static ND: LazyLock<CharClass> = LazyLock::new(|| CharClass::new(r"\p{Nd}"));
    ND.contains(ch)
}

/// Whether `ch` is one of the line separators of Python's `str.splitlines()`.
pub fn is_line_separator(ch: char) -> bool {
    matches!(
        ch,
        '\n' | '\r'
            | '\x0b'
            | '\x0c'
            | '\x1c'
            | '\x1d'
            | '\x1e'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// Python `str.splitlines(keepends)`: splits on `\n`, `\r\n`, `\r`, `\v`, `\f`,
/// `\x1c`–`\x1e`, `\x85`, `\u2028`, `\u2029`. No trailing empty line.
pub fn splitlines(text: &str, keepends: bool) -> Vec<&str> {
    let mut lines = Vec::new();
    let bytes = text.as_bytes();
    let mut start = 0;
    let mut iter = text.char_indices().peekable();
    while let Some((idx, ch)) = iter.next() {
        if !is_line_separator(ch) {
            continue;
        }
        let mut end_sep = idx + ch.len_utf8();
        if ch == '\r' && bytes.get(end_sep) == Some(&b'\n') {
            iter.next();
            end_sep += 1;
        }
        lines.push(if keepends {
            &text[start..end_sep]
        } else {
            &text[start..idx]
        });
        start = end_sep;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Byte offset of the `n`-th character (or the text length when shorter).
pub fn byte_offset_of_char(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// Number of Unicode code points (Python `len`).
pub fn char_len(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// `cut` (a byte offset of `text`), moved back to the start of a placeholder it would
/// split, so no placeholder is ever cut in half.
pub fn cut_outside_placeholder(text: &str, cut: usize) -> usize {
    for m in PLACEHOLDER_RE.find_iter(text) {
        if m.start() < cut && cut < m.end() {
            return m.start();
        }
        if m.start() >= cut {
            break;
        }
    }
    cut
}

/// Cuts `text` to `max_chars` code points, moving the cut back to the start of a
/// placeholder it would split, and appends the `[TRUNCATED]` marker line.
pub fn truncate_redacted(text: &str, max_chars: usize) -> String {
    if char_len(text) <= max_chars {
        return text.to_owned();
    }
    let cut = cut_outside_placeholder(text, byte_offset_of_char(text, max_chars));
    let mut out = String::with_capacity(cut + 13);
    out.push_str(&text[..cut]);
    out.push_str("\n[TRUNCATED]\n");
    out
}

/// Whether `text` holds one of `chars`, which are non-ASCII and begin with at most three
/// distinct UTF-8 lead bytes: one vectorised pass over those bytes (a `contains` per
/// character reads the text once each). The engine reads these characters from the
/// keyword pass or [`crate::engine::stages::gate::has_ascii_fold_stand_in`]; tests read them here.
#[cfg(test)]
pub fn has_any_char(text: &str, chars: &[char]) -> bool {
    let mut leads: Vec<u8> = chars
        .iter()
        .map(|c| c.encode_utf8(&mut [0; 4]).as_bytes()[0])
        .collect();
    leads.sort_unstable();
    leads.dedup();
    debug_assert!(leads.len() <= 3 && leads.iter().all(|&b| b >= 0x80));
    let lead = |i: usize| leads.get(i).or(leads.last()).copied().unwrap_or(0x80);
    memchr::memchr3_iter(lead(0), lead(1), lead(2), text.as_bytes())
        .any(|at| chars.iter().any(|&c| text[at..].starts_with(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_any_char_finds_each_character_and_nothing_else() {
        let python = ['\u{130}', '\u{131}', '\u{17F}', '\u{212A}'];
        for c in python {
            assert!(has_any_char(&format!("ab{c}cd"), &python), "{c}");
            assert!(has_any_char(&format!("{c}"), &['\u{17F}', c]), "{c}");
        }
        for text in ["", "plain ascii", "\u{132}\u{17E}\u{2129}\u{e9}", "K s i I"] {
            assert!(!has_any_char(text, &python), "{text:?}");
        }
    }
    use regex::Regex;

    /// The range tables answer as a regex of the same class does, for every
    /// character of the BMP and a sample of the planes above.
    #[test]
    fn class_tables_equal_the_regex_classes() {
        let word = Regex::new(r"^[\p{L}\p{N}_]$").expect("class");
        let digit = Regex::new(r"^\p{Nd}$").expect("class");
        let regex_word = Regex::new(r"^\w$").expect("class");
        let mut buf = [0u8; 4];
        for code in (0..0x1_0000).chain((0x1_0000..0x11_0000).step_by(7)) {
            let Some(ch) = char::from_u32(code) else {
                continue;
            };
            let text = ch.encode_utf8(&mut buf);
            assert_eq!(is_py_word(ch), word.is_match(text), "{code:#x}");
            assert_eq!(is_py_digit(ch), digit.is_match(text), "{code:#x}");
            assert_eq!(is_regex_word(ch), regex_word.is_match(text), "{code:#x}");
        }
        // The shadow decides private-use characters (markers) without the tables.
        for ch in '\u{E000}'..='\u{F8FF}' {
            assert!(!is_py_word(ch) && !is_py_space(ch), "{ch:?}");
        }
    }

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(
            splitlines("a\nb\r\nc\rd\x0be\x0cf\x1cg\u{85}h\u{2028}i", false),
            vec!["a", "b", "c", "d", "e", "f", "g", "h", "i"]
        );
        assert_eq!(splitlines("a\r\n\nb\n", true), vec!["a\r\n", "\n", "b\n"]);
        assert_eq!(splitlines("", true), Vec::<&str>::new());
        assert_eq!(splitlines("\n", false), vec![""]);
    }

    #[test]
    fn truncation_never_splits_a_placeholder() {
        let p = "[PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327]";
        let text = format!("ab {p} cd");
        for cut in 4..(3 + p.len()) {
            assert_eq!(
                truncate_redacted(&text, cut),
                "ab \n[TRUNCATED]\n",
                "cut {cut}"
            );
        }
        assert_eq!(
            truncate_redacted(&text, 3 + p.len()),
            format!("ab {p}\n[TRUNCATED]\n")
        );
        assert_eq!(truncate_redacted("short", 10), "short");
        assert_eq!(truncate_redacted("ééé", 2), "éé\n[TRUNCATED]\n");
    }

    #[test]
    fn python_character_classes() {
        assert!(is_py_space('\x1c') && is_py_space('\u{3000}') && !is_py_space('\u{200b}'));
        assert!(
            is_py_word('é')
                && is_py_word('_')
                && is_py_word('²')
                && !is_py_word('\u{301}')
                && !is_py_word('\u{e000}')
        );
    }
}
