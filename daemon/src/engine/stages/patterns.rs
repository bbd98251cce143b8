//! The reference's built-in baseline patterns (spec 5.4), rewritten for [`PyPattern`]
//! so that every match equals Python's. Compiled once per process.

use crate::engine::placeholder::Category;
use crate::engine::prepass::byteclass::{ALNUM, ByteClass, DIGITS, run_extent};
use crate::engine::prepass::{GateWords, Shape};
use crate::engine::python::re::{
    Alternation, FindCache, Finder, Guard, MatchAt, PY_SPACE, PyPattern, is_ci_letter_extra,
};
use crate::engine::stages::gate::{LiteralGated, RunGated, find_in_run};
use crate::engine::wordlists::{COUNTRY_TLDS, FILE_LIKE_TLDS, GENERIC_TLDS};
use std::sync::LazyLock;

/// One baseline stage: what it matches and what it redacts as.
pub struct Stage {
    /// The reference's name for the stage (tests and debugging find stages by it).
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "read by tests and in a debugger")
    )]
    pub name: &'static str,
    pub category: Category,
    pub finder: Box<dyn Finder + Send + Sync>,
    /// Words one of which every match holds; a text known to hold none of them is not
    /// searched.
    pub needs: GateWords,
    /// The finder is a [`LiteralGated`] whose literals are among
    /// [`SECRET_GATE_LITERALS`]: where the detector layer's keyword pass located those
    /// in the text, it checks their starts instead of searching the text for them (see
    /// [`FindCache::literal_starts`]).
    pub starts_from_scan: bool,
    /// A shape every match has that the detector layer's own passes look for: a text
    /// they saw without it is not searched (see [`Shapes`]).
    pub shape: Option<Shape>,
}

fn single(name: &'static str, category: Category, p: PyPattern) -> Stage {
    Stage {
        name,
        category,
        finder: Box::new(p),
        needs: GateWords::NONE,
        starts_from_scan: false,
        shape: None,
    }
}

/// What every match of [`pem`] holds.
const PEM_NEEDS: &[&str] = &["-----begin"];
/// What every match of [`salt_assignment`] holds (`vault_salt`, `redaction-salt`, `salt`).
const SALT_NEEDS: &[&str] = &["salt"];
/// What every match of [`url`] starts with.
const URL_NEEDS: &[&str] = &["http", "www."];
/// What a URL of any scheme holds.
const SCHEME_NEEDS: &[&str] = &["://"];
/// What a private IPv4 address (`10/8`, `172.16/12`, `192.168/16`) starts with.
const PRIVATE_ADDRESS_NEEDS: &[&str] = &["10.", "172.", "192.168."];

/// What every placeholder-shaped token starts with: `[`, a category name, `_`.
static PLACEHOLDER_NEEDS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    Category::ALL
        .iter()
        .map(|c| &*format!("[{}_", c.as_str().to_ascii_lowercase()).leak())
        .collect()
});

/// The words that rule stages out by their absence: the detector layer's shared keyword
/// pass reports which of them a text holds (its scan reads every byte anyway), and
/// [`GateWords`] answers for the stages. At most 64.
pub static GATE_WORDS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let words = [
        PEM_NEEDS,
        SALT_NEEDS,
        PROVIDER_PREFIXES,
        URL_NEEDS,
        SCHEME_NEEDS,
        PRIVATE_HOST_SUFFIXES,
        PRIVATE_ADDRESS_NEEDS,
        &PLACEHOLDER_NEEDS,
    ]
    .concat();
    assert!(words.len() <= 64, "gate words fit one u64");
    assert!(
        words
            .iter()
            .all(|w| !w.bytes().any(|b| b.is_ascii_uppercase())),
        "gate words are stored in lower case"
    );
    words
});

/// A stage whose every match lies in one run of `class` bytes, holds at least
/// `min_len` bytes and `min_core` `core` bytes, and looks at most one character past
/// its end (see [`RunGated`]).
fn gated(
    name: &'static str,
    category: Category,
    p: PyPattern,
    class: ByteClass,
    core: ByteClass,
    (min_len, min_core): (usize, usize),
) -> Stage {
    Stage {
        name,
        category,
        finder: Box::new(RunGated {
            inner: p,
            class,
            core,
            min_len,
            min_core,
        }),
        needs: GateWords::NONE,
        starts_from_scan: false,
        shape: None,
    }
}

/// Python's `\d` and `\s` also hold non-ASCII characters: every numeric gate takes
/// non-ASCII bytes as possible digits.
const ANY_DIGIT: ByteClass = ByteClass::new(DIGITS, true);

/// `(?!X)` for a single-character class X, as a consuming alternative.
fn not_followed_by(class_body: &str) -> String {
    format!(r"(?:[^{class_body}]|\z)")
}

/// The generic key = value secret rule (alternative 8 of the reference's generic rule).
pub fn assignment_secret() -> PyPattern {
    PyPattern::new(
        &format!(
            r#"(?i)(?:api[_-]?key|secret|token|password|passwd|pwd|private[_-]?key)\b{s}*[:=]{s}*["']?[A-Za-z0-9._~+/=@:-]{{8,}}["']?"#,
            s = PY_SPACE
        ),
        Guard::NotLetterCi,
    )
}

/// What every match of [`provider_tokens`] starts with (ASCII case ignored).
const PROVIDER_PREFIXES: &[&str] = &[
    "akia",
    "asia",
    "github_pat_",
    "gho_",
    "ghp_",
    "ghs_",
    "ghu_",
    "sk-",
    "xoxb-",
    "xoxa-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "aiza",
    "bearer",
];

/// What every match of [`assignment_secret`] starts with (ASCII case ignored).
const SECRET_KEY_WORDS: &[&str] = &["api", "secret", "token", "passw", "pwd", "private"];

/// The literals the secret stages' matches start with (ASCII case ignored): the
/// detector layer's keyword pass locates them for [`Stage::starts_from_scan`].
pub static SECRET_GATE_LITERALS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| [PROVIDER_PREFIXES, SECRET_KEY_WORDS].concat());

