//! Placeholder vocabulary: categories, value normalization, keyed digests, and the
//! recognizer for placeholder-shaped tokens (spec 5.2, 5.3, 5.9).

use hmac::{Hmac, Mac};
use regex::Regex;
use sha2::Sha256;
use std::sync::LazyLock;

/// HMAC key used when a policy carries no salt (the loader always supplies one).
pub const DEFAULT_SALT: &str = "redacted-context-mcp-v1";

/// Hex digits of the per-form suffix of a linked alias placeholder.
pub const ALIAS_FORM_HEX: usize = 8;

/// A placeholder category. Always one of [`Category::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Category(&'static str);

impl Category {
    /// Equality, by address first: categories are nearly always the same statics.
    pub fn same(&self, other: &Category) -> bool {
        std::ptr::eq(self.0, other.0) || self.0 == other.0
    }

    pub const CLIENT: Category = Category("CLIENT");
    pub const ORG: Category = Category("ORG");
    pub const PERSON: Category = Category("PERSON");
    pub const SENSITIVE: Category = Category("SENSITIVE");
    pub const ENTITY: Category = Category("ENTITY");
    pub const EMAIL: Category = Category("EMAIL");
    pub const PHONE: Category = Category("PHONE");
    pub const URL: Category = Category("URL");
    pub const HANDLE: Category = Category("HANDLE");
    pub const SECRET: Category = Category("SECRET");
    pub const SSN: Category = Category("SSN");
    pub const CARD: Category = Category("CARD");
    pub const IP: Category = Category("IP");
    pub const ID: Category = Category("ID");
    pub const DOMAIN: Category = Category("DOMAIN");
    pub const IBAN: Category = Category("IBAN");
    pub const MAC: Category = Category("MAC");
    pub const DOB: Category = Category("DOB");
    pub const PASSPORT: Category = Category("PASSPORT");
    pub const DRIVER_ID: Category = Category("DRIVER_ID");
    pub const CONNECTION: Category = Category("CONNECTION");
    pub const SERVICE_ACCOUNT: Category = Category("SERVICE_ACCOUNT");
    pub const UNICODE_CONTROL: Category = Category("UNICODE_CONTROL");
    pub const PROMPT_INJECTION: Category = Category("PROMPT_INJECTION");

