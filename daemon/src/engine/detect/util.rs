//! Small helpers shared by the detector families: entropy, char boundaries, file kinds,
//! quote tokens and the placeholder/reference filter for candidate values.

use crate::engine::byteclass::{ALNUM, ByteClass, class_runs, run_extent};
use std::collections::HashMap;
use std::sync::LazyLock;

/// Literal strings whose presence in a text gates a family's pattern. They ride along
/// in the shared keyword scan, so a family asks [`Markers::has`] instead of reading the
/// whole text once more for each of them.
pub mod marker {
    /// One marker: its index in [`ALL`] and its text (matched case-sensitively).
    pub struct Marker(pub usize, pub &'static str);

    pub const BEGIN: Marker = Marker(0, "BEGIN");
    pub const PUTTY: Marker = Marker(1, "PuTTY-User-Key-File");
    pub const AGE: Marker = Marker(2, "AGE-SECRET-KEY-1");
    pub const PEM_BASE64: Marker = Marker(3, "LS0tLS1CRUdJTi");
    pub const KTY: Marker = Marker(4, "kty");
    pub const BRACE_S: Marker = Marker(5, "{S");
    pub const BRACE_C: Marker = Marker(6, "{C");
    pub const TRIPLE_COLON: Marker = Marker(7, ":::");
    pub const VALUE: Marker = Marker(8, "value");
    pub const AUTHOR_TAG: Marker = Marker(9, "@author");
    pub const SCHEME: Marker = Marker(10, "://");
    pub const WEBHOOKS: Marker = Marker(11, "/api/webhooks/");
    pub const MACHINE: Marker = Marker(12, "machine");
    pub const PASSWORD: Marker = Marker(13, "password");
    pub const KIND_SECRET: Marker = Marker(14, "kind: Secret");
    pub const KIND_SECRET_QUOTED: Marker = Marker(15, "kind: \"Secret\"");
    pub const IDENTIFIED: Marker = Marker(16, "identified");
    /// The characters that a Unicode case-insensitive pattern equates with an ASCII
    /// letter although ASCII case folding does not (`ſ` with `s`, the Kelvin sign with
    /// `k`), and the two more that Python's IGNORECASE adds (`İ`, `ı` with `i`): where
    /// a text holds one, words found by the ASCII keyword scan may miss a pattern's
    /// matches.
    pub const LONG_S: Marker = Marker(17, "\u{17F}");
    pub const KELVIN: Marker = Marker(18, "\u{212A}");
    pub const DOTTED_I: Marker = Marker(19, "\u{130}");
    pub const DOTLESS_I: Marker = Marker(20, "\u{131}");

    /// Every marker, in index order (the words registered in the shared scan).
    pub const ALL: &[&Marker] = &[
        &BEGIN,
        &PUTTY,
        &AGE,
        &PEM_BASE64,
        &KTY,
        &BRACE_S,
        &BRACE_C,
        &TRIPLE_COLON,
        &VALUE,
        &AUTHOR_TAG,
        &SCHEME,
        &WEBHOOKS,
        &MACHINE,
        &PASSWORD,
        &KIND_SECRET,
        &KIND_SECRET_QUOTED,
        &IDENTIFIED,
        &LONG_S,
        &KELVIN,
        &DOTTED_I,
        &DOTLESS_I,
    ];

    /// The markers' texts, in index order.
    pub fn words() -> impl Iterator<Item = &'static str> {
        ALL.iter().map(|m| m.1)
    }
}

/// ASCII letters, digits and `+ / _ -`: the bytes of base64 (both alphabets), which
/// hold most long tokens a family looks for.
pub const BASE64_BYTES: ByteClass = ByteClass::concat(ALNUM, b"+/_-", false);

/// Shortest run [`LongRuns`] keeps: the decoder's shortest base64 word.
pub const LONG_RUN: usize = 20;

/// The maximal runs of [`BASE64_BYTES`] of at least [`LONG_RUN`] bytes in one text,
/// found in one pass when a family first asks. The decoder reads its base64 and hex
/// words in them, and the rule pack's run gates ask them whether a narrower class has a
/// run that long: such a run lies inside one of them, so neither family needs a pass
/// of its own over the text.
pub struct LongRuns<'a> {
    bytes: &'a [u8],
    runs: std::cell::OnceCell<Vec<(usize, usize)>>,
}

impl<'a> LongRuns<'a> {
    pub fn new(text: &'a str) -> LongRuns<'a> {
        LongRuns {
            bytes: text.as_bytes(),
            runs: std::cell::OnceCell::new(),
        }
    }

    /// The text's bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The runs, in text order.
    pub fn base64(&self) -> &[(usize, usize)] {
        self.runs
            .get_or_init(|| class_runs(self.bytes, 0, LONG_RUN, &BASE64_BYTES).collect())
    }

    /// Whether the text may hold a run of `len` or more [`BASE64_BYTES`] (`len` at least
    /// [`LONG_RUN`]): `true` unless the runs were listed (a family asked for them) and
    /// none is that long. Does not list them itself.
    pub fn may_hold(&self, len: usize) -> bool {
        debug_assert!(len >= LONG_RUN);
        self.runs
            .get()
            .is_none_or(|runs| runs.iter().any(|&(s, e)| e - s >= len))
    }

    /// Whether the text holds a run of at least `len` bytes of `class`, a subset of
    /// [`BASE64_BYTES`] (`len` at least [`LONG_RUN`]), read a byte at a time inside the
    /// long runs that are that long. `None` when those hold more than a quarter of the
    /// text (a list of file paths, base64 blobs): a pass over the whole text 64 bytes
    /// at a time then costs less.
    pub fn has_run(&self, class: &ByteClass, len: usize) -> Option<bool> {
        debug_assert!(class.is_subset(&BASE64_BYTES) && len >= LONG_RUN);
        let runs = self.base64();
        let long: usize = runs.iter().map(|&(s, e)| e - s).filter(|&n| n >= len).sum();
        if long * 4 > self.bytes.len() {
            return None;
        }
        Some(
            runs.iter()
                .any(|&(s, e)| e - s >= len && class.has_run_in(&self.bytes[s..e], len)),
        )
    }
}

/// Which [`marker`]s a text holds, read from its shared keyword scan.
pub struct Markers<'a> {
    text: &'a str,
    hits: &'a KeywordHits,
    ids: WordIds,
}

impl<'a> Markers<'a> {
    /// The markers of `text`, whose scan `hits` registered [`marker::words`] as `ids`.
    pub fn new(text: &'a str, hits: &'a KeywordHits, ids: WordIds) -> Markers<'a> {
        Markers { text, hits, ids }
    }

    /// Whether the text contains the marker exactly (the scan matched it ignoring ASCII
    /// case; each place it matched is compared as written).
    pub fn has(&self, m: &marker::Marker) -> bool {
        self.has_ignore_ascii_case(m)
            && self
                .hits
                .starts_of(self.ids, m.0)
                .any(|s| self.text.as_bytes()[s..].starts_with(m.1.as_bytes()))
    }

    /// Whether the text contains the marker ignoring ASCII case.
    pub fn has_ignore_ascii_case(&self, m: &marker::Marker) -> bool {
        self.hits.has(self.ids, m.0)
    }

    /// Whether the text holds `ſ` or the Kelvin sign (see [`marker::LONG_S`]), read from
    /// the scan.
    pub fn has_non_ascii_fold_of_ascii(&self) -> bool {
        // Non-ASCII markers have no other case to ignore.
        self.has_ignore_ascii_case(&marker::LONG_S) || self.has_ignore_ascii_case(&marker::KELVIN)
    }

    /// Whether the text holds one of the four characters of [`marker::LONG_S`]'s list,
    /// read from the scan ([`crate::engine::gate::has_ascii_fold_stand_in`] reads the
    /// text).
    pub fn has_ascii_fold_stand_in(&self) -> bool {
        self.has_non_ascii_fold_of_ascii()
            || self.has_ignore_ascii_case(&marker::DOTTED_I)
            || self.has_ignore_ascii_case(&marker::DOTLESS_I)
    }
}