/// A secret stage gated on `literals` (each one of [`SECRET_GATE_LITERALS`]), which
/// takes its candidate starts from the detector layer's pass when it ran.
fn secret_gated<P: MatchAt + Send + Sync + 'static>(
    name: &'static str,
    inner: P,
    literals: &[&'static str],
    needs: GateWords,
) -> Stage {
    assert!(
        literals.iter().all(|l| SECRET_GATE_LITERALS.contains(l)),
        "a scanned stage's literals are secret gate literals"
    );
    Stage {
        name,
        category: Category::SECRET,
        finder: Box::new(LiteralGated::new(inner, literals.iter().copied())),
        needs,
        starts_from_scan: true,
        shape: None,
    }
}

/// What every match of [`salt_assignment`] starts with (ASCII case ignored).
const SALT_WORDS: &[&str] = &["vault", "redaction", "salt"];

fn provider_tokens() -> PyPattern {
    PyPattern::new(
        &format!(
            r"(?i)\b(?:AKIA|ASIA)[0-9A-Z]{{16}}\b|\bgithub_pat_[A-Za-z0-9_]{{20,}}\b|\bgh[opsu]_[A-Za-z0-9_]{{20,}}\b|\bsk-[A-Za-z0-9_-]{{20,}}\b|\bxox[baprs]-[A-Za-z0-9-]{{10,}}\b|\bAIza[0-9A-Za-z_-]{{35}}\b|\bBearer{s}+[A-Za-z0-9._~+/=-]{{12,}}\b",
            s = PY_SPACE
        ),
        Guard::None,
    )
}

fn pem() -> PyPattern {
    PyPattern::new(
        r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
        Guard::None,
    )
}

fn salt_assignment() -> PyPattern {
    PyPattern::new(
        &format!(
            r#"(?i)(?:vault[_-]?salt|redaction[_-]?salt|salt)\b{s}*[:=]{s}*(?:"""[^"]{{1,512}}"""|"[^"\n]{{1,512}}"|'[^'\n]{{1,512}}'|[A-Za-z0-9._~+/=@:-]{{1,256}})"#,
            s = PY_SPACE
        ),
        Guard::NotLetterCi,
    )
}

/// Code mode's [`pem`]: the body between the armour lines is key material as source
/// holds it (base64, headers such as `Proc-Type: 4,ENCRYPTED`, line breaks, escapes and
/// the quotes and joins of a literal split over lines), never code that builds a block
/// (`"-----BEGIN RSA PRIVATE KEY-----\n" . wordwrap($key, 64) . "…-----END…"`) nor an
/// elided body (`MIIE...`).
fn code_pem() -> PyPattern {
    PyPattern::new(
        r#"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[A-Za-z0-9+/=\s\\"',;:|-]|\.[A-Za-z0-9+/=\s\\"',;:|-])*?-----END [A-Z ]*PRIVATE KEY-----"#,
        Guard::None,
    )
}

/// Code mode's [`salt_assignment`]: the key is a whole word (`old_password_salt = …` and
/// `$password_default_salt` are other names), and a bare value holds a digit (`salt:
/// user.salt` reads another variable; a literal salt written bare is random).
fn code_salt_assignment() -> PyPattern {
    PyPattern::new(
        &format!(
            r#"(?i)(?:vault[_-]?salt|redaction[_-]?salt|salt)\b{s}*[:=]{s}*(?:"""[^"]{{1,512}}"""|"[^"\n]{{1,512}}"|'[^'\n]{{1,512}}'|[A-Za-z._~+/=@:-]{{0,255}}[0-9][A-Za-z0-9._~+/=@:-]{{0,255}})"#,
            s = PY_SPACE
        ),
        Guard::NotWord,
    )
}

fn hex_secret() -> PyPattern {
    PyPattern::new(r"(?i)[0-9a-f]{64,}", Guard::NotHex)
}

pub fn url() -> PyPattern {
    PyPattern::new(
        r"(?i)\b(?:https?://|www\.)[^\s\x1C-\x1F<>)\]]+",
        Guard::None,
    )
}

pub fn email() -> PyPattern {
    PyPattern::new(
        r"(?i)\b[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}\b",
        Guard::None,
    )
}

fn uuid() -> PyPattern {
    PyPattern::new(
        r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\b",
        Guard::None,
    )
}

fn ipv4() -> PyPattern {
    PyPattern::new(r"\b(?:\d{1,3}\.){3}\d{1,3}\b", Guard::None)
}

fn ssn() -> PyPattern {
    PyPattern::new(r"\b\d{3}-\d{2}-\d{4}\b", Guard::None)
}

fn card() -> PyPattern {
    PyPattern::with_one_char_tail(
        &format!(r"((?:\d[ -]*?){{13,19}}){}", not_followed_by(r"\d")),
        Guard::NotDigit,
    )
}

/// The bytes a match of [`phone`] consists of: digits, `+ ( ) . -` and whitespace
/// (`\s`, `\x1c`-`\x1f`), non-ASCII ones included.
pub const PHONE_RUN: ByteClass =
    ByteClass::new(b"0123456789+().- \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", true);

/// The fewest digits in a match of [`phone`]: three groups of two.
pub const PHONE_DIGITS: usize = 6;

fn phone() -> PyPattern {
    PyPattern::with_one_char_tail(
        r"((?:\+\d{1,3}[\s\x1C-\x1F.-]?)?(?:\(?\d{2,4}\)?[\s\x1C-\x1F.-]?){2,4}\d{2,4})(?:[^\p{L}\p{N}_]|\z)",
        Guard::NotWord,
    )
}

/// The reference's domain pattern, searched without its label bound (a label is 1–63
/// characters): `{0,61}` repeated under IGNORECASE made a lazy DFA that filled its
/// 8 MiB cache in every thread that searched with it. [`labels_within_bound`] puts the
/// bound back on the span. Exact: the labels' dots are fixed by the text, and the
/// bounded pattern cannot stop short of a long label at the same start (a TLD must be
/// followed by a character that is neither `.` nor a letter), so at each start it
/// matches exactly when the unbounded one does with every label within the bound.
pub fn domain() -> PyPattern {
    PyPattern::with_trimmed_lookahead(&domain_source("*"), Guard::NotDomainContext, domain_end)
        .with_span_check(labels_within_bound)
}