    /// The 24 canonical categories.
    pub const ALL: [Category; 24] = [
        Self::CLIENT,
        Self::ORG,
        Self::PERSON,
        Self::SENSITIVE,
        Self::ENTITY,
        Self::EMAIL,
        Self::PHONE,
        Self::URL,
        Self::HANDLE,
        Self::SECRET,
        Self::SSN,
        Self::CARD,
        Self::IP,
        Self::ID,
        Self::DOMAIN,
        Self::IBAN,
        Self::MAC,
        Self::DOB,
        Self::PASSPORT,
        Self::DRIVER_ID,
        Self::CONNECTION,
        Self::SERVICE_ACCOUNT,
        Self::UNICODE_CONTROL,
        Self::PROMPT_INJECTION,
    ];

    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Looks a category up by its exact upper-case name.
    pub fn from_name(name: &str) -> Option<Category> {
        Self::ALL.iter().copied().find(|c| c.0 == name)
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Full Unicode case folding, as Python's `str.casefold()` (`ß` → `ss`).
///
/// Folding maps each character on its own, and an ASCII character to its lower case, so
/// runs of ASCII are lower-cased in bulk and only the other characters go through
/// `caseless`'s tables: source text is mostly ASCII even where it is not all ASCII (a
/// name in a comment, a `©`), and folding it character by character was a visible part
/// of indexing such trees.
pub fn casefold(value: &str) -> String {
    use caseless::Caseless;
    if value.is_ascii() {
        return value.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while !rest.is_empty() {
        let ascii = rest
            .bytes()
            .position(|b| !b.is_ascii())
            .unwrap_or(rest.len());
        let start = out.len();
        out.push_str(&rest[..ascii]);
        out[start..].make_ascii_lowercase();
        rest = &rest[ascii..];
        if let Some(c) = rest.chars().next() {
            out.extend(std::iter::once(c).default_case_fold());
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The normal form a placeholder digest is computed over: trimmed (Python `strip`),
/// runs of space/tab/CR/LF collapsed to one space when any such run is irregular,
/// then case-folded. Hyphens and underscores are deliberately left alone.
pub fn normalize_value(value: &str) -> String {
    let stripped = value.trim_matches(crate::engine::python::text::is_py_space);
    let needs_collapse = stripped.contains(['\t', '\n', '\r']) || stripped.contains("  ");
    if !needs_collapse {
        return casefold(stripped);
    }
    let mut collapsed = String::with_capacity(stripped.len());
    let mut in_run = false;
    for ch in stripped.chars() {
        if matches!(ch, ' ' | '\t' | '\r' | '\n') {
            if !in_run {
                collapsed.push(' ');
                in_run = true;
            }
        } else {
            collapsed.push(ch);
            in_run = false;
        }
    }
    casefold(&collapsed)
}

fn hmac_hex(salt: &str, message: &[&[u8]], hex_len: usize) -> String {
    SaltKey::new(salt).hex(message, hex_len)
}

/// HMAC-SHA256 keyed with one salt, its key schedule computed once: an engine digests
/// every redacted value with the same salt, so each digest then costs only the message.
#[derive(Clone)]
pub struct SaltKey {
    mac: Hmac<Sha256>,
}

impl SaltKey {
    pub fn new(salt: &str) -> SaltKey {
        let key = if salt.is_empty() { DEFAULT_SALT } else { salt };
        SaltKey {
            mac: Hmac::<Sha256>::new_from_slice(key.as_bytes())
                .expect("HMAC accepts any key length"),
        }
    }

    /// [`path_id`] with this key (no key schedule per id: a walk ids every entry).
    pub fn path_id(&self, rel_posix: &str) -> String {
        format!("@p_{}", self.hex(&[rel_posix.as_bytes()], 12))
    }

    /// The first `hex_len` lowercase hex digits of HMAC(salt, concatenated `message`).
    fn hex(&self, message: &[&[u8]], hex_len: usize) -> String {
        let mut mac = self.mac.clone();
        for part in message {
            mac.update(part);
        }
        let digest = mac.finalize().into_bytes();
        let mut out = String::with_capacity(hex_len + 1);
        for byte in digest.iter() {
            if out.len() >= hex_len {
                break;
            }
            out.push(char::from(b"0123456789abcdef"[(byte >> 4) as usize]));
            out.push(char::from(b"0123456789abcdef"[(byte & 15) as usize]));
        }
        out.truncate(hex_len);
        out
    }

    /// As [`digest`], with this key.
    pub fn digest(&self, category: Category, normalized: &str) -> String {
        self.hex(&[category.0.as_bytes(), b":", normalized.as_bytes()], 32)
    }
}

/// The 128-bit hex of an ordinary placeholder: HMAC-SHA256(salt, `CATEGORY:normalized`).
pub fn digest(salt: &str, category: Category, normalized: &str) -> String {
    hmac_hex(
        salt,
        &[category.0.as_bytes(), b":", normalized.as_bytes()],
        32,
    )
}

/// The keyed 32-bit suffix of a declared alias form: HMAC(salt, `alias-form:normalized`).
pub fn alias_form_suffix(salt: &str, normalized: &str) -> String {
    hmac_hex(
        salt,
        &[b"alias-form:", normalized.as_bytes()],
        ALIAS_FORM_HEX,
    )
}

/// `[CATEGORY_<32hex>]` for a raw value.
pub fn ordinary_placeholder(salt: &str, category: Category, value: &str) -> String {
    format!(
        "[{}_{}]",
        category.0,
        digest(salt, category, &normalize_value(value))
    )
}

/// The opaque id of a root-relative POSIX path (`.` for the root): `@p_<12hex>`.
pub fn path_id(salt: &str, rel_posix: &str) -> String {
    format!("@p_{}", hmac_hex(salt, &[rel_posix.as_bytes()], 12))
}

/// Opaque alias of a GitHub user within one repo alias: `user_<16hex>`.
pub fn github_user_alias(salt: &str, repo_alias: &str, login: &str) -> String {
    format!(
        "user_{}",
        hmac_hex(
            salt,
            &[
                b"github-user:",
                repo_alias.as_bytes(),
                b":",
                login.as_bytes()
            ],
            16
        )
    )
}

/// Source of the placeholder recognizer: every category (longest first), then a legacy
/// 2-digit or 8-hex id, or a 32-hex id with an optional `.xxxxxxxx` alias-form suffix.
pub fn placeholder_pattern_source() -> String {
    let mut names: Vec<&str> = Category::ALL.iter().map(|c| c.0).collect();
    // Python sorts by length, longest first, with a stable sort over a frozenset's
    // iteration order; equal-length names cannot be prefixes of one another, so any
    // order among them recognizes the same tokens.
    names.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    format!(
        r"\[(?:{})_(?:[0-9]{{2}}|[0-9a-f]{{8}}|[0-9a-f]{{32}}(?:\.[0-9a-f]{{8}})?)\]",
        names.join("|")
    )
}

/// Recognizer of placeholder-shaped tokens (`PLACEHOLDER_RE`), including legacy shapes.
pub static PLACEHOLDER_RE: LazyLock<Regex> = LazyLock::new(|| {
    // `\d` in Python is any Unicode decimal digit; the legacy 2-digit form is matched
    // with Unicode `\d` to stay byte-compatible.
    let source = placeholder_pattern_source().replace("[0-9]{2}", r"\d{2}");
    Regex::new(&source).expect("placeholder pattern compiles")
});

#[cfg(test)]
mod tests {
    use super::*;

    // Golden vectors: reference spec section 17.
    #[test]
    fn golden_digests() {
        assert_eq!(
            digest("golden-salt", Category::EMAIL, "taylor@example.invalid"),
            "0d4c962d34d08573eada0df1c5f701ed"
        );
        assert_eq!(
            digest("golden-salt", Category::SENSITIVE, "quokkaproject"),
            "b31768c24f00422e1ac627a60bf3f660"
        );
        assert_eq!(
            digest("golden-salt", Category::ENTITY, "txt"),
            "83eab1868e9d09be426db8f133f41030"
        );
        assert_eq!(
            digest("golden-salt", Category::ENTITY, "recovery"),
            "744724cb502cf2065928c6b96d0b5fd1"
        );
        assert_eq!(
            ordinary_placeholder("golden-salt", Category::ENTITY, "Backup"),
            "[ENTITY_5884b93d9b9614a4b1eaa9dd75218b07]"
        );
        assert_eq!(
            ordinary_placeholder("golden-salt", Category::ENTITY, "backup"),
            "[ENTITY_5884b93d9b9614a4b1eaa9dd75218b07]"
        );
        assert_eq!(
            digest("golden-salt", Category::ENTITY, "plan"),
            "8da8ad8d2ed4843ab710ba6b5d46d3a2"
        );
        assert_eq!(
            digest("golden-salt", Category::ENTITY, "misc"),
            "e614f4bf1cc621bdb804c4e888cb23c3"
        );
        assert_eq!(
            ordinary_placeholder("spec-salt", Category::PERSON, "Taylor Reed"),
            "[PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327]"
        );
        assert_eq!(
            digest("spec-salt", Category::ENTITY, "txt"),
            "9077c92b491a9a5b5bea9d2a771f0234"
        );
        assert_eq!(
            ordinary_placeholder("", Category::PERSON, "Alice Example"),
            "[PERSON_c56f2354f419277d8c8c714a3166f107]"
        );
        assert_eq!(
            ordinary_placeholder("redacted-context-mcp-v1", Category::PERSON, "Alice Example"),
            "[PERSON_c56f2354f419277d8c8c714a3166f107]"
        );
    }

    #[test]
    fn keyed_path_ids_match_the_golden_ones() {
        let key = SaltKey::new("golden-salt");
        assert_eq!(key.path_id("docs/recovery.txt"), "@p_edc1e3a0cbb2");
        assert_eq!(SaltKey::new("spec-salt").path_id("."), "@p_950fe0c0dd4a");
        assert_eq!(SaltKey::new("").path_id("a/b"), path_id("", "a/b"));
    }

    #[test]
    fn golden_alias_suffixes_and_ids() {
        assert_eq!(alias_form_suffix("spec-salt", "taylor"), "92710c8b");
        assert_eq!(
            alias_form_suffix("spec-salt", "taylor.reed@example.invalid"),
            "bfdfbd5d"
        );
        assert_eq!(
            path_id("golden-salt", "docs/recovery.txt"),
            "@p_edc1e3a0cbb2"
        );
        assert_eq!(path_id("golden-salt", "docs/backup.md"), "@p_4d6a1e447acd");
        assert_eq!(
            path_id("golden-salt", "notes/quokkaproject plan.md"),
            "@p_1ec636f068ab"
        );
        assert_eq!(path_id("golden-salt", "notes/misc.txt"), "@p_59b0163ec6ab");
        assert_eq!(path_id("spec-salt", "."), "@p_950fe0c0dd4a");
        assert_eq!(path_id("spec-salt", "docs"), "@p_3e6e02b9c77a");
        assert_eq!(path_id("spec-salt", "docs/readme.txt"), "@p_bad6cf103171");
        assert_eq!(
            github_user_alias("spec-salt", "context", "octocat"),
            "user_bee0b53dc265edd4"
        );
    }

    #[test]
    fn casefold_equals_the_full_fold_of_the_whole_text() {
        // ASCII runs around characters that fold to several (ß, ŉ), into ASCII (K, ſ),
        // or not at all (CJK, emoji), at the start, middle and end.
        for text in [
            "Straße",
            "ßHELLO ſ World \u{212a}elvin",
            "ABC\u{149}DEF",
            "日本語 Text 😀 MiXeD",
            "Ǆ ǅ ǆ ΣΑΣ",
            "trailing é",
            "é",
        ] {
            assert_eq!(
                casefold(text),
                caseless::default_case_fold_str(text),
                "{text}"
            );
        }
    }

    #[test]
    fn normalization_casefolds_fully_and_collapses_irregular_space() {
        assert_eq!(normalize_value("  Straße  "), "strasse");
        assert_eq!(normalize_value("Taylor\n  Reed"), "taylor reed");
        assert_eq!(normalize_value("Project-Meridian"), "project-meridian");
        assert_eq!(normalize_value("a b"), "a b");
    }

    #[test]
    fn recognizer_accepts_current_and_legacy_shapes() {
        for token in [
            "[PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327]",
            "[EMAIL_b6e03a41f7e5c4a5d77d8f67fcef2327.bfdfbd5d]",
            "[SECRET_01]",
            "[ID_1a2b3c4d]",
            "[SERVICE_ACCOUNT_01]",
        ] {
            let m = PLACEHOLDER_RE.find(token).expect(token);
            assert_eq!(m.as_str(), token);
        }
        assert!(PLACEHOLDER_RE.find("[PERSON_xyz]").is_none());
        assert!(PLACEHOLDER_RE.find("[FOO_01]").is_none());
    }
}
