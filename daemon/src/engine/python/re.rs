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
//!
//! Patterns that need more than that (proper-name runs, headings) are hand-written in
//! `names.rs`.

use crate::engine::python::text::{is_py_digit, is_py_word, is_regex_word};
use regex_automata::{Anchored, Input, meta};

/// Python's whitespace class `\s` (Unicode `White_Space` plus `\x1c`–`\x1f`).
pub const PY_SPACE: &str = r"[\s\x1C-\x1F]";

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
    /// `(?<!(?-i:[A-Za-z0-9]))`: ASCII letters and digits only, whatever the case flag.
    NotAsciiAlnum,
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
            Guard::NotAsciiAlnum => !c.is_ascii_alphanumeric(),
        }
    }
}

/// A pattern with Python `finditer` semantics.
#[derive(Clone, Debug)]
pub struct PyPattern {
    re: meta::Regex,
    guard: Guard,
    /// Capture groups whose end is the match end (first present wins); empty = group 0.
    end_groups: Vec<usize>,
    /// Whether the match needs capture groups at all.
    needs_captures: bool,
    /// The pattern is `(MAIN)(?:[^X]|\z)`: group 1 ends one character before the match
    /// unless the match reaches the end of the haystack, so captures (slow on large
    /// alternations) are only needed there.
    one_char_tail: bool,
    /// Where the span ends within the regex's match text, when the consumed look-ahead
    /// can be told from the text alone: no captures (whose caches grow with the
    /// pattern's size in every thread) are needed then.
    trim: Option<fn(&str) -> usize>,
    /// A condition on the span itself (a bound the regex leaves out, as counted
    /// repetitions make large automata); on failure the candidate is skipped.
    within: Option<fn(&str) -> bool>,
    /// A condition on the text after the match; on failure the candidate is skipped.
    /// Only used where Python could not find a shorter match at the same start.
    after: Option<fn(&str) -> bool>,
    /// The pattern uses `\b`, whose notion of a word character differs from Python's.
    word_boundary: bool,
    /// For a `\b` pattern, the bytes no match holds (tail included), `None` when there
    /// are none: see [`PyPattern::find_windowed`]. (Other patterns never make the lazy
    /// DFA give up.)
    barriers: Option<Box<[bool; 256]>>,
}

impl PyPattern {
    /// A pattern whose match is group 0.
    pub fn new(source: &str, guard: Guard) -> PyPattern {
        PyPattern {
            re: compile(source),
            guard,
            end_groups: Vec::new(),
            needs_captures: false,
            one_char_tail: false,
            trim: None,
            within: None,
            after: None,
            word_boundary: source.contains(r"\b"),
            barriers: window_barriers(source),
        }
    }

    /// A pattern that ends with a consumed look-ahead whose length `trim` tells from the
    /// match's text: the span is the match cut to `trim(match)` bytes. Equivalent to
    /// [`PyPattern::with_end_groups`] with the group the look-ahead follows, when `trim`
    /// is exact, without the captures.
    pub fn with_trimmed_lookahead(
        source: &str,
        guard: Guard,
        trim: fn(&str) -> usize,
    ) -> PyPattern {
        PyPattern {
            trim: Some(trim),
            ..PyPattern::new(source, guard)
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
            one_char_tail: false,
            trim: None,
            within: None,
            after: None,
            word_boundary: source.contains(r"\b"),
            barriers: window_barriers(source),
        }
    }

    /// A pattern of the shape `(MAIN)(?:[^X]|\z)` (a negative look-ahead on one
    /// character, written as a consuming alternative): the match is group 1.
    pub fn with_one_char_tail(source: &str, guard: Guard) -> PyPattern {
        PyPattern {
            one_char_tail: true,
            ..PyPattern::with_end_groups(source, guard, &[1])
        }
    }

