//! S6: password hashes — bcrypt, argon2, sha-crypt (`$1$`, `$5$`, `$6$`), Apache
//! `$apr1$`, yescrypt, PBKDF2 (passlib and Django forms), LDAP `{SSHA}`/`{SHA}` and
//! NTLM/LM pairs of `pwdump` lines. A hash is redacted whole: it can be cracked offline.

use super::family::{Facts, Family, Sink};
use super::lexical;
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::keywords::WordIds;
use crate::engine::prepass::literals;
use crate::engine::prepass::literals::Literals;
use regex::Regex;
use std::sync::LazyLock;

static HASH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}",
        r"|\$argon2(?:id|i|d)\$(?:v=\d+\$)?m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]{8,}\$[A-Za-z0-9+/]{16,}",
        r"|\$[156]\$(?:rounds=\d+\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{22,86}",
        r"|\$apr1\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}",
        r"|\$y\$[./A-Za-z0-9]+\$[./A-Za-z0-9]+\$[./A-Za-z0-9]{43}",
        r"|\$pbkdf2(?:-sha\d+)?\$\d+\$[./A-Za-z0-9+]{8,}\$[./A-Za-z0-9+]{16,}",
        r"|pbkdf2_sha\d+\$\d+\$[A-Za-z0-9]{4,}\$[A-Za-z0-9+/=]{20,}",
        r"|\{(?:SSHA|SHA|SSHA256|SSHA512|SHA256|SHA512|CRYPT)\}[A-Za-z0-9+/$.=]{20,}",
    ))
    .expect("static regex")
});
static PWDUMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[^:\s]+:\d+:([0-9A-Fa-f]{32}):([0-9A-Fa-f]{32}):::").expect("static regex")
});

/// Appends S6 candidates.
#[inline(never)] // one frame per family in profiles
pub fn scan(text: &str, literals: &Literals, out: &mut Vec<Candidate>) {
    if lexical::has_byte(text, b'$')
        || literals.has(&literals::BRACE_S)
        || literals.has(&literals::BRACE_C)
    {
        for m in HASH.find_iter(text) {
            out.push(Candidate {
                start: m.start(),
                end: m.end(),
                category: Category::SECRET,
                detector: "S6.password-hash",
                priority: prio::HASH,
            });
        }
    }
    if literals.has(&literals::TRIPLE_COLON) {
        for caps in PWDUMP.captures_iter(text) {
            let (a, b) = (caps.get(1).expect("group"), caps.get(2).expect("group"));
            out.push(Candidate {
                start: a.start(),
                end: b.end(),
                category: Category::SECRET,
                detector: "S6.ntlm-pair",
                priority: prio::HASH,
            });
        }
    }
}

/// The family as the detector runs it.
pub(crate) struct PasswordHashes;

impl Family for PasswordHashes {
    fn name(&self) -> &'static str {
        "S6 password hashes"
    }

    fn scan(&self, f: &Facts, _words: WordIds, out: &mut Sink) {
        scan(f.text, f.literals, &mut out.candidates);
    }
}