/// Whether every label of a domain span is at most 63 characters long (RFC 1035).
fn labels_within_bound(span: &str) -> bool {
    span.split('.').all(|label| label.chars().nth(63).is_none())
}

/// The domain regex with `label_run` as the repetition of a label's inner characters:
/// group 1 a generic TLD, group 2 a country's, each followed by its consumed look-ahead.
fn domain_source(label_run: &str) -> String {
    let generic = GENERIC_TLDS.join("|");
    let mut cc: Vec<&str> = COUNTRY_TLDS
        .iter()
        .copied()
        .filter(|t| !FILE_LIKE_TLDS.contains(t))
        .collect();
    cc.sort_unstable();
    let cc = cc.join("|");
    // (?![\w-]|\.[\w-]) as consuming alternatives; the ccTLD branch also refuses ( and [.
    let end_generic = r"(?:[^\p{L}\p{N}_.-]|\z|\.(?:[^\p{L}\p{N}_-]|\z))";
    let end_cc = r"(?:[^\p{L}\p{N}_.(\[-]|\z|\.(?:[^\p{L}\p{N}_-]|\z))";
    format!(
        r"(?i)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{label_run}[A-Za-z0-9])?\.)+(?:({generic}){end_generic}|(?-i:({cc})){end_cc})"
    )
}

/// Where a [`domain`] match's TLD ends: before its consumed look-ahead, which is
/// nothing at the end of the text, one character that is not a letter, digit, `_`, `.`
/// or `-`, a `.` alone at the end, or a `.` and one character that is not a letter,
/// digit, `_` or `-`. A TLD ends in an ASCII letter or digit (or in one of the letters
/// IGNORECASE equates with ASCII ones, should a generic TLD ending in `i`, `k` or `s`
/// be listed); no character of the look-ahead is one of those, and a TLD does not end
/// in `.`. So the match's last character belongs to the TLD or to the look-ahead by
/// what it is, and a `.` before a look-ahead character belongs to the look-ahead. (The pattern's captures told the same at a cost: their cache, sized
/// by the pattern's thousands of states, took 17 MB across a cold index's threads.)
fn domain_end(matched: &str) -> usize {
    let in_tld = |c: char| c.is_ascii_alphanumeric() || is_ci_letter_extra(c);
    let mut end = matched.len();
    if let Some(last) = matched.chars().next_back()
        && !in_tld(last)
    {
        end -= last.len_utf8();
        if matched[..end].ends_with('.') {
            end -= 1;
        }
    }
    end
}

/// [`domain`], searched only around dots followed by a segment that can be a TLD of
/// the pattern. A match is labels and dots ending in a whole TLD segment, all inside
/// one run of `[A-Za-z0-9.-]` (plus non-ASCII: IGNORECASE folds `İ ı ſ K` onto
/// letters), starting after a character outside that class (its guard), and it reads at
/// most one character past the run. So the pattern runs only on such a run, on the
/// haystack cut one character after it.
pub struct DomainCandidates {
    inner: PyPattern,
}

/// Bytes of a domain run.
const DOMAIN_RUN: ByteClass = ByteClass::concat(ALNUM, b".-", true);

impl DomainCandidates {
    /// Whether `segment` (the bytes after a dot up to the next byte outside
    /// `[A-Za-z0-9-]`) can be the TLD of a match: a generic TLD in any ASCII case, a
    /// ccTLD of the pattern in exact case, or anything holding a non-ASCII byte.
    fn may_be_tld(segment: &[u8]) -> bool {
        if !segment.is_ascii() {
            return true;
        }
        if segment.len() == 2 && COUNTRY_TLDS.iter().any(|t| t.as_bytes() == segment) {
            return !FILE_LIKE_TLDS.iter().any(|t| t.as_bytes() == segment);
        }
        GENERIC_TLDS
            .iter()
            .any(|t| t.as_bytes().eq_ignore_ascii_case(segment))
    }
}

impl Finder for DomainCandidates {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        let b = hay.as_bytes();
        let mut at = start;
        while let Some(offset) = memchr::memchr(b'.', &b[at..]) {
            let dot = at + offset;
            let segment_end = dot
                + 1
                + b[dot + 1..]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'-' || c >= 0x80))
                    .unwrap_or(b.len() - dot - 1);
            let segment = &b[dot + 1..segment_end];
            if !Self::may_be_tld(segment) {
                at = dot + 1;
                continue;
            }
            let (run_start, run_end) = run_extent(b, dot, start, |c| DOMAIN_RUN.has(c));
            // Both ends are boundaries: the run is ASCII or whole characters, and the
            // byte before it (if any) is ASCII or `start`.
            if let Some(found) = find_in_run(&self.inner, hay, run_start, run_end) {
                return Some(found);
            }
            at = run_end;
        }
        None
    }

    fn uses_word_boundary(&self) -> bool {
        self.inner.uses_word_boundary()
    }
}

pub fn handle() -> PyPattern {
    PyPattern::new(r"@[A-Za-z0-9_][A-Za-z0-9_.-]+", Guard::NotWordOrSlash)
}

fn pem_stage() -> Stage {
    Stage {
        needs: GateWords::of(PEM_NEEDS),
        ..single("pem", Category::SECRET, pem())
    }
}

fn salt_stage() -> Stage {
    salt_stage_with(salt_assignment())
}

fn salt_stage_with(pattern: PyPattern) -> Stage {
    Stage {
        name: "salt",
        category: Category::SECRET,
        finder: Box::new(LiteralGated::new(pattern, SALT_WORDS.iter().copied())),
        needs: GateWords::of(SALT_NEEDS),
        starts_from_scan: false,
        shape: None,
    }
}

