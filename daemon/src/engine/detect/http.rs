//! S5: HTTP authorization material — `Bearer`/`Basic`/`NTLM`/`Negotiate` credentials
//! wherever they appear (headers, HAR/VCR cassettes, code building headers),
//! `Authorization: Token …`/bare tokens, Digest `response=`, `curl -u user:pass`, and
//! cookies whose name says session, sid, token, auth or jwt.

use super::anchored;
use super::family::{Facts, Family, Sink};
use super::lexical;
use super::values;
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::keywords::KeywordHits;
use crate::engine::prepass::keywords::WordIds;
use crate::engine::prepass::literals::Literals;
use regex_automata::meta::Regex as MetaRegex;
use regex_automata::util::captures::Captures;
use std::sync::LazyLock;

static SCHEME: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r"(?i)\b(bearer|basic|ntlm|negotiate)(?:\s+|\x20*=\x20*)([A-Za-z0-9\-._~+/]{8,}={0,3})",
    )
    .expect("static regex")
});
static AUTH_HEADER: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r#"(?i)\b(?:proxy-)?authorization\\?["']?\s*[:=,]\s*\\?["']?\s*(?:(token|apikey|api-key|sso-key|key|otp)\s+)?([A-Za-z0-9\-._~+/]{8,}={0,3})"#,
    )
    .expect("static regex")
});
static DIGEST_RESPONSE: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(r#"(?i)\bresponse\s*=\s*\\?"?([0-9a-f]{32,128})\b"#).expect("static regex")
});
static CURL_USER: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(r#"\bcurl\b[^\n]*?\s(?:-u|--user)(?:\s+|=)['"]?[^\s'":]*:([^\s'"]+)"#)
        .expect("static regex")
});
static COOKIE: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(r"(?i)(?:^|[\s;,'\x22])([\w.\-]*(?:session|sess|sid|token|auth|jwt|csrf|xsrf|remember)[\w.\-]*)=([^;\s'\x22,&]{12,})")
        .expect("static regex")
});

/// The password of a user/password pair handed to an HTTP client: `auth=("user",
/// "pass")` (Python `requests`, `httpx`), `session.auth = ('u', 'p')`,
/// `HTTPBasicAuth("u", "p")`, `HTTPDigestAuth(…)`, `aiohttp.BasicAuth(…)`. Both members are
/// string literals; the match starts at `auth`, a trigger word.
static AUTH_PAIR: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r#"(?i)auth(?:\s*=\s*[(\[]|\()\s*(?:"[^"\n]*"|'[^'\n]*')\s*,\s*(?:"([^"\n]+)"|'([^'\n]+)')\s*,?\s*[)\]]"#,
    )
    .expect("static regex")
});

/// The password of a user/password pair handed to a credential constructor or a login
/// call: `new NetworkCredential("u", "p")`, `UsernamePasswordCredentials(user, "p")`,
/// `new PasswordAuthentication("u", "p".toCharArray())`,
/// `UsernamePasswordAuthenticationToken("u", "p")`, `smtp.login("u", "p")`,
/// `ftp.login('u', 'p')`. The user is a literal or a name; the password a literal, as
/// Java hands it over (`.toCharArray()`, `.getBytes()`) or not. The match starts at the
/// call's word (a trigger word: `credential`, `login`, `auth`).
static CALL_PAIR: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r#"(?i)(?:credentials?|login|authentication(?:token)?)\(\s*(?:"[^"\n]*"|'[^'\n]*'|[\w.]+)\s*,\s*(?:"([^"\n]+)"|'([^'\n]+)')(?:\s*\.\s*(?:tochararray|getbytes)\(\s*\))?\s*,?\s*\)"#,
    )
    .expect("static regex")
});

