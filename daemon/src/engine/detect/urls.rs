//! S4: credentials in URLs and connection files — the password of `scheme://user:pass@host`
//! (any scheme: postgres, mysql, mongodb+srv, redis, amqp, nats, ftp, http(s), git,
//! `jdbc:…`), Discord webhook tokens, `.netrc` `password` entries and `.pgpass` lines.
//! Secret query parameters (`?token=`, `&sig=`, `X-Amz-Signature=`) and ODBC/ADO
//! `Password=…;` pairs are key/value shapes and are found by S3.

use super::family::{Facts, Family, Sink};
use super::values;
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::keywords::WordIds;
use crate::engine::prepass::literals;
use crate::engine::prepass::literals::Literals;
use regex::Regex;
use std::sync::LazyLock;

static USERINFO: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b[A-Za-z][A-Za-z0-9+.\-]{1,30}://([^\s:@/?#'`<>\x22\\]*):([^\s@/?#'`<>\x22\\]+)@([A-Za-z0-9\[%{$_][A-Za-z0-9.\-]*)",
    )
    .expect("static regex")
});

/// RFC 2606/6761 documentation hosts: credentials shown with them are examples.
fn reserved_host(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    ["example.com", "example.org", "example.net"]
        .iter()
        .any(|d| h == *d || h.ends_with(&format!(".{d}")))
        || [".example", ".invalid", ".test"]
            .iter()
            .any(|s| h.ends_with(s))
}
static DISCORD_WEBHOOK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)discord(?:app)?\.com/api/webhooks/\d{5,30}/([A-Za-z0-9_\-]{20,100})")
        .expect("static regex")
});
static NETRC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)\bmachine\s+\S+.*?\bpassword\s+(\S+)").expect("static regex")
});

/// Appends S4 candidates.
#[inline(never)] // one frame per family in profiles
pub fn scan(text: &str, rel_path: &str, literals: &Literals, out: &mut Vec<Candidate>) {
    if literals.has(&literals::SCHEME) {
        for caps in USERINFO.captures_iter(text) {
            let user = caps.get(1).expect("group").as_str();
            let pass = caps.get(2).expect("group");
            let host = caps.get(3).expect("group").as_str();
            if accept_password(pass.as_str())
                && !reserved_host(host)
                && !is_shape_of_credentials(user, pass.as_str())
            {
                out.push(cand(pass.start(), pass.end(), "S4.url-userinfo"));
            }
        }
        if literals.has(&literals::WEBHOOKS) {
            for caps in DISCORD_WEBHOOK.captures_iter(text) {
                let t = caps.get(1).expect("group");
                out.push(cand(t.start(), t.end(), "S4.discord-webhook"));
            }
        }
    }
    if literals.has(&literals::MACHINE) && literals.has(&literals::PASSWORD) {
        for caps in NETRC.captures_iter(text) {
            let p = caps.get(1).expect("group");
            if !values::is_placeholder(p.as_str()) {
                out.push(cand(p.start(), p.end(), "S4.netrc"));
            }
        }
    }
    let name = rel_path.rsplit('/').next().unwrap_or(rel_path);
    if name == ".pgpass" || name == "pgpass.conf" {
        pgpass(text, out);
    }
}

fn cand(start: usize, end: usize, detector: &'static str) -> Candidate {
    Candidate {
        start,
        end,
        category: Category::SECRET,
        detector,
        priority: prio::URL_CREDENTIAL,
    }
}

fn accept_password(p: &str) -> bool {
    p.chars().count() >= 4
        && !values::is_placeholder(p)
        && !p.starts_with('%')
        && !p.starts_with('{')
        && !p.starts_with('$')
}

/// Whether `user:password` only names the two fields (`user:pass@`, `username:password@`,
/// `myname:secret@`, `dbuser:passwd@`): how documentation writes the shape of a URL. A
/// password word after a real user name (`ivan:password@`) is that user's password, as
/// tests configure it, and stays a secret.
fn is_shape_of_credentials(user: &str, password: &str) -> bool {
    // (Shorter words, `pw` or `pwd`, never get here: `accept_password` wants 4 characters.)
    const PASSWORD_WORDS: [&str; 4] = ["pass", "password", "passwd", "secret"];
    const USER_WORDS: [&str; 6] = ["user", "username", "usr", "login", "name", "account"];
    let user = user.to_ascii_lowercase();
    let user = ["my", "your", "some", "db_", "db-", "db"]
        .iter()
        .find_map(|p| {
            user.strip_prefix(p)
                .filter(|rest| USER_WORDS.contains(rest))
        })
        .unwrap_or(&user);
    USER_WORDS.contains(&user)
        && PASSWORD_WORDS
            .iter()
            .any(|w| password.eq_ignore_ascii_case(w))
}

/// `hostname:port:database:username:password`, `#` comments.
fn pgpass(text: &str, out: &mut Vec<Candidate>) {
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if !body.starts_with('#') {
            // Fields are separated by unescaped colons.
            let b = body.as_bytes();
            let mut fields = 0;
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == b':' {
                    fields += 1;
                    if fields == 4 && i + 1 < b.len() && !values::is_placeholder(&body[i + 1..]) {
                        out.push(cand(pos + i + 1, pos + body.len(), "S4.pgpass"));
                    }
                }
                i += 1;
            }
        }
        pos += line.len();
    }
}

/// The family as the detector runs it.
pub(crate) struct UrlCredentials;

impl Family for UrlCredentials {
    fn name(&self) -> &'static str {
        "S4 credentials in URLs"
    }

    fn scan(&self, f: &Facts, _words: WordIds, out: &mut Sink) {
        scan(f.text, f.rel_path, f.literals, &mut out.candidates);
    }
}