    /// Adds a check on a match's span: a bound left out of the regex, as counted
    /// repetitions make large automata. Exact when, at each start, the regex without
    /// the bound either matches what the bounded one would, or matches a span the check
    /// refuses where the bounded one has no match; a refused candidate sends the search
    /// on to the next start, as the bounded one's failure would.
    pub fn with_span_check(mut self, within: fn(&str) -> bool) -> PyPattern {
        self.within = Some(within);
        self
    }

    /// Adds a check on the text following a match.
    pub fn with_after(mut self, after: fn(&str) -> bool) -> PyPattern {
        self.after = Some(after);
        self
    }

    /// The regex's leftmost-first match at or after `at` (exactly at `at` when
    /// `anchored`), as Python's span: the tail or end group applied, guards not yet.
    fn raw_match(&self, hay: &str, at: usize, anchored: bool) -> Option<(usize, usize)> {
        let mode = if anchored {
            Anchored::Yes
        } else {
            Anchored::No
        };
        let input = Input::new(hay).span(at..hay.len()).anchored(mode);
        if let Some(trim) = self.trim {
            let m = self.re.search(&input)?;
            return Some((m.start(), m.start() + trim(&hay[m.range()])));
        }
        if self.one_char_tail {
            let m = self.re.search(&input)?;
            // Before the end of the haystack the tail consumed exactly one character.
            if m.end() < hay.len() {
                let last = hay[..m.end()].chars().next_back().map_or(0, char::len_utf8);
                return Some((m.start(), m.end() - last));
            }
        }
        if self.needs_captures {
            let mut caps = self.re.create_captures();
            self.re.search_captures(&input, &mut caps);
            let whole = caps.get_match()?;
            let end = self
                .end_groups
                .iter()
                .find_map(|&g| caps.get_group(g).map(|m| m.end))
                .unwrap_or(whole.end());
            return Some((whole.start(), end));
        }
        self.re.search(&input).map(|m| (m.start(), m.end()))
    }

    /// Whether a candidate found by the regex is one Python reports (its guard, span
    /// and after checks hold).
    fn accepts(&self, hay: &str, (s, e): (usize, usize)) -> bool {
        self.guard.allows(hay[..s].chars().next_back())
            && self.within.is_none_or(|f| f(&hay[s..e]))
            && self.after.is_none_or(|f| f(&hay[e..]))
    }

    /// The next match at or after byte `start`, as Python would find it.
    pub fn find_at(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_with(hay, start, None)
    }

