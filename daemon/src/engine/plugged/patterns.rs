//! The built-in `patterns` detector (spec 5.12): an operator's TOML file of
//! `[[patterns]]` rules, each a category and a regex. Validation follows the
//! reference rule by rule; messages name the rule number, never the regex, which may
//! itself hold a private term. The file is read by the policy loader; this module only
//! sees its text.

use crate::engine::placeholder::Category;
use regex::{Regex, RegexBuilder};

/// The name and version receipts and `doctor` show.
pub const NAME: &str = "patterns";
pub const VERSION: &str = "1";
/// At most this many rules per file.
pub const MAX_RULES: usize = 256;
/// At most this many characters per regex.
pub const MAX_REGEX_CHARS: usize = 2_000;
/// Bound on one rule's compiled program. The regex engine is linear in the text, so
/// this is the only cost a rule can blow up (`a{1000}{1000}`).
const MAX_COMPILED_BYTES: usize = 1 << 20;

/// One validated rule, kept as written so policies compare and hash by value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PatternRule {
    pub category: Category,
    pub regex: String,
    pub ignore_case: bool,
}

impl PatternRule {
    /// The rule's matcher. Validation compiled it once already, so this only fails
    /// on a rule that never went through [`parse_rules`].
    pub fn compile(&self) -> Option<Regex> {
        RegexBuilder::new(&self.regex)
            .case_insensitive(self.ignore_case)
            .size_limit(MAX_COMPILED_BYTES)
            .build()
            .ok()
    }
}

/// Reads and validates a patterns file's text (a UTF-8 BOM is allowed, as the
/// reference reads it with `utf-8-sig`). `Err` carries the operator-facing sentence.
pub fn parse_rules(text: &str) -> Result<Vec<PatternRule>, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let table: toml::Table = text
        .parse()
        .map_err(|_| "The patterns detector rules file is not valid TOML.".to_owned())?;
    if table.len() != 1 || !table.contains_key("patterns") {
        return Err("The patterns detector file must contain only [[patterns]] tables.".into());
    }
    let raw = match &table["patterns"] {
        toml::Value::Array(rules) if !rules.is_empty() => rules,
        _ => {
            return Err(
                "The patterns detector file must define at least one [[patterns]] table.".into(),
            );
        }
    };
    if raw.len() > MAX_RULES {
        return Err(format!(
            "The patterns detector file defines more than {MAX_RULES} rules."
        ));
    }
    raw.iter()
        .enumerate()
        .map(|(i, rule)| parse_rule(rule).map_err(|why| format!("patterns rule {}: {why}", i + 1)))
        .collect()
}

