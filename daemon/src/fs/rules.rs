//! Which paths a root serves (spec 6.2), and which files count as prose.
//!
//! Three layers, checked in this order:
//! 1. never-serve: the fixed secret-file globs (matched case-folded against the relative
//!    path and the basename) and the policy's protected paths (term files, an explicit
//!    config under the root, detector inputs; a protected directory protects its subtree);
//! 2. unless `include_private`: default and configured excluded directory names (exact,
//!    any component) and excluded globs (Python `fnmatch`, case-sensitive, rel path and
//!    basename);
//! 3. (in the index, not here) `.gitignore` when enabled.

use super::fnmatch::Pattern;
use crate::engine::placeholder::casefold;
use crate::engine::policy::Policy;
use crate::engine::wordlists::{DEFAULT_EXCLUDE_DIRS, DEFAULT_EXCLUDE_GLOBS, NEVER_SERVE_GLOBS};
use std::collections::HashSet;

/// Compiled exclusion rules of one root under one policy.
#[derive(Clone, Debug)]
pub struct FsRules {
    /// Basename of the root directory (what the reference tests for `.`).
    root_name: String,
    include_private: bool,
    exclude_dirs: HashSet<String>,
    exclude_globs: Vec<Pattern>,
    never_serve: Vec<Pattern>,
    /// Case-folded root-relative protected paths.
    protected: HashSet<String>,
}

impl FsRules {
    /// Builds the rules from a policy. `root_name` is the root directory's basename.
    pub fn new(policy: &Policy, root_name: &str, include_private: bool) -> FsRules {
        let mut exclude_dirs: HashSet<String> = DEFAULT_EXCLUDE_DIRS
            .iter()
            .map(|d| (*d).to_owned())
            .collect();
        exclude_dirs.extend(policy.exclude_dirs.iter().cloned());
        // `--documents` lifts the five document globs (spec 6.2); configured ones stay.
        let mut globs: Vec<&str> = DEFAULT_EXCLUDE_GLOBS
            .iter()
            .copied()
            .filter(|glob| !(policy.documents && super::content::is_document_glob(glob)))
            .collect();
        globs.extend(policy.exclude_globs.iter().map(String::as_str));
        globs.sort_unstable();
        globs.dedup();
        let protected = policy
            .term_files
            .iter()
            .chain(policy.protected_paths.iter())
            .map(|p| casefold(p))
            .collect();
        FsRules {
            root_name: root_name.to_owned(),
            include_private,
            exclude_dirs,
            exclude_globs: globs.into_iter().map(Pattern::new).collect(),
            never_serve: NEVER_SERVE_GLOBS
                .iter()
                .map(|g| Pattern::new(&casefold(g)))
                .collect(),
            protected,
        }
    }

    fn basename<'a>(&'a self, rel: &'a str) -> &'a str {
        if rel == "." {
            &self.root_name
        } else {
            rel.rsplit('/').next().unwrap_or(rel)
        }
    }

    /// Never served, whatever `include_private` says: never-serve globs and protected
    /// paths (including everything under a protected directory).
    pub fn is_protected(&self, rel: &str) -> bool {
        let folded = casefold(rel);
        if !self.protected.is_empty() {
            if self.protected.contains(&folded) {
                return true;
            }
            let mut from = 0;
            while let Some(pos) = folded[from..].find('/') {
                if self.protected.contains(&folded[..from + pos]) {
                    return true;
                }
                from += pos + 1;
            }
        }
        let name = casefold(self.basename(rel));
        self.never_serve
            .iter()
            .any(|p| p.matches(&folded) || p.matches(&name))
    }

    /// Whether `rel` (root-relative POSIX, `.` for the root) is excluded by policy.
    pub fn is_excluded(&self, rel: &str) -> bool {
        if self.is_protected(rel) {
            return true;
        }
        if self.include_private {
            return false;
        }
        if rel != "." && rel.split('/').any(|part| self.exclude_dirs.contains(part)) {
            return true;
        }
        let name = self.basename(rel);
        self.exclude_globs
            .iter()
            .any(|p| p.matches(rel) || p.matches(name))
    }

