//! Judging a candidate value: is it a literal secret, or a reference, template,
//! placeholder or ordinary word; how random does it look.

use super::lexical::{is_one_of_ignore_ascii_case, starts_with_ignore_ascii_case};

/// Shannon entropy in bits per symbol over bytes (gitleaks' definition).
pub fn shannon_entropy(s: &str) -> f64 {
    let bytes = s.as_bytes();
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[b as usize] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// True when the value is a reference, template or placeholder rather than a literal
/// secret: `${X}`, `{{x}}`, `<x>`, `$VAR`, `%(x)s`, `%VAR%`, `null`, `true`, short
/// numbers, runs of one masking character, `changeme`-type words, …
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() {
        return true;
    }
    if is_one_of_ignore_ascii_case(PLACEHOLDER_WORDS, v) || is_mechanism_name(v) {
        return true;
    }
    let b = v.as_bytes();
    // Shell/env references: $VAR, ${VAR}, $(cmd), $env:X; not crypt hashes ($2a$…).
    if b[0] == b'$'
        && b.len() > 1
        && (b[1].is_ascii_alphabetic() || matches!(b[1], b'_' | b'{' | b'('))
    {
        return true;
    }
    // Templates anywhere in the value; each holds a `{` or a `%` (most values hold
    // neither, and one search for both is cheaper than the others).
    if memchr::memchr2(b'{', b'%', b).is_some()
        && (["${", "{$", "{{", "{%", "#{", "%(", "<%", "@{"]
            .iter()
            .any(|t| v.contains(t))
            || has_brace_field(v)
            || has_printf_verb(v))
    {
        return true;
    }
    // Whole-value wrappers.
    let wrapped = |o: u8, c: u8| b.len() >= 2 && b[0] == o && b[b.len() - 1] == c;
    if wrapped(b'<', b'>') || wrapped(b'%', b'%') || wrapped(b'@', b'@') || wrapped(b'[', b']') {
        return true;
    }
    // Masking runs and filler: one character repeated (`****`, `xxxx`, `aaaaaaaa`).
    if b.len() >= 2 && b.iter().all(|&c| c == b[0]) {
        return true;
    }
    // Truncated examples (`sk-...`, `MIIE…`).
    if memchr::memchr(b'.', b).is_some() && v.contains("...") || !v.is_ascii() && v.contains('…')
    {
        return true;
    }
    // Anchors and fragment references (`#section`), not values.
    if b[0] == b'#' {
        return true;
    }
    if v.chars().all(|c| c == '*' || c == '•' || c == '●') {
        return true;
    }
    // Short numbers (ports, counts, PIN-like config knobs).
    if b.len() <= 5 && b.iter().all(u8::is_ascii_digit) {
        return true;
    }
    [
        "your_",
        "your-",
        "<your",
        "my_secret_",
        "/etc/",
        "/run/secrets",
        "/var/",
        "/usr/",
        "/tmp/",
        "/home/",
        "/opt/",
        "file://",
    ]
    .iter()
    .any(|prefix| starts_with_ignore_ascii_case(v, prefix))
}

/// The name of an authentication mechanism or password-hashing scheme
/// (`--auth-host=scram-sha-256`, `password_encryption = md5`, SASL's `CRAM-MD5`): it says
/// how a secret is checked, it is not one.
fn is_mechanism_name(v: &str) -> bool {
    is_one_of_ignore_ascii_case(
        &[
            "scram-sha-1",
            "scram-sha-256",
            "scram-sha-512",
            "cram-md5",
            "digest-md5",
            "md5",
            "gssapi",
            "xoauth2",
            "oauthbearer",
        ],
        v,
    )
}

