//! S3 on command lines: passwords handed to well-known clients as short flags, which
//! the key-based scan cannot see because the flag names no key: `mysql -pSECRET`,
//! `sshpass -p SECRET`, `docker login -u me -p SECRET`, `redis-cli -a SECRET`,
//! `mongosh -p SECRET`. Long flags (`--password=…`) are the key-based scan's.
//!
//! Only the flag of the named client counts, on its own command (up to `|`, `;`, `&`):
//! `-p` is a port for `ssh` and `docker run`, and `mysql -p` alone asks for a password.
//!
//! Also PowerShell's plain-text secure strings: `ConvertTo-SecureString 'x' -AsPlainText`
//! (the cmdlet takes a secret in clear only with that switch).

use super::family::{Facts, Family, Sink};
use super::lexical;
use super::values;
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::keywords::KeywordHits;
use crate::engine::prepass::keywords::WordIds;

/// Trigger words, found by the shared keyword scan (indexes into [`TRIGGER_WORDS`]).
pub const TRIGGER_WORDS: &[&str] = &[
    "mysql",
    "mariadb",
    "sshpass",
    "login",
    "redis-cli",
    "mongo",
    "convertto-securestring",
];

/// One client: the program names that start its command, the password flag, and whether
/// the value must be glued to the flag (`mysql -pSECRET`; `-p SECRET` prompts instead).
struct Client {
    programs: &'static [&'static str],
    flag: &'static str,
    glued_only: bool,
    /// A word that must follow the program (`docker login`).
    subcommand: Option<&'static str>,
    /// The program runs another command after its own options (`sshpass -p X ssh …`),
    /// whose flags are not the client's.
    wraps_command: bool,
}

const CLIENTS: &[Client] = &[
    Client {
        programs: &[
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlshow",
            "mariadb",
            "mariadb-dump",
        ],
        flag: "-p",
        glued_only: true,
        subcommand: None,
        wraps_command: false,
    },
    Client {
        programs: &["sshpass"],
        flag: "-p",
        glued_only: false,
        subcommand: None,
        wraps_command: true,
    },
    Client {
        programs: &[
            "docker", "podman", "nerdctl", "buildah", "skopeo", "helm", "oras",
        ],
        flag: "-p",
        glued_only: false,
        subcommand: Some("login"),
        wraps_command: false,
    },
    Client {
        programs: &["redis-cli"],
        flag: "-a",
        glued_only: false,
        subcommand: None,
        wraps_command: false,
    },
    Client {
        programs: &[
            "mongo",
            "mongosh",
            "mongodump",
            "mongorestore",
            "mongoexport",
            "mongoimport",
        ],
        flag: "-p",
        glued_only: false,
        subcommand: None,
        wraps_command: false,
    },
];

/// Appends S3 candidates for client password flags; `hits` holds the occurrences of
/// [`TRIGGER_WORDS`] under `ids`.
#[inline(never)] // one frame per family in profiles
pub fn scan(text: &str, hits: &KeywordHits, ids: WordIds, out: &mut Vec<Candidate>) {
    if hits.present_words(ids).next().is_none() || !lexical::has_byte(text, b'-') {
        return;
    }
    let starts = hits.starts_of_words(ids, TRIGGER_WORDS, TRIGGER_WORDS);
    let mut line_end = 0; // end of the last line read
    for at in starts {
        if at < line_end {
            continue;
        }
        let (ls, le) = lexical::line_around(text, at);
        command_line(text, ls, le, out);
        line_end = le;
    }
}

/// `ConvertTo-SecureString [-String] '…' -AsPlainText [-Force]` on the line `ls..le`: the
/// quoted string is a password in clear.
fn plain_text_secure_string(text: &str, ls: usize, le: usize, out: &mut Vec<Candidate>) {
    const CMDLET: &str = "convertto-securestring";
    let line = &text[ls..le];
    let lower = line.to_ascii_lowercase();
    if !lower.contains("-asplaintext") {
        return;
    }
    let mut from = 0;
    while let Some(i) = lower[from..].find(CMDLET) {
        let mut at = from + i + CMDLET.len();
        from = at;
        let rest = &line[at..];
        let skipped = rest.len() - rest.trim_start().len();
        at += skipped;
        if lower[at..].starts_with("-string") {
            at += "-string".len();
            at += line[at..].len() - line[at..].trim_start().len();
        }
        let Some(q) = lexical::quote_at(line, at) else {
            continue;
        };
        let body = at + q.len();
        let Some(close) = lexical::find_closing(line, body, q) else {
            continue;
        };
        let value = &line[body..close];
        if value.chars().count() >= 4 && !values::is_placeholder(value) {
            out.push(Candidate {
                start: ls + body,
                end: ls + close,
                category: Category::SECRET,
                detector: "S3.powershell-securestring",
                priority: prio::STRUCTURAL,
            });
        }
    }
}