/// Whether `text` holds the byte `b` (SIMD memchr).
pub fn has_byte(text: &str, b: u8) -> bool {
    memchr::memchr(b, text.as_bytes()).is_some()
}

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

/// Largest char boundary `<= i`.
pub fn floor_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Smallest char boundary `>= i`.
pub fn ceil_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// How unquoted values are read, from the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Source code: an unquoted value is an expression (a variable, a call), not a literal.
    Code,
    /// Configuration, shell, env files: an unquoted value is a literal string.
    Config,
    /// Prose (Markdown, text, HTML docs): literal, but English filler is not a value.
    Prose,
}

const CODE_EXTS: &[&str] = &[
    "go", "rs", "py", "pyi", "rb", "js", "jsx", "ts", "tsx", "mjs", "cjs", "java", "kt", "kts",
    "scala", "cs", "php", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "swift", "m", "mm", "dart",
    "lua", "pl", "pm", "r", "ex", "exs", "erl", "clj", "groovy", "gradle", "vue", "svelte", "fs",
    "vb", "tf", "hcl", "json", "jsonc", "ipynb", "sql", "zig", "nim", "jl", "cr", "elm", "hs",
    "ml", "coffee",
];
const PROSE_EXTS: &[&str] = &[
    "md", "markdown", "txt", "rst", "adoc", "html", "htm", "textile", "org", "tex",
];

/// Source languages in which a backtick opens a string (Go raw strings, JavaScript
/// templates) or a shell command (Ruby, Perl, PHP, Julia, Crystal), whose text is then
/// literal. Elsewhere a backtick opens nothing a key could sit in: Markdown code in Rust,
/// Python or C comments (a fence is three backticks, an odd count), identifiers in
/// Kotlin, Scala and SQL.
const BACKTICK_STRING_EXTS: &[&str] = &[
    "go", "js", "jsx", "ts", "tsx", "mjs", "cjs", "vue", "svelte", "coffee", "rb", "pl", "pm",
    "php", "jl", "cr",
];

/// Calls `f` with the lower-case file name of a root-relative path and its extension
/// (`None` when it has none). Asked twice per text: the name is lower-cased on the
/// stack, and the callers look the extension up in sets.
fn with_file_name<R>(rel_path: &str, f: impl FnOnce(&str, Option<&str>) -> R) -> R {
    let name = rel_path.rsplit_once('/').map_or(rel_path, |(_, name)| name);
    let mut buf = [0u8; 128];
    let owned;
    let lower = match buf.get_mut(..name.len()) {
        Some(head) => {
            head.copy_from_slice(name.as_bytes());
            head.make_ascii_lowercase();
            std::str::from_utf8(head).expect("ASCII case changes keep UTF-8")
        }
        None => {
            owned = name.to_ascii_lowercase();
            &owned
        }
    };
    f(lower, lower.rsplit_once('.').map(|(_, ext)| ext))
}

static CODE_EXT_SET: LazyLock<foldhash::HashSet<&'static str>> =
    LazyLock::new(|| CODE_EXTS.iter().copied().collect());
static PROSE_EXT_SET: LazyLock<foldhash::HashSet<&'static str>> =
    LazyLock::new(|| PROSE_EXTS.iter().copied().collect());
static BACKTICK_EXT_SET: LazyLock<foldhash::HashSet<&'static str>> =
    LazyLock::new(|| BACKTICK_STRING_EXTS.iter().copied().collect());

/// How a source file's language quotes strings, as far as telling whether a key sits
/// inside one goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quoting {
    /// A backtick opens a string or a command (see [`BACKTICK_STRING_EXTS`]).
    pub backticks: bool,
    /// An apostrophe may begin a lifetime or a loop label (`'a`, `'static`) rather than a
    /// character literal (Rust).
    pub lifetimes: bool,
}

impl Quoting {
    /// The quoting of the language the path's extension names.
    pub fn of(rel_path: &str) -> Quoting {
        with_file_name(rel_path, |_, ext| {
            let ext = ext.unwrap_or("");
            Quoting {
                backticks: BACKTICK_EXT_SET.contains(ext),
                lifetimes: ext == "rs",
            }
        })
    }
}

impl FileKind {
    /// Classifies a root-relative path; `prose` forces [`FileKind::Prose`].
    pub fn of(rel_path: &str, prose: bool) -> FileKind {
        if prose {
            return FileKind::Prose;
        }
        with_file_name(rel_path, |name, ext| {
            if name.starts_with(".env") || name.contains(".env.") || name.ends_with(".env") {
                return FileKind::Config;
            }
            match ext {
                Some(ext) if CODE_EXT_SET.contains(ext) => FileKind::Code,
                Some(ext) if PROSE_EXT_SET.contains(ext) => FileKind::Prose,
                _ => FileKind::Config,
            }
        })
    }
}

/// Quote tokens recognised around keys and values, longest first.
pub const QUOTES: &[&str] = &[
    "\\\\\\\"", "&quot;", "&#34;", "&#39;", "\\\"", "\\'", "\"", "'", "`",
];

/// The quote token starting at `pos`, if any.
pub fn quote_at(text: &str, pos: usize) -> Option<&'static str> {
    let rest = text.get(pos..)?;
    QUOTES.iter().copied().find(|q| rest.starts_with(q))
}

/// The quote token ending exactly at `pos` (i.e. `text[pos-len..pos]`), if any.
pub fn quote_before(text: &str, pos: usize) -> Option<&'static str> {
    let head = text.get(..pos)?;
    QUOTES.iter().copied().find(|q| head.ends_with(q))
}

/// Finds the closing `quote` for a string whose content starts at `from`, on the same
/// line. Plain `"`/`'` honour backslash escapes. Returns the byte offset of the closer.
pub fn find_closing(text: &str, from: usize, quote: &str) -> Option<usize> {
    let b = text.as_bytes();
    let plain = quote.len() == 1 && quote != "`";
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            return None;
        }
        if plain && c == b'\\' {
            i += 2;
            continue;
        }
        if b[i..].starts_with(quote.as_bytes()) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether `b` may appear inside an identifier-like key token.
pub fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'
}

