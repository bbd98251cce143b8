//! Which trigrams a file must hold for a query to match in it: the pure half of the
//! search index (no IO).
//!
//! Every gram is three consecutive bytes of the **case-folded** redacted text. Folding
//! is per character, so a text holding a string holds its folded form in its folded
//! text: one set of grams answers case-sensitive and case-folded queries alike (the
//! case-sensitive ones just get a few more candidates, which the scan of the candidate
//! drops). A plan is only ever a necessary condition: a file it rules out cannot match,
//! a file it keeps is matched on its text exactly as without an index.

use crate::engine::placeholder::casefold;
use regex_syntax::ParserBuilder;
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use std::borrow::Cow;

/// A gram: three bytes, big-endian in the low 24 bits.
pub type Gram = u32;

/// Grams looked up per alternative at most: any subset of a string's grams is still a
/// necessary condition, and a handful already narrows a whole root to its matches.
const MAX_GRAMS_PER_ALTERNATIVE: usize = 8;

/// Alternatives at most (a regex `a|b|…` with more is scanned instead).
const MAX_ALTERNATIVES: usize = 64;

/// The bytes grams are taken from: the case-folded text (ASCII lower-cased in place of
/// the full fold when the text is ASCII, which is the same thing).
pub fn folded(text: &str) -> Cow<'_, [u8]> {
    if text.is_ascii() {
        if text.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(text.as_bytes().to_ascii_lowercase())
        } else {
            Cow::Borrowed(text.as_bytes())
        }
    } else {
        Cow::Owned(casefold(text).into_bytes())
    }
}

/// Finds the distinct grams of texts for one index build.
///
/// Deduplicates through a bitmap of every possible gram (2 MiB), set while scanning and
/// cleared again for just the grams found: linear in the text, where sorting every
/// position's gram cost the build most of its time. The bitmaps are lent to the build's
/// threads (one per thread at work) and freed with the sieve, so a daemon holds none
/// between builds (thread-locals kept 2 MiB on every thread that ever built).
#[derive(Default)]
pub struct GramSieve {
    free: std::sync::Mutex<Vec<Box<[u64]>>>,
}

impl GramSieve {
    /// The distinct grams of `text`, in no particular order.
    pub fn text_grams(&self, text: &str) -> Vec<Gram> {
        let lent = self.free.lock().ok().and_then(|mut free| free.pop());
        let mut seen = lent.unwrap_or_else(|| vec![0u64; 1 << 18].into_boxed_slice());
        let text = folded(text);
        // Room for every gram a source file can hold (a large text grows from there),
        // given back below: one allocation and one shrink, where growing by doubling
        // reallocates a dozen times per file, each taking the allocator's lock that the
        // build's other thread contends for.
        let mut grams = Vec::with_capacity(text.len().saturating_sub(2).min(1 << 16));
        for w in text.windows(3) {
            let g = gram_of(w);
            let (word, bit) = ((g >> 6) as usize, 1u64 << (g & 63));
            if seen[word] & bit == 0 {
                seen[word] |= bit;
                grams.push(g);
            }
        }
        for &g in &grams {
            seen[(g >> 6) as usize] = 0;
        }
        grams.shrink_to_fit();
        // A bitmap is returned only clean (a panic above drops it instead).
        if let Ok(mut free) = self.free.lock() {
            free.push(seen);
        }
        grams
    }
}

fn gram_of(w: &[u8]) -> Gram {
    (u32::from(w[0]) << 16) | (u32::from(w[1]) << 8) | u32::from(w[2])
}

/// What a file must hold to possibly match: all grams of at least one alternative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GramPlan {
    pub alternatives: Vec<Vec<Gram>>,
}

impl GramPlan {
    /// The plan of a literal query (case-sensitive or not: see the module doc); `None`
    /// when its folded form is shorter than a gram (every file is a candidate).
    pub fn literal(query: &str) -> Option<GramPlan> {
        Some(GramPlan {
            alternatives: vec![string_grams(&casefold(query))?],
        })
    }

    /// The plan of a regex query, from the literals every match starts (or ends) with;
    /// `None` when the regex has none of at least a gram's length on every branch (it
    /// is then matched against every file, as without an index).
    ///
    /// The literals are taken as written even for a case-insensitive search: the regex
    /// engine's case-insensitivity relates characters of one simple case-folding class,
    /// which all fold to the same string, so the folded literal is in the folded text
    /// wherever a case variant of it matched (and `(?i)abc` stays one literal instead of
    /// eight case variants, or none past the extractor's limits).
    pub fn regex(query: &str) -> Option<GramPlan> {
        let hir = ParserBuilder::new().build().parse(query).ok()?;
        [ExtractKind::Prefix, ExtractKind::Suffix]
            .into_iter()
            .filter_map(|kind| {
                let seq = Extractor::new().kind(kind).extract(&hir);
                let literals = seq.literals()?;
                if literals.is_empty() || literals.len() > MAX_ALTERNATIVES {
                    return None;
                }
                let alternatives = literals
                    .iter()
                    .map(|lit| string_grams(&casefold(valid_prefix(lit.as_bytes()))))
                    .collect::<Option<Vec<_>>>()?;
                Some(GramPlan { alternatives })
            })
            // The plan whose weakest alternative is most selective.
            .max_by_key(|plan| plan.alternatives.iter().map(Vec::len).min())
    }
}