/// Default-profile stages that run before configured terms, in pipeline order.
pub static EARLY_STAGES: LazyLock<Vec<Stage>> = LazyLock::new(|| {
    vec![
        pem_stage(),
        salt_stage(),
        secret_gated(
            "generic_secret",
            Alternation(vec![provider_tokens(), assignment_secret()]),
            &[PROVIDER_PREFIXES, SECRET_KEY_WORDS].concat(),
            GateWords::NONE,
        ),
        // `[0-9a-f]{64,}`: ASCII hex only (no character case-folds into it).
        Stage {
            shape: Some(Shape::LongHex),
            ..gated(
                "hex_secret",
                Category::SECRET,
                hex_secret(),
                ByteClass::new(b"0123456789abcdefABCDEF", false),
                ByteClass::new(b"0123456789abcdefABCDEF", false),
                (64, 64),
            )
        },
        Stage {
            needs: GateWords::of(URL_NEEDS),
            ..single("url", Category::URL, url())
        },
        single("email", Category::EMAIL, email()),
        Stage {
            shape: Some(Shape::UuidLength),
            ..single("uuid", Category::ID, uuid())
        },
        // Four dotted groups of digits: 7+ bytes, 4+ digits; `\b` reads one character.
        Stage {
            shape: Some(Shape::DottedDigits),
            ..gated(
                "ipv4",
                Category::IP,
                ipv4(),
                ByteClass::new(b"0123456789.", true),
                ANY_DIGIT,
                (7, 4),
            )
        },
        // `ddd-dd-dddd`: 11 bytes, 9 digits.
        Stage {
            shape: Some(Shape::DashInDigits),
            ..gated(
                "ssn",
                Category::SSN,
                ssn(),
                ByteClass::new(b"0123456789-", true),
                ANY_DIGIT,
                (11, 9),
            )
        },
        // 13 to 19 digits with spaces or hyphens between; the tail reads one character.
        Stage {
            shape: Some(Shape::CardDigits),
            ..gated(
                "card",
                Category::CARD,
                card(),
                ByteClass::new(b"0123456789 -", true),
                ANY_DIGIT,
                (13, 13),
            )
        },
        // At least three groups of two digits, with `+ ( ) . -` and whitespace between
        // (`\s` and `\x1c`-`\x1f`); the tail reads one character.
        Stage {
            shape: Some(Shape::PhoneDigits),
            ..gated(
                "phone",
                Category::PHONE,
                phone(),
                PHONE_RUN,
                ANY_DIGIT,
                (PHONE_DIGITS, PHONE_DIGITS),
            )
        },
        Stage {
            name: "domain",
            category: Category::DOMAIN,
            finder: Box::new(DomainCandidates { inner: domain() }),
            needs: GateWords::NONE,
            starts_from_scan: false,
            shape: None,
        },
        single("handle", Category::HANDLE, handle()),
    ]
});

/// Code mode with the detector layer: the reference stages that stay (private keys and
/// salt assignments, both read more strictly, and provider token shapes); the precise
/// detectors do the rest.
pub static CODE_STAGES: LazyLock<Vec<Stage>> = LazyLock::new(|| {
    vec![
        Stage {
            needs: GateWords::of(PEM_NEEDS),
            ..single("pem", Category::SECRET, code_pem())
        },
        salt_stage_with(code_salt_assignment()),
        secret_gated(
            "provider_tokens",
            provider_tokens(),
            PROVIDER_PREFIXES,
            GateWords::of(PROVIDER_PREFIXES),
        ),
    ]
});

/// Host suffixes that name private networks; URLs and hostnames under them are
/// redacted in code mode (public documentation links stay readable).
pub const PRIVATE_HOST_SUFFIXES: &[&str] = &[
    ".internal",
    ".local",
    ".localdomain",
    ".corp",
    ".lan",
    ".intranet",
    ".private",
    ".home.arpa",
];

fn host_of(matched: &str) -> &str {
    // After `scheme://` when the text starts with a scheme (`https`, `postgresql`,
    // `mongodb+srv`, …), else from the start (`www.…`, a bare host name).
    let rest = matched
        .split_once("://")
        .filter(|(scheme, _)| is_scheme(scheme))
        .map_or(matched, |(_, rest)| rest);
    // The authority, then past any `user:password@`, then before any `:port`.
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host = &host_port[..host_port.find(':').unwrap_or(host_port.len())];
    host.trim_end_matches('.')
}

/// A URL scheme: a letter, then letters, digits, `+`, `-` or `.`.
fn is_scheme(s: &str) -> bool {
    let mut b = s.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic())
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
}

/// Whether a URL or hostname points into a private network: by its suffix, or, when
/// `by_address`, as an RFC 1918 IPv4 address.
fn private_host(matched: &str, by_address: bool) -> bool {
    let host = crate::engine::placeholder::casefold(host_of(matched));
    if PRIVATE_HOST_SUFFIXES.iter().any(|s| host.ends_with(s)) {
        return true;
    }
    by_address
        && host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_private())
}

/// URLs, then bare hostnames, then URLs of any other scheme (connection strings such as
/// `postgresql://db.corp:5432/app`, `redis://cache.internal`), whose host is private (see
/// [`private_host`]).
pub struct PrivateHosts {
    url: PyPattern,
    domain: PyPattern,
    any_url: PyPattern,
}

impl PrivateHosts {
    /// The patterns in priority order (on equal starts the earlier wins), each with
    /// whether an RFC 1918 address counts as well as a private suffix.
    fn patterns(&self) -> [(&PyPattern, bool); 3] {
        [
            (&self.url, true),
            (&self.domain, true),
            (&self.any_url, false),
        ]
    }

    /// The next match of `p` from `start` whose host is private (`by_address`: an RFC 1918
    /// address counts, as well as a private suffix), and whether the search passed over a
    /// match with a public host on the way.
    fn next_private_or_skipped(
        p: &PyPattern,
        by_address: bool,
        hay: &str,
        mut start: usize,
    ) -> (Option<(usize, usize)>, bool) {
        let mut skipped = false;
        loop {
            let Some((s, e)) = p.find_at(hay, start) else {
                return (None, skipped);
            };
            if private_host(&hay[s..e], by_address) {
                return (Some((s, e)), skipped);
            }
            skipped = true;
            start = e.max(s + 1);
        }
    }
}