    /// [`PyPattern::find_at`]; with `cache`, searched in windows around non-ASCII
    /// characters ([`PyPattern::find_windowed`]).
    fn find_with(
        &self,
        hay: &str,
        start: usize,
        mut cache: Option<&mut FindCache>,
    ) -> Option<(usize, usize)> {
        let mut at = start;
        loop {
            if at > hay.len() {
                return None;
            }
            let (s, e) = match (&self.barriers, cache.as_deref_mut()) {
                (Some(barriers), Some(cache)) => self.find_windowed(hay, at, barriers, cache)?,
                _ => self.raw_match(hay, at, false)?,
            };
            if self.accepts(hay, (s, e)) {
                return Some((s, e));
            }
            // Python would try every later start; skip the ones the guard refuses anyway.
            at = s + hay[s..].chars().next().map_or(1, char::len_utf8);
            while at < hay.len() {
                let prev = hay[..at].chars().next_back();
                if self.guard.allows(prev) {
                    break;
                }
                at += hay[at..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }

    /// [`PyPattern::raw_match`] (unanchored) searched in windows. The lazy DFA gives up
    /// on a `\b` pattern at the first non-ASCII byte it reads, and the search then
    /// starts over in the NFA engines, which for a long text with one accented name in
    /// it ran a hundred times slower over everything up to the next match. So the
    /// search first covers the text up to the last barrier byte (one no match holds)
    /// before the next non-ASCII byte, and then only up to the first barrier at or
    /// after it, in haystacks cut there.
    ///
    /// Exactness: a match holds no barrier, so one that starts before a cut ends before
    /// the barrier just ahead of the cut; every look-around it makes is at a position it
    /// reaches, so it sees the same bytes in the cut haystack as in the whole. Matches
    /// that start after a cut are found in the next window, each window being searched
    /// only when none before it holds a match (leftmost first). Cuts after barriers are
    /// exact wherever they fall: where the non-ASCII bytes are only decides whether the
    /// windows help (so a stale [`FindCache::non_ascii`] cannot change a match).
    fn find_windowed(
        &self,
        hay: &str,
        mut at: usize,
        barriers: &[bool; 256],
        cache: &mut FindCache,
    ) -> Option<(usize, usize)> {
        let b = hay.as_bytes();
        loop {
            let q = cache.next_non_ascii(b, at);
            if q == b.len() {
                return self.raw_match(hay, at, false);
            }
            // Up to and with the last barrier before the non-ASCII byte, if any.
            if let Some(i) = b[at..q].iter().rposition(|&c| barriers[usize::from(c)]) {
                let cut = at + i + 1;
                if let Some(found) = self.raw_match(&hay[..cut], at, false) {
                    return Some(found);
                }
                at = cut;
            }
            // From there through the first barrier at or after it (a whole character).
            let Some(i) = b[q..].iter().position(|&c| barriers[usize::from(c)]) else {
                return self.raw_match(hay, at, false);
            };
            // A barrier may be a continuation byte: cut after its whole character.
            let cut = (q + i + 1..=b.len())
                .find(|&j| hay.is_char_boundary(j))
                .unwrap_or(b.len());
            if let Some(found) = self.raw_match(&hay[..cut], at, false) {
                return Some(found);
            }
            at = cut;
        }
    }

    /// The match Python would report starting exactly at `at`, if any. The search is
    /// anchored, so its cost is the length of the candidate, not of the haystack.
    pub fn match_at(&self, hay: &str, at: usize) -> Option<(usize, usize)> {
        if !self.guard.allows(hay[..at].chars().next_back()) {
            return None;
        }
        let found = self.raw_match(hay, at, true)?;
        self.accepts(hay, found).then_some(found)
    }
}

/// Python's IGNORECASE also equates `İ` (U+0130) and `ı` (U+0131) with `i`/`I`, which
/// Unicode simple case folding (used by `regex`) does not. For a case-insensitive
/// pattern, every character class that holds `i` or `I` gains both characters.
fn python_case_insensitive(source: &str) -> String {
    use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind};
    if !source.starts_with("(?i)") {
        return source.to_owned();
    }
    let Ok(hir) = regex_syntax::Parser::new().parse(source) else {
        return source.to_owned();
    };
    fn rewrite(hir: &Hir) -> Hir {
        match hir.kind() {
            HirKind::Class(Class::Unicode(cls)) => {
                let has_i = cls.ranges().iter().any(|r| {
                    (r.start()..=r.end()).contains(&'i') || (r.start()..=r.end()).contains(&'I')
                });
                if has_i {
                    let mut cls = cls.clone();
                    cls.union(&ClassUnicode::new([ClassUnicodeRange::new(
                        '\u{130}', '\u{131}',
                    )]));
                    Hir::class(Class::Unicode(cls))
                } else {
                    hir.clone()
                }
            }
            HirKind::Repetition(rep) => {
                let mut rep = rep.clone();
                rep.sub = Box::new(rewrite(&rep.sub));
                Hir::repetition(rep)
            }
            HirKind::Capture(cap) => {
                let mut cap = cap.clone();
                cap.sub = Box::new(rewrite(&cap.sub));
                Hir::capture(cap)
            }
            HirKind::Concat(subs) => Hir::concat(subs.iter().map(rewrite).collect()),
            HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(rewrite).collect()),
            _ => hir.clone(),
        }
    }
    rewrite(&hir).to_string()
}

/// [`PyPattern::barriers`]: only `\b` patterns make the lazy DFA give up.
fn window_barriers(source: &str) -> Option<Box<[bool; 256]>> {
    source
        .contains(r"\b")
        .then(|| barrier_bytes(source))
        .flatten()
}

/// The bytes no match of `source` can hold (look-around aside: it reads, it does not
/// hold), or `None` when every byte may occur. A character class holding a non-ASCII
/// character makes every byte of 0x80 and above possible.
fn barrier_bytes(source: &str) -> Option<Box<[bool; 256]>> {
    use regex_syntax::hir::{Class, Hir, HirKind};
    fn possible(hir: &Hir, bytes: &mut [bool; 256]) {
        let mut ascii_range = |lo: u32, hi: u32| {
            for c in lo..=hi.min(0x7f) {
                bytes[c as usize] = true;
            }
            if hi > 0x7f {
                bytes[0x80..].fill(true);
            }
        };
        match hir.kind() {
            HirKind::Empty | HirKind::Look(_) => {}
            HirKind::Literal(lit) => lit.0.iter().for_each(|&c| bytes[usize::from(c)] = true),
            HirKind::Class(Class::Unicode(cls)) => cls
                .ranges()
                .iter()
                .for_each(|r| ascii_range(u32::from(r.start()), u32::from(r.end()))),
            HirKind::Class(Class::Bytes(cls)) => cls
                .ranges()
                .iter()
                .for_each(|r| bytes[usize::from(r.start())..=usize::from(r.end())].fill(true)),
            HirKind::Repetition(rep) => possible(&rep.sub, bytes),
            HirKind::Capture(cap) => possible(&cap.sub, bytes),
            HirKind::Concat(subs) | HirKind::Alternation(subs) => {
                subs.iter().for_each(|h| possible(h, bytes))
            }
        }
    }
    let hir = regex_syntax::Parser::new()
        .parse(&python_case_insensitive(source))
        .ok()?;
    let mut bytes = [false; 256];
    possible(&hir, &mut bytes);
    let barriers = bytes.map(|b| !b);
    barriers.iter().any(|&b| b).then(|| Box::new(barriers))
}

/// Compiles on the meta regex directly, so that searches can be anchored (see
/// [`PyPattern::match_at`]), with room for large patterns (64 MiB of NFA).
///
/// The lazy DFA's cache is capped at 8 MiB. Each thread that searches with a pattern
/// keeps a cache of its own, which grows with the variety of text it has seen up to the
/// cap: at 64 MiB, one whole-root `retrieve` on a 106k-file corpus (which redacts every
/// path it cites) grew two caches to 64 MiB each and left the daemon at 640 MB; at 8 MiB
/// the same call adds little, and neither the engine bench nor the corpus's cold pass
/// measured slower (a full cache is cleared and refilled, which costs only on text
/// that keeps producing new states).
fn compile(source: &str) -> meta::Regex {
    let source = python_case_insensitive(source);
    meta::Regex::builder()
        .configure(
            meta::Config::new()
                .nfa_size_limit(Some(64 << 20))
                .hybrid_cache_capacity(8 << 20),
        )
        .build(&source)
        .unwrap_or_else(|e| panic!("built-in pattern failed to compile: {e}"))
}

/// Several patterns tried as one Python alternation: the leftmost match wins, ties go to
/// the earlier pattern (Python tries alternatives in order at each position).
#[derive(Clone, Debug)]
pub struct Alternation(pub Vec<PyPattern>);

impl Alternation {
    pub fn find_at(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_cached(hay, start, &mut FindCache::default())
    }