fn parse_rule(rule: &toml::Value) -> Result<PatternRule, String> {
    let toml::Value::Table(rule) = rule else {
        return Err("expected a table.".into());
    };
    let mut unknown: Vec<&str> = rule
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "category" | "regex" | "ignore_case"))
        .collect();
    if !unknown.is_empty() {
        // Key names are the operator's own schema mistakes, not values: the reference
        // names them too.
        unknown.sort_unstable();
        return Err(format!("unsupported keys {}.", unknown.join(", ")));
    }
    let category = rule
        .get("category")
        .and_then(toml::Value::as_str)
        .and_then(Category::from_name)
        .ok_or_else(|| {
            let mut names: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
            names.sort_unstable();
            format!("category must be one of {}.", names.join(", "))
        })?;
    let regex = match rule.get("regex").and_then(toml::Value::as_str) {
        Some(r) if !r.is_empty() => r.to_owned(),
        _ => return Err("regex must be a non-empty string.".into()),
    };
    if regex.chars().count() > MAX_REGEX_CHARS {
        return Err(format!("regex exceeds {MAX_REGEX_CHARS} characters."));
    }
    let ignore_case = match rule.get("ignore_case") {
        None => false,
        Some(toml::Value::Boolean(b)) => *b,
        Some(_) => return Err("ignore_case must be true or false.".into()),
    };
    let rule = PatternRule {
        category,
        regex,
        ignore_case,
    };
    let compiled = match RegexBuilder::new(&rule.regex)
        .case_insensitive(ignore_case)
        .size_limit(MAX_COMPILED_BYTES)
        .build()
    {
        Ok(r) => r,
        Err(regex::Error::CompiledTooBig(_)) => {
            return Err("regex is too large once compiled.".into());
        }
        Err(_) => return Err("invalid regex.".into()),
    };
    // On an empty haystack any match is a full match (Python's `fullmatch("")`).
    if compiled.is_match("") {
        return Err("regex must not match the empty string.".into());
    }
    Ok(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_rules(text).expect_err("refused")
    }

    #[test]
    fn a_valid_file_keeps_rules_in_order() {
        let rules = parse_rules(
            "\u{feff}[[patterns]]\ncategory = \"ID\"\nregex = 'TICKET-\\d{5}'\n\n[[patterns]]\ncategory = \"CLIENT\"\nregex = 'acme'\nignore_case = true\n",
        )
        .unwrap();
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].category, Category::ID);
        assert!(!rules[0].ignore_case);
        assert!(rules[1].ignore_case);
        assert!(rules[1].compile().unwrap().is_match("ACME"));
    }

    #[test]
    fn file_level_messages() {
        assert_eq!(
            err("[[patterns]"),
            "The patterns detector rules file is not valid TOML."
        );
        assert_eq!(
            err("x = 1\n[[patterns]]\ncategory='ID'\nregex='a'\n"),
            "The patterns detector file must contain only [[patterns]] tables."
        );
        assert_eq!(
            err(""),
            "The patterns detector file must contain only [[patterns]] tables."
        );
        assert_eq!(
            err("patterns = []"),
            "The patterns detector file must define at least one [[patterns]] table."
        );
        let many = "[[patterns]]\ncategory='ID'\nregex='a'\n".repeat(257);
        assert_eq!(
            err(&many),
            "The patterns detector file defines more than 256 rules."
        );
        assert_eq!(
            parse_rules(&"[[patterns]]\ncategory='ID'\nregex='a'\n".repeat(256))
                .unwrap()
                .len(),
            256
        );
    }

    #[test]
    fn rule_messages_name_the_rule_never_the_regex() {
        let ok = "[[patterns]]\ncategory='ID'\nregex='a'\n";
        let cases = [
            ("patterns = [1]", "patterns rule 1: expected a table."),
            (
                "[[patterns]]\ncategory='ID'\nregex='secret-x'\nflags='i'\nzz=1\n",
                "patterns rule 2: unsupported keys flags, zz.",
            ),
            (
                "[[patterns]]\ncategory='id'\nregex='secret-x'\n",
                "patterns rule 2: category must be one of ",
            ),
            (
                "[[patterns]]\ncategory='ID'\nregex=''\n",
                "patterns rule 2: regex must be a non-empty string.",
            ),
            (
                "[[patterns]]\ncategory='ID'\nregex=5\n",
                "patterns rule 2: regex must be a non-empty string.",
            ),
            (
                "[[patterns]]\ncategory='ID'\n",
                "patterns rule 2: regex must be a non-empty string.",
            ),
            (
                "[[patterns]]\ncategory='ID'\nregex='secret-x'\nignore_case='yes'\n",
                "patterns rule 2: ignore_case must be true or false.",
            ),
            (
                "[[patterns]]\ncategory='ID'\nregex='secret-('\n",
                "patterns rule 2: invalid regex.",
            ),
            (
                "[[patterns]]\ncategory='ID'\nregex='(secret-x)?'\n",
                "patterns rule 2: regex must not match the empty string.",
            ),
            (
                "[[patterns]]\ncategory='ID'\nregex='(?:secret\\w{100}){100}'\n",
                "patterns rule 2: regex is too large once compiled.",
            ),
        ];
        for (rule, want) in cases {
            let got = if rule.starts_with("patterns =") {
                err(rule)
            } else {
                err(&format!("{ok}{rule}"))
            };
            assert!(got.starts_with(want), "{got:?} for {rule:?}");
            assert!(!got.contains("secret"), "{got:?} echoes the regex");
        }
        let long = format!(
            "[[patterns]]\ncategory='ID'\nregex='{}'\n",
            "é".repeat(2_001)
        );
        assert_eq!(
            err(&long),
            "patterns rule 1: regex exceeds 2000 characters."
        );
        let at_limit = format!(
            "[[patterns]]\ncategory='ID'\nregex='{}'\n",
            "é".repeat(2_000)
        );
        assert!(parse_rules(&at_limit).is_ok());
    }

    #[test]
    fn category_message_lists_every_category_sorted() {
        let got = err("[[patterns]]\ncategory='SECRETS'\nregex='a'\n");
        let mut names: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            got,
            format!(
                "patterns rule 1: category must be one of {}.",
                names.join(", ")
            )
        );
    }
}