/// Which words a private host match needs occur in a text: `http`/`www.` and a private
/// suffix or the start of a private IPv4 address for [`url`] (its host is a piece of the
/// text), a private suffix for a bare hostname, a suffix and `://` for a URL of another
/// scheme.
#[derive(Clone, Copy)]
struct HostWords {
    url: bool,
    suffix: bool,
    scheme: bool,
}

impl HostWords {
    /// Read from the haystack itself (the URL search always runs).
    fn of(hay: &str) -> HostWords {
        static SUFFIXES: LazyLock<aho_corasick::AhoCorasick> = LazyLock::new(|| {
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(PRIVATE_HOST_SUFFIXES)
                .expect("static suffixes")
        });
        HostWords {
            url: true,
            suffix: SUFFIXES.is_match(hay),
            scheme: hay.contains("://"),
        }
    }

    fn from_seen(seen: GateWords) -> HostWords {
        /// The gate words of a URL's start, a private suffix, `://`, and the start of a
        /// private IPv4 address.
        static NEEDS: LazyLock<[GateWords; 4]> = LazyLock::new(|| {
            [
                URL_NEEDS,
                PRIVATE_HOST_SUFFIXES,
                SCHEME_NEEDS,
                PRIVATE_ADDRESS_NEEDS,
            ]
            .map(GateWords::of)
        });
        let [url, suffix, scheme, address] = NEEDS.map(|needs| seen.may_match(needs));
        HostWords {
            url: url && (suffix || address),
            suffix,
            scheme,
        }
    }
}

impl PrivateHosts {
    /// The stage for a text whose [`GATE_WORDS`] are known: the searches that cannot
    /// find a private host there are skipped without reading the text again; `None`
    /// when none can.
    pub fn knowing(&self, seen: GateWords) -> Option<PrivateHostSearch<'_>> {
        let words = HostWords::from_seen(seen);
        (words.url || words.suffix).then_some(PrivateHostSearch {
            hosts: self,
            words: Some(words),
        })
    }

    /// The stage for a text whose words are not known.
    #[cfg(test)]
    pub fn search_any(&self) -> PrivateHostSearch<'_> {
        PrivateHostSearch {
            hosts: self,
            words: None,
        }
    }

    /// Remembers which pattern has no match left, and skips from the start the searches
    /// whose words `words` rules out (the bare-domain search, the costliest stage of code
    /// mode, needs a private suffix). Found matches, and searches that passed over public
    /// hosts, are searched again from each `start`, as `find_from` always did.
    fn search(
        &self,
        hay: &str,
        start: usize,
        cache: &mut FindCache,
        words: impl FnOnce() -> HostWords,
    ) -> Option<(usize, usize)> {
        let cache = &mut cache.slots;
        if cache.is_empty() {
            let HostWords {
                url,
                suffix,
                scheme,
            } = words();
            let slot = |may_match: bool| if may_match { None } else { Some(None) };
            cache.extend([slot(url), slot(suffix), slot(suffix && scheme)]);
        }
        let mut best: Option<(usize, usize)> = None;
        for ((p, by_address), slot) in self.patterns().into_iter().zip(cache.iter_mut()) {
            let next = match *slot {
                Some(None) => None,
                _ => {
                    let (found, skipped) = Self::next_private_or_skipped(p, by_address, hay, start);
                    // Only a search that met no match at all rules the pattern out for
                    // every later start: a later start can fall inside a skipped public
                    // match and find another match beginning inside it (a long URL that
                    // swallowed a quote and a private URL after it).
                    if found.is_none() && !skipped {
                        *slot = Some(None);
                    }
                    found
                }
            };
            // On equal starts the URL wins, as before.
            if let Some((s, e)) = next
                && best.is_none_or(|(bs, _)| s < bs)
            {
                best = Some((s, e));
            }
        }
        best
    }
}

/// The private-host stage over one text: with the words its searches need when known
/// from the text's [`GATE_WORDS`], else reading them from the text itself.
pub struct PrivateHostSearch<'a> {
    hosts: &'a PrivateHosts,
    words: Option<HostWords>,
}

impl Finder for PrivateHostSearch<'_> {
    fn find_from(&self, hay: &str, start: usize) -> Option<(usize, usize)> {
        self.find_from_cached(hay, start, &mut FindCache::default())
    }

    fn find_from_cached(
        &self,
        hay: &str,
        start: usize,
        cache: &mut FindCache,
    ) -> Option<(usize, usize)> {
        let words = || self.words.unwrap_or_else(|| HostWords::of(hay));
        self.hosts.search(hay, start, cache, words)
    }

    fn uses_word_boundary(&self) -> bool {
        true
    }
}

/// The code-mode private host stage.
pub static PRIVATE_HOSTS: LazyLock<PrivateHosts> = LazyLock::new(|| PrivateHosts {
    url: url(),
    domain: domain(),
    // Up to a blank, a quote or a closing bracket. [`url`] runs on through a closing
    // quote (the reference's pattern), so a quoted `"http://x.internal"` is found here.
    any_url: PyPattern::new(
        r#"(?i)\b[a-z][a-z0-9+.\-]*://[^\s\x1C-\x1F<>)\]"'`]+"#,
        Guard::None,
    ),
});

fn ipv6() -> PyPattern {
    let h = "[0-9A-F]{1,4}";
    let body = [
        format!("(?:{h}:){{7}}{h}"),
        format!("(?:{h}:){{1,7}}:"),
        format!("(?:{h}:){{1,6}}:{h}"),
        format!("(?:{h}:){{1,5}}(?::{h}){{1,2}}"),
        format!("(?:{h}:){{1,4}}(?::{h}){{1,3}}"),
        format!("(?:{h}:){{1,3}}(?::{h}){{1,4}}"),
        format!("(?:{h}:){{1,2}}(?::{h}){{1,5}}"),
        format!("{h}:(?:(?::{h}){{1,6}})"),
        format!(":(?:(?::{h}){{1,7}}|:)"),
    ]
    .join("|");
    PyPattern::with_one_char_tail(
        &format!(r"(?i)((?:{body}))(?:[^0-9A-F:]|\z)"),
        Guard::NotHexOrColon,
    )
}

