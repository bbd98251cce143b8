//! S1: private key material — PEM blocks (any `… PRIVATE KEY` label, also written
//! inside string literals with `\n` escapes or split across concatenated lines), PuTTY
//! key files, age secret keys, base64-wrapped PEM (`LS0tLS1CRUdJTi…`) and the private
//! members of JSON Web Keys. Whole blocks are redacted: the literals carry no secret but
//! leaving them would only announce what was removed.

use super::family::{Facts, Family, Sink};
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::keywords::WordIds;
use crate::engine::prepass::literals;
use crate::engine::prepass::literals::Literals;
use regex::Regex;
use std::sync::LazyLock;

static PEM_BEGIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-{4,5} ?BEGIN ((?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?) ?-{4,5}")
        .expect("static regex")
});
static AGE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}").expect("static regex")
});
static B64_PEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{20,}").expect("static regex"));
/// A symmetric key or MAC key given as a literal to the call that builds it: Node's
/// `crypto.createSecretKey(…)`, Java's `new SecretKeySpec(…)`, Go's JWT
/// `.SignedString([]byte(…))`, Python's `hmac.new(b"…", …)`, the literal optionally
/// converted to bytes first (`Buffer.from('…', 'hex')`, `[]byte("…")`,
/// `Base64.decode("…")`, `bytes.fromhex("…")`). Group 1 is the literal.
static SYMMETRIC_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:\bcreateSecretKey|\bnew\s+SecretKeySpec|\.SignedString|\bhmac\.new)\s*\(\s*(?:(?:Buffer\.from|\[\]byte|bytes\.fromhex|Base64\.decode|base64\.b64decode|Base64\.getDecoder\(\)\.decode|hex\.DecodeString)\s*\(\s*)?b?["'`]([^"'`\n\\]{6,512})["'`]"#,
    )
    .expect("static regex")
});

/// Node's `createHmac(algorithm, key)`: the key is the second argument.
static HMAC_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"\bcreateHmac\s*\(\s*["'][^"'\n]{1,32}["']\s*,\s*(?:Buffer\.from\s*\(\s*)?["'`]([^"'`\n\\]{6,512})["'`]"#,
    )
    .expect("static regex")
});

/// A private JWK member (RFC 7518: `d`, `p`, `q`, `dp`, `dq`, `qi`; `k` of a symmetric
/// key) with its base64url value, written as JSON or as code: a JavaScript or TypeScript
/// object (`d: '…'`), a Python dict (`'d': '…'`), a Go or Rust struct literal (`D: "…"`).
/// Searched only inside an object that holds `kty`.
static JWK_MEMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:["'`]|\\")?\b(?i:d|p|q|dp|dq|qi|k)(?:["'`]|\\")?\s*[:=]\s*(?:["'`]|\\")([A-Za-z0-9_\-+/=]{8,})(?:["'`]|\\")"#,
    )
    .expect("static regex")
});

/// Longest PEM block searched for its END marker.
const MAX_PEM: usize = 64 * 1024;

/// Appends S1 candidates.
#[inline(never)] // one frame per family in profiles
pub fn scan(text: &str, literals: &Literals, out: &mut Vec<Candidate>) {
    if literals.has(&literals::BEGIN) {
        pem_blocks(text, out);
    }
    if literals.has(&literals::PUTTY) {
        putty(text, out);
    }
    if literals.has(&literals::AGE) {
        for m in AGE_KEY.find_iter(text) {
            out.push(cand(m.start(), m.end(), "S1.age"));
        }
    }
    if literals.has(&literals::PEM_BASE64) {
        for m in B64_PEM.find_iter(text) {
            if let Some(decoded) = super::decode::base64_decode(m.as_str())
                && String::from_utf8_lossy(&decoded).contains("PRIVATE KEY")
            {
                out.push(cand(m.start(), m.end(), "S1.pem-base64"));
            }
        }
    }
    der_keys(text, literals, out);
    if [
        &literals::SECRET_KEY_SPEC,
        &literals::CREATE_SECRET_KEY,
        &literals::SIGNED_STRING,
        &literals::HMAC_NEW,
    ]
    .iter()
    .any(|l| literals.has(l))
    {
        symmetric_keys(&SYMMETRIC_KEY, text, out);
    }
    if literals.has(&literals::CREATE_HMAC) {
        symmetric_keys(&HMAC_KEY, text, out);
    }
    // `kty`, or `Kty` as a Go or C# field.
    if literals.has_ignore_ascii_case(&literals::KTY) {
        jwk(text, literals.starts_ignore_ascii_case(&literals::KTY), out);
    }
}

fn cand(start: usize, end: usize, detector: &'static str) -> Candidate {
    Candidate {
        start,
        end,
        category: Category::SECRET,
        detector,
        priority: prio::PRIVATE_KEY,
    }
}

fn pem_blocks(text: &str, out: &mut Vec<Candidate>) {
    let mut from = 0;
    while let Some(caps) = PEM_BEGIN.captures_at(text, from) {
        let begin = caps.get(0).expect("group 0");
        let label = caps.get(1).expect("label").as_str();
        let window_end =
            super::lexical::floor_boundary(text, (begin.end() + MAX_PEM).min(text.len()));
        let window = &text[begin.end()..window_end];
        // A body never holds another BEGIN line, so the search stops at one: over a
        // text of BEGIN lines one after another, every BEGIN searched the whole window
        // (seconds for a few hundred kilobytes).
        let window = &window[..window.find("-----BEGIN").unwrap_or(window.len())];
        let end_marker = format!("END {label}");
        let end_at = window.find(&end_marker);
        let body = &window[..end_at.unwrap_or(window.len())];
        let b64 = body
            .bytes()
            .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
            .count();
        // The shortest real body is an Ed25519 key's PKCS #8 DER: 64 base64 characters.
        // A documentation stub (`MIIE...`) or code building a block (`"-----BEGIN RSA
        // PRIVATE KEY-----\n" . wordwrap($key, 64, "\n") . "…END…"`) elides it; a key
        // shown in part (whole body lines, then `...`) is still key material.
        let elided = body.contains("...") || body.contains('…');
        if b64 < 60 || (elided && !has_body_line(body)) {
            from = begin.end();
            continue;
        }
        let end = match end_at {
            // Cut short: the body lines up to the ellipsis and any after it.
            _ if elided => body_end(text, begin.end()),
            Some(i) => {
                // Include the trailing dashes of the END line.
                let after = begin.end() + i + end_marker.len();
                let dashes = text[after..]
                    .bytes()
                    .take_while(|&b| b == b'-' || b == b' ')
                    .count();
                after + dashes
            }
            None => body_end(text, begin.end()),
        };
        out.push(cand(begin.start(), end, "S1.pem"));
        from = end.max(begin.end());
    }
}

/// Whether `body` holds a whole line of a PEM body: 40 base64 characters or more and
/// nothing else (a body's lines are 64; a stub's `MIIE...` is not one).
fn has_body_line(body: &str) -> bool {
    body.lines().any(|line| {
        let line = line.trim();
        line.len() >= 40
            && line
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    })
}

/// Without an END marker: the block runs over the following lines made of base64 body
/// (headers such as `Proc-Type:` and quoting/concatenation noise allowed).
fn body_end(text: &str, from: usize) -> usize {
    let mut end = from;
    let mut pos = from;
    for line in text[from..].split_inclusive('\n') {
        let core = line.trim_matches(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '"' | '\'' | '.' | '+' | ',' | ';' | '\\' | '|' | '(' | ')'
                )
        });
        let core = core.trim_end_matches("\\n").trim_end_matches("\\r\\n");
        let body_like = !core.is_empty()
            && (core.contains(": ")
                || core
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\\')));
        if pos == from {
            // Rest of the BEGIN line.
            end = pos + line.trim_end_matches('\n').len();
        } else if body_like {
            end = pos + line.trim_end_matches('\n').len();
        } else if !core.is_empty() {
            break;
        }
        pos += line.len();
    }
    end
}