/// Reads one line's commands for client password flags.
fn command_line(text: &str, ls: usize, le: usize, out: &mut Vec<Candidate>) {
    plain_text_secure_string(text, ls, le, out);
    let toks = tokens(text, ls, le);
    let mut i = 0;
    while i < toks.len() {
        let (s, e) = toks[i];
        // `` `mysql `` in Markdown, `$(mysql …)` in a script.
        let word = text[s..e].trim_start_matches(['`', '$', '(', '"', '\'']);
        let program = word.rsplit('/').next().unwrap_or(word);
        let Some(client) = CLIENTS.iter().find(|c| c.programs.contains(&program)) else {
            i += 1;
            continue;
        };
        // The command's own words: up to a shell separator, alone or ending a word.
        let end = toks[i + 1..]
            .iter()
            .position(|&(a, b)| matches!(&text[a..b], "|" | "||" | ";" | "&" | "&&"))
            .map_or(toks.len(), |p| i + 1 + p);
        let end = toks[i + 1..end]
            .iter()
            .position(|&(a, b)| text[a..b].ends_with([';', '|', '&']))
            .map_or(end, |p| i + 1 + p + 1);
        let mut args = &toks[i + 1..end];
        if let Some(sub) = client.subcommand {
            // `docker login …`, `helm registry login …`: the subcommand is among the
            // first two words that are not options; only what follows it counts.
            let words: Vec<usize> = args
                .iter()
                .enumerate()
                .filter(|(_, t)| !text[t.0..].starts_with('-'))
                .map(|(k, _)| k)
                .take(2)
                .collect();
            match words.iter().find(|&&k| &text[args[k].0..args[k].1] == sub) {
                Some(&k) => args = &args[k + 1..],
                None => {
                    i = end.max(i + 1);
                    continue;
                }
            }
        }
        flag_value(text, client, args, out);
        i = end.max(i + 1);
    }
}

/// The value of `client`'s password flag among `args`, if it is a literal. For a client
/// that wraps a command (`sshpass`) the options end at the first word that is neither an
/// option nor an option's value: what follows is the wrapped command, whose own `-p` is
/// not the password.
fn flag_value(text: &str, client: &Client, args: &[(usize, usize)], out: &mut Vec<Candidate>) {
    // The word before was a short option other than the password flag: this word may be
    // its value (`sshpass -f file cmd`), not the wrapped command.
    let mut after_option = false;
    for (k, &(a, b)) in args.iter().enumerate() {
        let tok = &text[a..b];
        if !tok.starts_with('-') {
            if !std::mem::take(&mut after_option) && client.wraps_command {
                break;
            }
            continue;
        }
        after_option = tok.len() == 2 && tok != client.flag;
        let (vs, ve) = if tok == client.flag {
            if client.glued_only {
                continue;
            }
            match args.get(k + 1) {
                Some(&next) => next,
                None => continue,
            }
        } else if let Some(rest) = tok.strip_prefix(client.flag)
            && !rest.is_empty()
            && !rest.starts_with('-')
        {
            (a + client.flag.len(), b)
        } else {
            continue;
        };
        let (vs, ve) = unquoted(text, vs, ve);
        let value = &text[vs..ve];
        if value.is_empty() || value.starts_with(['-', '$', '%']) || values::is_placeholder(value) {
            continue;
        }
        out.push(Candidate {
            start: vs,
            end: ve,
            category: Category::SECRET,
            detector: "S3.cli-password",
            priority: prio::STRUCTURAL,
        });
    }
}

