//! Plugged detectors (spec 5.12): detectors an operator adds at launch, whose findings
//! are redacted after every baseline stage. A policy holds each as data
//! ([`PluggedDef`]); the engine compiles it ([`Plugged`]) and turns its spans over the
//! original text into [`Nominations`], which the pipeline applies. No IO here: the
//! policy loader reads the rules files, and an external detector (a process, see
//! `crate::detectors`) reaches the engine as a [`SpanSource`] the daemon provides.

pub mod patterns;

use crate::engine::placeholder::{self, Category};
use crate::engine::python::text::is_py_space;
use patterns::PatternRule;
use regex::Regex;
use std::collections::HashMap;
use std::sync::Arc;

/// Spans one detector may return for one text (more fail closed).
pub const MAX_DETECTOR_SPANS: usize = 20_000;
/// Distinct nominated values per text, all detectors together (more fail closed).
pub const MAX_NOMINATED_VALUES: usize = 2_000;
/// A longer value is redacted where it was found only (positional).
pub const MAX_VALUE_CHARS: usize = 256;
/// A value of more whitespace-separated tokens is positional only.
pub const MAX_VALUE_TOKENS: usize = 16;
/// Summed characters of the alternation's values; the longest leave first.
pub const MAX_PATTERN_CHARS: usize = 32_768;

/// Why a text is refused; the reference's fixed, input-free sentences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PluggedError {
    #[error("Detector failed.")]
    Failed,
    #[error("Detector returned an invalid span.")]
    InvalidSpan,
    #[error("Detector returned an unsupported category.")]
    UnsupportedCategory,
    #[error("Detector nomination limit exceeded.")]
    Limit,
}

/// A plugged detector as a policy holds it: validated data, compared and hashed by
/// value, so its rules are part of the policy fingerprint.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PluggedDef {
    pub name: String,
    pub version: String,
    pub kind: PluggedKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PluggedKind {
    Patterns(Vec<PatternRule>),
    /// A detector outside the daemon (`--detector exec=PROGRAM`).
    External(External),
}

/// One finding of an external detector: half-open code-point offsets into the text it
/// was given, as the protocol carries them (checked by the engine, not trusted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CharSpan {
    pub start: u64,
    pub end: u64,
    pub category: Category,
}

/// Where an external detector's findings come from: the daemon's process client,
/// behind its findings cache. Called once per text; any failure is one of the fixed
/// sentences (a timeout or crash is [`PluggedError::Failed`]).
pub trait SpanSource: Send + Sync + std::fmt::Debug {
    fn spans(&self, text: &str) -> Result<Vec<CharSpan>, PluggedError>;
}

/// An external detector as a policy holds it: its argument (the program) identifies
/// it with the definition's name and version; the source is how to reach it, and
/// does not take part in comparisons (two loads of one program compare equal).
#[derive(Clone, Debug)]
pub struct External {
    pub argument: String,
    pub source: Arc<dyn SpanSource>,
}

impl PartialEq for External {
    fn eq(&self, other: &External) -> bool {
        self.argument == other.argument
    }
}

impl Eq for External {}

impl std::hash::Hash for External {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.argument.hash(state);
    }
}

/// A compiled plugged detector.
pub(crate) enum Plugged {
    Rules(Vec<(Category, Regex)>),
    External(Arc<dyn SpanSource>),
}

/// One finding: byte offsets into the text the detector was given (char boundaries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
    pub category: Category,
}

