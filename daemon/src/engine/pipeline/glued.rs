//! Configured terms glued into file and directory names (`ReportSøren2024.md`,
//! `acmeInvoices/`): names join words without separators, so in code mode a path's
//! term is also found at a change of case or before a digit, where the reference's
//! guards (no letter or digit on either side) miss it. Paths only; strict and balanced
//! paths lose every such token to the path-token stage anyway.

use super::*;

/// Shortest term looked for glued: shorter ones (`AP`, `Kim`) sit inside too many
/// ordinary names.
const MIN_CHARS: usize = 4;

/// One case-insensitive alternation of the terms of each category.
pub(super) struct GluedTerms(Vec<(Category, regex::Regex)>);

impl GluedTerms {
    /// The matchers of `lists`, longest term first within each category. A category
    /// whose terms do not fit one regex (tens of thousands) is left to the reference's
    /// rule, which still finds every separated occurrence.
    pub(super) fn new<'a>(lists: impl IntoIterator<Item = (Category, Vec<&'a str>)>) -> GluedTerms {
        let mut out = Vec::new();
        for (category, mut terms) in lists {
            terms.retain(|t| t.trim().chars().count() >= MIN_CHARS);
            if terms.is_empty() {
                continue;
            }
            terms.sort_by_key(|t| std::cmp::Reverse(t.len()));
            let body = terms
                .iter()
                .map(|t| regex::escape(t.trim()))
                .collect::<Vec<_>>()
                .join("|");
            if let Ok(re) = regex::Regex::new(&format!("(?i){body}")) {
                out.push((category, re));
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