/// The literals that may begin base64 of a DER private key.
const DER_STARTS: [&literals::Literal; 5] = [
    &literals::DER_LONG,
    &literals::DER_MID_G,
    &literals::DER_MID_H,
    &literals::DER_SEC1_P256,
    &literals::DER_ED25519,
];

/// Shortest base64 of a DER private key: an Ed25519 key in PKCS #8 is 48 bytes.
const MIN_DER_BASE64: usize = 64;

/// A private key's DER in base64 without PEM armour: a YAML block (`tls_key: |` and
/// indented lines), an assignment (`key_b64 = MIIE…`), a continued INI value. Found by
/// the DER grammar of its first bytes, not by the name it is given: an outer SEQUENCE
/// whose first member is the version INTEGER of a private key structure ([`is_private_key_der`]).
/// The block runs over its first run of base64 and the following lines made only of
/// base64. Public keys and certificates start otherwise and stay readable.
fn der_keys(text: &str, literals: &Literals, out: &mut Vec<Candidate>) {
    if !DER_STARTS.iter().any(|l| literals.has(l)) {
        return;
    }
    let b = text.as_bytes();
    let mut starts: Vec<usize> = DER_STARTS
        .iter()
        .flat_map(|l| literals.starts_ignore_ascii_case(l))
        .collect();
    starts.sort_unstable();
    let mut done_to = 0;
    for start in starts {
        if start < done_to || (start > 0 && is_base64_byte(b[start - 1])) {
            continue;
        }
        let run_end = start
            + b[start..]
                .iter()
                .take_while(|&&c| is_base64_byte(c))
                .count();
        let head = &text[start..run_end.min(start + 24)];
        let end = base64_lines_end(text, run_end);
        // Most of the key must be there: a documentation stub shows its first line and
        // elides the rest (`MIIEpQIBAAKCAQEAuyf/…iieR\n.-----END`).
        let present = text[start..end]
            .bytes()
            .filter(|&c| is_base64_byte(c))
            .count();
        let is_key = super::decode::base64_decode(head)
            .and_then(|d| private_key_der_len(&d))
            .is_some_and(|len| present >= MIN_DER_BASE64 && present * 3 >= len * 2);
        if !is_key {
            continue;
        }
        out.push(cand(start, end, "S1.der-key"));
        done_to = end;
    }
}