impl Plugged {
    /// `None` when a rule does not compile (it was validated, so never in practice).
    pub fn compile(def: &PluggedDef) -> Option<Plugged> {
        let rules = match &def.kind {
            PluggedKind::Patterns(rules) => rules,
            PluggedKind::External(e) => return Some(Plugged::External(e.source.clone())),
        };
        let rules = rules
            .iter()
            .map(|r| Some((r.category, r.compile()?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Plugged::Rules(rules))
    }

    /// Every non-empty match of every rule, rule by rule; or an external detector's
    /// spans, checked and turned into byte offsets.
    pub fn detect(&self, text: &str) -> Result<Vec<Span>, PluggedError> {
        let rules = match self {
            Plugged::Rules(rules) => rules,
            Plugged::External(source) => return byte_spans(text, &source.spans(text)?),
        };
        let mut spans = Vec::new();
        for (category, re) in rules {
            for m in re.find_iter(text).filter(|m| !m.is_empty()) {
                if spans.len() == MAX_DETECTOR_SPANS {
                    return Err(PluggedError::Limit);
                }
                spans.push(Span {
                    start: m.start(),
                    end: m.end(),
                    category: *category,
                });
            }
        }
        Ok(spans)
    }
}

/// An external detector's code-point spans as byte spans of `text`: more than
/// [`MAX_DETECTOR_SPANS`] fail closed, and so does any span that is empty, reversed or
/// past the end (spec 5.12: `0 <= start < end <= len(text)`).
pub(crate) fn byte_spans(text: &str, spans: &[CharSpan]) -> Result<Vec<Span>, PluggedError> {
    if spans.len() > MAX_DETECTOR_SPANS {
        return Err(PluggedError::Limit);
    }
    if spans.iter().any(|s| s.start >= s.end) {
        return Err(PluggedError::InvalidSpan);
    }
    // Byte offset of every code point wanted, found in one pass over the text.
    let mut wanted: Vec<u64> = spans.iter().flat_map(|s| [s.start, s.end]).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut at: HashMap<u64, usize> = HashMap::with_capacity(wanted.len());
    let mut next = wanted.iter().peekable();
    let boundaries = text
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(text.len()));
    for (chars, byte) in boundaries.enumerate() {
        while next.peek().is_some_and(|&&w| w == chars as u64) {
            at.insert(chars as u64, byte);
            next.next();
        }
        if next.peek().is_none() {
            break;
        }
    }
    spans
        .iter()
        .map(|s| match (at.get(&s.start), at.get(&s.end)) {
            (Some(&start), Some(&end)) => Ok(Span {
                start,
                end,
                category: s.category,
            }),
            _ => Err(PluggedError::InvalidSpan),
        })
        .collect()
}

/// What the plugged detectors found in one text.
#[derive(Debug, Default)]
pub(crate) struct Nominations {
    /// Alternation values (whitespace collapsed, case kept), longest first.
    pub values: Vec<String>,
    /// Category and rank of a value by its casefolded form (first nomination wins).
    pub categories: HashMap<String, (Category, usize)>,
    /// Every kept span (trimmed, byte offsets in the original text) with its category
    /// and rank (its order of nomination); a range nominated twice keeps the first.
    pub spans: Vec<(usize, usize, Category, usize)>,
    /// Category and rank of a value by its `lower()` form (looked up before the
    /// casefolded one, as the reference does).
    pub by_lower: HashMap<String, (Category, usize)>,
    /// Category and rank of each alternation value (its first nomination).
    ranks: HashMap<String, (Category, usize)>,
    /// Per detector: distinct values nominated into the alternation, and spans
    /// redacted only at their own place (too long, or over the alternation budget).
    pub counts: Vec<(u64, u64)>,
}

/// Runs `detectors` over `text` and collects their nominations (spec 5.12): spans are
/// trimmed of whitespace; blank, allow-listed and reserved-word values are ignored;
/// values too long or of too many tokens stay positional; more than
/// [`MAX_NOMINATED_VALUES`] distinct values fail closed.
pub(crate) fn nominate(
    detectors: &[Plugged],
    text: &str,
    ignored: impl Fn(&str) -> bool,
) -> Result<Nominations, PluggedError> {
    let mut n = Nominations::default();
    let placeholders: Vec<(usize, usize)> = placeholder::PLACEHOLDER_RE
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect();
    let mut ranges = std::collections::HashSet::new();
    let mut per_detector: Vec<HashMap<String, u64>> = Vec::new();
    let mut rank = 0;
    for detector in detectors {
        let mut values: HashMap<String, u64> = HashMap::new();
        let mut positional = 0;
        for span in detector.detect(text)? {
            let raw = text
                .get(span.start..span.end)
                .ok_or(PluggedError::InvalidSpan)?;
            let trimmed = raw.trim_start_matches(is_py_space);
            let start = span.start + raw.len() - trimmed.len();
            let trimmed = trimmed.trim_end_matches(is_py_space);
            let end = start + trimmed.len();
            if trimmed.is_empty() {
                continue;
            }
            let tokens: Vec<&str> = trimmed
                .split(is_py_space)
                .filter(|t| !t.is_empty())
                .collect();
            let value = tokens.join(" ");
            let folded = placeholder::casefold(&value);
            if ignored(&folded) {
                continue;
            }
            rank += 1;
            if ranges.insert((start, end)) {
                n.spans.push((start, end, span.category, rank));
            }
            // Placeholder text never joins the alternation (the span is still
            // redacted where it is, around the token).
            if placeholders.iter().any(|&(s, e)| s < end && start < e) {
                continue;
            }
            if trimmed.chars().count() > MAX_VALUE_CHARS || tokens.len() > MAX_VALUE_TOKENS {
                positional += 1;
                continue;
            }
            *values.entry(value.clone()).or_default() += 1;
            if !n.ranks.contains_key(&value) {
                if n.ranks.len() >= MAX_NOMINATED_VALUES {
                    return Err(PluggedError::Limit);
                }
                n.ranks.insert(value.clone(), (span.category, rank));
                n.values.push(value);
            }
        }
        per_detector.push(values);
        n.counts.push((0, positional));
    }
    // The alternation's budget: the longest values leave first and become positional.
    n.values.sort_by(|a, b| {
        b.chars()
            .count()
            .cmp(&a.chars().count())
            .then_with(|| a.cmp(b))
    });
    let mut total: usize = n.values.iter().map(|v| v.chars().count()).sum();
    let mut over = 0;
    while total > MAX_PATTERN_CHARS && over < n.values.len() {
        total -= n.values[over].chars().count();
        over += 1;
    }
    let dropped: Vec<String> = n.values.drain(..over).collect();
    let mut kept: Vec<(&String, (Category, usize))> =
        n.values.iter().map(|v| (v, n.ranks[v])).collect();
    kept.sort_by_key(|(_, (_, rank))| *rank);
    for (value, entry) in kept {
        n.by_lower.entry(value.to_lowercase()).or_insert(entry);
        n.categories
            .entry(placeholder::casefold(value))
            .or_insert(entry);
    }
    for (counts, values) in n.counts.iter_mut().zip(&per_detector) {
        for (value, seen) in values {
            if dropped.contains(value) {
                counts.1 += seen;
            } else {
                counts.0 += 1;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(rules: &[(&str, Category)]) -> Plugged {
        let def = PluggedDef {
            name: patterns::NAME.into(),
            version: patterns::VERSION.into(),
            kind: PluggedKind::Patterns(
                rules
                    .iter()
                    .map(|(r, c)| PatternRule {
                        category: *c,
                        regex: (*r).into(),
                        ignore_case: false,
                    })
                    .collect(),
            ),
        };
        Plugged::compile(&def).unwrap()
    }

    #[test]
    fn values_are_trimmed_collapsed_filtered_and_longest_first() {
        let d = patterns(&[
            (r"T-\d+", Category::ID),
            (r"x\s+long\s+name ", Category::PERSON),
            ("ok", Category::ID),
        ]);
        let n = nominate(&[d], "T-1 T-12 T-1 x  long\tname and ok", |f| f == "ok").unwrap();
        assert_eq!(n.values, ["x long name", "T-12", "T-1"]);
        assert_eq!(n.categories["t-1"].0, Category::ID);
        assert_eq!(n.categories["x long name"].0, Category::PERSON);
        assert_eq!(n.counts, [(3, 0)]);
        assert_eq!(n.spans.len(), 4);
    }

    #[test]
    fn external_spans_are_code_points_and_checked() {
        let span = |start, end| CharSpan {
            start,
            end,
            category: Category::PERSON,
        };
        let text = "é Ana ✓ Bo";
        let got = byte_spans(text, &[span(2, 5), span(8, 10)]).unwrap();
        assert_eq!(&text[got[0].start..got[0].end], "Ana");
        assert_eq!(&text[got[1].start..got[1].end], "Bo");
        for bad in [span(3, 3), span(4, 2), span(8, 11), span(11, 12)] {
            assert_eq!(
                byte_spans(text, &[bad]).unwrap_err(),
                PluggedError::InvalidSpan,
                "{bad:?}"
            );
        }
        let many = vec![span(0, 1); MAX_DETECTOR_SPANS + 1];
        assert_eq!(byte_spans(text, &many).unwrap_err(), PluggedError::Limit);
    }

    #[test]
    fn limits_fail_closed_or_go_positional() {
        let d = patterns(&[(r"\d+", Category::ID)]);
        let many: String = (0..2_001).map(|i| format!("{i} ")).collect();
        assert_eq!(
            nominate(&[d], &many, |_| false).unwrap_err(),
            PluggedError::Limit
        );
        let d = patterns(&[("a", Category::ID)]);
        assert_eq!(
            nominate(&[d], &"a".repeat(20_001), |_| false).unwrap_err(),
            PluggedError::Limit
        );
        let d = patterns(&[("b+", Category::ID), (r"(?:w )+w", Category::ID)]);
        let text = format!("{} {}", "b".repeat(257), "w ".repeat(17) + "w");
        let n = nominate(&[d], &text, |_| false).unwrap();
        assert!(n.values.is_empty());
        assert_eq!(n.counts, [(0, 2)]);
    }

    #[test]
    fn the_budget_drops_the_longest_values_first() {
        let d = patterns(&[(r"[a-z]+\d+", Category::ID)]);
        let text: String = (0..200)
            .map(|i| format!("{}{i:03} ", "v".repeat(200)))
            .collect();
        let n = nominate(&[d], &format!("{text} short1"), |_| false).unwrap();
        let kept: usize = n.values.iter().map(|v| v.len()).sum();
        assert!(kept <= MAX_PATTERN_CHARS);
        assert!(n.values.contains(&"short1".to_owned()));
        assert_eq!(n.counts[0].0 + n.counts[0].1, 201);
    }
}
