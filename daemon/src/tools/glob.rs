//! Python `fnmatch.fnmatchcase` semantics for the `glob` arguments of search, retrieve
//! and bundle (matched against the raw root-relative POSIX path).
//!
//! `*` matches any run (including `/`), `?` any one character, `[seq]`/`[!seq]` a
//! character set with Python's exact range rules (a reversed range such as `z-a` is
//! dropped, a `-` first or last is literal), and an unclosed `[` is a literal. There is
//! no escaping. The whole name must match. Case-sensitive, as fnmatch is on POSIX.

/// A compiled fnmatch pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    tokens: Vec<Token>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Char(char),
    Any,
    Star,
    Set(CharSet),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum CharSet {
    /// A set Python's regex engine would reject (never matches; Python raises).
    Never,
    Class {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

impl CharSet {
    fn contains(&self, ch: char) -> bool {
        match self {
            CharSet::Never => false,
            CharSet::Class { negated, items } => {
                items.iter().any(|&(lo, hi)| lo <= ch && ch <= hi) != *negated
            }
        }
    }
}

impl Pattern {
    /// Compiles `pattern` the way `fnmatch.translate` reads it.
    pub fn new(pattern: &str) -> Pattern {
        let pat: Vec<char> = pattern.chars().collect();
        let n = pat.len();
        let mut tokens = Vec::new();
        let mut i = 0;
        while i < n {
            let c = pat[i];
            i += 1;
            match c {
                '*' => {
                    if tokens.last() != Some(&Token::Star) {
                        tokens.push(Token::Star);
                    }
                }
                '?' => tokens.push(Token::Any),
                '[' => {
                    let mut j = i;
                    if j < n && pat[j] == '!' {
                        j += 1;
                    }
                    if j < n && pat[j] == ']' {
                        j += 1;
                    }
                    while j < n && pat[j] != ']' {
                        j += 1;
                    }
                    if j >= n {
                        tokens.push(Token::Char('['));
                    } else {
                        tokens.push(Token::Set(translate_set(&pat, i, j)));
                        i = j + 1;
                    }
                }
                other => tokens.push(Token::Char(other)),
            }
        }
        Pattern { tokens }
    }

    /// Whether the whole of `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        let text: Vec<char> = name.chars().collect();
        let tokens = &self.tokens;
        let (mut t, mut p) = (0usize, 0usize);
        // Position after the last star and the text position it is currently matched to.
        let mut backtrack: Option<(usize, usize)> = None;
        while t < text.len() {
            let step = match tokens.get(p) {
                Some(Token::Star) => {
                    backtrack = Some((p + 1, t));
                    p += 1;
                    continue;
                }
                Some(Token::Char(c)) => *c == text[t],
                Some(Token::Any) => true,
                Some(Token::Set(set)) => set.contains(text[t]),
                None => false,
            };
            if step {
                t += 1;
                p += 1;
            } else if let Some((star_p, star_t)) = backtrack {
                // Let the last star absorb one more character and retry.
                backtrack = Some((star_p, star_t + 1));
                p = star_p;
                t = star_t + 1;
            } else {
                return false;
            }
        }
        tokens[p..].iter().all(|token| *token == Token::Star)
    }
}

/// Whether `name` matches any of `patterns`.
pub fn matches_any(patterns: &[Pattern], name: &str) -> bool {
    patterns.iter().any(|pattern| pattern.matches(name))
}

/// `fnmatch.fnmatchcase(name, pattern)`.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    Pattern::new(pattern).matches(name)
}

