//! Python `fnmatch.fnmatchcase` semantics for the `glob` arguments of search, retrieve
//! and bundle (matched against the raw root-relative POSIX path).
//!
//! One implementation serves both this and the exclusion rules: [`crate::fs::fnmatch`].
//! `*` matches any run (including `/`), `?` any one character, `[seq]`/`[!seq]` a
//! character set with Python's exact range rules. Case-sensitive, as fnmatch is on POSIX.

pub use crate::fs::fnmatch::Pattern;

/// Whether `name` matches any of `patterns`.
pub fn matches_any(patterns: &[Pattern], name: &str) -> bool {
    patterns.iter().any(|pattern| pattern.matches(name))
}

/// `fnmatch.fnmatchcase(name, pattern)`.
pub fn fnmatch(name: &str, pattern: &str) -> bool {
    Pattern::new(pattern).matches(name)
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