/// A word without the quotes around it, or without what closes the command or the
/// Markdown span right after it (`-pX;`, `-pX)`, `` -pX` ``).
fn unquoted(text: &str, s: usize, e: usize) -> (usize, usize) {
    let t = &text.as_bytes()[s..e];
    if t.len() >= 2 && matches!(t[0], b'"' | b'\'') && t[t.len() - 1] == t[0] {
        return (s + 1, e - 1);
    }
    // A Markdown code span ends at its backtick, whatever follows it.
    let t = &t[..memchr::memchr(b'`', t).unwrap_or(t.len())];
    let kept = t
        .iter()
        .rposition(|c| !matches!(c, b';' | b'&' | b'|' | b')'))
        .map_or(0, |i| i + 1);
    (s, s + kept)
}

/// Shell-like words of `text[ls..le]` as byte ranges: split at blanks, a quoted stretch
/// (`'…'`, `"…"`) kept inside its word.
fn tokens(text: &str, ls: usize, le: usize) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut p = ls;
    while p < le {
        while p < le && matches!(b[p], b' ' | b'\t' | b'\r') {
            p += 1;
        }
        if p >= le {
            break;
        }
        let start = p;
        while p < le && !matches!(b[p], b' ' | b'\t' | b'\r') {
            if matches!(b[p], b'"' | b'\'') {
                let q = b[p];
                p = memchr::memchr(q, &b[p + 1..le]).map_or(le, |i| p + 1 + i + 1);
            } else {
                p += 1;
            }
        }
        out.push((start, p.min(le)));
    }
    out
}

/// The family as the detector runs it.
pub(crate) struct CliFlags;

impl Family for CliFlags {
    fn name(&self) -> &'static str {
        "S3 secrets in command lines"
    }

    fn words(&self) -> Vec<&str> {
        TRIGGER_WORDS.to_vec()
    }

    fn scan(&self, f: &Facts, words: WordIds, out: &mut Sink) {
        scan(f.text, f.hits, words, &mut out.candidates);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<String> {
        let mut words = crate::engine::prepass::keywords::KeywordBuilder::default();
        let ids = words.add(TRIGGER_WORDS);
        let hits = words.build().expect("few words").scan(text);
        let mut out = Vec::new();
        scan(text, &hits, ids, &mut out);
        out.iter()
            .map(|c| text[c.start..c.end].to_owned())
            .collect()
    }

    #[test]
    fn client_password_flags_name_their_value() {
        for (text, want) in [
            ("mysql -u root -pMysqlPw9988 app", "MysqlPw9988"),
            ("sshpass -e -p SshPw4433 ssh -p 22 host", "SshPw4433"),
            (
                "  /usr/bin/mysqldump -uroot -p'dump pw 7' db > x.sql",
                "dump pw 7",
            ),
            ("sshpass -p 'SshPassPw55' ssh deploy@host", "SshPassPw55"),
            ("sshpass -pSshGlued77 scp a b:", "SshGlued77"),
            (
                "echo ok && docker login -u me -p DockerPw7766 registry.io",
                "DockerPw7766",
            ),
            (
                "helm registry login reg.io --username u -p HelmPw5544",
                "HelmPw5544",
            ),
            ("redis-cli -h cache -a RedisPw3322 ping", "RedisPw3322"),
            (
                "mongosh mongodb://db -u admin -p \"MongoPw1122\"",
                "MongoPw1122",
            ),
            ("Run `mysql -u app -pMdPw8877` first.", "MdPw8877"),
            ("(`mysql -pMdPw8878`, or", "MdPw8878"),
            ("mysql -uroot -pSemiPw6655; echo done", "SemiPw6655"),
        ] {
            assert_eq!(found(text), [want], "{text}");
        }
    }

    #[test]
    fn other_flags_prompts_and_references_are_not_values() {
        for text in [
            "mysql -u root -p app",
            "mysql -h db -P 3306 -p",
            "docker run -p 8080:80 nginx",
            "ssh -p 22 host && echo login ok",
            "docker login -u me --password-stdin registry.io",
            "docker login -u me -p \"$REGISTRY_TOKEN\" registry.io",
            "redis-cli -a ${REDIS_PASSWORD} ping",
            "sshpass -f ~/.pw ssh host",
            "mysql -u root -p<password> app",
            "echo mysql; nc -p 9000 host",
            "git log --format=%p mongo",
            "docker run -p 8080:80 --name login img",
            "docker compose -p myproj up login",
            "sshpass -f ~/.pw ssh -p 2222 host",
        ] {
            assert!(found(text).is_empty(), "{text} -> {:?}", found(text));
        }
    }
}