    /// As [`Alternation::find_at`], remembering each member's next match in `cache` so a
    /// member whose next match lies far ahead is not searched again for every match of
    /// another member (which would be quadratic on long texts).
    fn find_cached(
        &self,
        hay: &str,
        start: usize,
        cache: &mut FindCache,
    ) -> Option<(usize, usize)> {
        cache.slots.resize(self.0.len(), None);
        let mut best: Option<(usize, usize)> = None;
        for (p, slot) in self.0.iter().zip(cache.slots.iter_mut()) {
            let next = match *slot {
                Some(Some((s, e))) if s >= start => Some((s, e)),
                Some(None) => None,
                _ => {
                    let found = p.find_at(hay, start);
                    *slot = Some(found);
                    found
                }
            };
            if let Some((s, e)) = next
                && best.is_none_or(|(bs, _)| s < bs)
            {
                best = Some((s, e));
            }
        }
        best
    }
}

/// What one search over one haystack remembers between calls (see
/// [`Finder::find_from_cached`]): a substitution calls its finder once per match.
#[derive(Debug, Default)]
pub struct FindCache {
    /// Per-pattern memory: an alternation's next match per member, or a flag.
    pub slots: Vec<Option<Option<(usize, usize)>>>,
    /// The haystack with ASCII letters lowercased (`None` inside: unusable, the
    /// haystack holds a character IGNORECASE folds onto an ASCII letter). A text and
    /// its shadow share it: they differ only where neither holds an ASCII letter.
    pub ascii_lower: Option<Option<String>>,
    /// Every start of the gate literals of the search's [`LiteralGated`] in the
    /// haystack, ascending, found by an earlier pass over the text and moved through its
    /// rewrites since ([`Splicer::move_starts`]); starts of other words too are
    /// harmless (each candidate is checked). `None`: the gate searches.
    ///
    /// [`LiteralGated`]: crate::engine::stages::gate::LiteralGated
    pub literal_starts: Option<Vec<usize>>,
    /// `(from, q)`: the haystack's first non-ASCII byte at or after `from` is at `q`
    /// (its length or more when there is none), so it is for every position up to `q`
    /// too.
    pub non_ascii: Option<(usize, usize)>,
}

impl FindCache {
    /// The offset of the first non-ASCII byte of `b` at or after `at` (`b.len()` when
    /// none), remembered so that successive searches do not read the same ASCII again.
    fn next_non_ascii(&mut self, b: &[u8], at: usize) -> usize {
        if let Some((from, q)) = self.non_ascii
            && from <= at
            && at <= q
        {
            return q.min(b.len());
        }
        let q = b[at.min(b.len())..]
            .iter()
            .position(|&c| !c.is_ascii())
            .map_or(b.len(), |i| at + i);
        self.non_ascii = Some((at, q));
        q
    }
}

/// A finder that can also say what it matches starting exactly at a position.
pub trait MatchAt: Finder {
    /// The match reported when the search reaches `at`, if one starts there.
    fn match_at(&self, hay: &str, at: usize) -> Option<(usize, usize)>;
}

impl MatchAt for PyPattern {
    fn match_at(&self, hay: &str, at: usize) -> Option<(usize, usize)> {
        PyPattern::match_at(self, hay, at)
    }
}

/// At one start the earlier pattern wins, as in [`Alternation::find_at`].
impl MatchAt for Alternation {
    fn match_at(&self, hay: &str, at: usize) -> Option<(usize, usize)> {
        self.0.iter().find_map(|p| p.match_at(hay, at))
    }
}

/// Anything that finds successive Python-style matches.
pub trait Finder {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)>;