/// Extended-profile stages, run after the default ones.
pub static EXTENDED_STAGES: LazyLock<Vec<Stage>> = LazyLock::new(|| {
    let s = PY_SPACE;
    vec![
        single(
            "service_account",
            Category::SERVICE_ACCOUNT,
            PyPattern::new(
                r"(?i)\b(?:sp|svc|sa)-[A-Za-z0-9][A-Za-z0-9._-]{2,}\b",
                Guard::None,
            ),
        ),
        single(
            "connection",
            Category::CONNECTION,
            PyPattern::new(
                &format!(
                    r"(?i)\b(?:(?:server|host|data{s}+source|uid|user{s}+id|password|pwd|accountkey|sharedaccesskey){s}*={s}*[^;\s\x1C-\x1F]+;){{2,}}[^ \n\r]*"
                ),
                Guard::None,
            ),
        ),
        single(
            "iban",
            Category::IBAN,
            PyPattern::new(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b", Guard::None),
        ),
        single("ipv6", Category::IP, ipv6()),
        single(
            "mac",
            Category::MAC,
            PyPattern::new(r"(?i)\b[0-9A-F]{2}(?:[:-][0-9A-F]{2}){5}\b", Guard::None),
        ),
        single(
            "dob",
            Category::DOB,
            PyPattern::new(
                &format!(
                    r"(?i)\b(?:date{s}+of{s}+birth|dob|birthdate){s}*[:=]{s}*(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}[/-]\d{{1,2}}[/-]\d{{2,4}})\b"
                ),
                Guard::None,
            ),
        ),
        single(
            "passport",
            Category::PASSPORT,
            PyPattern::new(
                &format!(r"(?i)\bpassport(?:{s}+(?:no|number))?{s}*[:=]{s}*[A-Z0-9]{{6,12}}\b"),
                Guard::None,
            ),
        ),
        single(
            "driver_id",
            Category::DRIVER_ID,
            PyPattern::new(
                &format!(
                    r"(?i)\b(?:driver'?s?{s}+licen[cs]e|driving{s}+licen[cs]e|driver[_-]?id){s}*[:=]{s}*[A-Z0-9-]{{6,20}}\b"
                ),
                Guard::None,
            ),
        ),
        single(
            "unicode_control",
            Category::UNICODE_CONTROL,
            PyPattern::new(
                r"[\x{200B}-\x{200F}\x{202A}-\x{202E}\x{2060}-\x{206F}]",
                Guard::None,
            ),
        ),
        single(
            "prompt_injection",
            Category::PROMPT_INJECTION,
            PyPattern::new(
                &format!(
                    r"(?i)\b(?:ignore{s}+(?:all{s}+)?previous{s}+instructions|disregard{s}+(?:all{s}+)?(?:prior|previous){s}+instructions|system{s}+prompt|developer{s}+message|tool{s}+call)\b"
                ),
                Guard::None,
            ),
        ),
    ]
});

/// `ORG_SUFFIX_RE`: capitalized words ending in a legal-entity suffix.
pub static ORG_SUFFIX: LazyLock<PyPattern> = LazyLock::new(|| {
    PyPattern::new(
        &format!(
            r"\b(?:[A-Z][A-Za-z0-9&'.-]+(?:{s}+|[-_])){{0,5}}[A-Z][A-Za-z0-9&'.-]+{s}+(?:AG|BV|Corp(?:oration)?|GmbH|Holdings|Inc|Limited|LLC|Ltd|NV|PLC|SA|SAS)\b",
            s = PY_SPACE
        ),
        Guard::None,
    )
});

/// Labels that introduce a list of people.
pub const IDENTITY_LABEL: &str = "attendees?|participants?|stakeholders?|owners?|contacts?|authors?|reviewers?|approvers?|speakers?|presenters?";

/// `IDENTITY_LINE_RE` (groups: label, spacing before `:`, spacing after, value).
pub static IDENTITY_LINE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(&format!(
        r"(?i)\b({IDENTITY_LABEL})\b([ \t]*):([ \t]*)([^\r\n]*)"
    ))
    .expect("identity pattern")
});

/// `SPEAKER_LABEL_RE`: a capitalized word at a line start followed by `:`.
pub static SPEAKER_LABEL: LazyLock<PyPattern> = LazyLock::new(|| {
    PyPattern::with_end_groups(r"(?m)^([A-Z][A-Za-z'.-]{2,})[ \t]*:", Guard::None, &[1])
});

/// `(?!_\d{2}\])`: a path token is not the category of a legacy placeholder.
fn not_legacy_suffix(rest: &str) -> bool {
    !legacy_suffix_unicode(rest)
}

fn legacy_suffix_unicode(rest: &str) -> bool {
    // `(?!_\d{2}\])` with Unicode digits.
    let mut it = rest.chars();
    it.next() == Some('_')
        && it
            .next()
            .is_some_and(crate::engine::python::text::is_py_digit)
        && it
            .next()
            .is_some_and(crate::engine::python::text::is_py_digit)
        && it.next() == Some(']')
}

/// What every match of [`PATH_TOKENS`]' placeholder pattern holds.
pub static PLACEHOLDER_GATE: LazyLock<GateWords> =
    LazyLock::new(|| GateWords::of(&PLACEHOLDER_NEEDS));

