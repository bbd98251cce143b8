//! Configured terms glued into file and directory names (`ReportSøren2024.md`,
//! `acmeInvoices/`, `JaneDoe.md`, `ReportDoe2024.md`): names join words without
//! separators, so in code mode a path's term is also found at a change of case or
//! before a digit, where the reference's guards (no letter or digit on either side)
//! miss it, and a term of several words also with its words joined. Paths only; strict
//! and balanced paths lose every such token to the path-token stage anyway.

use super::*;

/// Shortest term looked for glued in any case; shorter ones (`AP`, `Kim`) sit inside too
/// many ordinary names.
const MIN_CHARS: usize = 4;

/// Terms of this many characters are looked for glued only as written capitalized
/// (`Doe` in `ReportDoe2024.md`, not `doe` or `DOE`): a capital after a lower-case
/// letter, or a word's start, is how a name joins others in a file name.
const SHORT_CHARS: usize = 3;

/// Per category, the alternations of its terms: case-insensitive for terms of
/// [`MIN_CHARS`] or more (those of several words, then single words), case-sensitive
/// for capitalized ones of [`SHORT_CHARS`].
pub(super) struct GluedTerms(Vec<(Category, regex::Regex)>);

impl GluedTerms {
    /// The matchers of `lists`, longest term first within each category. The words of
    /// a term of several words may be joined by nothing or by `_`, `-`, `.` or blanks
    /// (`JaneDoe`, `acme-corp`). A category whose terms do not fit one regex (tens of
    /// thousands) is left to the reference's rule, which still finds every separated
    /// occurrence.
    pub(super) fn new<'a>(lists: impl IntoIterator<Item = (Category, Vec<&'a str>)>) -> GluedTerms {
        let mut out = Vec::new();
        for (category, mut terms) in lists {
            terms.sort_by_key(|t| std::cmp::Reverse(t.trim().len()));
            let long = terms
                .iter()
                .map(|t| t.trim())
                .filter(|t| t.chars().count() >= MIN_CHARS);
            // Several words first, then single ones: each alternation finds one match
            // per start, so `Jane Doe` failing in `JaneDoesIt` must not hide `Jane`.
            let several: Vec<String> = long
                .clone()
                .filter(|t| t.split_whitespace().nth(1).is_some())
                .map(|t| {
                    t.split_whitespace()
                        .map(regex::escape)
                        .collect::<Vec<_>>()
                        .join(r"[\s._\-]*")
                })
                .collect();
            let single: Vec<String> = long
                .filter(|t| t.split_whitespace().nth(1).is_none())
                .map(regex::escape)
                .collect();
            let short: Vec<String> = terms
                .iter()
                .map(|t| t.trim())
                .filter(|t| t.chars().count() == SHORT_CHARS && is_capitalized_word(t))
                .map(regex::escape)
                .collect();
            for (alternatives, flags) in [(several, "(?i)"), (single, "(?i)"), (short, "")] {
                if alternatives.is_empty() {
                    continue;
                }
                if let Ok(re) = regex::Regex::new(&format!("{flags}(?:{})", alternatives.join("|")))
                {
                    out.push((category, re));
                }
            }
        }
        GluedTerms(out)
    }

    /// `text` with every glued occurrence outside a placeholder replaced by `redact`;
    /// `None` when there is none.
    pub(super) fn apply(
        &self,
        text: &str,
        mut redact: impl FnMut(Category, &str) -> String,
    ) -> Option<String> {
        let mut spans: Vec<(usize, usize, Category)> = Vec::new();
        let placeholders = placeholder_spans(text);
        for (category, re) in &self.0 {
            for m in re.find_iter(text) {
                let (s, e) = (m.start(), m.end());
                let free = !placeholders.iter().any(|&(ps, pe)| s < pe && ps < e)
                    && !spans.iter().any(|&(a, b, _)| s < b && a < e);
                if free && glued_boundaries(text, s, e) {
                    spans.push((s, e, *category));
                }
            }
        }
        if spans.is_empty() {
            return None;
        }
        spans.sort_by_key(|&(s, _, _)| s);
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (s, e, category) in spans {
            out.push_str(&text[at..s]);
            out.push_str(&redact(category, &text[s..e]));
            at = e;
        }
        out.push_str(&text[at..]);
        Some(out)
    }
}

/// A capital letter, then lower-case letters only (`Doe`, `Ødegård`).
fn is_capitalized_word(term: &str) -> bool {
    let mut chars = term.chars();
    chars.next().is_some_and(char::is_uppercase) && chars.all(char::is_lowercase)
}

/// Whether `text[s..e]` stands as a word of a name: at each end, either no letter or
/// digit, or a change from a lower-case letter or digit to an upper-case letter
/// (`ReportSøren`, `acmeInvoices`), or (after it) a digit (`Søren2024`).
fn glued_boundaries(text: &str, s: usize, e: usize) -> bool {
    let first = text[s..].chars().next();
    let last = text[..e].chars().next_back();
    let before = text[..s].chars().next_back();
    let after = text[e..].chars().next();
    let left = match before {
        None => true,
        Some(p) if !p.is_alphanumeric() => true,
        Some(p) => (p.is_lowercase() || p.is_numeric()) && first.is_some_and(char::is_uppercase),
    };
    let right = match after {
        None => true,
        Some(n) if !n.is_alphabetic() => true,
        Some(n) => n.is_uppercase() && last.is_some_and(|l| !l.is_uppercase()),
    };
    left && right
}

/// The `[CATEGORY_…]` placeholders already in `text`.
fn placeholder_spans(text: &str) -> Vec<(usize, usize)> {
    static PLACEHOLDER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\[[A-Z]+_[0-9a-f]{32}[^\]]*\]").expect("static regex")
    });
    PLACEHOLDER
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect()
}