    /// As `find_from`, with per-search memory (see [`Alternation`]).
    fn find_from_cached(
        &self,
        hay: &str,
        start: usize,
        _cache: &mut FindCache,
    ) -> Option<(usize, usize)> {
        self.find_from(hay, start)
    }

    /// Whether matching depends on `\b` (and so needs the word-class shadow).
    fn uses_word_boundary(&self) -> bool {
        false
    }
}

impl Finder for PyPattern {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_at(hay, start)
    }

    fn find_from_cached(
        &self,
        hay: &str,
        start: usize,
        cache: &mut FindCache,
    ) -> Option<(usize, usize)> {
        self.find_with(hay, start, Some(cache))
    }

    fn uses_word_boundary(&self) -> bool {
        self.word_boundary
    }
}

impl Finder for Alternation {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_at(hay, start)
    }

    fn find_from_cached(
        &self,
        hay: &str,
        start: usize,
        cache: &mut FindCache,
    ) -> Option<(usize, usize)> {
        self.find_cached(hay, start, cache)
    }

    fn uses_word_boundary(&self) -> bool {
        self.0.iter().any(|p| p.word_boundary)
    }
}

/// `text` as the `\b` patterns should see it, byte offsets kept. Non-word, non-space
/// characters (punctuation, symbols, combining marks, the pipeline's private-use
/// markers) become `\x07` bytes and non-ASCII whitespace becomes `\x1c` bytes; a
/// character Python counts as a word character but `regex` does not (`²`) becomes a
/// non-ASCII letter of the same length; other letters and digits stay. Two things
/// follow: `\b` behaves exactly as Python's (whose word class differs from `regex`'s on
/// marks, `²`, connector punctuation), and the lazy DFA, which hands Unicode `\b` to
/// the slow NFA engines at the first non-ASCII byte, runs through the markers that
/// every text holds after its first redaction.
pub fn shadow(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_shadow(&mut out, text);
    out
}

