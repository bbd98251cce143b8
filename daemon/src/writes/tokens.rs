//! The tokens rehydration replaces (placeholders and opaque path references) and the
//! single-pass substitution itself (spec 9.1 steps 4 and 6).
//!
//! One pass, left to right, no cascading: a restored value that happens to look like a
//! placeholder is never replaced again. A token missing from the map stays as it is and
//! is reported by [`unresolved`].

use crate::engine::placeholder::{PLACEHOLDER_RE, placeholder_pattern_source};
use regex::Regex;
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

/// `@p_<12hex>` or `redctx://p_<12hex>`.
const OPAQUE_REF: &str = r"(?:@|redctx://)p_[0-9a-f]{12}";

static OPAQUE_REF_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(OPAQUE_REF).expect("opaque reference pattern compiles"));

/// A placeholder or an opaque reference, placeholders tried first at each position.
static TOKEN_RE: LazyLock<Regex> = LazyLock::new(|| {
    let placeholder = placeholder_pattern_source().replace("[0-9]{2}", r"\d{2}");
    Regex::new(&format!("(?:{placeholder}|{OPAQUE_REF})")).expect("token pattern compiles")
});

/// Every token of `text`, in order (repeats included).
pub fn tokens(text: &str) -> impl Iterator<Item = &str> {
    TOKEN_RE.find_iter(text).map(|m| m.as_str())
}

/// Whether `token` is an opaque path reference (else a placeholder).
pub fn is_path_ref(token: &str) -> bool {
    token.starts_with('@') || token.starts_with("redctx://")
}

/// `text` with every token found in `map` replaced, and how many were.
pub fn rehydrate(text: &str, map: &HashMap<String, String>) -> (String, u64) {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut count = 0;
    for m in TOKEN_RE.find_iter(text) {
        if let Some(raw) = map.get(m.as_str()) {
            out.push_str(&text[last..m.start()]);
            out.push_str(raw);
            last = m.end();
            count += 1;
        }
    }
    out.push_str(&text[last..]);
    (out, count)
}

/// The distinct tokens left in a rehydrated `text`, sorted.
pub fn unresolved(text: &str) -> Vec<String> {
    let found: BTreeSet<&str> = PLACEHOLDER_RE
        .find_iter(text)
        .chain(OPAQUE_REF_RE.find_iter(text))
        .map(|m| m.as_str())
        .collect();
    found.into_iter().map(str::to_owned).collect()
}

/// `Unresolved redaction token(s) in <field>: <up to 10>[, and N more].` The tokens are
/// placeholder- or id-shaped by construction, never free text.
pub fn unresolved_message(field: &str, tokens: &[String]) -> String {
    let shown = tokens[..tokens.len().min(10)].join(", ");
    let more = match tokens.len() {
        n if n > 10 => format!(", and {} more", n - 10),
        _ => String::new(),
    };
    format!("Unresolved redaction token(s) in {field}: {shown}{more}.")
}

/// The raw values a rehydration of `text` with `map` restores: (from placeholders, from
/// path references). The round-trip check probes for them.
pub fn applied_values(text: &str, map: &HashMap<String, String>) -> (Vec<String>, Vec<String>) {
    let distinct = |re: &Regex| -> BTreeSet<String> {
        re.find_iter(text).map(|m| m.as_str().to_owned()).collect()
    };
    let lookup = |set: BTreeSet<String>| -> Vec<String> {
        set.iter().filter_map(|t| map.get(t).cloned()).collect()
    };
    (
        lookup(distinct(&PLACEHOLDER_RE)),
        lookup(distinct(&OPAQUE_REF_RE)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "[PERSON_0123456789abcdef0123456789abcdef]";
    const Q: &str = "[CLIENT_0123456789abcdef0123456789abcdef.01234567]";

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn one_pass_without_cascading() {
        let m = map(&[(P, Q), (Q, "Acme"), ("@p_0123456789ab", "docs/a.md")]);
        let (out, n) = rehydrate(&format!("{P} and {Q} see @p_0123456789ab."), &m);
        assert_eq!(out, format!("{Q} and Acme see docs/a.md."));
        assert_eq!(n, 3);
        assert_eq!(unresolved(&out), vec![Q.to_owned()]);
    }

    #[test]
    fn unknown_tokens_stay_and_are_listed_sorted() {
        let text = "[PERSON_deadbeef] redctx://p_000000000000 [PERSON_deadbeef] [X_1]";
        let (out, n) = rehydrate(text, &HashMap::new());
        assert_eq!((out.as_str(), n), (text, 0));
        assert_eq!(
            unresolved(text),
            vec!["[PERSON_deadbeef]", "redctx://p_000000000000"]
        );
    }

    #[test]
    fn message_shows_ten_then_counts_the_rest() {
        let tokens: Vec<String> = (0..12).map(|i| format!("[PERSON_{i:02}]")).collect();
        let msg = unresolved_message("text", &tokens);
        assert!(msg.starts_with("Unresolved redaction token(s) in text: [PERSON_00], "));
        assert!(msg.ends_with("[PERSON_09], and 2 more."));
        assert_eq!(
            unresolved_message("target_path", &tokens[..1]),
            "Unresolved redaction token(s) in target_path: [PERSON_00]."
        );
    }
}
