//! Hand-written matchers for the two reference patterns that need real backtracking:
//! markdown heading lines and multi-word proper names (spec 5.4 step 7).

use crate::engine::python::re::Finder;
use crate::engine::python::text::{is_py_space, is_py_word};
use crate::engine::stages::patterns::IDENTITY_LABEL;
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
        match memchr::memchr2(b'\r', b'\n', &b[p..]) {
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
    let end = memchr::memchr2(b'\r', b'\n', &b[i..]).map_or(b.len(), |o| i + o);
    Some(end)
}

/// `finder` run separately on the heading lines of a text and on the text between
/// them, each piece searched as a text of its own, so no match crosses a heading line
/// (the reference substitutes piece by piece).
pub struct ByHeading<'f, F: ?Sized> {
    finder: &'f F,
    /// Contiguous pieces covering the text: (start, end, is a heading line).
    pieces: Vec<(usize, usize, bool)>,
}

impl<'f, F: Finder + ?Sized> ByHeading<'f, F> {
    /// Splits `text` (the text the finder will search) into its pieces.
    pub fn new(finder: &'f F, text: &str) -> ByHeading<'f, F> {
        let mut pieces = Vec::new();
        let mut pos = 0;
        for (s, e) in heading_lines(text) {
            pieces.push((pos, s, false));
            pieces.push((s, e, true));
            pos = e;
        }
        pieces.push((pos, text.len(), false));
        ByHeading { finder, pieces }
    }

    /// Whether the match starting at `at` lies on a heading line.
    pub fn on_heading(&self, at: usize) -> bool {
        let i = self.pieces.partition_point(|&(_, e, _)| e <= at);
        self.pieces.get(i).is_some_and(|&(_, _, heading)| heading)
    }
}

impl<F: Finder + ?Sized> Finder for ByHeading<'_, F> {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        let first = self.pieces.partition_point(|&(_, e, _)| e <= start);
        self.pieces[first..].iter().find_map(|&(ps, pe, _)| {
            let (s, e) = self
                .finder
                .find_from(&hay[ps..pe], start.saturating_sub(ps))?;
            Some((ps + s, ps + e))
        })
    }

    fn uses_word_boundary(&self) -> bool {
        self.finder.uses_word_boundary()
    }
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
fn word_ends(s: &str, p: usize) -> impl Iterator<Item = usize> {
    let b = s.as_bytes();
    let capital = p < b.len() && b[p].is_ascii_uppercase();
    let run = if capital {
        b[p + 1..].iter().take_while(|&&c| is_name_byte(c)).count()
    } else {
        0
    };
    let initial = capital && b.get(p + 1) == Some(&b'.');
    (2..=run)
        .rev()
        .map(move |k| p + 1 + k)
        .chain(initial.then_some(p + 2))
}