/// Appends the [`shadow`] of `text` to `out`. A shadow is decided character by
/// character, so the shadow of a concatenation is the concatenation of shadows.
fn push_shadow(out: &mut String, text: &str) {
    let mut rest = text;
    while !rest.is_empty() {
        // Copy the ASCII run in one go; only non-ASCII characters need a decision.
        let ascii = ascii_prefix_len(rest.as_bytes());
        out.push_str(&rest[..ascii]);
        rest = &rest[ascii..];
        let Some(c) = rest.chars().next() else { break };
        rest = &rest[c.len_utf8()..];
        // Private-use characters (every marker is made of them) are neither word nor
        // space: decided without a table lookup.
        if ('\u{E000}'..='\u{F8FF}').contains(&c) {
            out.push_str("\x07\x07\x07");
        } else if is_py_word(c) {
            if is_regex_word(c) {
                out.push(c);
            } else {
                out.push(match c.len_utf8() {
                    2 => '\u{e9}',
                    3 => '\u{4e00}',
                    _ => '\u{20000}',
                });
            }
        } else {
            let stand_in = if crate::engine::python::text::is_py_space(c) {
                '\x1c'
            } else {
                '\x07'
            };
            for _ in 0..c.len_utf8() {
                out.push(stand_in);
            }
        }
    }
}

/// Length of the leading ASCII run of `b`, eight bytes at a time.
fn ascii_prefix_len(b: &[u8]) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while i + 8 <= b.len() {
        let word = u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"));
        if word & HIGH != 0 {
            return i + (word & HIGH).trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    i + b[i..]
        .iter()
        .position(|c| !c.is_ascii())
        .unwrap_or(b.len() - i)
}

/// Builds a rewritten copy of a text, replacement by replacement, and the copy's
/// [`shadow`] alongside when the source's is known: kept spans copy the old shadow and
/// only replacements are shadowed anew, so a stage that changes a few words does not
/// pay for shadowing the whole text again.
pub struct Splicer<'a> {
    src: &'a str,
    src_shadow: Option<&'a str>,
    out: Option<(String, Option<String>)>,
    last: usize,
    /// `(start, end, replacement length)` of each replacement, in order.
    edits: Vec<(usize, usize, usize)>,
    /// Every replacement so far was non-empty and held no ASCII byte (a marker).
    opaque: bool,
}