/// The set between `[` (exclusive, at `start`) and `]` (at `end`), following
/// `fnmatch.translate`'s chunking, then read as a Python regex character class.
fn translate_set(pat: &[char], start: usize, end: usize) -> CharSet {
    let stuff: Vec<char> = pat[start..end].to_vec();
    // Python escapes backslashes and (within range chunks) hyphens; we keep the
    // escaped-ness as a flag per character instead of building a regex string.
    let mut class: Vec<(char, bool)> = Vec::new(); // (char, is_range_operator)
    if !stuff.contains(&'-') {
        class.extend(stuff.iter().map(|&c| (c, false)));
    } else {
        let mut chunks: Vec<Vec<char>> = Vec::new();
        let mut i = start;
        let mut k = if pat[start] == '!' {
            start + 2
        } else {
            start + 1
        };
        loop {
            let found = (k..end).find(|&x| pat[x] == '-');
            let Some(dash) = found else { break };
            chunks.push(pat[i..dash].to_vec());
            i = dash + 1;
            k = dash + 3;
        }
        let chunk = pat[i..end].to_vec();
        if !chunk.is_empty() {
            chunks.push(chunk);
        } else if let Some(last) = chunks.last_mut() {
            last.push('-');
        }
        // Drop reversed ranges, as Python does before compiling.
        let mut k = chunks.len().saturating_sub(1);
        while k > 0 {
            let (Some(&prev_last), Some(&next_first)) = (chunks[k - 1].last(), chunks[k].first())
            else {
                // Python would raise IndexError here; such a pattern never matches.
                return CharSet::Never;
            };
            if prev_last > next_first {
                let mut merged = chunks[k - 1][..chunks[k - 1].len() - 1].to_vec();
                merged.extend_from_slice(&chunks[k][1..]);
                chunks[k - 1] = merged;
                chunks.remove(k);
            }
            k -= 1;
        }
        for (index, chunk) in chunks.iter().enumerate() {
            if index > 0 {
                class.push(('-', true));
            }
            class.extend(chunk.iter().map(|&c| (c, false)));
        }
    }
    if class.is_empty() {
        return CharSet::Never;
    }
    let negated = class[0] == ('!', false);
    if negated && class.len() == 1 {
        return CharSet::Class {
            negated: true,
            items: Vec::new(),
        };
    }
    let body = if negated { &class[1..] } else { &class[..] };
    let mut items = Vec::new();
    let mut x = 0;
    while x < body.len() {
        let lo = body[x].0;
        // Only chunk joiners are range operators; every other `-` was escaped by Python.
        if x + 1 < body.len() && body[x + 1].1 {
            // `lo - hi`: sre reads a range when the operator has a successor, and a
            // literal `lo` and `-` when the class ends right after it.
            match body.get(x + 2) {
                Some(&(hi, _)) => {
                    if lo > hi {
                        return CharSet::Never;
                    }
                    items.push((lo, hi));
                    x += 3;
                }
                None => {
                    items.push((lo, lo));
                    items.push(('-', '-'));
                    x += 2;
                }
            }
        } else {
            items.push((lo, lo));
            x += 1;
        }
    }
    CharSet::Class { negated, items }
}

#[cfg(test)]
mod tests {
    use super::fnmatch;

    // Expected values: Python 3.11 `fnmatch.fnmatchcase(name, pattern)`.
    #[test]
    fn stars_and_question_marks_cross_slashes() {
        assert!(fnmatch("docs/a/b.md", "*.md"));
        assert!(fnmatch("docs/a/b.md", "docs/*"));
        assert!(!fnmatch("docs/a/b.md", "*.txt"));
        assert!(fnmatch("a/b", "a?b"));
        assert!(fnmatch("", "*"));
        assert!(!fnmatch("", "?"));
        assert!(fnmatch("abcabc", "*abc"));
        assert!(fnmatch("mississippi", "*sip*i"));
        assert!(!fnmatch("Docs/x.md", "docs/*"));
    }

    #[test]
    fn character_sets_follow_python() {
        assert!(fnmatch("b", "[abc]"));
        assert!(!fnmatch("d", "[abc]"));
        assert!(fnmatch("d", "[!abc]"));
        assert!(fnmatch("]", "[]]"));
        assert!(fnmatch("x", "[!]]"));
        assert!(!fnmatch("]", "[!]]"));
        assert!(fnmatch("m", "[a-z]"));
        assert!(fnmatch("-", "[a-]"));
        assert!(fnmatch("-", "[-a]"));
        assert!(fnmatch("-", "[a-c-e]"));
        assert!(fnmatch("e", "[a-c-e]"));
        assert!(!fnmatch("d", "[a-c-e]"));
        // Reversed range dropped: `[z-a]` never matches, `[!z-a]` matches anything.
        assert!(!fnmatch("m", "[z-a]"));
        assert!(fnmatch("m", "[!z-a]"));
        // `[c-a-b]`: the reversed range collapses to the literal set {-, b}.
        assert!(fnmatch("-", "[c-a-b]"));
        assert!(fnmatch("b", "[c-a-b]"));
        assert!(!fnmatch("c", "[c-a-b]"));
        // Unclosed bracket is literal.
        assert!(fnmatch("[ab", "[ab"));
        assert!(fnmatch("\\", "[\\]"));
        assert!(fnmatch("^", "[^]"));
        assert!(!fnmatch("^", "[!^a]"));
        assert!(fnmatch("b", "[!^a]"));
    }
}