impl GramPlan {
    /// The plan of "holds at least one of `words`" (already case-folded, as retrieve's
    /// terms are); `None` when one of them is shorter than a gram.
    pub fn any_of(words: &[String]) -> Option<GramPlan> {
        let alternatives = words
            .iter()
            .map(|w| string_grams(w))
            .collect::<Option<Vec<_>>>()?;
        (!alternatives.is_empty()).then_some(GramPlan { alternatives })
    }
}

/// The longest prefix of `bytes` that is UTF-8 (a literal cut inside a character is still
/// a substring of the match up to there).
fn valid_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}

/// Up to [`MAX_GRAMS_PER_ALTERNATIVE`] distinct grams of an already folded string,
/// spread over it; `None` when it has none.
fn string_grams(folded: &str) -> Option<Vec<Gram>> {
    let all: Vec<Gram> = folded.as_bytes().windows(3).map(gram_of).collect();
    if all.is_empty() {
        return None;
    }
    let mut distinct = all.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() <= MAX_GRAMS_PER_ALTERNATIVE {
        return Some(distinct);
    }
    let step = all.len() as f64 / MAX_GRAMS_PER_ALTERNATIVE as f64;
    let mut picked: Vec<Gram> = (0..MAX_GRAMS_PER_ALTERNATIVE)
        .map(|i| all[((i as f64 * step) as usize).min(all.len() - 1)])
        .chain(std::iter::once(all[all.len() - 1]))
        .collect();
    picked.sort_unstable();
    picked.dedup();
    Some(picked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has_all(text: &str, plan: &GramPlan) -> bool {
        let mut grams = GramSieve::default().text_grams(text);
        grams.sort_unstable();
        plan.alternatives
            .iter()
            .any(|alt| alt.iter().all(|g| grams.binary_search(g).is_ok()))
    }

    #[test]
    fn literal_plans_hold_in_every_text_that_matches() {
        let text = "fn Main() {\n  let STRASSE = \"Straße\";\n}\n";
        for query in ["main", "Main", "strasse", "STRASSE", "straße", "let S"] {
            let plan = GramPlan::literal(query).expect("long enough");
            assert!(has_all(text, &plan), "{query}");
        }
        assert!(!has_all(text, &GramPlan::literal("mutex").unwrap()));
        assert_eq!(GramPlan::literal("fn"), None);
        // A fold that grows: one character becomes a gram.
        assert!(GramPlan::literal("ß").is_none());
        assert!(GramPlan::literal("ßa").is_some());
    }

    #[test]
    fn regex_plans_come_from_required_literals() {
        let text = "error: [PERSON_0123abcd] failed at line 12\n";
        let plan = GramPlan::regex(r"PERSON_[0-9a-f]+").unwrap();
        assert!(has_all(text, &plan));
        let plan = GramPlan::regex(r"(?:failed|crashed) at").unwrap();
        assert_eq!(plan.alternatives.len(), 2);
        assert!(has_all(text, &plan));
        let plan = GramPlan::regex(r"ERROR: \[").unwrap();
        assert!(has_all(text, &plan));
        assert!(!has_all("warning only\n", &plan));
        // Nothing required of every match: no plan, every file is scanned.
        assert_eq!(GramPlan::regex(r"\d+"), None);
        assert_eq!(GramPlan::regex(r"a|bcd"), None);
        assert_eq!(GramPlan::regex(r"("), None);
    }

    #[test]
    fn case_insensitive_regex_literals_fold_like_the_text() {
        // The Kelvin sign folds to `k`, and regex case-insensitivity knows it.
        let text = "temperature: 300 \u{212A}elvin";
        let plan = GramPlan::regex("kelvin").unwrap();
        assert!(has_all(text, &plan));
        assert!(
            regex::RegexBuilder::new("kelvin")
                .case_insensitive(true)
                .build()
                .unwrap()
                .is_match(text)
        );
    }

    #[test]
    fn text_grams_are_each_distinct_gram_once() {
        let sieve = GramSieve::default();
        let mut grams = sieve.text_grams("abcabcABC\nabd");
        grams.sort_unstable();
        let expected: Vec<Gram> = [b"abc", b"bca", b"cab", b"bc\n", b"c\na", b"\nab", b"abd"]
            .iter()
            .map(|w| gram_of(&w[..]))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(grams, expected);
        // The bitmap is clean for the next text.
        assert_eq!(sieve.text_grams("xyz"), vec![gram_of(b"xyz")]);
        assert_eq!(sieve.free.lock().unwrap().len(), 1, "one bitmap, reused");
    }

    #[test]
    fn text_grams_of_a_long_mixed_case_text_are_its_distinct_folded_windows() {
        let mut text = String::new();
        let mut n = 7u32;
        while text.len() < 200_000 {
            n = n.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            text.push(char::from(b'!' + (n >> 16) as u8 % 90));
        }
        let mut grams = GramSieve::default().text_grams(&text);
        grams.sort_unstable();
        let expected: Vec<Gram> = text
            .to_lowercase()
            .as_bytes()
            .windows(3)
            .map(gram_of)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(grams, expected);
    }

    #[test]
    fn long_strings_use_a_spread_of_their_grams() {
        let query = "abcdefghijklmnopqrstuvwxyz0123456789";
        let plan = GramPlan::literal(query).unwrap();
        let alt = &plan.alternatives[0];
        assert!(alt.len() <= MAX_GRAMS_PER_ALTERNATIVE + 1);
        assert!(alt.contains(&gram_of(b"789")));
        assert!(has_all(&format!("x{query}y"), &plan));
    }
}