impl<'a> Splicer<'a> {
    /// `src_shadow` is the shadow of `src` (`src` itself when it is ASCII), if known.
    pub fn new(src: &'a str, src_shadow: Option<&'a str>) -> Splicer<'a> {
        debug_assert!(src_shadow.is_none_or(|h| h.len() == src.len()));
        Splicer {
            src,
            src_shadow,
            out: None,
            last: 0,
            edits: Vec::new(),
            opaque: true,
        }
    }

    /// The text being rewritten.
    pub fn source(&self) -> &'a str {
        self.src
    }

    /// Replaces `src[start..end]` (at or after the previous replacement) with `with`.
    pub fn replace(&mut self, start: usize, end: usize, with: &str) {
        let (src, src_shadow, last) = (self.src, self.src_shadow, self.last);
        let (out, out_shadow) = self.out.get_or_insert_with(|| {
            // Replacements (markers) are usually longer than what they replace.
            let capacity = src.len() + src.len() / 8 + 64;
            let shadow = src_shadow.map(|_| String::with_capacity(capacity));
            (String::with_capacity(capacity), shadow)
        });
        out.push_str(&src[last..start]);
        out.push_str(with);
        if let (Some(sh), Some(src_sh)) = (out_shadow.as_mut(), src_shadow) {
            sh.push_str(&src_sh[last..start]);
            push_shadow(sh, with);
        }
        self.last = end;
        self.edits.push((start, end, with.len()));
        self.opaque &= !with.is_empty() && !with.bytes().any(|b| b.is_ascii());
    }

    /// Moves `starts` (ascending offsets in the source where ASCII words occur) to the
    /// rewritten text: starts inside a replaced span are dropped, later ones shift.
    /// When every replacement was non-empty and held no ASCII (markers), no occurrence
    /// of an ASCII word in the rewritten text can reach into a replacement, so each lies
    /// in a kept piece and was listed before: the moved list misses none. Otherwise
    /// returns `false` and the list is unusable.
    pub fn move_starts(&self, starts: &mut Vec<usize>) -> bool {
        if !self.opaque {
            return false;
        }
        if self.edits.is_empty() {
            return true;
        }
        let (mut next, mut shift) = (0, 0isize);
        starts.retain_mut(|at| {
            // An insertion (empty span) at `at` goes before the word there.
            while let Some(&(start, end, len)) = self.edits.get(next)
                && end <= *at
            {
                shift += len as isize - (end - start) as isize;
                next += 1;
            }
            if self
                .edits
                .get(next)
                .is_some_and(|&(start, _, _)| start <= *at)
            {
                return false;
            }
            *at = at.checked_add_signed(shift).expect("a kept offset");
            true
        });
        true
    }

    /// The rewritten text and its shadow (when the source's was known); `None` when
    /// nothing was replaced.
    pub fn finish(self) -> Option<(String, Option<String>)> {
        let (mut out, mut out_shadow) = self.out?;
        out.push_str(&self.src[self.last..]);
        if let (Some(sh), Some(src_sh)) = (out_shadow.as_mut(), self.src_shadow) {
            sh.push_str(&src_sh[self.last..]);
        }
        Some((out, out_shadow))
    }
}

/// Python `pattern.sub(callback, text)`: replaces every match, left to right. Returns
/// `None` when nothing matched (so callers keep the text without copying). Patterns
/// with `\b` match on [`shadow`]`(text)` when the text is not ASCII.
pub fn substitute<F: Finder + ?Sized>(
    finder: &F,
    text: &str,
    mut replace: impl FnMut(&str) -> String,
) -> Option<String> {
    let shadow_text;
    let hay = if finder.uses_word_boundary() && !text.is_ascii() {
        shadow_text = shadow(text);
        shadow_text.as_str()
    } else {
        text
    };
    let mut splicer = Splicer::new(text, None);
    let mut cache = FindCache::default();
    substitute_into(finder, hay, &mut splicer, &mut cache, |_, m| replace(m));
    splicer.finish().map(|(text, _)| text)
}