/// Whether a value is a word or sentence of a language written in a non-Latin script
/// (CJK, kana, Hangul, Cyrillic, Greek, Arabic, Hebrew, Devanagari, …) rather than a
/// token: it holds no run of 8 ASCII letters and digits with a digit, and either two such
/// letters in a row beside no ASCII word of 8 letters, or four in a row.
/// Generated secrets are ASCII, and a test password that sprinkles single letters of
/// other scripts into ASCII (`barユ£`, `mѥspυb`) stays a token; UI text, comments and
/// labels in those scripts are not secrets (`"重复输入密码"`, `"Пароль"`,
/// `"2FAトークン"`, `"Token生成失败"`).
pub fn is_natural_language(v: &str) -> bool {
    if v.is_ascii() {
        return false;
    }
    let (mut ascii_run, mut run_digits, mut longest_ascii) = (0, false, 0);
    let (mut script_run, mut longest_script) = (0, 0);
    for c in v.chars() {
        if c.is_ascii_alphanumeric() {
            ascii_run += 1;
            run_digits |= c.is_ascii_digit();
            if ascii_run >= 8 && run_digits {
                return false; // a token's run: letters and digits
            }
            longest_ascii = longest_ascii.max(ascii_run);
            script_run = 0;
            continue;
        }
        (ascii_run, run_digits) = (0, false);
        // Past Latin Extended-B (U+024F) and the IPA and spacing-modifier blocks.
        if c > '\u{2FF}' && c.is_alphabetic() {
            script_run += 1;
            longest_script = longest_script.max(script_run);
        } else {
            script_run = 0;
        }
    }
    // Four such letters in a row are language even beside a long ASCII word
    // (`從authenticator送出的初始驗證碼`).
    longest_script >= 4 || longest_script >= 2 && longest_ascii < 8
}

/// An issue tracker key (`PROJ-1234`, `K8S-42`): a project key of capitals and digits, a
/// dash, a number. An identifier, not a secret.
pub fn is_issue_key(v: &str) -> bool {
    let Some((project, number)) = v.split_once('-') else {
        return false;
    };
    (2..=10).contains(&project.len())
        && project.starts_with(|c: char| c.is_ascii_uppercase())
        && project
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && (1..=7).contains(&number.len())
        && number.bytes().all(|b| b.is_ascii_digit())
}

/// `{name}` / `{0}` / `{}` format fields (but not JSON like `{"a":1}` or `{\"a\"…`).
fn has_brace_field(v: &str) -> bool {
    let b = v.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            let mut j = i + 1;
            while j < b.len()
                && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'.' | b':'))
            {
                j += 1;
            }
            if j < b.len() && b[j] == b'}' {
                return true;
            }
        }
        i += 1;
    }
    false
}