/// Where a base64 block that reaches `from` on its first line ends: after the following
/// lines whose trimmed content is base64 only (four characters or more).
fn base64_lines_end(text: &str, from: usize) -> usize {
    let b = text.as_bytes();
    let mut end = from + b[from..].iter().take_while(|&&c| is_base64_byte(c)).count();
    let mut pos = match text[end..].find('\n') {
        Some(i) => end + i + 1,
        None => return end,
    };
    for line in text[pos..].split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.len() < 4 || !trimmed.bytes().all(is_base64_byte) {
            break;
        }
        end = pos + line.find(trimmed).unwrap_or(0) + trimmed.len();
        pos += line.len();
    }
    end
}

fn is_base64_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=')
}

/// When `der` (a key's first bytes) opens a private key, the base64 characters the whole
/// key takes: a SEQUENCE, then the version INTEGER 0 followed by an INTEGER (PKCS #1
/// RSA, DSA) or a SEQUENCE (PKCS #8's algorithm), or the version INTEGER 1 followed by
/// an OCTET STRING (SEC1 EC) or a SEQUENCE (PKCS #8 v2). A public key or a certificate
/// opens with a nested SEQUENCE.
fn private_key_der_len(der: &[u8]) -> Option<usize> {
    let (header, len) = match der.get(1)? {
        0x81 => (3, usize::from(*der.get(2)?)),
        0x82 => (
            4,
            usize::from(*der.get(2)?) << 8 | usize::from(*der.get(3)?),
        ),
        n if *n < 0x80 => (2, usize::from(*n)),
        _ => return None,
    };
    let private = der.first() == Some(&0x30)
        && match der.get(header..header + 4) {
            Some([0x02, 0x01, 0x00, next]) => matches!(next, 0x02 | 0x30),
            Some([0x02, 0x01, 0x01, next]) => matches!(next, 0x04 | 0x30),
            _ => false,
        };
    private.then_some((header + len).div_ceil(3) * 4)
}

fn putty(text: &str, out: &mut Vec<Candidate>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("Private-Lines:") {
        let start = from + i;
        let end = match text[start..].find("Private-MAC:") {
            Some(j) => {
                let mac = start + j;
                text[mac..].find('\n').map_or(text.len(), |k| mac + k)
            }
            None => text[start..].find("\n\n").map_or(text.len(), |k| start + k),
        };
        // Keep the "Private-Lines: N" label itself readable.
        let body = text[start..end].find('\n').map_or(end, |k| start + k + 1);
        if body < end {
            out.push(cand(body, end, "S1.putty"));
        }
        from = end.max(start + 1);
    }
}

/// The literals group 1 of `re` finds, unless they are placeholders.
fn symmetric_keys(re: &Regex, text: &str, out: &mut Vec<Candidate>) {
    for caps in re.captures_iter(text) {
        let v = caps.get(1).expect("group");
        if !super::values::is_placeholder(v.as_str()) {
            out.push(cand(v.start(), v.end(), "S1.symmetric-key"));
        }
    }
}

/// The private members of each object holding a `kty` (any ASCII case) at `kty_starts`
/// (ascending, from the shared keyword scan).
fn jwk(text: &str, kty_starts: impl Iterator<Item = usize>, out: &mut Vec<Candidate>) {
    let mut done_to = 0;
    for at in kty_starts {
        if at < done_to {
            continue;
        }
        let Some((obj_start, obj_end)) = enclosing_object(text, at) else {
            continue;
        };
        for caps in JWK_MEMBER.captures_iter(&text[obj_start..obj_end]) {
            let v = caps.get(1).expect("value");
            out.push(cand(obj_start + v.start(), obj_start + v.end(), "S1.jwk"));
        }
        done_to = obj_end;
    }
}

/// The `{…}` object around `pos`, by brace depth (strings are not parsed; keys are rare
/// enough inside JWK values for this to hold).
fn enclosing_object(text: &str, pos: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let mut depth = 0i32;
    let mut start = None;
    let lo = pos.saturating_sub(16 * 1024);
    for i in (lo..pos).rev() {
        match b[i] {
            b'}' => depth += 1,
            b'{' if depth == 0 => {
                start = Some(i);
                break;
            }
            b'{' => depth -= 1,
            _ => {}
        }
    }
    let start = start?;
    let mut depth = 0i32;
    let hi = (pos + 64 * 1024).min(b.len());
    for (i, &c) in b.iter().enumerate().take(hi).skip(start) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((start, i + 1));
                }
            }
            _ => {}
        }
    }
    None
}

/// The family as the detector runs it.
pub(crate) struct PrivateKeys;

impl Family for PrivateKeys {
    fn name(&self) -> &'static str {
        "S1 private keys"
    }

    fn scan(&self, f: &Facts, _words: WordIds, out: &mut Sink) {
        scan(f.text, f.literals, &mut out.candidates);
    }
}