/// The one argument of a password credential: `new PasswordCredential("p")`. The match
/// starts at `credential` (a trigger word); the name before it must end in `password`.
static PASSWORD_CREDENTIAL: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(r#"(?i)credential\(\s*(?:"([^"\n]+)"|'([^'\n]+)')\s*\)"#).expect("static regex")
});

/// The password given to a JDBC connection: `DriverManager.getConnection(url, "user",
/// "pass")`. The match starts at `getconnection`, a trigger word.
static JDBC_PAIR: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r#"(?i)getconnection\(\s*(?:"[^"\n]*"|[\w.]+)\s*,\s*(?:"[^"\n]*"|'[^'\n]*')\s*,\s*(?:"([^"\n]+)"|'([^'\n]+)')\s*\)"#,
    )
    .expect("static regex")
});

/// The key a JSON Web Token is signed or checked with, given as a literal:
/// `jwt.encode(payload, "key", …)`, `jwt.sign(claims, 'key')`, `jwt.verify(token, "key")`.
/// The first argument is a name, an attribute or a call without arguments (a literal
/// with commas inside would make its own strings look like the second argument).
static JWT_KEY: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r#"(?i)jwt\.(?:encode|decode|sign|verify)\(\s*[\w.\[\]"']+(?:\(\))?\s*,\s*(?:"([^"\n]+)"|'([^'\n]+)')"#,
    )
    .expect("static regex")
});

/// A `user:password` literal encoded to base64 in code, which is how HTTP Basic
/// credentials (RFC 7617) are built by hand: `base64.b64encode(b'user:pass')`,
/// `btoa('user:pass')`, `Base64.encode64("user:pass")`,
/// `base64.StdEncoding.EncodeToString([]byte("user:pass"))`,
/// `Base64.getEncoder().encodeToString("user:pass".getBytes())`,
/// `Convert.ToBase64String(Encoding.UTF8.GetBytes("user:pass"))`. The match starts at the
/// encoder's word (a trigger word); between it and the literal only ASCII names, dots,
/// calls' parentheses and brackets. Groups: 2 the user, 3 the password, whose lengths
/// [`pair_within_bounds`] checks.
///
/// No counted repetition of a Unicode class here: `[\w…]{1,64}` compiles to 64 copies
/// of `\w`'s UTF-8 automaton: the two patterns took 11 MB compiled and 9 MB of search
/// cache in each thread that ran them, half the regex memory of a cold index. Written
/// with `+`/`*` and bounded after the match they take 0.5 MB; the matches are the same
/// (each run ends at a fixed character, `:`, a quote or a blank, either way), except
/// that a name between the encoder and the literal must now be ASCII.
static BASE64_PAIR: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r#"(?i)(?:b64encode|btoa|encode64|base64)(?-u:[\w.()\[\] ]){0,60}?(["'])([\w.@+\-]+):([^"'\s/][^"'\s]*)["']"#,
    )
    .expect("static regex")
});

/// The same pair read by Node: `Buffer.from('user:pass').toString('base64')`.
static BUFFER_PAIR: LazyLock<MetaRegex> = LazyLock::new(|| {
    MetaRegex::new(
        r#"(?i)buffer\.from\(\s*(["'])([\w.@+\-]+):([^"'\s/][^"'\s]*)["']\s*(?:,\s*["'][\w-]+["']\s*)?\)\s*\.\s*tostring\(\s*["']base64"#,
    )
    .expect("static regex")
});

/// The trigger words every cookie name of [`COOKIE`] holds (`session` holds `sess`).
const COOKIE_WORDS: &[&str] = &[
    "sess", "sid", "token", "auth", "jwt", "csrf", "xsrf", "remember",
];

/// Trigger words, found by the shared keyword scan (indexes into [`TRIGGER_WORDS`]).
pub const TRIGGER_WORDS: &[&str] = &[
    "bearer",
    "basic",
    "ntlm",
    "negotiate",
    "authorization",
    "digest",
    "curl",
    "sess",
    "sid",
    "token",
    "auth",
    "jwt",
    "csrf",
    "xsrf",
    "remember",
    "response",
    "credential",
    "login",
    "getconnection",
    "b64encode",
    "btoa",
    "encode64",
    "base64",
    "buffer",
];

