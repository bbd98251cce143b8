//! Nominated values (spec 5.12): every occurrence of a value a detector found is
//! redacted, found case-insensitively and whitespace-flexibly, with the reference's
//! guards on both sides.

use super::*;

/// One case-insensitive alternation of `values` (spec 5.12: in the given order,
/// whitespace-flexible, ASCII letter/digit guards on both sides).
pub(super) fn nominated_pattern(values: &[String]) -> PyPattern {
    let body = values
        .iter()
        .map(|v| {
            format!(
                "(?:{})",
                v.split(' ')
                    .map(regex::escape)
                    .collect::<Vec<_>>()
                    .join(r"[\s\x1C-\x1F]+")
            )
        })
        .collect::<Vec<_>>()
        .join("|");
    PyPattern::with_one_char_tail(
        &format!(r"(?i)({body})(?-i:[^A-Za-z0-9]|\z)"),
        Guard::NotAsciiAlnum,
    )
}

/// The matches of [`nominated_pattern`] over `values` in `hay`, left to right, or `None`
/// when only that pattern can tell: `hay` holds one of the non-ASCII characters Python's
/// IGNORECASE equates with ASCII letters (`İ ı ſ K`; `fold_free` says it holds none,
/// known from the keyword pass), or a tie (below). Compiling the pattern per file cost
/// more than the rest of balanced mode, so the plain values (ASCII, single spaces: the
/// common case, tokens, passwords, addresses, `Name Surname`) are found by
/// [`ascii_value_matches_with`]'s scan, and the others (accented names, odd spacing) by
/// a pattern made of them alone: one accented name used to send every value of the file
/// to the whole pattern, a sixth of `balanced` mode's time on licence and copyright
/// files. The two are merged as the alternation would take them: the leftmost start
/// wins, and a match resumes the search at its end. At one start the alternation would
/// pick by the values' order, which neither side knows of the other: that rare tie
/// answers `None`.
pub(super) fn nominated_matches(
    values: &[String],
    hay: &str,
    fold_free: bool,
) -> Option<Vec<(usize, usize)>> {
    if !fold_free && has_ascii_fold_stand_in(hay) {
        return None;
    }
    if values.iter().all(|v| is_plain_value(v)) {
        return ascii_value_matches_with(values, hay, true);
    }
    let (plain, other): (Vec<String>, Vec<String>) =
        values.iter().cloned().partition(|v| is_plain_value(v));
    let candidates = if plain.is_empty() {
        Vec::new()
    } else {
        ascii_value_candidates(&plain, hay, true)
    };
    let others = nominated_pattern(&other);
    let mut spans = Vec::new();
    let (mut pos, mut next) = (0, 0);
    let mut other_match = others.find_at(hay, 0);
    loop {
        while candidates.get(next).is_some_and(|&(s, _, _)| s < pos) {
            next += 1;
        }
        if other_match.is_some_and(|(s, _)| s < pos) {
            other_match = others.find_at(hay, pos);
        }
        let ascii = candidates.get(next).map(|&(s, _, e)| (s, e));
        let taken = match (ascii, other_match) {
            (None, None) => return Some(spans),
            (Some(a), Some(o)) if a.0 == o.0 => return None,
            // Starts differ here: the leftmost.
            (Some(a), Some(o)) => a.min(o),
            (Some(a), None) => a,
            (None, Some(o)) => o,
        };
        spans.push(taken);
        pos = taken.1;
    }
}

/// A value the ASCII scan can find: ASCII, words separated by single spaces.
pub(super) fn is_plain_value(v: &str) -> bool {
    v.is_ascii()
        && !v
            .bytes()
            .any(|b| b.is_ascii_whitespace() && b != b' ' || (0x1c..=0x1f).contains(&b))
        && !v.contains("  ")
        && !v.starts_with(' ')
        && !v.ends_with(' ')
}

/// The matches of [`nominated_pattern`] when every value is plain ([`is_plain_value`]),
/// found without compiling it; `hay` must hold none of `İ ı ſ K`. A case-insensitive
/// search ([`FirstWords`]) lists where each value's first word occurs, the remaining
/// words are checked there (one or more Python `\s` between words), and at each start
/// the first value in pattern order whose guards hold wins, as Python's alternation
/// does. `vectorised: false` tries every place a value may start instead of searching
/// for the places (tests compare the two).
pub(super) fn ascii_value_matches_with(
    values: &[String],
    hay: &str,
    vectorised: bool,
) -> Option<Vec<(usize, usize)>> {
    if !values.iter().all(|v| is_plain_value(v)) {
        return None;
    }
    let mut spans = Vec::new();
    let mut resume = 0;
    for (start, _, end) in ascii_value_candidates(values, hay, vectorised) {
        if start >= resume {
            spans.push((start, end));
            resume = end;
        }
    }
    Some(spans)
}

