//! A set of case-folded words that answers for raw text. The name heuristics look up
//! every capitalized word of a text (hundreds of thousands per MB in strict mode), so an
//! ASCII word is folded into a stack buffer instead of a fresh `String`.

use crate::engine::placeholder::casefold;
use foldhash::HashSet;

/// Longest ASCII word folded on the stack; longer words take the allocating path.
const STACK_FOLD: usize = 64;

/// Case-folded words (see [`casefold`]).
#[derive(Clone, Debug, Default)]
pub struct FoldedSet(HashSet<String>);

impl FoldedSet {
    /// Whether `raw`, case-folded, is in the set.
    pub fn contains(&self, raw: &str) -> bool {
        if raw.is_ascii() && raw.len() <= STACK_FOLD {
            let mut buf = [0u8; STACK_FOLD];
            let folded = &mut buf[..raw.len()];
            folded.copy_from_slice(raw.as_bytes());
            folded.make_ascii_lowercase();
            // ASCII bytes lowercased are still ASCII.
            let folded = std::str::from_utf8(folded).expect("ASCII is UTF-8");
            return self.0.contains(folded);
        }
        self.0.contains(casefold(raw).as_str())
    }

    /// Whether the already case-folded `key` is in the set.
    pub fn contains_folded(&self, key: &str) -> bool {
        self.0.contains(key)
    }

    /// Adds `raw`, case-folded.
    pub fn insert(&mut self, raw: &str) {
        self.0.insert(casefold(raw));
    }
}

impl<'a> FromIterator<&'a str> for FoldedSet {
    fn from_iter<I: IntoIterator<Item = &'a str>>(iter: I) -> FoldedSet {
        let mut set = FoldedSet::default();
        for word in iter {
            set.insert(word);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stack path answers exactly as folding with `casefold` does, for ASCII,
    /// non-ASCII and over-long words.
    #[test]
    fn lookups_equal_casefold_then_contains() {
        let set: FoldedSet = ["api", "Straße", "MAY", &"x".repeat(70)]
            .into_iter()
            .collect();
        for raw in [
            "API", "Api", "api", "STRASSE", "straße", "May", "mAy", "Mai", "ap",
        ] {
            assert_eq!(set.contains(raw), set.0.contains(&casefold(raw)), "{raw}");
        }
        assert!(set.contains(&"X".repeat(70)));
        assert!(set.contains("STRASSE"));
        assert!(!set.contains("Mai"));
    }
}