    /// Whether a child named `name` of an already admitted directory is excluded; the
    /// walk's fast path (ancestor components were checked when the parent was admitted).
    pub fn is_child_excluded(&self, rel: &str, name: &str) -> bool {
        if self.is_protected(rel) {
            return true;
        }
        if self.include_private {
            return false;
        }
        if self.exclude_dirs.contains(name) {
            return true;
        }
        self.exclude_globs
            .iter()
            .any(|p| p.matches(rel) || p.matches(name))
    }
}

/// Prose files get the name heuristics of `Mode::Code`: documentation and notes, where
/// person and organisation names appear in running text rather than as identifiers.
pub fn is_prose_path(rel: &str) -> bool {
    const PROSE_SUFFIXES: &[&str] = &[
        ".md",
        ".markdown",
        ".mdown",
        ".mkd",
        ".mdx",
        ".txt",
        ".text",
        ".rst",
        ".adoc",
        ".asciidoc",
        ".org",
        ".textile",
        ".rdoc",
    ];
    const PROSE_STEMS: &[&str] = &[
        "readme",
        "authors",
        "contributors",
        "notes",
        "changelog",
        "changes",
        "history",
        "news",
        "todo",
        "license",
        "licence",
        "copying",
        "notice",
        "maintainers",
        "thanks",
        "credits",
    ];
    let name = casefold(rel.rsplit('/').next().unwrap_or(rel));
    let suffix = super::content::python_suffix(&name);
    if !suffix.is_empty() && PROSE_SUFFIXES.contains(&suffix) {
        return true;
    }
    PROSE_STEMS.iter().any(|stem| {
        name.strip_prefix(stem)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '-', '_']))
    })
}

/// Sort key of the reference's listing order: directories first, then files (anything
/// that is not a directory), each by case-folded name. Ties (names equal once folded)
/// fall back to the raw name so the order is deterministic.
pub fn reference_order_key(is_dir: bool, name: &str) -> (bool, String, String) {
    (!is_dir, casefold(name), name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(policy: &Policy, include_private: bool) -> FsRules {
        FsRules::new(policy, "root", include_private)
    }

    #[test]
    fn never_serve_is_casefolded_and_survives_include_private() {
        let r = rules(&Policy::default(), true);
        for rel in [
            ".env",
            ".ENV",
            "server.key",
            "SERVER.Key",
            "a/server.PEM",
            "host.CRT",
            ".Agent-Context-Redactor.toml",
            ".env.local",
        ] {
            assert!(r.is_excluded(rel), "{rel}");
        }
        assert!(!r.is_excluded("node_modules/x.js"));
        assert!(!r.is_excluded("personal/secret.md"));
        assert!(!r.is_excluded("notes.md"));
    }

    #[test]
    fn default_exclusions_are_case_sensitive() {
        let r = rules(&Policy::default(), false);
        assert!(r.is_excluded("personal/secret.md"));
        assert!(r.is_excluded("a/node_modules"));
        assert!(r.is_excluded("a/b/.git/config"));
        assert!(!r.is_excluded("Personal/secret.md"));
        assert!(r.is_excluded("img/x.png"));
        assert!(!r.is_excluded("img/x.PNG"));
        assert!(!r.is_excluded("."));
        assert!(!r.is_excluded(".github/workflows/ci.yml"));
    }

    #[test]
    fn protected_directories_protect_their_subtree() {
        let policy = Policy {
            term_files: vec!["Terms/people.txt".into()],
            protected_paths: vec!["rules".into()],
            exclude_dirs: vec!["build".into()],
            exclude_globs: vec!["*.log".into()],
            ..Policy::default()
        };
        let r = rules(&policy, true);
        assert!(r.is_excluded("terms/PEOPLE.txt"));
        assert!(r.is_excluded("rules"));
        assert!(r.is_excluded("Rules/a/b.yaml"));
        assert!(!r.is_excluded("rulesx/a"));
        assert!(!r.is_excluded("build/x"));
        let r = rules(&policy, false);
        assert!(r.is_excluded("build/x"));
        assert!(r.is_excluded("deep/dir/x.log"));
    }

    #[test]
    fn prose_names() {
        for rel in [
            "README",
            "docs/readme.md",
            "CHANGELOG",
            "notes/x.txt",
            "AUTHORS.rst",
            "LICENSE-MIT",
            "a.adoc",
        ] {
            assert!(is_prose_path(rel), "{rel}");
        }
        for rel in ["src/main.rs", "readmer.rs", "package.json", "x.py"] {
            assert!(!is_prose_path(rel), "{rel}");
        }
    }
}
