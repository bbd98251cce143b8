//! S5: HTTP authorization material — `Bearer`/`Basic`/`NTLM`/`Negotiate` credentials
//! wherever they appear (headers, HAR/VCR cassettes, code building headers),
//! `Authorization: Token …`/bare tokens, Digest `response=`, `curl -u user:pass`, and
//! cookies whose name says session, sid, token, auth or jwt.

use super::util::{self, KeywordHits, WordIds};
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use regex::Regex;
use std::sync::LazyLock;

static SCHEME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(bearer|basic|ntlm|negotiate)(?:\s+|\x20*=\x20*)([A-Za-z0-9\-._~+/]{8,}={0,3})",
    )
    .expect("static regex")
});
static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\b(?:proxy-)?authorization\\?["']?\s*[:=,]\s*\\?["']?\s*(?:(?:token|apikey|api-key|sso-key|key|otp)\s+)?([A-Za-z0-9\-._~+/]{16,}={0,3})"#,
    )
    .expect("static regex")
});
static DIGEST_RESPONSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bresponse\s*=\s*\\?"?([0-9a-f]{32,128})\b"#).expect("static regex")
});
static CURL_USER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\bcurl\b[^\n]*?\s(?:-u|--user)(?:\s+|=)['"]?[^\s'":]*:([^\s'"]+)"#)
        .expect("static regex")
});
static COOKIE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:^|[\s;,'\x22])([\w.\-]*(?:session|sess|sid|token|auth|jwt|csrf|xsrf|remember)[\w.\-]*)=([^;\s'\x22,&]{12,})")
        .expect("static regex")
});

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
];

/// Appends S5 candidates; `hits` holds the occurrences of [`TRIGGER_WORDS`] under `ids`.
#[inline(never)] // one frame per family in profiles
pub fn scan(text: &str, hits: &KeywordHits, ids: WordIds, out: &mut Vec<Candidate>) {
    let lower_has = |word: &str| hits.has_word(ids, TRIGGER_WORDS, word);
    let cookie_word = [
        "sess", "sid", "token", "auth", "jwt", "csrf", "xsrf", "remember",
    ]
    .iter()
    .any(|w| lower_has(w));
    if lower_has("bearer") || lower_has("basic") || lower_has("ntlm") || lower_has("negotiate") {
        for caps in SCHEME.captures_iter(text) {
            let scheme = caps.get(1).expect("group").as_str().to_ascii_lowercase();
            let tok = caps.get(2).expect("group");
            if accept_scheme_token(&scheme, tok.as_str()) {
                out.push(cand(tok.start(), tok.end(), "S5.authorization"));
            }
        }
    }
    if lower_has("authorization") {
        for caps in AUTH_HEADER.captures_iter(text) {
            let tok = caps.get(1).expect("group");
            if util::looks_random(tok.as_str(), 16, 3.0) && !util::is_placeholder(tok.as_str()) {
                out.push(cand(tok.start(), tok.end(), "S5.authorization"));
            }
        }
    }
    if lower_has("digest") {
        for caps in DIGEST_RESPONSE.captures_iter(text) {
            let tok = caps.get(1).expect("group");
            out.push(cand(tok.start(), tok.end(), "S5.digest-response"));
        }
    }
    if lower_has("curl") {
        for caps in CURL_USER.captures_iter(text) {
            let p = caps.get(1).expect("group");
            if !util::is_placeholder(p.as_str()) && !p.as_str().starts_with('$') {
                out.push(cand(p.start(), p.end(), "S5.curl-user"));
            }
        }
    }
    if !cookie_word || !util::has_byte(text, b'=') {
        return;
    }
    for caps in COOKIE.captures_iter(text) {
        let v = caps.get(2).expect("group");
        let s = v.as_str();
        if !s.contains("://") && util::looks_random(s, 12, 3.0) && !util::is_placeholder(s) {
            out.push(cand(v.start(), v.end(), "S5.cookie"));
        }
    }
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

/// A credential after an auth scheme word, not prose ("Basic usage", "Bearer tokens").
fn accept_scheme_token(scheme: &str, tok: &str) -> bool {
    if util::is_placeholder(tok) || tok.eq_ignore_ascii_case("realm") {
        return false;
    }
    if scheme == "basic"
        && let Some(decoded) = super::decode::base64_decode(tok)
        && let Ok(s) = std::str::from_utf8(&decoded)
        && s.contains(':')
        && s.chars().all(|c| !c.is_control())
    {
        return true;
    }
    let (l, u, d, _) = util::char_classes(tok);
    d > 0 && (l + u) > 0 || (l > 0 && u > 0 && tok.len() >= 16)
}
