//! Hand-written matchers for the two reference patterns that need real backtracking:
//! markdown heading lines and multi-word proper names (spec 5.4 step 7).

use super::patterns::IDENTITY_LABEL;
use super::pyre::Finder;
use super::text::{is_py_space, is_py_word};
use regex::Regex;
use std::sync::LazyLock;

/// Byte spans of markdown ATX heading lines (`HEADING_LINE_RE`): at a line start (text
/// start or after `\r`/`\n`), up to three spaces, one to six `#`, then a space, tab, line
/// break or the end; the span runs to the line break.
pub fn heading_lines(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut p = 0;
    loop {
        if let Some(end) = heading_at(b, p) {
            spans.push((p, end));
            p = end;
        }
        // Advance to the next line start.
        match b[p..].iter().position(|&c| c == b'\r' || c == b'\n') {
            Some(off) => p += off + 1,
            None => break,
        }
        if p > b.len() {
            break;
        }
    }
    spans
}

fn heading_at(b: &[u8], p: usize) -> Option<usize> {
    let mut i = p;
    while i < b.len() && b[i] == b' ' && i - p < 3 {
        i += 1;
    }
    let hashes_start = i;
    while i < b.len() && b[i] == b'#' {
        i += 1;
    }
    let hashes = i - hashes_start;
    if hashes == 0 || hashes > 6 {
        return None;
    }
    if i < b.len() && !matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        return None;
    }
    let end = b[i..]
        .iter()
        .position(|&c| c == b'\r' || c == b'\n')
        .map_or(b.len(), |o| i + o);
    Some(end)
}

/// Runs `sub` separately on heading lines and on the text between them, so no match
/// crosses a heading line; `sub(piece, on_heading)` returns the new piece.
pub fn by_heading(text: &str, mut sub: impl FnMut(&str, bool) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for (s, e) in heading_lines(text) {
        out.push_str(&sub(&text[pos..s], false));
        out.push_str(&sub(&text[s..e], true));
        pos = e;
    }
    out.push_str(&sub(&text[pos..], false));
    out
}

static LABEL_AHEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"^(?i:{IDENTITY_LABEL})[ \t]*:")).expect("label pattern")
});

/// `MULTI_PROPER_RE`: two to five capitalized words (or initials) separated by horizontal
/// space or a single line break, not running into an identity label and its colon.
pub struct ProperNames;

fn char_at(s: &str, i: usize) -> Option<char> {
    s.get(i..).and_then(|t| t.chars().next())
}

fn boundary(s: &str, i: usize) -> bool {
    let prev = s[..i].chars().next_back().is_some_and(is_py_word);
    let next = char_at(s, i).is_some_and(is_py_word);
    prev != next
}

fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'\'' | b'.' | b'-')
}

/// Possible ends of one name word starting at `p`, in Python's priority order.
fn word_ends(s: &str, p: usize) -> Vec<usize> {
    let b = s.as_bytes();
    let mut ends = Vec::new();
    if p >= b.len() || !b[p].is_ascii_uppercase() {
        return ends;
    }
    let run = b[p + 1..].iter().take_while(|&&c| is_name_byte(c)).count();
    if run >= 2 {
        ends.extend((2..=run).rev().map(|k| p + 1 + k));
    }
    if b.get(p + 1) == Some(&b'.') {
        ends.push(p + 2);
    }
    ends
}

fn is_hspace(c: char) -> bool {
    is_py_space(c) && c != '\r' && c != '\n'
}

/// End of the whitespace gap starting at `p`: horizontal space, optionally one line break
/// and more horizontal space. `None` when there is no gap.
fn gap(s: &str, p: usize) -> Option<usize> {
    let mut i = p;
    while let Some(c) = char_at(s, i).filter(|&c| is_hspace(c)) {
        i += c.len_utf8();
    }
    let b = s.as_bytes();
    if i < b.len() && (b[i] == b'\r' || b[i] == b'\n') {
        i += if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        while let Some(c) = char_at(s, i).filter(|&c| is_hspace(c)) {
            i += c.len_utf8();
        }
        return Some(i);
    }
    (i > p).then_some(i)
}

fn more_words(s: &str, pos: usize, count: usize) -> Option<usize> {
    if count < 4
        && let Some(g) = gap(s, pos)
        && !LABEL_AHEAD.is_match(&s[g..])
    {
        for e in word_ends(s, g) {
            if let Some(end) = more_words(s, e, count + 1) {
                return Some(end);
            }
        }
    }
    (count >= 1 && boundary(s, pos)).then_some(pos)
}

impl ProperNames {
    fn match_at(s: &str, p: usize) -> Option<usize> {
        if !boundary(s, p) {
            return None;
        }
        word_ends(s, p)
            .into_iter()
            .find_map(|e| more_words(s, e, 0))
    }
}

impl Finder for ProperNames {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        let b = hay.as_bytes();
        let mut p = start;
        while p < b.len() {
            if b[p].is_ascii_uppercase()
                && let Some(e) = Self::match_at(hay, p)
            {
                return Some((p, e));
            }
            p += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut p = 0;
        while let Some((a, b)) = ProperNames.find_from(s, p) {
            out.push(&s[a..b]);
            p = b;
        }
        out
    }

    #[test]
    fn headings_are_found_per_reference_rules() {
        let t = "# A\n   ## B\n    # no\n####### no\n#x no\r\n###\tC\n#";
        let spans: Vec<&str> = heading_lines(t)
            .into_iter()
            .map(|(a, b)| &t[a..b])
            .collect();
        assert_eq!(spans, vec!["# A", "   ## B", "###\tC", "#"]);
    }

    #[test]
    fn proper_names_follow_backtracking_rules() {
        assert_eq!(names("We met Avery Example today."), vec!["Avery Example"]);
        assert_eq!(names("Jordan Vale."), vec!["Jordan Vale"]);
        assert_eq!(
            names("We met Avery\nExample today."),
            vec!["Avery\nExample"]
        );
        assert_eq!(names("Avery\n\nExample"), Vec::<&str>::new());
        assert_eq!(names("J. Smith and A B"), vec!["J. Smith"]);
        assert_eq!(names("Project Owner: Bob"), Vec::<&str>::new());
        assert_eq!(
            names("Taylor Reed met Jordan Vale from Riverton"),
            vec!["Taylor Reed", "Jordan Vale"]
        );
        assert_eq!(
            names("One Two Three Four Five Six"),
            vec!["One Two Three Four Five"]
        );
    }
}