/// Appends S5 candidates; `hits` holds the occurrences of [`TRIGGER_WORDS`] under `ids`.
#[inline(never)] // one frame per family in profiles
pub fn scan(
    text: &str,
    hits: &KeywordHits,
    ids: WordIds,
    literals: &Literals,
    out: &mut Vec<Candidate>,
) {
    // Every search below needs one of the trigger words; most texts have none.
    if hits.present_words(ids).next().is_none() {
        return;
    }
    // Each pattern is searched only where its match can start, next to a word the
    // keyword scan found, unless the text has a character that a case-insensitive
    // pattern equates with an ASCII letter and the scan does not.
    let anywhere = literals.has_non_ascii_fold_of_ascii();
    scan_with(text, hits, ids, anywhere, out);
}

/// [`scan`]; `anywhere` searches each pattern over the whole text.
fn scan_with(
    text: &str,
    hits: &KeywordHits,
    ids: WordIds,
    anywhere: bool,
    out: &mut Vec<Candidate>,
) {
    let lower_has = |word: &str| hits.has_word(ids, TRIGGER_WORDS, word);
    let each = |re: &MetaRegex, starts: Vec<usize>, found: &mut dyn FnMut(&Captures)| {
        if anywhere {
            re.captures_iter(text).for_each(|caps| found(&caps));
        } else {
            anchored::captures_at_starts(re, text, starts, found);
        }
    };
    let word_starts = |words: &[&str]| hits.starts_of_words(ids, TRIGGER_WORDS, words);
    let group = |caps: &Captures, i: usize| caps.get_group(i).expect("group");
    let schemes = ["bearer", "basic", "ntlm", "negotiate"];
    if schemes.iter().any(|w| lower_has(w)) {
        each(&SCHEME, word_starts(&schemes), &mut |caps| {
            let written = &text[group(caps, 1).range()];
            let scheme = written.to_ascii_lowercase();
            let tok = group(caps, 2);
            let prose_basic = scheme == "basic" && written == "basic";
            if accept_scheme_token(&scheme, &text[tok.range()], prose_basic) {
                out.push(cand(tok.start, tok.end, "S5.authorization"));
            }
        });
    }
    if lower_has("authorization") {
        // A match may start at `proxy-` too; its token is the same from `authorization`.
        let starts = word_starts(&["authorization"]);
        each(&AUTH_HEADER, starts, &mut |caps| {
            let tok = group(caps, 2);
            let value = &text[tok.range()];
            // After a scheme word the value is a credential by its place (`ApiKey
            // Zm9vOmJhcg==`, base64 of a short `id:key`); a bare value must look random.
            let credential = if caps.get_group(1).is_some() {
                credential_shape(value)
            } else {
                value.len() >= 16 && values::looks_random(value, 16, 3.0)
            };
            if credential && !values::is_placeholder(value) {
                out.push(cand(tok.start, tok.end, "S5.authorization"));
            }
        });
    }
    if lower_has("digest") {
        let starts = word_starts(&["response"]);
        each(&DIGEST_RESPONSE, starts, &mut |caps| {
            let tok = group(caps, 1);
            out.push(cand(tok.start, tok.end, "S5.digest-response"));
        });
    }
    if lower_has("curl") {
        // Searched whole: anchored at each `curl`, a line of many `curl`s and no user
        // would be read once per `curl` (`[^\n]*?` runs to the line's end each time).
        for caps in CURL_USER.captures_iter(text) {
            let p = group(&caps, 1);
            let value = &text[p.range()];
            if !values::is_placeholder(value) && !value.starts_with('$') {
                out.push(cand(p.start, p.end, "S5.curl-user"));
            }
        }
    }
    // Passwords and keys handed to a call as string literals: each pattern's match
    // starts at one of its trigger words, and the literal is group 1 (double quotes) or
    // group 2 (single quotes).
    let literal_arguments: [(&MetaRegex, &[&str], &'static str); 5] = [
        (&AUTH_PAIR, &["auth"], "S5.auth-pair"),
        (
            &CALL_PAIR,
            &["credential", "login", "auth"],
            "S5.credential-pair",
        ),
        (&PASSWORD_CREDENTIAL, &["credential"], "S5.credential-pair"),
        (&JDBC_PAIR, &["getconnection"], "S5.jdbc-password"),
        (&JWT_KEY, &["jwt"], "S5.jwt-signing-key"),
    ];
    for (re, words, detector) in literal_arguments {
        if !words.iter().any(|w| lower_has(w)) {
            continue;
        }
        each(re, word_starts(words), &mut |caps| {
            let Some(p) = caps.get_group(1).or_else(|| caps.get_group(2)) else {
                return;
            };
            let value = &text[p.range()];
            let at = caps.get_match().expect("a match").start();
            if std::ptr::eq(re, &*PASSWORD_CREDENTIAL)
                && !lexical::ends_with_ignore_ascii_case(&text[..at], "password")
            {
                return;
            }
            // A login call names less surely than a credential type that its second
            // argument is a password (`login("admin", "home")`), and so does a user given
            // by name (`getCredentials(scope, "github")`): it must look like one.
            let login = lexical::starts_with_ignore_ascii_case(&text[at..], "login");
            let named_user = std::ptr::eq(re, &*CALL_PAIR)
                && text[at..]
                    .split_once('(')
                    .is_some_and(|(_, args)| !args.trim_start().starts_with(['"', '\'']));
            if accept_pair_password(value) && (!(login || named_user) || looks_like_password(value))
            {
                out.push(cand(p.start, p.end, detector));
            }
        });
    }
    let encoders: [(&MetaRegex, &[&str]); 2] = [
        (&BASE64_PAIR, &["b64encode", "btoa", "encode64", "base64"]),
        (&BUFFER_PAIR, &["buffer"]),
    ];
    for (re, words) in encoders {
        if !words.iter().any(|w| lower_has(w)) || !lexical::has_byte(text, b':') {
            continue;
        }
        // `buffer` is a common word in code; only `Buffer.from(` can start a match.
        let mut starts = word_starts(words);
        if words == ["buffer"] {
            starts.retain(|&at| {
                text.get(at..at + 12)
                    .is_some_and(|s| s.eq_ignore_ascii_case("buffer.from("))
            });
        }
        each(re, starts, &mut |caps| {
            let (user, pass) = (group(caps, 2), group(caps, 3));
            let quote = &text[group(caps, 1).range()];
            let closed = text[pass.end..].starts_with(quote);
            if closed
                && pair_within_bounds(&text[user.range()], &text[pass.range()])
                && accept_pair_password(&text[pass.range()])
            {
                out.push(cand(user.start, pass.end, "S5.basic-credentials"));
            }
        });
    }
    if !COOKIE_WORDS.iter().any(|w| lower_has(w)) || !lexical::has_byte(text, b'=') {
        return;
    }
    each(&COOKIE, cookie_starts(text, hits, ids), &mut |caps| {
        let v = group(caps, 2);
        let s = &text[v.range()];
        // `PublicKeyToken=…` (a .NET assembly's public key fingerprint) is no cookie.
        let public = text[group(caps, 1).range()]
            .to_ascii_lowercase()
            .contains("public");
        if !public
            && !s.contains("://")
            && values::looks_random(s, 12, 3.0)
            && !values::is_placeholder(s)
        {
            out.push(cand(v.start, v.end, "S5.cookie"));
        }
    });
}

/// Where a [`COOKIE`] match may start: its name holds one of [`COOKIE_WORDS`] and is a
/// run of name characters after a delimiter (or the start of the text), so the match
/// starts at the nearest delimiter before a word. Walking back from each word over
/// ASCII name bytes, every non-ASCII character passed (a Unicode space or letter) is a
/// possible start too; any other ASCII byte rules the word out. A word whose name run
/// ends at an ASCII byte other than `=` is ruled out too (see [`name_may_meet_equals`]).
/// Sorted, deduplicated.
fn cookie_starts(text: &str, hits: &KeywordHits, ids: WordIds) -> Vec<usize> {
    let b = text.as_bytes();
    let words = hits.starts_of_words(ids, TRIGGER_WORDS, COOKIE_WORDS);
    let mut starts = Vec::new();
    // Where the previous walk began: a walk that reaches it has nothing new to find (the
    // same name run, already walked), so every byte is walked over once.
    let mut walked = 0;
    for hit in words {
        if !name_may_meet_equals(b, hit) {
            continue;
        }
        let mut i = hit;
        loop {
            if i == walked && i > 0 {
                break;
            }
            let Some(&c) = i.checked_sub(1).map(|p| &b[p]) else {
                starts.push(0);
                break;
            };
            if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-') {
                i -= 1;
            } else if c.is_ascii_whitespace() || matches!(c, b'\x0B' | b';' | b',' | b'\'' | b'"') {
                starts.push(i - 1);
                break;
            } else if c >= 0x80 {
                i = lexical::floor_boundary(text, i - 1);
                starts.push(i);
            } else {
                break;
            }
        }
        walked = hit;
    }
    starts.sort_unstable();
    starts.dedup();
    starts
}

