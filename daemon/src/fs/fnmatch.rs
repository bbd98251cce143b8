//! Python `fnmatch` glob semantics, for exclusion and never-serve patterns (spec 6.2).
//!
//! The reference matches config and built-in globs with `fnmatch.fnmatch` (case-sensitive
//! on POSIX), where `*` and `?` also match `/`, `[seq]` / `[!seq]` are character sets
//! with ranges, and there is no escaping. A pattern is compiled once into single-character
//! tokens and `*`; matching is the classic linear-backtracking wildcard walk, which gives
//! the same answers as Python's translated regex (its interior `*` segments are atomic and
//! minimal, and every other token consumes exactly one character).

/// One compiled glob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    tokens: Vec<Token>,
    /// The same pattern as a plain string test when it has one of the common shapes
    /// (`*.pem`, `.env`, `.env*`): every path of a walk is checked against every
    /// exclusion glob, and these answer without the token walk.
    shape: Shape,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    /// Only literal characters: the text must equal them.
    Exact(String),
    /// `*` then literals: the text must end with them (`*` also matches `/`).
    Suffix(String),
    /// Literals then `*`: the text must start with them.
    Prefix(String),
    /// Anything else: the token walk.
    General,
}

fn shape_of(tokens: &[Token]) -> Shape {
    let literal = |ts: &[Token]| -> Option<String> {
        ts.iter()
            .map(|t| match t {
                Token::Literal(c) => Some(*c),
                _ => None,
            })
            .collect()
    };
    match tokens {
        [Token::Star, rest @ ..] if !rest.is_empty() => {
            literal(rest).map_or(Shape::General, Shape::Suffix)
        }
        [rest @ .., Token::Star] if !rest.is_empty() => {
            literal(rest).map_or(Shape::General, Shape::Prefix)
        }
        _ => literal(tokens).map_or(Shape::General, Shape::Exact),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// `*`: any run of characters, `/` included.
    Star,
    /// `?` or a negated empty set: any one character.
    Any,
    /// An empty set: matches nothing.
    Never,
    Literal(char),
    Set {
        negated: bool,
        items: Vec<(char, char)>,
    },
}

impl Pattern {
    /// Compiles a glob exactly as Python's `fnmatch.translate` reads it.
    pub fn new(pattern: &str) -> Pattern {
        let pat: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let n = pat.len();
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
                        tokens.push(Token::Literal('['));
                    } else {
                        tokens.push(set_token(&pat, i, j));
                        i = j + 1;
                    }
                }
                other => tokens.push(Token::Literal(other)),
            }
        }
        let shape = shape_of(&tokens);
        Pattern { tokens, shape }
    }

    /// Whether the whole of `text` matches (Python `fnmatch.fnmatchcase`).
    pub fn matches(&self, text: &str) -> bool {
        match &self.shape {
            Shape::Exact(lit) => return text == lit,
            Shape::Suffix(lit) => return text.ends_with(lit.as_str()),
            Shape::Prefix(lit) => return text.starts_with(lit.as_str()),
            Shape::General => {}
        }
        let tokens = &self.tokens;
        // Byte positions into `text`, always on char boundaries.
        let (mut t, mut s) = (0usize, 0usize);
        // Token index after the last `*` seen, and where in `text` its match ends so far.
        let mut backtrack: Option<(usize, usize)> = None;
        while s < text.len() {
            let ch = text[s..].chars().next().unwrap_or_default();
            if t < tokens.len() {
                match &tokens[t] {
                    Token::Star => {
                        backtrack = Some((t + 1, s));
                        t += 1;
                        continue;
                    }
                    token if token_matches(token, ch) => {
                        t += 1;
                        s += ch.len_utf8();
                        continue;
                    }
                    _ => {}
                }
            }
            match backtrack {
                Some((after_star, covered)) => {
                    let step = text[covered..].chars().next().map_or(1, char::len_utf8);
                    t = after_star;
                    s = covered + step;
                    backtrack = Some((after_star, covered + step));
                }
                None => return false,
            }
        }
        tokens[t..].iter().all(|token| *token == Token::Star)
    }
}

fn token_matches(token: &Token, ch: char) -> bool {
    match token {
        Token::Star => false,
        Token::Any => true,
        Token::Never => false,
        Token::Literal(c) => *c == ch,
        Token::Set { negated, items } => {
            items.iter().any(|(lo, hi)| *lo <= ch && ch <= *hi) != *negated
        }
    }
}