/// A printf verb such as `%s`, `%d`, `%v`, `%q` (a value built by formatting).
fn has_printf_verb(v: &str) -> bool {
    let b = v.as_bytes();
    b.windows(2)
        .any(|w| w[0] == b'%' && matches!(w[1], b's' | b'd' | b'v' | b'q' | b'x' | b'r'))
        && !b
            .windows(3)
            .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

/// Values that stand for "no value" or "fill me in".
const PLACEHOLDER_WORDS: &[&str] = &[
    "null",
    "nil",
    "none",
    "undefined",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "empty",
    "blank",
    "unset",
    "changeme",
    "change_me",
    "change-me",
    "changethis",
    "replaceme",
    "replace_me",
    "replace-me",
    "redacted",
    "[redacted]",
    "[filtered]",
    "filtered",
    "masked",
    "hidden",
    "removed",
    "placeholder",
    "todo",
    "tbd",
    "fixme",
    "required",
    "optional",
    "string",
    "str",
    "int",
    "bool",
    "boolean",
    "object",
    "any",
    "secret_here",
    "xxx",
    "your_password",
    "yourpassword",
    "your-password",
    "your_token",
    "your_api_key",
    "your_secret",
    "password_here",
    "token_here",
    "<password>",
    "<token>",
    "<secret>",
    "...",
    "…",
    "n/a",
    "na",
    "default",
    "env",
    "environment",
    "sensitive",
    "********",
];

/// English filler that follows a key in prose ("password: the one you chose").
pub const PROSE_FILLER: &[&str] = &[
    "the",
    "a",
    "an",
    "is",
    "are",
    "be",
    "to",
    "of",
    "for",
    "and",
    "or",
    "not",
    "this",
    "that",
    "it",
    "your",
    "you",
    "will",
    "must",
    "should",
    "can",
    "set",
    "use",
    "used",
    "using",
    "see",
    "if",
    "when",
    "which",
    "with",
    "from",
    "as",
    "in",
    "on",
    "by",
    "at",
    "we",
    "our",
    "my",
    "its",
    "their",
    "there",
    "here",
    "must",
    "may",
    "only",
    "also",
    "then",
    "than",
    "into",
    "same",
    "any",
    "some",
    "all",
    "each",
    "per",
    "new",
    "old",
    "value",
    "field",
    "parameter",
    "option",
    "key",
    "string",
    "none",
    "provided",
    "specified",
    "given",
    "enter",
    "type",
];

/// True for UUID-shaped strings (8-4-4-4-12 hex), which are identifiers, not secrets.
pub fn is_uuid(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() != 36 {
        return false;
    }
    b.iter().enumerate().all(|(i, &c)| {
        if matches!(i, 8 | 13 | 18 | 23) {
            c == b'-'
        } else {
            c.is_ascii_hexdigit()
        }
    })
}

/// Counts of character classes in `v`: (lower, upper, digit, other).
pub fn char_classes(v: &str) -> (usize, usize, usize, usize) {
    let (mut l, mut u, mut d, mut o) = (0, 0, 0, 0);
    for c in v.chars() {
        if c.is_ascii_lowercase() {
            l += 1;
        } else if c.is_ascii_uppercase() {
            u += 1;
        } else if c.is_ascii_digit() {
            d += 1;
        } else {
            o += 1;
        }
    }
    (l, u, d, o)
}

/// Looks like a random token: long enough, mixed classes, and enough entropy. Used by
/// the weak-keyword and fallback rules, never by the strong structural rule.
pub fn looks_random(v: &str, min_len: usize, min_entropy: f64) -> bool {
    if v.len() < min_len || is_uuid(v) {
        return false;
    }
    let (l, u, d, _) = char_classes(v);
    let classes = usize::from(l > 0) + usize::from(u > 0) + usize::from(d > 0);
    if d == 0 || classes < 2 {
        return false;
    }
    shannon_entropy(v) >= min_entropy
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lists values are compared with up to ASCII case hold lower-case entries: an
    /// entry with a capital would never equal the lower-cased value the comparison
    /// stands for.
    #[test]
    fn case_blind_word_lists_are_lower_case() {
        for w in PLACEHOLDER_WORDS.iter().chain(PROSE_FILLER) {
            assert_eq!(*w, w.to_ascii_lowercase());
        }
        assert!(is_one_of_ignore_ascii_case(PLACEHOLDER_WORDS, "CHANGEME"));
        assert!(starts_with_ignore_ascii_case("File:///x", "file://"));
        assert!(!starts_with_ignore_ascii_case("fil", "file://"));
    }

    #[test]
    fn entropy_of_uniform_and_constant_strings() {
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
    }

    #[test]
    fn placeholders_and_references_are_not_values() {
        for v in [
            "${DB_PASSWORD}",
            "{$password}",
            "{{ .Values.password }}",
            "<password>",
            "$PASS",
            "%(password)s",
            "%DB_PASS%",
            "null",
            "None",
            "true",
            "12345",
            "changeme",
            "****",
            "xxxxxx",
            "{0}",
            "{ctf_name} reset",
            "your_api_key_here",
            "/run/secrets/db",
            "%s",
            "pre{%tag%}post",
            "key-#{name}-suffix",
            "a@{b}c",
            "sk-proj-...",
            "MIIEv\u{2026}",
        ] {
            assert!(is_placeholder(v), "{v}");
        }
        for v in [
            "hunter2",
            "s3cr3t!",
            "$2a$10$abcdefghijklmnopqrstuv",
            "{\\\"a\\\":\\\"b\\\"}",
            "123456",
            "p%40ss",
        ] {
            assert!(!is_placeholder(v), "{v}");
        }
    }

    #[test]
    fn words_in_other_scripts_are_language_not_tokens() {
        for v in [
            "重复输入密码",
            "Пароль",
            "2FAトークン",
            "Token生成失败",
            "從authenticator送出的初始驗證碼",
            "비밀번호 확인",
            "كلمة المرور",
            "Κωδικός",
        ] {
            assert!(is_natural_language(v), "{v}");
        }
        // Latin text, accented Latin and tokens with a long ASCII run are not.
        for v in [
            "Contrasenya",
            "Mot de passe oublié",
            "contraseña",
            "Zq81kLm2Xw9",
            "ключ_A8f3kLm29Qx",
            "barユ£",
            "mѥspυb",
        ] {
            assert!(!is_natural_language(v), "{v}");
        }
    }

    #[test]
    fn issue_keys_have_a_project_and_a_number() {
        for v in ["PROJ-1234", "K8S-42", "ABC-1"] {
            assert!(is_issue_key(v), "{v}");
        }
        for v in [
            "proj-1234",
            "PROJ-12a4",
            "P-1",
            "PROJ-",
            "AKIA-1234X",
            "Zq81-kLm2",
        ] {
            assert!(!is_issue_key(v), "{v}");
        }
    }
}