/// As [`substitute`], searching `hay` (the splicer's source or its [`shadow`], same
/// offsets) and writing into `splicer`; `replace` gets each match's start and text.
/// `cache` starts empty, or holds what is known of `hay` already (its lowercased copy).
pub fn substitute_into<F: Finder + ?Sized>(
    finder: &F,
    hay: &str,
    splicer: &mut Splicer<'_>,
    cache: &mut FindCache,
    mut replace: impl FnMut(usize, &str) -> String,
) {
    let text = splicer.src;
    debug_assert_eq!(text.len(), hay.len());
    let mut pos = 0;
    while let Some((s, e)) = finder.find_from_cached(hay, pos, cache) {
        let with = replace(s, &text[s..e]);
        if with != text[s..e] {
            splicer.replace(s, e, &with);
        }
        pos = if e > s {
            e
        } else {
            // An empty match: step over one character, as Python does (the character
            // is kept by the next copy).
            match text[e..].chars().next() {
                Some(c) => e + c.len_utf8(),
                None => break,
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testgen::texts;

    /// Every successive match, as a substitution asks for them, with or without the
    /// search cache (and so with or without the windows).
    fn matches(p: &PyPattern, hay: &str, cached: bool) -> Vec<(usize, usize)> {
        let mut cache = FindCache::default();
        let (mut out, mut at) = (Vec::new(), 0);
        while let Some((s, e)) = if cached {
            p.find_from_cached(hay, at, &mut cache)
        } else {
            p.find_from(hay, at)
        } {
            out.push((s, e));
            at = if e > s {
                e
            } else {
                e + hay[e..].chars().next().map_or(1, char::len_utf8)
            };
            if at > hay.len() {
                break;
            }
        }
        out
    }

    #[test]
    fn windowed_search_finds_what_the_whole_search_finds() {
        let patterns = [
            // `é` (every non-ASCII byte) is a barrier, and so are space and `-`; a
            // window cut after `.` must not let `\b` see the end of the text there.
            PyPattern::new(r"\bfoo\.\b|\bfoo", Guard::None),
            PyPattern::new(
                &format!(r"\b(?:[A-Z][a-z]+{PY_SPACE}+){{0,2}}[A-Z][a-z]+{PY_SPACE}+(?:Inc|LLC)\b"),
                Guard::None,
            ),
            PyPattern::new(
                r"(?i)\b[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}\b",
                Guard::None,
            ),
            // A non-ASCII literal: only its own bytes are possible, so a barrier can be
            // a continuation byte (`è` shares its first byte with `é`).
            PyPattern::new(r"\bcaf[eé]\b", Guard::NotWord),
            // A consumed one-character tail; only `x` is a barrier.
            PyPattern::with_one_char_tail(r"(\b[a-w]{2,}\d)(?:[^x]|\z)", Guard::None),
        ];
        assert!(patterns.iter().all(|p| p.barriers.is_some()));
        let pieces = [
            "foo", ".", "é", "è", "café", "Acme", " ", "\n", "Inc", "LLC", "Ltd", "ß", "名",
            "a@b.io", "x@", "-", "ab1", "x", "Jörg", ",", "\u{2003}", "\u{E000}",
        ];
        let mut found = 0;
        for text in texts(&pieces, 3000, 14, 29) {
            let hay = shadow(&text);
            for p in &patterns {
                let want = matches(p, &hay, false);
                assert_eq!(matches(p, &hay, true), want, "{hay:?} with {:?}", p.re);
                found += want.len();
            }
        }
        assert!(found > 1000, "the texts hold matches: {found}");
    }

    #[test]
    fn barriers_are_the_bytes_no_match_holds() {
        let b = barrier_bytes(r"\b[a-c]+\.").expect("barriers");
        assert!(!b[usize::from(b'a')] && !b[usize::from(b'c')] && !b[usize::from(b'.')]);
        assert!(b[usize::from(b'd')] && b[usize::from(b' ')] && b[0xC3]);
        // A class with a non-ASCII character: every byte from 0x80 on may occur.
        let b = barrier_bytes(r"\b[a-cé]+").expect("barriers");
        assert!((0x80..=0xFF).all(|c| !b[c]) && b[usize::from(b'd')]);
        // Everything may occur: no barriers.
        assert!(barrier_bytes(r"(?s).+").is_none());
    }
}