/// True when the value is a reference, template or placeholder rather than a literal
/// secret: `${X}`, `{{x}}`, `<x>`, `$VAR`, `%(x)s`, `%VAR%`, `null`, `true`, short
/// numbers, runs of one masking character, `changeme`-type words, …
pub fn is_placeholder(value: &str) -> bool {
    let v = value.trim();
    if v.is_empty() {
        return true;
    }
    if is_one_of_ignore_ascii_case(PLACEHOLDER_WORDS, v) {
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
        && (["${", "{{", "{%", "#{", "%(", "<%", "@{"]
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

/// Whether `s` starts with `prefix` (lower-case ASCII) up to ASCII case. Values are
/// judged many times a file: no lower-cased copy.
pub fn starts_with_ignore_ascii_case(s: &str, prefix: &str) -> bool {
    debug_assert!(!prefix.bytes().any(|b| b.is_ascii_uppercase()));
    s.as_bytes()
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Whether `v` is one of `list` (lower-case ASCII words) up to ASCII case.
pub fn is_one_of_ignore_ascii_case(list: &[&str], v: &str) -> bool {
    list.iter().any(|w| w.eq_ignore_ascii_case(v))
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

/// Lanes of one keyword scan (see [`KeywordScan::scan_lanes`]).
const LANES: usize = 4;

/// A keyword state id is its transition row's start shifted right by this much.
const ROW_SHIFT: usize = 3;

/// The trigger words of every family, found in one ASCII-case-insensitive pass over a
/// text. Each family used to run its own Aho-Corasick pass; one shared pass costs the
/// same as one of them. The automaton is a dense Aho-Corasick DFA over byte classes,
/// with the states that end a word numbered last, so the loop reads one byte, one class
/// and one transition per byte and compares once (the `aho-corasick` crate's overlapping
/// search took about 20 instructions a byte, this loop about 6).
pub struct KeywordScan {
    /// Byte to class; ASCII capitals share their lower-case letter's class, bytes that
    /// occur in no word are class 0.
    classes: [u8; 256],
    /// Transitions: `trans[(state << ROW_SHIFT) + class]`; a state is its row's start
    /// divided by `1 << ROW_SHIFT` (rows are padded to a multiple of that), so a state
    /// fits 16 bits and the table half the cache it would take with 32-bit states, while
    /// a step still costs one address computation (`lea` scales by 8). The length is a
    /// power of two (zeros after the last state) and a step indexes with `& (len - 1)`:
    /// every index is then in bounds once the table is not empty, a check the compiler
    /// makes once per run instead of once per byte.
    trans: Vec<u16>,
    /// States at or above this id end at least one word.
    first_match: usize,
    /// State ids per state: the row length over `1 << ROW_SHIFT`.
    stride: usize,
    /// For each word-ending state (in order from `first_match`), its range in `out_ids`.
    out_ranges: Vec<(u32, u32)>,
    /// The words ending in a state, its own and those of its suffixes.
    out_ids: Vec<u32>,
    /// Byte length of each word.
    lens: Vec<u32>,
    count: usize,
    /// Words with ids from here on are only reported as present, never located (see
    /// [`KeywordBuilder::add_presence`]).
    located: u32,
}

/// Collects the word lists of the families before the shared automaton is built.
#[derive(Default)]
pub struct KeywordBuilder {
    words: Vec<String>,
    /// Set by the first [`KeywordBuilder::add_presence`]: the ids below are located.
    located: Option<u32>,
}

/// The ids one family's words received in the shared scan: word `i` of the family's list
/// is id `base + i`.
#[derive(Clone, Copy, Debug, Default)]
pub struct WordIds {
    base: u32,
    len: u32,
}

impl WordIds {
    /// The ids of the family's words from index `from` on (a sub-list that is searched
    /// on its own).
    pub fn from(self, from: usize) -> WordIds {
        let from = (from as u32).min(self.len);
        WordIds {
            base: self.base + from,
            len: self.len - from,
        }
    }

    /// The family's word index of a shared id, if the id is one of the family's.
    fn local(self, id: u32) -> Option<usize> {
        id.checked_sub(self.base)
            .filter(|&i| i < self.len)
            .map(|i| i as usize)
    }
}

/// Located words of any families, for a query across them ([`KeywordBuilder::add_shared`]).
#[derive(Clone, Debug, Default)]
pub struct WordSet {
    ids: Vec<u32>,
    /// Bit `id` set for each of `ids`.
    bits: Vec<u64>,
}

impl WordSet {
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    fn contains(&self, id: u32) -> bool {
        self.bits
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }
}

impl KeywordBuilder {
    /// Registers a family's words (matched ASCII-case-insensitively, as substrings).
    pub fn add<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordIds {
        assert!(
            self.located.is_none(),
            "located words are registered before presence-only ones"
        );
        self.push(words)
    }

    /// Registers words some of which other families may have registered already: those
    /// keep their ids, so the scan records each occurrence once, and the others are
    /// registered anew. For queries across families ([`KeywordHits::starts_of_set`]).
    /// Repeated words get one id.
    pub fn add_shared<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordSet {
        // Configured terms can number thousands: one map, not a search per word.
        let mut known: HashMap<String, u32> = HashMap::new();
        for (id, w) in self.words.iter().enumerate().rev() {
            known.insert(w.to_ascii_lowercase(), id as u32);
        }
        let (mut ids, mut new) = (Vec::new(), Vec::new());
        for w in words {
            let w = w.as_ref().to_ascii_lowercase();
            if let Some(&id) = known.get(&w) {
                ids.push(id);
            } else {
                known.insert(w.clone(), (self.words.len() + new.len()) as u32);
                new.push(w);
            }
        }
        let added = self.add(new);
        ids.extend(added.base..added.base + added.len);
        ids.sort_unstable();
        ids.dedup();
        let mut bits = vec![0u64; (self.words.len()).div_ceil(64)];
        for &id in &ids {
            bits[id as usize / 64] |= 1 << (id % 64);
        }
        WordSet { ids, bits }
    }

    /// Registers words of which only presence matters (no offsets are recorded, which
    /// keeps frequent words from growing the match list): [`KeywordHits::has`] and
    /// [`KeywordHits::present_words`] answer for them, the offset queries never list them.
    pub fn add_presence<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordIds {
        self.located.get_or_insert(self.words.len() as u32);
        self.push(words)
    }

    fn push<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordIds {
        let base = self.words.len();
        self.words
            .extend(words.into_iter().map(|w| w.as_ref().to_owned()));
        WordIds {
            base: base as u32,
            len: (self.words.len() - base) as u32,
        }
    }

    /// Builds the shared automaton; `None` when its states do not fit 16-bit ids (about
    /// 6,500 states with the built-in families' byte classes, which take 1,900 of them).
    pub fn build(self) -> Option<KeywordScan> {
        let words: Vec<Vec<u8>> = self
            .words
            .iter()
            .map(|w| w.as_bytes().to_ascii_lowercase())
            .collect();
        assert!(
            words.iter().all(|w| !w.is_empty()),
            "keywords are not empty"
        );
        let mut classes = [0u8; 256];
        let mut class_count: u32 = 1;
        for w in &words {
            for &b in w {
                if classes[b as usize] == 0 {
                    classes[b as usize] =
                        u8::try_from(class_count).expect("fewer than 256 classes");
                    class_count += 1;
                }
            }
        }
        for b in b'A'..=b'Z' {
            classes[b as usize] = classes[b.to_ascii_lowercase() as usize];
        }
        let width = (class_count as usize).next_multiple_of(1 << ROW_SHIFT);
        let stride = width >> ROW_SHIFT;
        // The trie: `goto[node * width + class]`, 0 for no child (the root is no child).
        let mut goto: Vec<u32> = vec![0; width];
        let mut outputs: Vec<Vec<u32>> = vec![Vec::new()];
        for (id, w) in words.iter().enumerate() {
            let mut node = 0usize;
            for &b in w {
                let slot = node * width + classes[b as usize] as usize;
                if goto[slot] == 0 {
                    goto[slot] = outputs.len() as u32;
                    outputs.push(Vec::new());
                    goto.extend(std::iter::repeat_n(0, width));
                }
                node = goto[slot] as usize;
            }
            outputs[node].push(id as u32);
        }
        // Breadth first: failure links, full transitions, and each state's outputs joined
        // with those of its failure state (already complete, being shallower).
        let states = outputs.len();
        let mut trans = vec![0u32; states * width];
        let mut fail = vec![0usize; states];
        let mut queue = std::collections::VecDeque::new();
        for c in 0..width {
            let child = goto[c] as usize;
            trans[c] = child as u32;
            if child != 0 {
                queue.push_back(child);
            }
        }
        while let Some(u) = queue.pop_front() {
            for c in 0..width {
                let child = goto[u * width + c] as usize;
                let via_fail = trans[fail[u] * width + c];
                if child == 0 {
                    trans[u * width + c] = via_fail;
                } else {
                    fail[child] = via_fail as usize;
                    let inherited = outputs[via_fail as usize].clone();
                    outputs[child].extend(inherited);
                    trans[u * width + c] = child as u32;
                    queue.push_back(child);
                }
            }
        }
        // Renumber: states without output first (the root stays 0), word-ending ones last.
        let mut order: Vec<usize> = (0..states).filter(|&s| outputs[s].is_empty()).collect();
        let first_match_index = order.len();
        order.extend((0..states).filter(|&s| !outputs[s].is_empty()));
        let mut new_id = vec![0u16; states];
        for (n, &old) in order.iter().enumerate() {
            new_id[old] = u16::try_from((n * width) >> ROW_SHIFT).ok()?;
        }
        let mut dense = vec![0u16; states * width];
        let mut out_ranges = Vec::new();
        let mut out_ids = Vec::new();
        for (n, &old) in order.iter().enumerate() {
            for c in 0..width {
                dense[n * width + c] = new_id[trans[old * width + c] as usize];
            }
            if n >= first_match_index {
                let start = out_ids.len() as u32;
                out_ids.extend(&outputs[old]);
                out_ranges.push((start, out_ids.len() as u32));
            }
        }
        dense.resize(dense.len().next_power_of_two(), 0);
        Some(KeywordScan {
            classes,
            trans: dense,
            first_match: (first_match_index * width) >> ROW_SHIFT,
            stride,
            out_ranges,
            out_ids,
            lens: words.iter().map(|w| w.len() as u32).collect(),
            count: words.len(),
            located: self.located.unwrap_or(words.len() as u32),
        })
    }
}

impl KeywordScan {
    /// One step of the automaton: the state after reading byte `b` in `state`. A closure
    /// over the table, its mask and the classes, made once per loop so they stay in
    /// registers.
    #[inline(always)]
    fn stepper(&self) -> impl Fn(usize, u8) -> usize + '_ {
        let (trans, classes) = (&self.trans[..], &self.classes);
        let mask = trans.len() - 1;
        move |state, b| {
            usize::from(trans[((state << ROW_SHIFT) + usize::from(classes[usize::from(b)])) & mask])
        }
    }

    /// Runs the automaton from `state` over `bytes[pos..]` up to and including the next
    /// byte that ends a word: `(position after it, state)`, or `(bytes.len(), a state
    /// that ends no word)`. Kept out of line so the loop holds everything in registers.
    #[inline(never)]
    fn run(&self, bytes: &[u8], mut pos: usize, mut state: usize) -> (usize, usize) {
        let (step, first_match) = (self.stepper(), self.first_match);
        while let Some(&[b0, b1, b2, b3]) = bytes.get(pos..pos + 4) {
            state = step(state, b0);
            if state >= first_match {
                return (pos + 1, state);
            }
            state = step(state, b1);
            if state >= first_match {
                return (pos + 2, state);
            }
            state = step(state, b2);
            if state >= first_match {
                return (pos + 3, state);
            }
            state = step(state, b3);
            pos += 4;
            if state >= first_match {
                return (pos, state);
            }
        }
        while pos < bytes.len() {
            state = step(state, bytes[pos]);
            pos += 1;
            if state >= first_match {
                return (pos, state);
            }
        }
        (pos, state)
    }

    /// [`KeywordScan::run`] for four lanes in lock step until any lane ends a word or the
    /// shortest lane runs out: the lanes' positions and states after the last step.
    #[inline(never)]
    fn run_lanes(
        &self,
        lanes: [&[u8]; LANES],
        pos: [usize; LANES],
        [mut s0, mut s1, mut s2, mut s3]: [usize; LANES],
    ) -> ([usize; LANES], [usize; LANES]) {
        let (step, first_match) = (self.stepper(), self.first_match);
        let steps = (0..LANES)
            .map(|i| lanes[i].len() - pos[i])
            .min()
            .unwrap_or(0);
        let [a, b, c, d] = std::array::from_fn(|i| &lanes[i][pos[i]..pos[i] + steps]);
        let mut done = steps;
        let bytes = a.iter().zip(b).zip(c).zip(d);
        for (k, (((&x0, &x1), &x2), &x3)) in bytes.enumerate() {
            s0 = step(s0, x0);
            s1 = step(s1, x1);
            s2 = step(s2, x2);
            s3 = step(s3, x3);
            if (s0 >= first_match) | (s1 >= first_match) | (s2 >= first_match) | (s3 >= first_match)
            {
                done = k + 1;
                break;
            }
        }
        (pos.map(|p| p + done), [s0, s1, s2, s3])
    }

    /// Every occurrence of every registered word in `text`.
    #[inline(never)] // one frame per family in profiles
    pub fn scan(&self, text: &str) -> KeywordHits {
        // Below this many bytes per lane, the lanes' set-up costs more than they hide.
        const LANE_BYTES: usize = 64;
        let len = text.len();
        if len < LANES * LANE_BYTES {
            let mut hits = KeywordHits::empty(self.count);
            self.finish(text.as_bytes(), 0, 0, 0, |_| true, &mut hits);
            hits.sort_found_order();
            hits
        } else {
            self.scan_lanes(text, std::array::from_fn(|i| len / LANES * i))
        }
    }

    /// [`KeywordScan::scan`] in lanes that start at `starts` (ascending, the first 0).
    /// Each step depends on the transition loaded by the step before, so one lane waits
    /// on memory most of the time; independent lanes overlap those waits. A lane keeps
    /// the words that start before the next lane's start, running on past it just far
    /// enough to finish them; a lane starts from the root, so it finds exactly the words
    /// that start at or after its start.
    fn scan_lanes(&self, text: &str, starts: [usize; LANES]) -> KeywordHits {
        let bytes = text.as_bytes();
        // One list per lane: each holds starts below the next lane's, so the lists joined
        // in lane order are sorted but for words ending in each other's span.
        let mut lane_hits: [KeywordHits; LANES] = std::array::from_fn(|_| {
            let mut hits = KeywordHits::empty(self.count);
            // About one word in 90 bytes of code; reserving for one in 64 saves regrowing.
            hits.matches.reserve(text.len() / LANES / 64);
            hits
        });
        let longest = self.lens.iter().copied().max().unwrap_or(1) as usize;
        let keep_below: [usize; LANES] =
            std::array::from_fn(|i| starts.get(i + 1).copied().unwrap_or(usize::MAX));
        let lanes: [&[u8]; LANES] = std::array::from_fn(|i| {
            let end = keep_below[i].saturating_add(longest - 1).min(bytes.len());
            &bytes[starts[i]..end.max(starts[i])]
        });
        let (mut pos, mut state) = ([0; LANES], [0; LANES]);
        while (0..LANES).all(|i| pos[i] < lanes[i].len()) {
            (pos, state) = self.run_lanes(lanes, pos, state);
            for i in 0..LANES {
                if state[i] >= self.first_match {
                    self.record(
                        state[i],
                        pos[i],
                        starts[i],
                        |s| s < keep_below[i],
                        &mut lane_hits[i],
                    );
                }
            }
        }
        for i in 0..LANES {
            let keep = |s| s < keep_below[i];
            self.finish(
                lanes[i],
                pos[i],
                state[i],
                starts[i],
                keep,
                &mut lane_hits[i],
            );
        }
        let mut hits = KeywordHits::empty(self.count);
        hits.matches
            .reserve_exact(lane_hits.iter().map(|h| h.matches.len()).sum());
        for lane in lane_hits {
            for (all, found) in hits.present.iter_mut().zip(&lane.present) {
                *all |= found;
            }
            hits.matches.extend(lane.matches);
        }
        hits.sort_found_order();
        hits
    }

    /// Runs one lane from `(pos, state)` to the end of `bytes`, recording every word.
    fn finish(
        &self,
        bytes: &[u8],
        mut pos: usize,
        mut state: usize,
        offset: usize,
        keep: impl Fn(usize) -> bool,
        hits: &mut KeywordHits,
    ) {
        while pos < bytes.len() {
            (pos, state) = self.run(bytes, pos, state);
            if state < self.first_match {
                break;
            }
            self.record(state, pos, offset, &keep, hits);
        }
    }

    /// Records the words that end in word-ending `state` at `end` (lane-relative; the
    /// lane starts at `offset` in the text) and start where `keep` allows.
    fn record(
        &self,
        state: usize,
        end: usize,
        offset: usize,
        keep: impl Fn(usize) -> bool,
        hits: &mut KeywordHits,
    ) {
        let end = offset + end;
        let (from, to) = self.out_ranges[(state - self.first_match) / self.stride];
        for &id in &self.out_ids[from as usize..to as usize] {
            let start = end - self.lens[id as usize] as usize;
            if keep(start) {
                hits.present[id as usize / 64] |= 1 << (id % 64);
                if id < self.located {
                    hits.matches.push((start, end, id));
                }
            }
        }
    }
}

/// Index of `word` in a family's word list; a word missing from its own list is a bug.
pub fn word_index(list: &[&str], word: &str) -> usize {
    list.iter()
        .position(|w| *w == word)
        .expect("a word of the family's list")
}

/// What [`KeywordScan::scan`] found in one text.
pub struct KeywordHits {
    present: Vec<u64>,
    /// (start, end, id), sorted.
    matches: Vec<(usize, usize, u32)>,
}

impl KeywordHits {
    /// No occurrences of any of `count` words.
    fn empty(count: usize) -> KeywordHits {
        KeywordHits {
            present: vec![0u64; count.div_ceil(64)],
            matches: Vec::new(),
        }
    }

    /// Sorts the matches as recorded: by end, so a match is out of place only before
    /// the few that end inside it (every word is short). An insertion sort moves each
    /// just those few places; a general sort cost more than a tenth of the scan.
    fn sort_found_order(&mut self) {
        let m = &mut self.matches;
        for i in 1..m.len() {
            let mut j = i;
            while j > 0 && m[j - 1] > m[j] {
                m.swap(j - 1, j);
                j -= 1;
            }
        }
    }

    /// True when word `i` of the family `ids` occurs.
    pub fn has(&self, ids: WordIds, i: usize) -> bool {
        debug_assert!(i < ids.len as usize);
        let id = ids.base as usize + i;
        self.present[id / 64] & (1 << (id % 64)) != 0
    }

    /// The family's word indices that occur, ascending.
    pub fn present_words(&self, ids: WordIds) -> impl Iterator<Item = usize> + '_ {
        let (base, end) = (ids.base as usize, (ids.base + ids.len) as usize);
        (base / 64..end.div_ceil(64)).flat_map(move |w| {
            let mut bits = self.present[w];
            std::iter::from_fn(move || {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits.wrapping_sub(1);
                (bit < 64).then_some(w * 64 + bit)
            })
            .filter(move |&id| (base..end).contains(&id))
            .map(move |id| id - base)
        })
    }

    /// True when `word`, one of the family's `list` (registered as `ids`), occurs.
    pub fn has_word(&self, ids: WordIds, list: &[&str], word: &str) -> bool {
        self.has(ids, word_index(list, word))
    }

    /// Start offsets of every occurrence of word `i` of the family `ids`, ascending.
    pub fn starts_of(&self, ids: WordIds, i: usize) -> impl Iterator<Item = usize> + '_ {
        let id = ids.base + i as u32;
        // A word that does not occur needs no pass over the matches.
        let matches = if self.has(ids, i) {
            &self.matches[..]
        } else {
            &[]
        };
        matches.iter().filter(move |m| m.2 == id).map(|m| m.0)
    }

    /// Start offsets of every occurrence of the family's `words` (entries of its `list`,
    /// registered as `ids`), ascending, without repeats.
    pub fn starts_of_words(&self, ids: WordIds, list: &[&str], words: &[&str]) -> Vec<usize> {
        // Callers name a handful of words: their indices fit on the stack.
        let mut indices = [0usize; 16];
        if words.len() > indices.len() {
            let indices: Vec<usize> = words.iter().map(|w| word_index(list, w)).collect();
            return self.starts_of_any(ids, &indices);
        }
        for (i, w) in indices.iter_mut().zip(words) {
            *i = word_index(list, w);
        }
        self.starts_of_any(ids, &indices[..words.len()])
    }

    /// Start offsets of every occurrence of the family's words `indices`, ascending,
    /// without repeats.
    pub fn starts_of_any(&self, ids: WordIds, indices: &[usize]) -> Vec<usize> {
        let mut present = indices.iter().copied().filter(|&i| self.has(ids, i));
        let (Some(first), second) = (present.next(), present.next()) else {
            return Vec::new();
        };
        if second.is_none() {
            // One word: its matches, which never share a start.
            return self.starts_of(ids, first).collect();
        }
        // One pass over the matches, which are sorted: repeats are neighbours. The
        // indices are few: a look through them costs less than a table of the family.
        let mut starts: Vec<usize> = Vec::new();
        for &(start, _, id) in &self.matches {
            if ids.local(id).is_some_and(|w| indices.contains(&w)) && starts.last() != Some(&start)
            {
                starts.push(start);
            }
        }
        starts
    }

    /// Start offsets of every occurrence of any of the `set`'s words, ascending, without
    /// repeats.
    pub fn starts_of_set(&self, set: &WordSet) -> Vec<usize> {
        let present = |id: u32| self.present[id as usize / 64] & (1 << (id % 64)) != 0;
        if !set.ids.iter().any(|&id| present(id)) {
            return Vec::new();
        }
        let mut starts: Vec<usize> = Vec::with_capacity(64);
        for &(start, _, id) in &self.matches {
            if set.contains(id) && starts.last() != Some(&start) {
                starts.push(start);
            }
        }
        starts
    }

    /// The family's matches as a leftmost-first, non-overlapping Aho-Corasick search over
    /// its list alone would report them: (start, end, word index), ascending.
    pub fn leftmost_first(&self, ids: WordIds) -> Vec<(usize, usize, usize)> {
        let mut out: Vec<(usize, usize, usize)> = Vec::new();
        if self.present_words(ids).next().is_none() {
            return out; // none of the family's words occurs
        }
        // The family's matches in order, others skipped; at one start, the word listed
        // first wins (the matches are sorted by start, so one start's are adjacent).
        let mut resume = 0;
        let mut pending: Option<(usize, usize, usize)> = None; // (start, end, word index)
        let mut take = |(start, end, w): (usize, usize, usize)| {
            if start >= resume {
                out.push((start, end, w));
                resume = end;
            }
        };
        for &(start, end, id) in &self.matches {
            let Some(w) = ids.local(id) else {
                continue;
            };
            match pending {
                Some((s, _, bw)) if s == start => {
                    if w < bw {
                        pending = Some((start, end, w));
                    }
                }
                _ => {
                    if let Some(p) = pending.replace((start, end, w)) {
                        take(p);
                    }
                }
            }
        }
        if let Some(p) = pending {
            take(p);
        }
        out
    }
}

/// Start of the line holding byte `at`: just after the `\n` before it.
pub fn line_start(text: &str, at: usize) -> usize {
    memchr::memrchr(b'\n', &text.as_bytes()[..at]).map_or(0, |i| i + 1)
}

/// The line holding byte `at`: from after the `\n` before it to the `\n` after it.
pub fn line_around(text: &str, at: usize) -> (usize, usize) {
    let end = memchr::memchr(b'\n', &text.as_bytes()[at..]).map_or(text.len(), |i| at + i);
    (line_start(text, at), end)
}

/// Cheap gates before the card and IBAN regexes: whether a text holds their shapes,
/// read off the runs of ASCII capitals, digits, spaces and hyphens (every shape lies in
/// such a run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CardAndIbanGates {
    /// 13 ASCII digits in a row, a single space or hyphen allowed between two digits
    /// (the shape of a card number).
    pub card: bool,
    /// 13 ASCII digits with only spaces and hyphens, any number of them, between: the
    /// shape of the baseline's card pattern (`(?:\d[ -]*?){13,19}`) in ASCII.
    pub loose_card: bool,
    /// A run of at least 12 capitals, digits and spaces (country, check digits and two
    /// groups of four, spaces allowed between groups) with two capitals and two digits
    /// at its start or after a space, 12 bytes or more before its end.
    pub iban: bool,
}

/// ASCII capitals, digits and the separators of both shapes: every card number and
/// IBAN the gates pass lies in a run of these bytes.
const CARD_IBAN_CLASS: ByteClass = ByteClass::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -", false);

impl CardAndIbanGates {
    /// Both gates passed: no run can change them.
    pub fn settled(&self) -> bool {
        self.card && self.iban
    }

    /// Adds the gates of the run of [`CARD_IBAN_CLASS`] bytes around the ASCII digit
    /// `b[i]`; returns where the run ends. Every shape holds an ASCII digit, so the runs
    /// around the digits of a text are all the runs that can pass (the run around a
    /// digit of a run read already is that run).
    pub fn add_run_around(&mut self, b: &[u8], i: usize) -> usize {
        let (start, end) = run_extent(b, i, 0, |c| CARD_IBAN_CLASS.has(c));
        self.add_run(b, start, end);
        end
    }

    /// Adds the gates of the maximal run `b[s..e]` of [`CARD_IBAN_CLASS`] bytes.
    fn add_run(&mut self, b: &[u8], s: usize, e: usize) {
        if e - s < IBAN_MIN {
            return;
        }
        if !self.card {
            let (card, loose) = card_chains(&b[s..e]);
            self.card = card;
            self.loose_card |= loose;
        }
        self.iban = self.iban || has_iban_head(b, s, e);
    }
}

/// The card and IBAN gates of `text` by their definition: every run of
/// [`CARD_IBAN_CLASS`] bytes long enough to hold either shape. The detector reads only
/// the runs around digits ([`CardAndIbanGates::add_run_around`], from its one pass over
/// the text's separators); the tests check both agree.
#[cfg(test)]
pub fn card_and_iban_gates(text: &str) -> CardAndIbanGates {
    let b = text.as_bytes();
    let mut found = CardAndIbanGates::default();
    for (s, e) in class_runs(b, 0, IBAN_MIN, &CARD_IBAN_CLASS) {
        found.add_run(b, s, e);
        if found.settled() {
            break;
        }
    }
    found
}

/// Fewest bytes of an IBAN's start: country, check digits, two groups of four.
const IBAN_MIN: usize = 12;

/// Whether `run` holds 13 ASCII digits in a row with at most one space or hyphen between
/// two of them, and whether it holds 13 with any spaces and hyphens between them (a
/// capital ends either row). The first implies the second.
fn card_chains(run: &[u8]) -> (bool, bool) {
    const DIGITS: usize = 13;
    let (mut tight, mut loose, mut loose_found) = (0, 0, false);
    let mut after_digit = false;
    for &c in run {
        if c.is_ascii_digit() {
            tight += 1;
            loose += 1;
            if tight >= DIGITS {
                return (true, true);
            }
            loose_found |= loose >= DIGITS;
            after_digit = true;
        } else if matches!(c, b' ' | b'-') {
            if !after_digit {
                tight = 0;
            }
            after_digit = false;
        } else {
            (tight, loose) = (0, 0);
            after_digit = false;
        }
    }
    (false, loose_found)
}

/// Whether `b[s..e]` holds an IBAN's head: in a stretch without hyphens of at least
/// [`IBAN_MIN`] bytes, two capitals and two digits at the stretch's start or after a
/// space, [`IBAN_MIN`] bytes or more before the stretch's end.
fn has_iban_head(b: &[u8], s: usize, e: usize) -> bool {
    let head = |p: usize| {
        b[p].is_ascii_uppercase()
            && b[p + 1].is_ascii_uppercase()
            && b[p + 2].is_ascii_digit()
            && b[p + 3].is_ascii_digit()
    };
    let mut from = s;
    for end in (s..e).filter(|&i| b[i] == b'-').chain([e]) {
        if end >= from + IBAN_MIN
            && (from..=end - IBAN_MIN).any(|p| (p == from || b[p - 1] == b' ') && head(p))
        {
            return true;
        }
        from = end + 1;
    }
    false
}

/// Calls `found` with the captures of every match of `re` in `text`, as iterating
/// `re.captures_iter(text)` would, while running the regex only on the regions within
/// `before` bytes ahead of and `after` bytes behind an anchor (offsets ascending).
///
/// Exact when every match of `re` lies in such a region of one of its anchors: the regions
/// are then searched in order, each from where the previous match ended, and a search
/// limited to a range still sees the whole text for `^`, `$`, `\b` and the like. The PII
/// patterns without a literal (IPs, SSNs) read every byte of a text in the lazy DFA; their
/// anchors (a `.`, `:` or `-` between the right kinds of bytes) are found with memchr.
pub fn captures_near(
    re: &regex_automata::meta::Regex,
    text: &str,
    anchors: impl Iterator<Item = usize>,
    (before, after): (usize, usize),
    mut found: impl FnMut(&regex_automata::util::captures::Captures),
) {
    let mut caps = re.create_captures();
    let mut resume = 0; // end of the last match
    let mut search = |from: usize, to: usize| {
        let mut at = floor_boundary(text, from.max(resume));
        let to = ceil_boundary(text, to);
        while at < to {
            re.search_captures(&regex_automata::Input::new(text).range(at..to), &mut caps);
            let Some(m) = caps.get_match() else { break };
            found(&caps);
            resume = m.end();
            // The anchored patterns never match empty; step past one anyway.
            at = if m.is_empty() {
                ceil_boundary(text, m.end() + 1)
            } else {
                m.end()
            };
        }
    };
    let mut region: Option<(usize, usize)> = None;
    for p in anchors {
        let (a, b) = (p.saturating_sub(before), (p + after).min(text.len()));
        match region {
            Some((ra, rb)) if a <= rb => region = Some((ra, rb.max(b))),
            _ => {
                if let Some((ra, rb)) = region {
                    search(ra, rb);
                }
                region = Some((a, b));
            }
        }
    }
    if let Some((ra, rb)) = region {
        search(ra, rb);
    }
}

/// Calls `found` with the captures of every match of `re` in `text`, as iterating
/// `re.captures_iter(text)` would, while searching only anchored at the offsets `starts`
/// (ascending; offsets inside an earlier match are skipped).
///
/// Exact when every match of `re` starts at one of `starts`: from any point, the leftmost
/// match then starts at the first remaining offset where an anchored search matches, and
/// an anchored search prefers among the matches there as the unanchored one does.
pub fn captures_at_starts(
    re: &regex_automata::meta::Regex,
    text: &str,
    starts: impl IntoIterator<Item = usize>,
    mut found: impl FnMut(&regex_automata::util::captures::Captures),
) {
    let mut caps = re.create_captures();
    let mut resume = 0; // end of the last match
    for at in starts {
        if at < resume || !text.is_char_boundary(at) {
            continue;
        }
        let input = regex_automata::Input::new(text)
            .range(at..)
            .anchored(regex_automata::Anchored::Yes);
        re.search_captures(&input, &mut caps);
        if let Some(m) = caps.get_match() {
            found(&caps);
            resume = m.end().max(at + 1);
        }
    }
}

/// Whether `text` holds a character that a Unicode case-insensitive pattern equates with
/// an ASCII letter although ASCII case folding does not (`ſ` with `s`, the Kelvin sign
/// with `k`): there, words found by the ASCII keyword scan may miss a pattern's matches.
/// The detectors read this from the scan ([`Markers::has_non_ascii_fold_of_ascii`]);
/// the tests, from the text.
#[cfg(test)]
pub fn has_non_ascii_fold_of_ascii(text: &str) -> bool {
    crate::engine::text::has_any_char(text, &['\u{17F}', '\u{212A}'])
}

/// An ASCII digit or any byte of a multi-byte character (which may be a digit of
/// another script, as `\d` reads them).
pub fn digit_like(b: u8) -> bool {
    b.is_ascii_digit() || b >= 0x80
}

/// `\b` as the `regex` crate defines it by default (Unicode word characters), checked
/// around the byte span `start..end` of `text`.
pub fn is_word_bounded(text: &str, start: usize, end: usize) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let before = text[..start].chars().next_back().is_some_and(word);
    let after = text[end..].chars().next().is_some_and(word);
    let first = text[start..end].chars().next().is_some_and(word);
    let last = text[start..end].chars().next_back().is_some_and(word);
    before != first && after != last
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
    fn markers_are_listed_at_their_index() {
        for (i, m) in marker::ALL.iter().enumerate() {
            assert_eq!(m.0, i, "{}", m.1);
        }
    }

    /// A marker is found as written, not in another case, wherever it sits.
    #[test]
    fn markers_match_case_sensitively() {
        let mut words = KeywordBuilder::default();
        let ids = words.add(marker::words());
        let scan = words.build().expect("few words");
        for (text, begin) in [
            ("-----BEGIN RSA", true),
            ("begin BeGiN", false),
            ("xBEGIN", true),
            ("BEGI", false),
            ("begin then BEGIN", true),
        ] {
            let hits = scan.scan(text);
            let markers = Markers::new(text, &hits, ids);
            assert_eq!(markers.has(&marker::BEGIN), begin, "{text}");
            assert!(markers.has_ignore_ascii_case(&marker::BEGIN) || !begin);
        }
    }

    /// `(?i)identified` in the `regex` crate matches exactly the ASCII case variants: the
    /// letters have no other simple case folds, so the ASCII-case-insensitive marker
    /// gates the pattern exactly.
    #[test]
    fn identified_has_no_unicode_case_variants() {
        let re = regex::Regex::new("(?i)identified").unwrap();
        for t in [
            "IDENTIFIED",
            "IdEnTiFiEd",
            "\u{130}dentified",
            "\u{131}dentified",
            "ıdentıfıed",
        ] {
            assert_eq!(re.is_match(t), t.is_ascii(), "{t}");
        }
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
    fn file_kinds_follow_extensions() {
        assert_eq!(FileKind::of("a/b/.env", false), FileKind::Config);
        assert_eq!(FileKind::of("a/_.env.local.txt", false), FileKind::Config);
        assert_eq!(FileKind::of("src/main.go", false), FileKind::Code);
        assert_eq!(FileKind::of("config.yml", false), FileKind::Config);
        assert_eq!(FileKind::of("README.md", false), FileKind::Prose);
        assert_eq!(FileKind::of("main.go", true), FileKind::Prose);
    }

    /// The shared scan reports, per family, what a leftmost-first Aho-Corasick search over
    /// that family's words alone reports, on generated text where words of two families
    /// overlap, nest and repeat.
    #[test]
    fn leftmost_first_per_family_equals_a_family_automaton() {
        let fam_a = ["key", "keys", "ey", "sk", "pass", "password", "s."];
        let fam_b = ["token", "ke", "word", "sess", "session", "k"];
        let pieces = [
            "key", "KEYS", "pass", "word", "tok", "en", "s", ".", " ", "se", "ssion", "x",
        ];
        let mut words = KeywordBuilder::default();
        let a = words.add(fam_a);
        let b = words.add(fam_b);
        let scan = words.build().expect("few words");
        let own = |list: &[&str]| {
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                .build(list)
                .unwrap()
        };
        let (own_a, own_b) = (own(&fam_a), own(&fam_b));
        let mut state = 7u64;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..12 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let hits = scan.scan(&text);
            for (ids, ac, list) in [(a, &own_a, &fam_a[..]), (b, &own_b, &fam_b[..])] {
                let want: Vec<(usize, usize, usize)> = ac
                    .find_iter(&text)
                    .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
                    .collect();
                assert_eq!(hits.leftmost_first(ids), want, "{text:?}");
                for (i, w) in list.iter().enumerate() {
                    let lower = text.to_ascii_lowercase();
                    assert_eq!(hits.has(ids, i), lower.contains(w), "{w} in {text:?}");
                }
            }
        }
    }

    /// The shared automaton reports every occurrence of every word, as the
    /// `aho-corasick` crate's overlapping search does, on generated text with capitals,
    /// non-ASCII words, repeated words and words that are suffixes of others.
    #[test]
    fn keyword_scan_reports_what_aho_corasick_reports() {
        let words = [
            "key",
            "KEYS",
            "ey",
            "pass",
            "password",
            "word",
            "пароль",
            "密码",
            "-by:",
            "ab",
            "b",
            "key",
            "contraseña",
            "aab",
        ];
        let pieces = [
            "key",
            "Key",
            "KEYS",
            "pass",
            "WORD",
            "пароль",
            "密",
            "码",
            "-by:",
            "-BY:",
            "a",
            "b",
            "x",
            " ",
            "ñ",
            "contraseÑa",
            "contraseña",
            "aa",
        ];
        let mut builder = KeywordBuilder::default();
        builder.add(words);
        let scan = builder.build().expect("few words");
        let ac = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(words)
            .unwrap();
        let mut state = 3u64;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..10 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let mut want: Vec<(usize, usize, u32)> = ac
                .find_overlapping_iter(&text)
                .map(|m| (m.start(), m.end(), m.pattern().as_u32()))
                .collect();
            want.sort_unstable();
            assert_eq!(scan.scan(&text).matches, want, "{text:?}");
            // Lanes that start anywhere (also inside a word and inside a character).
            for split in 0..=text.len() {
                let two = scan.scan_lanes(&text, [0, split, split, split]);
                assert_eq!(two.matches, want, "{text:?} split at {split}");
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (x, y) = ((state >> 20) as usize % (split + 1), (state >> 40) as usize);
                let y = split + y % (text.len() - split + 1);
                let four = scan.scan_lanes(&text, [0, x, split, y]);
                assert_eq!(four.matches, want, "{text:?} lanes at {x} {split} {y}");
            }
        }
    }

    /// `present_words` lists what `has` says, for families whose ids straddle the 64-bit
    /// words of the presence set; `starts_of_words` merges what `starts_of` says of each
    /// word (words here start where others do: `<0.1` and `<0.12`).
    #[test]
    fn present_words_and_starts_of_words_agree_with_per_word_lookups() {
        let lists: Vec<Vec<String>> = [70, 60, 5, 1]
            .iter()
            .enumerate()
            .map(|(f, &n)| (0..n).map(|i| format!("<{f}.{i}")).collect())
            .collect();
        let mut builder = KeywordBuilder::default();
        let families: Vec<WordIds> = lists.iter().map(|l| builder.add(l)).collect();
        let scan = builder.build().expect("few words");
        let all: Vec<&String> = lists.iter().flatten().collect();
        let mut state = 7u64;
        for round in 0..300 {
            let mut text = String::new();
            for _ in 0..round % 40 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(all[(state >> 33) as usize % all.len()]);
            }
            let hits = scan.scan(&text);
            for (ids, list) in families.iter().zip(&lists) {
                let want: Vec<usize> = (0..list.len()).filter(|&i| hits.has(*ids, i)).collect();
                let got: Vec<usize> = hits.present_words(*ids).collect();
                assert_eq!(got, want, "{text:?}");
                // Starts of a few of the family's words: each word's, merged.
                let names: Vec<&str> = list.iter().map(String::as_str).collect();
                let some: Vec<&str> = names.iter().step_by(3).copied().collect();
                let mut want: Vec<usize> = some
                    .iter()
                    .flat_map(|w| hits.starts_of(*ids, word_index(&names, w)))
                    .collect();
                want.sort_unstable();
                want.dedup();
                assert_eq!(hits.starts_of_words(*ids, &names, &some), want, "{text:?}");
            }
        }
    }

    /// The card gate as a byte loop: `min` digits in a row, one space or hyphen allowed
    /// between two digits.
    fn digit_run_loop(text: &str, min: usize) -> bool {
        let mut count = 0;
        let mut after_digit = false;
        for &b in text.as_bytes() {
            if b.is_ascii_digit() {
                count += 1;
                if count >= min {
                    return true;
                }
                after_digit = true;
            } else if after_digit && (b == b' ' || b == b'-') {
                after_digit = false;
            } else {
                count = 0;
                after_digit = false;
            }
        }
        false
    }

    /// The IBAN gate as it was when it had its own pass over runs of capitals, digits
    /// and spaces.
    fn iban_start_own_pass(text: &str) -> bool {
        const CLASS: ByteClass = ByteClass::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ", false);
        let b = text.as_bytes();
        let head = |p: usize| {
            b[p].is_ascii_uppercase()
                && b[p + 1].is_ascii_uppercase()
                && b[p + 2].is_ascii_digit()
                && b[p + 3].is_ascii_digit()
        };
        class_runs(b, 0, 12, &CLASS)
            .any(|(s, e)| (s..=e - 12).any(|p| (p == s || b[p - 1] == b' ') && head(p)))
    }

    /// The markers for the characters that IGNORECASE equates with ASCII letters answer as
    /// the searches of the text they stand for.
    #[test]
    fn fold_markers_answer_as_the_text_searches() {
        let compiled = &*super::super::COMPILED.keywords;
        let pieces = [
            "s", "k", "i", "I", "\u{17F}", "\u{212A}", "\u{130}", "\u{131}", "é", "\u{212B}",
            "\u{17E}", " ", "password",
        ];
        let mut seen = [0usize; 2];
        for text in crate::engine::testgen::texts(&pieces, 3000, 8, 14) {
            let hits = compiled.automaton.scan(&text);
            let markers = Markers::new(&text, &hits, compiled.marker_words);
            let fold = has_non_ascii_fold_of_ascii(&text);
            let stand_in = crate::engine::gate::has_ascii_fold_stand_in(&text);
            assert_eq!(markers.has_non_ascii_fold_of_ascii(), fold, "{text:?}");
            assert_eq!(markers.has_ascii_fold_stand_in(), stand_in, "{text:?}");
            seen[usize::from(fold)] += 1;
            seen[usize::from(stand_in)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 500), "{seen:?}");
    }

    /// The card and IBAN gates never say no where their regex would match, and answer as
    /// the byte loop and the separate IBAN pass they replaced.
    #[test]
    fn card_and_iban_gates_pass_every_match() {
        let card = regex::Regex::new(r"\d(?:[ \-]?\d){12,18}").unwrap();
        let loose_card = regex::Regex::new(r"[0-9](?:[ \-]*[0-9]){12}").unwrap();
        let iban = regex::Regex::new(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}").unwrap();
        let iban_head = regex::Regex::new(r"(?:^|[^A-Z0-9])[A-Z]{2}[0-9]{2}").unwrap();
        let (mut ibans, mut heads_refused, mut loose_cards) = (0, 0, 0);
        let pieces = [
            "4",
            "12",
            "DE",
            "89",
            " ",
            "-",
            "--",
            "x",
            "GB",
            "0000",
            "a",
            "\u{663}",
            "\n",
            "1234567",
            " -",
            "_",
            "\u{c4}",
            "Q",
            "ABCD",
            "DE89 3704",
            "  ",
        ];
        let mut state = 9u64;
        for _ in 0..5000 {
            let mut text = String::new();
            for _ in 0..14 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            // The regexes read Unicode digits too; the gates, like the loops before them,
            // only ASCII ones.
            let gates = card_and_iban_gates(&text);
            if card.is_match(&text) && text.is_ascii() {
                assert!(gates.card, "{text:?}");
            }
            assert_eq!(gates.card, digit_run_loop(&text, 13), "{text:?}");
            // The baseline's card shape: every match in an ASCII text passes, and the
            // gate passes nothing else.
            let baseline_card = loose_card.is_match(&text);
            if text.is_ascii() {
                assert_eq!(gates.loose_card, baseline_card, "{text:?}");
                loose_cards += usize::from(baseline_card && !gates.card);
            }
            if iban.is_match(&text) && text.is_ascii() {
                assert!(gates.iban, "{text:?}");
                ibans += 1;
            }
            // The gate never passes without an IBAN's head and length.
            assert_eq!(gates.iban, iban_start_own_pass(&text), "{text:?}");
            if gates.iban {
                assert!(iban_head.is_match(&text), "{text:?}");
            } else if iban_head.is_match(&text) {
                heads_refused += 1;
            }
        }
        assert!(ibans > 50 && heads_refused > 50, "{ibans} {heads_refused}");
        assert!(
            loose_cards > 30,
            "{loose_cards} texts with only the baseline's card shape"
        );
    }
}