/// Every place one of `values` (all plain, see [`is_plain_value`]) matches as the
/// alternation would try it there: `(start, value index, end)`, sorted, so at one start
/// the value the alternation tries first comes first.
pub(super) fn ascii_value_candidates(
    values: &[String],
    hay: &str,
    vectorised: bool,
) -> Vec<(usize, usize, usize)> {
    let words: Vec<Vec<&str>> = values.iter().map(|v| v.split(' ').collect()).collect();
    let bytes = hay.as_bytes();
    let alnum_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_alphanumeric);
    let firsts = FirstWords::new(words.iter().map(|w| w[0]), vectorised);
    let mut candidates: Vec<(usize, usize, usize)> = Vec::new();
    firsts.each_at_word_start(bytes, |start, value, first_end| {
        if let Some(end) = rest_of_value(hay, first_end, &words[value][1..])
            && !alnum_at(end)
        {
            candidates.push((start, value, end));
        }
    });
    candidates.sort_unstable();
    candidates
}

/// The first words of the nominated values, indexed by their first few bytes, so that a
/// vectorised search for those keys (memmem for a few, Teddy for more) over a lower-cased
/// copy of a text finds every place a value may start. Building an Aho-Corasick automaton
/// per file, or one substring search per value, cost more than the rest of the stage.
pub(super) struct FirstWords<'v> {
    pub(super) words: Vec<&'v [u8]>,
    /// Bytes in every key: the shortest first word's length, at most 8.
    pub(super) key_len: usize,
    /// `(key, value index)` sorted ASCII-case-insensitively; the key is the word's first
    /// `key_len` bytes.
    pub(super) keys: Vec<(&'v [u8], usize)>,
    /// How the places where a key occurs are found.
    pub(super) search: KeySearch,
}

/// Up to this many keys are searched one by one rather than by one Teddy searcher, whose
/// construction (about 30,000 instructions) costs more than several substring searches
/// of a file. Counted on the engine bench in balanced mode, 10 did better than 4 or 20.
pub(super) const FEW_KEYS: usize = 10;

/// The search for the keys of [`FirstWords`] in a lower-cased text.
pub(super) enum KeySearch {
    /// A few keys: a vectorised substring search each (cheaper to build than Teddy).
    Each(Vec<memchr::memmem::Finder<'static>>),
    /// Teddy searchers of at most 64 keys each (its limit).
    Teddy(Vec<aho_corasick::packed::Searcher>),
    /// Every place is tried: tests, or a CPU without a vector unit Teddy can use.
    EveryPlace,
}

impl<'v> FirstWords<'v> {
    /// `words` are ASCII and not empty. `vectorised: false` tries every place (tests).
    pub(super) fn new(words: impl Iterator<Item = &'v str>, vectorised: bool) -> FirstWords<'v> {
        let words: Vec<&[u8]> = words.map(str::as_bytes).collect();
        let key_len = words.iter().map(|w| w.len()).min().unwrap_or(1).clamp(1, 8);
        let mut keys: Vec<(&[u8], usize)> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (&w[..key_len], i))
            .collect();
        keys.sort_unstable_by(|a, b| cmp_ascii_ci(a.0, b.0).then(a.1.cmp(&b.1)));
        let mut distinct: Vec<Vec<u8>> = keys.iter().map(|k| k.0.to_ascii_lowercase()).collect();
        distinct.dedup();
        let search = match &distinct[..] {
            _ if !vectorised => KeySearch::EveryPlace,
            keys if keys.len() <= FEW_KEYS => KeySearch::Each(
                keys.iter()
                    .map(|k| memchr::memmem::Finder::new(k).into_owned())
                    .collect(),
            ),
            _ => distinct
                .chunks(64)
                .map(|chunk| {
                    aho_corasick::packed::Config::new()
                        .builder()
                        .extend(chunk)
                        .build()
                })
                .collect::<Option<Vec<_>>>()
                .map_or(KeySearch::EveryPlace, KeySearch::Teddy),
        };
        FirstWords {
            words,
            key_len,
            keys,
            search,
        }
    }