/// Builds the set for `pat[i..j]` (the text between `[` and `]`), following the chunking,
/// empty-range removal and escaping Python applies before handing the set to `re`.
fn set_token(pat: &[char], start: usize, j: usize) -> Token {
    // Python builds the regex set body as a string; each element here is one character
    // of that body, with `escaped` marking a backslash-escaped (literal) character.
    let mut body: Vec<(char, bool)> = Vec::new();
    let stuff = &pat[start..j];
    if !stuff.contains(&'-') {
        body.extend(stuff.iter().map(|&c| (c, c == '\\')));
    } else {
        let mut chunks: Vec<Vec<char>> = Vec::new();
        let mut i = start;
        let mut k = if pat[start] == '!' {
            start + 2
        } else {
            start + 1
        };
        loop {
            let found = if k < j {
                pat[k..j].iter().position(|&c| c == '-').map(|p| p + k)
            } else {
                None
            };
            let Some(dash) = found else { break };
            chunks.push(pat[i..dash].to_vec());
            i = dash + 1;
            k = dash + 3;
        }
        let last = pat[i..j].to_vec();
        if last.is_empty() {
            if let Some(prev) = chunks.last_mut() {
                prev.push('-');
            }
        } else {
            chunks.push(last);
        }
        // Remove empty (reversed) ranges, from the end, as Python does.
        let mut k = chunks.len();
        while k > 1 {
            k -= 1;
            let (Some(&prev_last), Some(&next_first)) = (chunks[k - 1].last(), chunks[k].first())
            else {
                // Python would raise here (an empty chunk); such a pattern never matches.
                return Token::Never;
            };
            if prev_last > next_first {
                let mut merged = chunks[k - 1][..chunks[k - 1].len() - 1].to_vec();
                merged.extend_from_slice(&chunks[k][1..]);
                chunks[k - 1] = merged;
                chunks.remove(k);
            }
        }
        for (index, chunk) in chunks.iter().enumerate() {
            if index > 0 {
                body.push(('-', false));
            }
            // Backslashes and literal hyphens are escaped in the body.
            body.extend(chunk.iter().map(|&c| (c, c == '\\' || c == '-')));
        }
    }
    // `&`, `~` and `|` are escaped too; an escaped character is always a literal.
    for item in body.iter_mut() {
        if matches!(item.0, '&' | '~' | '|') {
            item.1 = true;
        }
    }
    if body.is_empty() {
        return Token::Never;
    }
    if body.len() == 1 && body[0] == ('!', false) {
        return Token::Any;
    }
    let mut negated = false;
    if body[0] == ('!', false) {
        negated = true;
        body.remove(0);
    } else if matches!(body[0].0, '^' | '[') {
        body[0].1 = true;
    }
    // Parse the body as `re` parses a set: `a-b` is a range unless the `-` is escaped or
    // ends the set.
    let mut items = Vec::new();
    let mut p = 0;
    while p < body.len() {
        let lo = body[p].0;
        p += 1;
        if p < body.len() && body[p] == ('-', false) {
            if p + 1 >= body.len() {
                items.push((lo, lo));
                items.push(('-', '-'));
                break;
            }
            let hi = body[p + 1].0;
            if hi < lo {
                // `re` rejects a reversed range; Python's fnmatch would raise.
                return Token::Never;
            }
            items.push((lo, hi));
            p += 2;
        } else {
            items.push((lo, lo));
        }
    }
    Token::Set { negated, items }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn star_and_question_mark_cross_slashes() {
        assert!(Pattern::new("*.pem").matches("certs/server.pem"));
        assert!(Pattern::new("a?b").matches("a/b"));
        assert!(!Pattern::new(".env").matches("x/.env"));
        assert!(Pattern::new(".env.*").matches(".env.local"));
    }

    #[test]
    fn fast_shapes_answer_as_the_token_walk() {
        let patterns = [
            "*.pem", ".env", ".env.*", "*", "**", "a*b", "*.[ch]", "[!a]*", "?x", "", "*/x",
        ];
        let texts = [
            "",
            "x",
            "a/x",
            ".env",
            ".env.local",
            "x/.env",
            "k.pem",
            "a/b.pem",
            ".pem",
            "ab",
            "a/b",
            "f.c",
            "f.h",
            "bx",
            "é.pem",
            "*.pem",
        ];
        for p in patterns {
            let fast = Pattern::new(p);
            let slow = Pattern {
                shape: super::Shape::General,
                ..fast.clone()
            };
            for t in texts {
                assert_eq!(fast.matches(t), slow.matches(t), "{p:?} on {t:?}");
            }
        }
    }
}
