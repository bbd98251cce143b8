//! The configured terms (clients, organisations, people, sensitive terms and their
//! aliases) compiled into the reference's one alternation per category.

use super::*;

/// Python `re.escape(token)` length: which characters it escapes decides the order of
/// equally long alternatives, so the reference's ordering is reproduced exactly.
pub(super) fn py_escape_len(token: &str) -> usize {
    token
        .chars()
        .map(|c| {
            if "()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c".contains(c) {
                2
            } else {
                1
            }
        })
        .sum()
}

pub(super) fn is_term_separator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '_' | '-')
}

/// `compile_terms_pattern`: one case-insensitive alternation of terms whose words match
/// across any run of space, tab, `_` or `-`, longest pattern first, guarded by ASCII
/// letters/digits on both sides; with the first word of every term (every match starts
/// with one, for a [`LiteralGated`] scan).
pub(super) fn compile_terms<'a>(
    terms: impl IntoIterator<Item = &'a str>,
) -> Option<(PyPattern, Vec<&'a str>)> {
    let mut seen = HashSet::new();
    let mut parts: Vec<(usize, String)> = Vec::new();
    let mut first_words: Vec<&str> = Vec::new();
    for term in terms {
        let cleaned = term.trim_matches(is_py_space);
        if cleaned.is_empty() {
            continue;
        }
        let tokens: Vec<&str> = cleaned
            .split(is_term_separator)
            .filter(|t| !t.is_empty())
            .collect();
        let key = placeholder::casefold(&tokens.join(" "));
        // Python's key keeps a leading/trailing separator run as a space.
        let key = format!(
            "{}{}{}",
            if cleaned.starts_with(is_term_separator) {
                " "
            } else {
                ""
            },
            key,
            if cleaned.ends_with(is_term_separator) && !tokens.is_empty() {
                " "
            } else {
                ""
            }
        );
        if !seen.insert(key) || tokens.is_empty() {
            continue;
        }
        first_words.push(tokens[0]);
        let py_len =
            tokens.iter().map(|t| py_escape_len(t)).sum::<usize>() + (tokens.len() - 1) * 8;
        let source = tokens
            .iter()
            .map(|t| regex::escape(t))
            .collect::<Vec<_>>()
            .join(r"[ \t_-]+");
        parts.push((py_len, source));
    }
    if parts.is_empty() {
        return None;
    }
    parts.sort_by_key(|p| std::cmp::Reverse(p.0));
    let body = parts
        .iter()
        .map(|(_, p)| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    let pattern = PyPattern::with_one_char_tail(
        &format!(r"(?i)({body})(?-i:[^A-Za-z0-9\x{{130}}\x{{131}}\x{{17F}}\x{{212A}}]|\z)"),
        Guard::NotAlnumCi,
    );
    Some((pattern, first_words))
}