/// Whether the cookie name through the word at `hit` may be followed by `=`: the name
/// is a run of name characters, so the first byte after it must be the `=`. Walks
/// forward over ASCII name bytes; a non-ASCII character may be a word character of the
/// name (`\w` is Unicode), so it leaves the question open. Most trigger words in code
/// (`session = …`, `token)`) fail here, before any search.
fn name_may_meet_equals(b: &[u8], hit: usize) -> bool {
    b[hit..]
        .iter()
        .find(|&&c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')))
        .is_some_and(|&c| c == b'=' || c >= 0x80)
}

fn cand(start: usize, end: usize, detector: &'static str) -> Candidate {
    Candidate {
        start,
        end,
        category: Category::SECRET,
        detector,
        priority: prio::HTTP_AUTH,
    }
}

/// The second member of an auth pair as a password: a literal without blanks, not a
/// reference, template or placeholder, nor a path or URL (`auth("admin", "/login")`).
fn accept_pair_password(value: &str) -> bool {
    value.chars().count() >= 4
        && !value.chars().any(char::is_whitespace)
        && !value.starts_with('/')
        && !value.contains("://")
        && !values::is_placeholder(value)
}

/// An encoded pair's user of 1–64 characters and password of 1–128: longer runs are
/// data, not a login.
fn pair_within_bounds(user: &str, password: &str) -> bool {
    user.chars().count() <= 64 && password.chars().count() <= 128
}

/// Letters mixed with digits or symbols, or long: a password rather than a word.
fn looks_like_password(value: &str) -> bool {
    let (l, u, d, o) = values::char_classes(value);
    (l + u > 0 && d + o > 0) || value.chars().count() >= 12
}

/// A credential after an auth scheme word, not prose ("Basic usage", "Bearer tokens").
/// Basic credentials are base64 (RFC 7617): a token with other characters after `basic`
/// is code (`let basic = assert._format(v)`); after the word in lower case, as prose
/// writes it (`two basic nRF51822 boards`), only a token that decodes to `user:password`
/// is one.
fn accept_scheme_token(scheme: &str, tok: &str, prose_basic: bool) -> bool {
    if values::is_placeholder(tok) || tok.eq_ignore_ascii_case("realm") {
        return false;
    }
    if scheme == "basic" {
        let decodes_to_pair = super::decode::base64_decode(tok)
            .and_then(|decoded| String::from_utf8(decoded).ok())
            .is_some_and(|s| s.contains(':') && s.chars().all(|c| !c.is_control()));
        if decodes_to_pair {
            return true;
        }
        let base64 = tok
            .trim_end_matches('=')
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/');
        if prose_basic || !base64 {
            return false;
        }
    }
    credential_shape(tok)
}

/// A token shaped like a credential rather than a word: letters with digits, or mixed
/// case over 16 characters.
fn credential_shape(tok: &str) -> bool {
    let (l, u, d, _) = values::char_classes(tok);
    d > 0 && (l + u) > 0 || (l > 0 && u > 0 && tok.len() >= 16)
}

/// The family as the detector runs it.
pub(crate) struct HttpAuth;

impl Family for HttpAuth {
    fn name(&self) -> &'static str {
        "S5 HTTP authorization"
    }

    fn words(&self) -> Vec<&str> {
        TRIGGER_WORDS.to_vec()
    }

    fn scan(&self, f: &Facts, words: WordIds, out: &mut Sink) {
        scan(f.text, f.hits, words, f.literals, &mut out.candidates);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searching each pattern only where the shared keyword scan puts its trigger word
    /// finds what searching the whole text finds: names around and inside words,
    /// delimiters of every kind (Unicode spaces and letters included), schemes, headers,
    /// `proxy-`, digests, curl users, overlapping candidates.
    #[test]
    fn searching_from_trigger_words_equals_searching_the_whole_text() {
        let detector = super::super::Detector::new();
        let (compiled, family_words) = detector.pass_for("S5 HTTP authorization");
        let pieces = [
            "session",
            "SESS",
            "sid",
            "Token",
            "auth",
            "jwt",
            "x",
            "_",
            ".",
            "-",
            "=",
            " ",
            "\n",
            ";",
            ",",
            "'",
            "\"",
            "(",
            "abcdefgh",
            "12345678",
            "\u{a0}",
            "\u{e9}",
            "\u{2003}",
            "=abcdefghijklmn",
            "&",
            "Bearer ",
            "basic",
            "Proxy-",
            "authorization",
            ": ",
            "digest ",
            "response=",
            "0123456789abcdef",
            "curl ",
            " -u ",
            "u:",
            "$",
            "Ab9+/xYz",
            "ntlm",
            "k9Zq2Lm8Xv4Rt7Wp",
            "=k9Zq2Lm8Xv4Rt7Wp",
            " k9Zq2Lm8Xv4Rt7Wp",
            "response=\"0123456789abcdef0123456789abcdef\"",
            "auth=(",
            "Auth(",
            "login(",
            "Credential(",
            "getConnection(url, ",
            "jwt.encode(p, ",
            "credentials(",
            "base64.b64encode(b",
            "btoa(",
            "Buffer.from(",
            ").toString('base64')",
            "Base64",
            "u:p4ss!",
            "p4ss!",
            "\", \"",
            "', '",
            "\")",
            ")",
        ];
        let key = |c: &Candidate| (c.start, c.end, c.detector);
        let mut compared = 0;
        for text in crate::engine::testgen::texts(&pieces, 12000, 18, 21) {
            if crate::engine::prepass::literals::has_non_ascii_fold_of_ascii(&text) {
                continue;
            }
            let hits = compiled.automaton.scan(&text);
            let (mut whole, mut near) = (Vec::new(), Vec::new());
            scan_with(&text, &hits, family_words, true, &mut whole);
            scan_with(&text, &hits, family_words, false, &mut near);
            compared += usize::from(!whole.is_empty());
            assert_eq!(
                near.iter().map(key).collect::<Vec<_>>(),
                whole.iter().map(key).collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        assert!(compared > 900, "{compared} texts with findings");
    }
}