    /// Calls `found(start, value, first word end)` for every place in `bytes` where a
    /// value's first word occurs ASCII-case-insensitively and the byte before is not an
    /// ASCII letter or digit: ascending by start, values in index order at one start.
    pub(super) fn each_at_word_start(
        &self,
        bytes: &[u8],
        mut found: impl FnMut(usize, usize, usize),
    ) {
        let try_at = |at: usize| {
            if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
                return;
            }
            let Some(head) = bytes.get(at..at + self.key_len) else {
                return;
            };
            let from = self
                .keys
                .partition_point(|&(k, _)| cmp_ascii_ci(k, head).is_lt());
            for &(key, value) in &self.keys[from..] {
                if !key.eq_ignore_ascii_case(head) {
                    break;
                }
                let word = self.words[value];
                if bytes
                    .get(at..at + word.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(word))
                {
                    found(at, value, at + word.len());
                }
            }
        };
        match &self.search {
            KeySearch::EveryPlace => (0..bytes.len()).for_each(try_at),
            KeySearch::Each(finders) => {
                let lower = bytes.to_ascii_lowercase();
                let mut starts = Vec::new();
                for finder in finders {
                    let mut at = 0;
                    while let Some(i) = finder.find(&lower[at..]) {
                        starts.push(at + i);
                        at += i + 1;
                    }
                }
                if finders.len() > 1 {
                    starts.sort_unstable();
                    starts.dedup();
                }
                starts.into_iter().for_each(try_at);
            }
            KeySearch::Teddy(searchers) => {
                let lower = bytes.to_ascii_lowercase();
                let mut starts = Vec::new();
                for searcher in searchers {
                    let mut at = 0;
                    while let Some(m) =
                        searcher.find_in(&lower, aho_corasick::Span::from(at..lower.len()))
                    {
                        starts.push(m.start());
                        at = m.start() + 1;
                    }
                }
                if searchers.len() > 1 {
                    starts.sort_unstable();
                    starts.dedup();
                }
                starts.into_iter().for_each(try_at);
            }
        }
    }
}

/// ASCII-case-insensitive byte order.
pub(super) fn cmp_ascii_ci(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.iter()
        .map(u8::to_ascii_lowercase)
        .cmp(b.iter().map(u8::to_ascii_lowercase))
}

/// Where a value whose first word ends at `at` ends, if its remaining `words` follow,
/// each after one or more Python whitespace characters (ASCII case-insensitively).
pub(super) fn rest_of_value(hay: &str, mut at: usize, words: &[&str]) -> Option<usize> {
    let is_space = |c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c);
    for word in words {
        let gap = hay[at..]
            .char_indices()
            .find(|&(_, c)| !is_space(c))
            .map_or(hay.len() - at, |(i, _)| i);
        if gap == 0 {
            return None;
        }
        at += gap;
        let next = hay.as_bytes().get(at..at + word.len())?;
        if !next.eq_ignore_ascii_case(word.as_bytes()) {
            return None;
        }
        at += word.len();
    }
    Some(at)
}

/// A finding's value, and for one over several lines also its lines after the first and
/// (from three lines) those between the first and the last: the baseline's stages may
/// have rewritten a first or last line (`-----BEGIN RSA PRIVATE KEY-----` reads as a
/// name to the heuristics), and the value whole would no longer be found, leaving a
/// key's body raw. Parts shorter than 20 characters are not nominated.
pub(super) fn multi_line_parts(raw: &str) -> impl Iterator<Item = &str> {
    const MIN_PART_CHARS: usize = 20;
    let after_first = raw.split_once('\n').map(|(_, rest)| rest.trim_end());
    let middle = after_first
        .and_then(|rest| rest.rsplit_once('\n'))
        .map(|(middle, _)| middle.trim_end());
    std::iter::once(raw).chain(
        [after_first, middle]
            .into_iter()
            .flatten()
            .filter(|part| part.trim().chars().count() >= MIN_PART_CHARS),
    )
}

/// Whitespace runs collapsed to one space, trimmed (the key of a nominated value).
pub(super) fn collapse_space(value: &str) -> String {
    // Most values: a token without spaces, most often ASCII (read by bytes then).
    let spaced = if value.is_ascii() {
        value.bytes().any(|b| is_py_space(char::from(b)))
    } else {
        value.contains(is_py_space)
    };
    if !spaced {
        return value.to_owned();
    }
    value
        .split(is_py_space)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Byte spans of Python `\S+` runs.
pub(super) fn py_words(value: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in value.char_indices() {
        match (is_py_space(c), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, value.len()));
    }
    spans.into_iter()
}