/// Path redaction: placeholders kept whole, other 3+ character ASCII tokens examined.
pub static PATH_TOKENS: LazyLock<(PyPattern, PyPattern)> = LazyLock::new(|| {
    let placeholder = PyPattern::new(
        &crate::engine::placeholder::placeholder_pattern_source().replace("[0-9]{2}", r"\d{2}"),
        Guard::None,
    );
    let token = PyPattern::new(r"\b[A-Za-z][A-Za-z0-9]{2,}\b", Guard::NotOpenBracket)
        .with_after(not_legacy_suffix);
    (placeholder, token)
});

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::stages::gate::has_ascii_fold_stand_in;

    /// The gate words `text` holds, found the plain way.
    pub(crate) fn gate_words_in(text: &str) -> GateWords {
        let lower = text.to_ascii_lowercase();
        GateWords::in_text(
            text,
            GATE_WORDS
                .iter()
                .enumerate()
                .filter(|(_, w)| lower.contains(*w))
                .map(|(i, _)| i),
        )
    }

    /// Where the secret stages' literals start in `text`, found the plain way (`None` when
    /// the text holds a character IGNORECASE equates with an ASCII letter).
    pub(crate) fn secret_literal_starts_in(text: &str) -> Option<Vec<usize>> {
        literal_starts_in(text, &SECRET_GATE_LITERALS)
    }

    /// Where any of `words` (ASCII) starts in `text` up to ASCII case, found the plain
    /// way (`None` when the text holds a character IGNORECASE equates with an ASCII
    /// letter).
    pub(crate) fn literal_starts_in(text: &str, words: &[&str]) -> Option<Vec<usize>> {
        if has_ascii_fold_stand_in(text) {
            return None;
        }
        let lower = text.to_ascii_lowercase();
        let starts = (0..lower.len())
            .filter(|&at| {
                words
                    .iter()
                    .any(|w| lower.as_bytes()[at..].starts_with(w.to_ascii_lowercase().as_bytes()))
            })
            .collect();
        Some(starts)
    }

    /// The domain pattern searched without its label bound and cut by [`domain_end`]
    /// gives the spans of the bounded pattern's TLD groups, searched from every start
    /// and anchored at it: TLDs of both kinds followed by every kind of look-ahead
    /// (none, a dot, punctuation, brackets, Unicode letters and spaces, `K` and `ſ`),
    /// labels at and past 63 characters.
    #[test]
    fn domain_spans_cut_by_the_text_equal_the_spans_of_its_tld_groups() {
        let by_groups =
            PyPattern::with_end_groups(&domain_source("{0,61}"), Guard::NotDomainContext, &[1, 2]);
        let by_text = domain();
        let pieces = [
            "example",
            "mail",
            "a-b",
            "x1",
            ".",
            "..",
            ".com",
            ".de",
            ".io",
            ".uk",
            ".org",
            ".ſite",
            ".wor\u{212A}s",
            ".net",
            ".DE",
            ".Com",
            "-",
            "_",
            "(",
            "[",
            ")",
            "/",
            "@",
            " ",
            "\n",
            "é",
            "\u{a0}",
            "\u{2003}",
            "1",
            "md",
            ".md",
            "\u{345}",
            "\u{300}",
            "ü",
            "٣",
            ":",
            ",",
            "'",
            "example.com",
            "mail.a-b.de",
            "x.io",
            "ſ.uk",
            // Labels at and past the 63-character bound, alone and run together.
            "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz0123456789a",
            "mnopqrstuvwxyz0123456789mnopqrstuvwxyz",
        ];
        let mut found = 0;
        for text in crate::engine::testgen::texts(&pieces, 20000, 10, 33) {
            for at in (0..=text.len()).filter(|&at| text.is_char_boundary(at)) {
                let want = by_groups.find_at(&text, at);
                assert_eq!(by_text.find_at(&text, at), want, "{text:?} from {at}");
                found += usize::from(want.is_some());
                let want = by_groups.match_at(&text, at);
                assert_eq!(by_text.match_at(&text, at), want, "{text:?} at {at}");
            }
        }
        assert!(found > 15_000, "{found} matches compared");
    }

    /// A stage that its gate words rule out of a text finds nothing there, in the text or
    /// its shadow; and the gates do rule stages out (the test would pass vacuously if
    /// every text held every word).
    #[test]
    fn gated_stages_find_nothing_where_their_words_are_absent() {
        let pieces = [
            "salt = s3cr3tSalt9",
            "VAULT_SALT: 'abc'",
            "sal",
            "t=x",
            "ſalt = abcdefgh",
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
            "-----BEGIN",
            "AKIAABCDEFGHIJKLMNOP",
            "sk-abcdefghijklmnopqrstuv",
            "\u{17F}k-abcdefghijklmnopqrstuv",
            "ghp_abcdefghijklmnopqrstuvwxyz01",
            "Bearer abcdefghijklmnop",
            "https://docs.rs/x",
            "WWW.example.com",
            "[SECRET_0123456789abcdef0123456789abcdef]",
            "[PERSON_01]",
            "[SECRET",
            "_",
            "token = abc",
            " ",
            "\n",
            "x",
            "é",
            "=",
        ];
        let stages = EARLY_STAGES.iter().chain(CODE_STAGES.iter());
        let gated: Vec<(&str, &dyn Finder, GateWords)> = stages
            .filter(|s| s.needs != GateWords::NONE)
            .map(|s| (s.name, &*s.finder as &dyn Finder, s.needs))
            .chain([(
                "placeholders",
                &PATH_TOKENS.0 as &dyn Finder,
                *PLACEHOLDER_GATE,
            )])
            .collect();
        let mut ruled_out = 0;
        for hay in crate::engine::testgen::texts(&pieces, 3000, 8, 17) {
            let seen = gate_words_in(&hay);
            for (name, finder, needs) in &gated {
                if seen.may_match(*needs) {
                    continue;
                }
                ruled_out += 1;
                let shadowed = crate::engine::python::re::shadow(&hay);
                for h in [&hay, &shadowed] {
                    assert_eq!(finder.find_from(h, 0), None, "{name} in {h:?}");
                }
            }
        }
        assert!(ruled_out > 3000, "only {ruled_out} texts ruled out");
    }

    /// Code mode's gated provider-token stage finds what the plain pattern finds.
    #[test]
    fn gated_provider_tokens_equal_the_plain_pattern() {
        let stage = CODE_STAGES
            .iter()
            .find(|s| s.name == "provider_tokens")
            .expect("stage exists");
        let plain = provider_tokens();
        for hay in [
            "x AKIAABCDEFGHIJKLMNOP y",
            "ſk-abcdefghijklmnopqrstuv and sk-abcdefghijklmnopqrstuv",
            "asK-abcdefghijklmnopqrstuvw Bearer abcdefghijklmnop",
            "\u{e000}\u{e002}\u{e001}ghp_abcdefghijklmnopqrstuvwxyz",
            "no tokens here, only ask- and xoxb-short",
        ] {
            let hay = crate::engine::python::re::shadow(hay);
            let mut start = 0;
            while start <= hay.len() {
                assert_eq!(
                    stage.finder.find_from(&hay, start),
                    plain.find_from(&hay, start)
                );
                start += hay[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
    }

    /// Each gated stage finds, from every start, what its plain pattern finds, on
    /// generated text mixing the characters its class admits, the ones it refuses,
    /// Unicode digits and spaces, and placeholder markers.
    #[test]
    fn gated_stages_equal_their_plain_patterns() {
        let plain: Vec<(&str, Box<dyn Finder>)> = vec![
            ("hex_secret", Box::new(hex_secret())),
            ("ipv4", Box::new(ipv4())),
            ("ssn", Box::new(ssn())),
            ("card", Box::new(card())),
            ("phone", Box::new(phone())),
            ("domain", Box::new(domain())),
            ("salt", Box::new(salt_assignment())),
            (
                "generic_secret",
                Box::new(Alternation(vec![provider_tokens(), assignment_secret()])),
            ),
        ];
        let pieces = [
            "4111 1111 1111 1111",
            "4111-1111-1111-1112",
            "123-45-6789",
            "10.0.0.1",
            "+1 (555) 010-2030",
            "555.010.2030",
            "0123456789abcdef0123456789abcdef",
            "ABCDEF",
            "٣٤٥",
            "\u{a0}",
            "\u{2003}",
            "\x1c",
            "\n",
            "\t",
            " ",
            "-",
            ".",
            "(",
            ")",
            "+",
            "7",
            "42",
            "x",
            "é",
            "\u{e000}\u{e002}\u{e001}",
            "v1.2.3",
            "example.com",
            "api.Example.COM.",
            "x.de",
            "x.DE",
            "self.value",
            "foo.py",
            "a-b.io",
            "@",
            "/",
            "_",
            "ſ",
            "db01.internal",
            "www",
            "CLOUD",
            "AKIAABCDEFGHIJKLMNOP",
            "api_key = abcdefgh1234",
            "Token: 'abcdefghij'",
            "Bearer abcdefghijklmnop",
            "sk-abcdefghijklmnopqrstu",
            "ſk-abcdefghijklmnopqrstuv",
            "\u{212A}",
            "İ",
            "salt=xyz",
            "salt=x9z",
            "old_salt: 'q'",
            "VAULT-SALT: q",
            "PASSWORD=hunter2hunter2",
            "passwd: hunter2hunter2",
            "xoxb-1234567890",
            "ghp_abcdefghijklmnopqrstuvwxyz",
            "private_key",
            "=",
        ];
        let hays = crate::engine::testgen::texts(&pieces, 300, 16, 17);
        for (name, pattern) in plain {
            let stage = EARLY_STAGES
                .iter()
                .find(|s| s.name == name)
                .expect("stage exists");
            let code_stage = CODE_STAGES.iter().find(|s| s.name == name);
            for hay in &hays {
                let hay = if pattern.uses_word_boundary() {
                    crate::engine::python::re::shadow(hay)
                } else {
                    hay.clone()
                };
                let mut start = 0;
                while start <= hay.len() {
                    let expected = pattern.find_from(&hay, start);
                    assert_eq!(
                        stage.finder.find_from(&hay, start),
                        expected,
                        "{name} from {start} in {hay:?}"
                    );
                    if let Some(code_stage) = code_stage {
                        // Code mode's salt stage gates its own, stricter pattern.
                        let code_expected = if name == "salt" {
                            code_salt_assignment().find_from(&hay, start)
                        } else {
                            expected
                        };
                        assert_eq!(code_stage.finder.find_from(&hay, start), code_expected);
                    }
                    start += hay[start..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
    }

    /// The private-host stage finds, match after match, what searching both patterns
    /// afresh from every start finds (the suffix gate and the no-match memory change
    /// nothing), on generated text mixing private and public hosts, URLs and IPs.
    #[test]
    fn private_hosts_equal_a_fresh_search_from_every_start() {
        let pieces = [
            "db01.corp",
            "api.example.com",
            "https://10.0.0.7/x",
            "http://build.internal:8080",
            "cache.LAN",
            "docs.rs",
            "x.local",
            "www.acme.io",
            " ",
            "\n",
            ".",
            "-",
            "a",
            "/",
            "home.arpa",
            "svc.private",
            "https://docs.rs/regex",
            "192.168.1.9",
            "postgresql://app:pw@pg.corp:5432/app",
            "jdbc:mysql://db.internal/x",
            "redis://10.1.2.3:6379",
            "redis://cache.example.com",
            "http://172.20.1.1/",
            "http://172.15.0.1",
            "https://user@10.1.1.1/",
            "10.",
            "\"",
        ];
        let hosts = PRIVATE_HOSTS.search_any();
        for hay in crate::engine::testgen::texts(&pieces, 2000, 10, 3) {
            // The earliest match; on equal starts the earlier pattern.
            let fresh = |start: usize| {
                PRIVATE_HOSTS
                    .patterns()
                    .into_iter()
                    .filter_map(|(p, by_address)| {
                        PrivateHosts::next_private_or_skipped(p, by_address, &hay, start).0
                    })
                    .reduce(|best, m| if m.0 < best.0 { m } else { best })
            };
            let knowing = PRIVATE_HOSTS.knowing(gate_words_in(&hay));
            let mut cache = FindCache::default();
            let mut known_cache = FindCache::default();
            let mut start = 0;
            loop {
                let got = hosts.find_from_cached(&hay, start, &mut cache);
                assert_eq!(got, fresh(start), "from {start} in {hay:?}");
                // Knowing the text's gate words changes no match.
                let known = knowing
                    .as_ref()
                    .and_then(|k| k.find_from_cached(&hay, start, &mut known_cache));
                assert_eq!(known, got, "knowing its words, from {start} in {hay:?}");
                match got {
                    Some((s, e)) => start = e.max(s + 1),
                    None => break,
                }
            }
        }
    }
}
