//! The reference's passages and tokens (spec 7.2), as pure functions of redacted text:
//! how `retrieve` cuts a document into passages and a passage into tokens. Shared by the
//! retrieve renderer (`tools::retrieve`) and the passage index (`search_index::passages`),
//! so the index holds exactly what a scan would count.
//!
//! What it is not: scoring or ranking (retrieve's), nor storage (the index's).

use crate::engine::placeholder::{PLACEHOLDER_RE, casefold};
use crate::engine::python::text::{
    byte_offset_of_char, char_len, cut_outside_placeholder, is_py_word, splitlines,
};
use std::borrow::Cow;

/// A passage grows until one more line would pass this many characters…
pub const PASSAGE_CHARS: usize = 1600;
/// …or it already spans this many lines.
pub const PASSAGE_LINES: u64 = 24;

/// `[^\W_]` of Python's Unicode `re`: a letter or number.
fn is_alnum(ch: char) -> bool {
    ch != '_' && is_py_word(ch)
}

/// Calls `f` with every token of `text`: whole placeholders, and words
/// `[^\W_]+(?:[-'][^\W_]+)*`, in order (the reference's `TOKEN_RE`, not yet casefolded).
pub fn for_each_token(text: &str, f: &mut impl FnMut(&str)) {
    let mut pos = 0;
    for m in PLACEHOLDER_RE.find_iter(text) {
        // Words never contain `[`, so they cannot overlap a placeholder.
        word_tokens(&text[pos..m.start()], f);
        f(m.as_str());
        pos = m.end();
    }
    word_tokens(&text[pos..], f);
}

fn word_tokens(text: &str, f: &mut impl FnMut(&str)) {
    let mut chars = text.char_indices().peekable();
    while let Some((start, ch)) = chars.next() {
        if !is_alnum(ch) {
            continue;
        }
        let mut end = start + ch.len_utf8();
        loop {
            match chars.peek() {
                Some(&(at, c)) if is_alnum(c) => {
                    end = at + c.len_utf8();
                    chars.next();
                }
                // A joiner continues the token only when a letter or number follows it.
                Some(&(_, '-' | '\'')) => {
                    let mut ahead = chars.clone();
                    ahead.next();
                    match ahead.peek() {
                        Some(&(_, c)) if is_alnum(c) => {
                            chars.next();
                        }
                        _ => break,
                    }
                }
                _ => break,
            }
        }
        f(&text[start..end]);
    }
}

/// A token casefolded; without a copy when it already is (lowercase ASCII, the common
/// case in code).
pub fn folded(token: &str) -> Cow<'_, str> {
    if token.is_ascii() && !token.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Borrowed(token)
    } else {
        Cow::Owned(casefold(token))
    }
}

/// The casefolded tokens of `text`.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, &mut |token| out.push(folded(token).into_owned()));
    out
}

/// Calls `emit(start_line, end_line, lines)` for each passage of `text` in order: the
/// lines of `splitlines()` gathered until one more would pass [`PASSAGE_CHARS`]
/// (counting one per line end) or the block spans [`PASSAGE_LINES`]; a longer line is
/// cut into pieces after the last space before the limit, never inside a placeholder,
/// each piece a passage of its own.
pub fn for_each_passage(text: &str, emit: &mut impl FnMut(u64, u64, &[&str])) {
    let mut block: Vec<&str> = Vec::new();
    let mut size = 0usize;
    let (mut start, mut end) = (1u64, 1u64);
    for (index, full_line) in splitlines(text, false).into_iter().enumerate() {
        let number = index as u64 + 1;
        let mut line = full_line;
        let line_chars = char_len(line);
        if !block.is_empty()
            && (size + line_chars + 1 > PASSAGE_CHARS || number - start >= PASSAGE_LINES)
        {
            emit(start, end, &block);
            block.clear();
            size = 0;
        }
        let mut remaining = line_chars;
        while remaining > PASSAGE_CHARS {
            let mut cut = byte_offset_of_char(line, PASSAGE_CHARS);
            if let Some(space) = line[..cut].rfind(' ')
                && space > 0
            {
                cut = space + 1;
            }
            cut = cut_outside_placeholder(line, cut);
            if cut == 0 {
                // Cannot happen (a cut after a space is never inside a placeholder),
                // but never loop forever on it.
                break;
            }
            emit(number, number, &[&line[..cut]]);
            remaining -= char_len(&line[..cut]);
            line = &line[cut..];
        }
        if block.is_empty() {
            start = number;
        }
        block.push(line);
        size += remaining + 1;
        end = number;
    }
    if !block.is_empty() {
        emit(start, end, &block);
    }
}

/// What one passage holds of a set of terms: its length in tokens, and for each term it
/// holds, how often and where it first occurs (token position), in order of first
/// occurrence — the order the reference sums BM25 terms in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassageTerms<T> {
    pub length: u64,
    /// (term, occurrences, first position).
    pub hits: Vec<(T, u64, u64)>,
}

/// Counts the tokens of a passage's `lines`, calling `term(folded_token)` for each to ask
/// which term it is, if any.
pub fn passage_terms<T: PartialEq>(
    lines: &[&str],
    term: &mut impl FnMut(&str) -> Option<T>,
) -> PassageTerms<T> {
    let mut out = PassageTerms {
        length: 0,
        hits: Vec::new(),
    };
    for line in lines {
        for_each_token(line, &mut |token| {
            let position = out.length;
            out.length += 1;
            if let Some(found) = term(&folded(token)) {
                match out.hits.iter_mut().find(|(t, _, _)| *t == found) {
                    Some((_, n, _)) => *n += 1,
                    None => out.hits.push((found, 1, position)),
                }
            }
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_placeholders_whole_and_join_hyphens_and_apostrophes() {
        let text = "Don't re-run [PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] x_y a- -b Straße ² a-'b";
        assert_eq!(
            tokens(text),
            vec![
                "don't",
                "re-run",
                "[person_b6e03a41f7e5c4a5d77d8f67fcef2327]",
                "x",
                "y",
                "a",
                "b",
                "strasse",
                "²",
                "a",
                "b"
            ]
        );
        assert_eq!(tokens("PERSON_b6e0"), vec!["person", "b6e0"]);
        assert_eq!(tokens("a-b-c'd--e"), vec!["a-b-c'd", "e"]);
    }

    #[test]
    fn passage_terms_count_length_hits_and_first_positions() {
        let mut ask = |t: &str| match t {
            "beta" => Some(0usize),
            "alpha" => Some(1),
            _ => None,
        };
        let got = passage_terms(&["x Beta ALPHA", "beta z"], &mut ask);
        assert_eq!(got.length, 5);
        assert_eq!(got.hits, vec![(0, 2, 1), (1, 1, 2)]);
    }
}