/// Whether an identity label (and its colon) may start at `s`: the regex runs only
/// when the first character can begin one (`ſ` folds onto `s` under IGNORECASE).
fn label_ahead(s: &str) -> bool {
    match s.as_bytes().first() {
        Some(b'a' | b'p' | b's' | b'o' | b'c' | b'r' | b'A' | b'P' | b'S' | b'O' | b'C' | b'R') => {
            LABEL_AHEAD.is_match(s)
        }
        Some(&c) if !c.is_ascii() => LABEL_AHEAD.is_match(s),
        _ => false,
    }
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
        && !label_ahead(&s[g..])
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
        word_ends(s, p).find_map(|e| more_words(s, e, 0))
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

/// A run of ASCII letters at Python word boundaries, matched by hand: the reference's
/// `\b[A-Z]<second>?<rest>{min,}\b` patterns (TitleCase words, acronyms, identity
/// names). Code is full of capitalized words, and a regex search per match (plus the
/// word-class shadow every `\b` regex needs) cost more than the rest of strict mode.
pub struct CapitalizedRun {
    /// Class of the second character, when the pattern fixes one.
    second: Option<fn(u8) -> bool>,
    /// Class of the repeated tail.
    rest: fn(u8) -> bool,
    /// Fewest tail characters.
    min_rest: usize,
}

/// `\b[A-Z][a-z][A-Za-z'.-]{2,}\b`: strict mode's TitleCase tokens.
pub static TITLECASE: CapitalizedRun = CapitalizedRun {
    second: Some(|c| c.is_ascii_lowercase()),
    rest: is_name_byte,
    min_rest: 2,
};

/// `\b[A-Z][A-Z0-9]{2,}\b`: strict mode's acronyms.
pub static ACRONYM: CapitalizedRun = CapitalizedRun {
    second: None,
    rest: |c| c.is_ascii_uppercase() || c.is_ascii_digit(),
    min_rest: 2,
};

/// `\b[A-Z][a-z][A-Za-z'.-]*\b`: a name inside an identity line's value.
pub static IDENTITY_NAME: CapitalizedRun = CapitalizedRun {
    second: Some(|c| c.is_ascii_lowercase()),
    rest: is_name_byte,
    min_rest: 0,
};

impl CapitalizedRun {
    fn match_at(&self, s: &str, p: usize) -> Option<usize> {
        let b = s.as_bytes();
        // `\b` before an ASCII capital: the previous character is not a word character.
        if s[..p].chars().next_back().is_some_and(is_py_word) {
            return None;
        }
        let mut q = p + 1;
        if let Some(second) = self.second {
            if !b.get(q).is_some_and(|&c| second(c)) {
                return None;
            }
            q += 1;
        }
        let run = b[q..].iter().take_while(|&&c| (self.rest)(c)).count();
        // Greedy tail, then back off until `\b` holds, as Python's backtracking does.
        (self.min_rest..=run)
            .rev()
            .map(|k| q + k)
            .find(|&e| boundary(s, e))
    }
}

impl Finder for CapitalizedRun {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        let b = hay.as_bytes();
        (start..b.len())
            .filter(|&p| b[p].is_ascii_uppercase())
            .find_map(|p| self.match_at(hay, p).map(|e| (p, e)))
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

    /// Deterministic strings over the characters that decide these matchers.
    fn soup(seed: u64, n: usize) -> Vec<String> {
        let alphabet: Vec<char> =
            "AZBxyab09_'.- \n\u{e9}\u{c9}\u{e000}\u{b2}\u{301}\u{a0}\u{130}\u{4e00}"
                .chars()
                .collect();
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let len = (state >> 59) as usize + 1;
                (0..len)
                    .map(|_| {
                        state = state
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        alphabet[(state >> 33) as usize % alphabet.len()]
                    })
                    .collect()
            })
            .collect()
    }

    fn all(f: &dyn Finder, s: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut p = 0;
        while let Some((a, b)) = f.find_from(s, p) {
            out.push((a, b));
            p = b.max(a + 1);
        }
        out
    }

    #[test]
    fn capitalized_runs_equal_their_regex_on_the_word_class_shadow() {
        use crate::engine::python::re::{Guard, PyPattern, shadow};
        let cases = [
            (&TITLECASE, r"\b[A-Z][a-z][A-Za-z'.-]{2,}\b"),
            (&ACRONYM, r"\b[A-Z][A-Z0-9]{2,}\b"),
            (&IDENTITY_NAME, r"\b[A-Z][a-z][A-Za-z'.-]*\b"),
        ];
        for (hand, source) in cases {
            let re = PyPattern::new(source, Guard::None);
            for text in soup(7, 4000) {
                let hay = shadow(&text);
                assert_eq!(all(hand, &text), all(&re, &hay), "{source} on {text:?}");
            }
        }
        // Expected spans from Python's `re.finditer` on the same strings.
        assert_eq!(
            all(&TITLECASE, "Hello.World's x-Ray Abcd-"),
            vec![(0, 13), (20, 24)]
        );
        assert_eq!(all(&ACRONYM, "HTTPServer API2 _ABC ÉABC"), vec![(11, 15)]);
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
