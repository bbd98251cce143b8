//! S3: values of sensitive keys, wherever a key meets a value — `.env`, YAML, JSON,
//! TOML, INI, properties, XML elements, HCL, shell `export`, CLI flags, dict/map
//! literals, keyword arguments and assignments in common languages — plus the weak
//! keyword tier of S7 (`key`, `auth`, `signature`, `nonce`, … with an entropy gate).
//!
//! How: an Aho-Corasick pass finds sensitive word stems; each hit is widened to its key
//! token, the token is split into words (`camelCase`, `snake_case`, `kebab-case`,
//! dotted paths) and judged by its *head* word (the last word that is not a modifier
//! such as `old`, `confirm`, `v2`): `DB_PASSWORD`, `clientSecret`, `aws_secret_access_key`
//! are sensitive, `password_file`, `token_type`, `api_key_id` are not. Then the
//! separator (`=`, `:`, `:=`, `::=`, `=>`, `==`, `>` of an XML element, a space after a CLI
//! flag, the `,` after a compound strong key quoted as a call's first argument) and the
//! value (quoted in any of `"`, `'`, `` ` ``, `\"`, `&quot;`, … or bare) are read. Strong keys have no entropy floor: only references and placeholders are
//! dropped. In source code a bare value is an expression, so it is kept only when it
//! reads as a literal token.

use super::anchored;
use super::family::{Facts, Family, Sink};
use super::filekind::Quoting;
use super::filekind::{self, FileKind};
use super::lexical;
use super::values;
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::keywords;
use crate::engine::prepass::keywords::KeywordHits;
use crate::engine::prepass::keywords::WordIds;
use crate::engine::prepass::literals;
use crate::engine::prepass::literals::Literals;
use regex::Regex;
use std::sync::LazyLock;

/// Word stems that may start a sensitive key (matched ASCII-case-insensitively).
const STEMS: &[&str] = &[
    "pass",
    "ticket",
    "pwd",
    "secret",
    "token",
    "key",
    "auth",
    "cred",
    "salt",
    "dsn",
    "seed",
    "sig",
    "nonce",
    "verifier",
    "connection",
    "connstr",
    "conn_str",
    "cookie",
    "session",
    "private",
    "contraseña",
    "contrasena",
    "senha",
    "пароль",
    "密码",
    "口令",
    "parola",
    "wachtwoord",
    "haslo",
    "hasło",
    "clave",
    "otp",
    "mfa",
    "cipher",
    "appid",
    "app_id",
    "app-id",
];

/// Head words that make a key sensitive with no entropy floor.
const STRONG_HEADS: &[&str] = &[
    "password",
    "passwd",
    "passwort",
    "pwd",
    "pass",
    "passphrase",
    "passcode",
    "passw",
    "passe",
    "secret",
    "secrets",
    "token",
    "tokens",
    "passwords",
    "credential",
    "credentials",
    "creds",
    "cred",
    "apikey",
    "dsn",
    "contraseña",
    "contrasena",
    "senha",
    "пароль",
    "密码",
    "口令",
    "parola",
    "wachtwoord",
    "haslo",
    "hasło",
    "clave",
    "connectionstring",
    "connstr",
    "privatekey",
    "secretkey",
    "accesskey",
    "apitoken",
    "authtoken",
    "accesstoken",
];

/// A head word ending in one of these is sensitive too (`rootpassword`, `apitoken`).
const STRONG_SUFFIXES: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
    "apikey",
    "passphrase",
    "privatekey",
    "secretkey",
];

/// `key` is strong after one of these words (`api_key`, `consumerKey`, `AWS_SECRET_ACCESS_KEY`).
const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "access",
    "secret",
    "private",
    "signing",
    "sign",
    "encryption",
    "encrypt",
    "crypt",
    "crypto",
    "master",
    "auth",
    "client",
    "consumer",
    "session",
    "shared",
    "hmac",
    "license",
    "licence",
    "account",
    "storage",
    "aes",
    "des",
    "cipher",
    "jwt",
    "webhook",
    "sas",
    "subscription",
    "primary",
    "secondary",
    "admin",
    "root",
    "ssh",
    "pgp",
    "gpg",
    "deploy",
    "app",
    "application",
    "service",
    "integration",
    "write",
    "bearer",
    "cookie",
    "csrf",
    "otp",
    "totp",
    "mfa",
    "seed",
    "wrapping",
    "server",
    "user",
    "personal",
    "partner",
    "merchant",
    "license",
    "dev",
    "prod",
    "live",
    "test",
    "sandbox",
    "ingest",
    "ingestion",
    "upload",
    "publish",
    "registry",
    "npm",
    "pypi",
];

/// `key` written joined to one of these is a secret key (`masterkey`, `aeskey`): the
/// qualifiers of [`KEY_QUALIFIERS`] that name key material, not a role (`userkey`,
/// `testkey` are as often lookup keys).
const COMPOUND_KEY_QUALIFIERS: &[&str] = &[
    "master",
    "signing",
    "encryption",
    "crypt",
    "crypto",
    "aes",
    "des",
    "hmac",
    "cipher",
    "shared",
    "license",
    "licence",
    "jwt",
    "webhook",
    "consumer",
    "wrapping",
];

/// Head words that are sensitive only when the value also looks random (S7 tier).
const WEAK_HEADS: &[&str] = &[
    "key",
    "ticket",
    "auth",
    "signature",
    "sig",
    "nonce",
    "verifier",
    "otp",
    "totp",
    "mfa",
    "seed",
    "cookie",
    "session",
    "cipher",
    "nkey",
    "salt",
];

/// `token` after one of these is a parser, paging or cancellation token, not a credential.
const NOT_TOKEN_QUALIFIERS: &[&str] = &[
    "page",
    "next",
    "prev",
    "previous",
    "continuation",
    "cursor",
    "cancellation",
    "cancel",
    "sync",
    "lexer",
    "parser",
    "syntax",
    "end",
    "start",
    "delimiter",
    "separator",
    "last",
    "first",
    "current",
    "peek",
];

/// `key` after one of these names something public or structural (`public_key`,
/// `foreign_key`, `cache_key`), never a secret.
const NOT_KEY_QUALIFIERS: &[&str] = &[
    "public",
    "pub",
    "foreign",
    "sort",
    "partition",
    "range",
    "idempotency",
    "cache",
    "lookup",
    "map",
    "dict",
    "hash",
    "row",
    "column",
    "composite",
    "unique",
    "index",
    "object",
    "translation",
    "i18n",
    "config",
    "setting",
    "settings",
    "field",
    "form",
    "attribute",
    "header",
    "query",
    "param",
    "product",
    "group",
    "bucket",
    "sequence",
    "schema",
    "natural",
    "hot",
    "primary_",
    "dedup",
    "routing",
    "shard",
    "message",
    "event",
    "state",
    "storage_",
];

/// Words whose presence in a value marks it as a stand-in rather than a real token
/// (applied to token/secret/key values, not to passwords, which are often words).
const STAND_IN_WORDS: &[&str] = &[
    "token",
    "secret",
    "key",
    "example",
    "sample",
    "dummy",
    "fake",
    "mock",
    "placeholder",
    "invalid",
    "something",
    "material",
    "string",
    "value",
    "test",
];

/// Words after the head that do not change what the value is.
const MODIFIERS: &[&str] = &[
    // The secret others are derived from (Rails' `secret_key_base`).
    "base",
    "v",
    "old",
    "new",
    "confirm",
    "confirmation",
    "plain",
    "plaintext",
    "clear",
    "cleartext",
    "raw",
    "value",
    "val",
    "str",
    "string",
    "text",
    "enc",
    "encrypted",
    "encoded",
    "b64",
    "base64",
    "hex",
    "bytes",
    "bin",
    "test",
    "dev",
    "prod",
    "local",
    "default",
    "expected",
    "actual",
    "current",
    "again",
    "repeat",
    "verify",
    "verification",
    "override",
    "env",
    "var",
    "mock",
    "fake",
    "dummy",
    "sample",
    "example",
    "literal",
    "const",
];

/// Quoted-literal wrappers whose first string argument is the value.
const WRAPPERS: &[&str] = &[
    "[]byte(",
    "aws.String(",
    "String(",
    "SecretStr(",
    "SecretString(",
    "Secret(",
    "secret(",
    "bytes(",
    "b(",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tier {
    Strong,
    Weak,
}

/// What the key names: a password-like value (often a plain word) or another secret.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct KeyClass {
    tier: Tier,
    password: bool,
}

/// How values read in the file being scanned.
#[derive(Clone, Copy)]
struct Reading {
    kind: FileKind,
    /// The file is a translation catalog ([`filekind::is_translation_catalog`]).
    catalog: bool,
}

/// The compiled S3 scanner.
pub struct Structural {
    identified_by: Regex,
    /// `IDENTIFIED BY pass123` without quotes (Oracle), only in a user statement.
    identified_by_bare: Regex,
    /// The password clause of SQL's user and role statements (PostgreSQL `CREATE ROLE r
    /// LOGIN PASSWORD '…'`, `ALTER USER u WITH PASSWORD '…'`, SQL Server `CREATE LOGIN l
    /// WITH PASSWORD = '…'`) and MySQL's `SET PASSWORD … = '…'`: a string literal,
    /// its quotes doubled once per level when the statement is itself quoted (dynamic
    /// SQL: `EXEC('… PASSWORD = ''…''')`).
    sql_password: Regex,
    key_value_pair: regex_automata::meta::Regex,
}

impl Structural {
    pub fn new() -> Structural {
        Structural {
            identified_by: Regex::new(r#"(?i)\bidentified\s+by\s+(?:password\s+)?['"]([^'"\n]{1,200})['"]"#)
                .expect("static regex"),
            identified_by_bare: Regex::new(
                r"(?i)\b(?:create|alter)\s+user\b[^;\n]{0,200}?\bidentified\s+by\s+([A-Za-z0-9_$#!@%^&*+\-]{4,128})\b",
            )
            .expect("static regex"),
            sql_password: Regex::new(
                r"(?i)(?:\b(?:create|alter)\s+(?:user|role|login)\b[^;\n]{0,200}?\bpassword|\bset\s+password\b[^;\n]{0,120}?=\s*(?:password\s*\()?)\s*=?\s*('+)([^'\n]{1,200})('+)",
            )
            .expect("static regex"),
            key_value_pair: regex_automata::meta::Regex::new(
                r#"["']?\bkey["']?\s*[:=]\s*["']([^"'\n]{1,64})["']\s*,\s*["']?value["']?\s*[:=]\s*["']([^"'\n]{1,512})["']"#,
            )
            .expect("static regex"),
        }
    }

    /// The word stems whose occurrences [`Structural::scan`] needs from the shared
    /// keyword scan.
    pub fn words() -> &'static [&'static str] {
        STEMS
    }

    /// Appends S3/S7 candidates for `text`, a file of `kind` whose language quotes
    /// strings as `quoting` says; `hits` holds the occurrences of [`Structural::words`]
    /// under the ids `stems`.
    #[inline(never)] // one frame per family in profiles
    #[allow(clippy::too_many_arguments)]
    pub fn scan(
        &self,
        text: &str,
        kind: FileKind,
        quoting: Quoting,
        catalog: bool,
        hits: &KeywordHits,
        stems: WordIds,
        literals: &Literals,
        out: &mut Vec<Candidate>,
    ) {
        let mut last_key_end = 0;
        let mut strings = LiteralScan::new(quoting);
        for (start, end, _) in hits.leftmost_first(stems) {
            if start < last_key_end {
                continue;
            }
            let (ks, ke) = key_token(text, start, end);
            last_key_end = ke;
            self.key_at(text, ks, ke, Reading { kind, catalog }, &mut strings, out);
        }
        // `(?i)identified` matches the ASCII case variants only (a unit test holds it).
        let identified = literals.has_ignore_ascii_case(&literals::IDENTIFIED);
        for caps in identified
            .then(|| self.identified_by.captures_iter(text))
            .into_iter()
            .flatten()
        {
            let v = caps.get(1).expect("group");
            if !values::is_placeholder(v.as_str()) {
                out.push(cand(
                    v.start(),
                    v.end(),
                    "S3.sql-identified-by",
                    Tier::Strong,
                ));
            }
        }
        let bare = identified.then(|| self.identified_by_bare.captures_iter(text));
        // Every match holds `password`; `(?i)` also reads `ſ` as `s`, which the ASCII
        // scan cannot see, so a text holding one is searched anyway.
        let sql = (literals.has_ignore_ascii_case(&literals::PASSWORD)
            || literals.has_non_ascii_fold_of_ascii())
        .then(|| self.sql_password.captures_iter(text));
        for (caps, detector) in bare
            .into_iter()
            .flatten()
            .map(|c| (c, "S3.sql-identified-by"))
            .chain(
                sql.into_iter()
                    .flatten()
                    .filter(sql_quoting_nests)
                    .map(|c| (c, "S3.sql-password")),
            )
        {
            let v = caps.get(2).or_else(|| caps.get(1)).expect("group");
            if !values::is_placeholder(v.as_str()) && !v.as_str().eq_ignore_ascii_case("password") {
                out.push(cand(v.start(), v.end(), detector, Tier::Strong));
            }
        }
        if literals.has(&literals::VALUE) {
            self.key_value_pairs(text, kind, hits, stems, false, out);
        }
    }

    /// `{"key": "DB_PASSWORD", "value": "…"}` pairs. A match starts at a `key` the keyword
    /// scan found (or at the quote before it), so the pattern is searched anchored there
    /// (`anywhere`: over the whole text).
    fn key_value_pairs(
        &self,
        text: &str,
        kind: FileKind,
        hits: &KeywordHits,
        stems: WordIds,
        anywhere: bool,
        out: &mut Vec<Candidate>,
    ) {
        let mut found = |caps: &regex_automata::util::captures::Captures| {
            let name = &text[caps.get_group(1).expect("group").range()];
            let v = caps.get_group(2).expect("group");
            if let Some(class) = classify(name)
                && accept(&text[v.range()], true, kind, false, class, name)
            {
                out.push(cand(v.start, v.end, "S3.key-value-pair", class.tier));
            }
        };
        if anywhere {
            let caps = self.key_value_pair.captures_iter(text);
            caps.for_each(|caps| found(&caps));
            return;
        }
        // A match that starts at a quote has the same groups from its `key`.
        let starts = hits.starts_of(stems, keywords::word_index(STEMS, "key"));
        anchored::captures_at_starts(&self.key_value_pair, text, starts, found);
    }

    fn key_at(
        &self,
        text: &str,
        ks: usize,
        ke: usize,
        reading: Reading,
        literals: &mut LiteralScan,
        out: &mut Vec<Candidate>,
    ) {
        let Reading { kind, catalog } = reading;
        let key = &text[ks..ke];
        let flag = key.starts_with('-');
        let name = key.trim_start_matches('-').trim_end_matches(['.', '-']);
        if name.is_empty() {
            return;
        }
        let Some(class) = classify(name) else { return };
        let b = text.as_bytes();
        let mut pos = ks + key.trim_end_matches(['.', '-']).len();
        // A quoted key must be closed by the same quote.
        let key_quote = lexical::quote_before(text, ks);
        let mut open_quote = false;
        if let Some(q) = key_quote {
            if text[pos..].starts_with(q) {
                pos += q.len();
            } else if q == "'" || q == "\"" {
                // `"Password=x;Server=y"`: an assignment inside a string literal.
                open_quote = true;
            } else {
                return;
            }
        }
        // A key inside a string literal of source code (a config snippet in a test,
        // `"user: x\npass: y"`) is read as configuration: its bare values are literals,
        // and it declares nothing. Asked only once a separator is found.
        let literal_at = ks - key_quote.map_or(0, str::len);
        // A key right after an opening quote (`"api_key = …"`) is itself in one.
        let mut literal: Option<bool> = (open_quote && kind == FileKind::Code).then_some(true);
        let mut in_literal = || {
            *literal
                .get_or_insert_with(|| kind == FileKind::Code && literals.inside(text, literal_at))
        };
        let xml = ks > 0 && b[ks - 1] == b'<';
        if pos < b.len() && b[pos] == b']' {
            pos += 1;
        }
        let sep_start = pos;
        while pos < b.len() && matches!(b[pos], b' ' | b'\t') {
            pos += 1;
        }
        let rest = &text[pos..];
        if key_quote == Some("\"")
            && let Some((at, len)) = php_serialized_value(rest)
        {
            // PHP `serialize()`: `s:8:"password";s:6:"…";`, the value's length in bytes
            // given, so a value over several lines (a key's base64 body) is read whole.
            let (vs, ve) = (pos + at, pos + at + len);
            let value = &text[vs..ve];
            let block = class.tier == Tier::Strong && is_base64_block(value);
            if block || accept(value, true, FileKind::Config, catalog, class, name) {
                let det = if class.tier == Tier::Weak {
                    "S7.keyword-entropy"
                } else {
                    "S3.php-serialized"
                };
                out.push(cand(vs, ve, det, class.tier));
            }
            return;
        }
        let (sep_len, detector) = if xml && rest.starts_with('>') {
            (1, "S3.xml")
        } else if (rest.starts_with("===") || rest.starts_with("!=="))
            && !text[..ks].trim_end().ends_with("typeof")
        {
            // `req.body.password === '…'`: a literal compared with a secret is the secret.
            (3, "S3.comparison")
        } else if rest.starts_with(":=")
            || rest.starts_with(".=")
            || rest.starts_with("+=")
            || rest.starts_with("=>")
            || rest.starts_with("==")
            || rest.starts_with("!=")
            || rest.starts_with("?=")
        {
            (2, "S3.assignment")
        } else if let Some(n) = go_second_target(rest) {
            (n, "S3.assignment") // `signingKey, _ := hex.DecodeString("…")`
        } else if rest.starts_with("||=") || rest.starts_with("::=") {
            (3, "S3.assignment")
        } else if rest.starts_with(":::=") {
            // GNU make's POSIX (`::=`) and immediate-with-escapes (`:::=`) assignments.
            (4, "S3.assignment")
        } else if let Some(after) = rest.strip_prefix('=') {
            if after.starts_with(['~', '=']) {
                return;
            }
            (1, "S3.assignment")
        } else if open_quote {
            if !(rest.starts_with(": ") && is_header_line(text, ks, name)) {
                return;
            }
            (1, "S3.header") // `curl -H "X-HockeyAppToken: …"`, `"X-Api-Key: …"`
        } else if rest.starts_with(',')
            && key_quote.is_some_and(|q| first_call_argument(text, ks - q.len()))
            && split_words(name).len() > 1
        {
            // `System.setProperty("db.password", "…")`, `os.Setenv("API_TOKEN", "…")`:
            // a quoted key as a call's first argument, its value the second. A single
            // word there is as often a value (`HashPassword("password", salt)`), and
            // only strong keys count (checked below).
            (1, "S3.call-argument")
        } else if let Some(after) = rest.strip_prefix(':') {
            if after.starts_with(':') || after.starts_with("//") {
                return;
            }
            // `apiKey: string = "…"` (TypeScript, Rust, Kotlin, Swift, Python hints).
            match typed_value_start(text, pos + 1)
                .filter(|_| kind == FileKind::Code && !is_case_label(text, ks) && !in_literal())
            {
                Some(value_at) => (value_at - pos, "S3.typed-declaration"),
                None => (1, "S3.assignment"),
            }
        } else if flag && pos > sep_start && !rest.starts_with(['\n', '\r']) && !rest.is_empty() {
            if is_help_text(&text[sep_start..pos], rest) {
                return; // `-W, --password  force password prompt`: an option's description
            }
            let word = rest
                .split(|c: char| !c.is_ascii_alphabetic())
                .next()
                .unwrap_or("");
            if lexical::is_one_of_ignore_ascii_case(
                &[
                    "flag",
                    "option",
                    "argument",
                    "parameter",
                    "switch",
                    "is",
                    "and",
                    "or",
                    "to",
                ],
                word,
            ) {
                return; // prose about the option: `the --password flag encrypts`
            }
            (0, "S3.cli-flag")
        } else if rest.starts_with('(') && starts_with_setter(name) {
            (1, "S3.setter")
        } else if rest.starts_with("('")
            && name.eq_ignore_ascii_case("password")
            && !text[..ks].ends_with(|c: char| c == '.' || c == '_' || c.is_alphanumeric())
        {
            (1, "S3.sql-function") // MySQL's `PASSWORD('…')` in an `INSERT` or `SET`
        } else if rest.starts_with('(') && is_builder_step(text, ks, name) {
            (1, "S3.builder-step")
        } else if pos > sep_start
            && !rest.starts_with(['\n', '\r'])
            && is_space_separated_setting(text, ks, rest)
        {
            // `ENV API_TOKEN value`: Dockerfile's older form; `set SMBPass value`: a
            // console's `set` (Metasploit, gdb, redis-cli).
            (0, "S3.space-separated")
        } else if kind == FileKind::Code
            && let Some(value_at) = declared_value_start(text, ks, sep_start, pos)
            && !in_literal()
        {
            (value_at - pos, "S3.typed-declaration")
        } else if let Some((value_at, detector)) = paired_value_start(text, ks, key_quote, pos) {
            (value_at - pos, detector)
        } else {
            return;
        };
        let colon = sep_len == 1 && b[pos] == b':';
        if colon && (text[..ks].ends_with('$') || text[..ks].ends_with("${")) {
            // `$PWD:/mnt`, `${DB_PASS}:5432`: a shell expansion followed by a colon is
            // text, not a key and its value (ODBC's `PWD=…;` is still read).
            return;
        }
        pos += sep_len;
        if detector != "S3.xml" {
            while pos < b.len() && matches!(b[pos], b' ' | b'\t') {
                pos += 1;
            }
        }
        if open_quote && key_quote.is_some_and(|q| text[pos..].starts_with(q)) {
            return; // `"password=" + value`: the literal ends with the separator
        }
        let kind = if in_literal() || env_line_in_comment(text, ks, name, b.get(sep_start)) {
            FileKind::Config
        } else {
            kind
        };
        let det = if class.tier == Tier::Weak {
            "S7.keyword-entropy"
        } else {
            detector
        };
        // (`[]byte("…")` is a conversion, read below.)
        if pos < b.len()
            && b[pos] == b'['
            && b.get(pos + 1) != Some(&b']')
            && class.tier == Tier::Strong
        {
            // An inline list of values: `tokens: ["a", "b"]`.
            let mut p = pos + 1;
            loop {
                while p < b.len() && matches!(b[p], b' ' | b'\t') {
                    p += 1;
                }
                let Some(q) = lexical::quote_at(text, p) else {
                    break;
                };
                let Some(close) = lexical::find_closing(text, p + q.len(), q) else {
                    break;
                };
                if accept(&text[p + q.len()..close], true, kind, catalog, class, name) {
                    out.push(cand(p + q.len(), close, det, class.tier));
                }
                p = close + q.len();
                while p < b.len() && matches!(b[p], b' ' | b'\t') {
                    p += 1;
                }
                if p < b.len() && b[p] == b',' {
                    p += 1;
                } else {
                    break;
                }
            }
            return;
        }
        if colon && let Some(lines) = block_scalar_lines(text, ks, pos) {
            // `password: |` / `token: >-`: the value is the indented block below.
            for (vs, ve) in lines {
                if accept(&text[vs..ve], true, FileKind::Config, catalog, class, name) {
                    out.push(cand(vs, ve, det, class.tier));
                }
            }
            return;
        }
        if class.tier == Tier::Strong {
            pos += value_wrapper_len(&text[pos..]);
        }
        let Some((vs, ve, quoted)) = read_value(text, pos, detector == "S3.xml") else {
            return;
        };
        if matches!(detector, "S3.comparison" | "S3.builder-step")
            && (!quoted || !is_chosen_value(&text[vs..ve]))
        {
            return; // `config.sessionSecret === 'MEAN'`: a check for a default or a kind
        }
        if matches!(
            detector,
            "S3.setter" | "S3.call-argument" | "S3.sql-function"
        ) && !quoted
            || detector == "S3.call-argument" && class.tier != Tier::Strong
        {
            return;
        }
        let value = &text[vs..ve];
        if !quoted
            && (kind == FileKind::Code && text[ve..].starts_with(['[', '<', '('])
                || is_cmdlet(value))
        {
            return; // `salt: Array[Byte]`, `$cred = New-Object …`: a type or a call
        }
        if matches!(detector, "S3.builder-step" | "S3.setter")
            && with_words(name, |words| {
                words
                    .last()
                    .is_some_and(|w| matches!(*w, "credential" | "credentials" | "auth"))
            })
            && text[ve..]
                .trim_start_matches(['"', '\'', '`'])
                .trim_start()
                .starts_with(',')
        {
            // `.PSCredential('DOMAIN\\user', $pw)`: a credential is built from a user name
            // and then its secret.
            return;
        }
        if !quoted && colon && starts_a_sentence(value, &text[ve..]) {
            return; // `token: Note generated by test`, `password: Enter it twice`
        }
        if name.eq_ignore_ascii_case("key") && is_label_name(value) {
            return; // `- key: node-role.kubernetes.io/master` (a toleration, a selector)
        }
        if !accept(value, quoted, kind, catalog, class, name) {
            return;
        }
        out.push(cand(vs, ve, det, class.tier));
    }
}

/// A name in the form of a Kubernetes label key or resource name
/// (`node-role.kubernetes.io/master`, `ovn4nfv-k8s-plugin`, `config.json`): lower-case
/// segments joined by `-`, `.` or `/`, each with a letter past `f`, so no segment is a
/// hex run (a UUID or a hex key keeps its dashes but not this).
fn is_label_name(v: &str) -> bool {
    let segments: Vec<&str> = v.split(['-', '.', '/']).collect();
    segments.len() >= 2
        && v.len() <= 253
        && segments.iter().all(|s| {
            !s.is_empty()
                && s.len() <= 63
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && s.bytes().any(|b| (b'g'..=b'z').contains(&b))
        })
}

/// A PowerShell cmdlet name (`New-Object`, `ConvertTo-SecureString`, `Get-Credential`):
/// an approved verb, a dash and a capitalized noun.
fn is_cmdlet(v: &str) -> bool {
    const VERBS: &[&str] = &[
        "Get",
        "Set",
        "New",
        "Add",
        "Remove",
        "Read",
        "Write",
        "ConvertTo",
        "ConvertFrom",
        "Import",
        "Export",
        "Invoke",
        "Start",
        "Stop",
        "Test",
        "Out",
        "Select",
        "Join",
        "Split",
        "Format",
        "Resolve",
        "Copy",
        "Move",
        "Clear",
        "Enable",
        "Disable",
        "Register",
        "Unregister",
        "Protect",
        "Unprotect",
    ];
    v.split_once('-').is_some_and(|(verb, noun)| {
        VERBS.contains(&verb)
            && noun.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && noun.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// Whether what follows an option is its description in a help listing: set off by a
/// tab or two spaces (the column `--help` output aligns), and two words of letters, not
/// a value (`-W, --password  force password prompt`; `--password  Xk29fjq9aa  # prod`
/// is a value).
fn is_help_text(gap: &str, rest: &str) -> bool {
    let line = rest.split(['\n', '\r']).next().unwrap_or("");
    let mut words = line.split_whitespace();
    let is_word = |w: &str| w.chars().all(char::is_alphabetic);
    (gap.contains('\t') || gap.len() >= 2)
        && words.next().is_some_and(is_word)
        && words.next().is_some_and(is_word)
}

/// Whether an unquoted value made of letters only, after a colon, is the first word of a
/// sentence: a space and another word follow it on its line (`token: Note generated by
/// the test`). After `=` it is not (`--form password=hunter http://…`).
fn starts_a_sentence(value: &str, after: &str) -> bool {
    value.chars().all(char::is_alphabetic)
        && after
            .strip_prefix(' ')
            .is_some_and(|rest| rest.starts_with(char::is_alphabetic))
}

/// The length of a wrapper that holds a value as it is: an option (`Some("…")`,
/// `Optional.of("…")`), a string or secret type's constructor (`String::from("…")`,
/// `SecretString::new("…")`, `Secret("…")`, `SecureString("…")`), when its argument is a
/// string literal; 0 otherwise. Calls that look a value up (`getenv("DB_PASSWORD")`,
/// `config.get("db.password")`) are not wrappers: their argument names the secret.
fn value_wrapper_len(rest: &str) -> usize {
    const WRAPPERS: &[&str] = &[
        "Some(",
        "Option(",
        "Optional.of(",
        "Optional.ofNullable(",
        "String::from(",
        "String(",
        "SecureString(",
        // Key material written as an encoded literal and decoded in place
        // (`setCipherKey(Base64.decode("…"))`, `key = bytes.fromhex("…")`).
        "Base64.decode(",
        "Base64.getDecoder().decode(",
        "Base64.getUrlDecoder().decode(",
        "Base64.getMimeDecoder().decode(",
        "Base64.decodeBase64(",
        "Hex.decode(",
        "Hex.decodeHex(",
        "DatatypeConverter.parseBase64Binary(",
        "DatatypeConverter.parseHexBinary(",
        "Convert.FromBase64String(",
        "Encoding.UTF8.GetBytes(",
        "Encoding.ASCII.GetBytes(",
        "base64.b64decode(",
        "base64.urlsafe_b64decode(",
        "base64.StdEncoding.DecodeString(",
        "base64.URLEncoding.DecodeString(",
        "base64.RawURLEncoding.DecodeString(",
        "hex.DecodeString(",
        "bytes.fromhex(",
        "Buffer.from(",
        "atob(",
    ];
    let callee_len = WRAPPERS
        .iter()
        .find(|w| rest.starts_with(**w))
        .map(|w| w.len())
        .or_else(|| {
            // `Secret…(`, `Secret…::new(`, `Secret…::from(`.
            let name = rest.strip_prefix("Secret")?;
            let ident = name
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric())
                .count();
            let after = &name[ident..];
            let call = ["(", "::new(", "::from(", ".of("]
                .iter()
                .find(|c| after.starts_with(**c))?;
            Some("Secret".len() + ident + call.len())
        });
    match callee_len {
        Some(n) if lexical::quote_at(rest, n).is_some() => n,
        _ => 0,
    }
}

/// Whether positions of a source file lie inside string literals, asked in text order.
struct LiteralScan {
    quoting: Quoting,
    /// Where backticks were last counted up to, and how many lie before it: keys are
    /// visited in text order, so the whole scan reads each byte about once instead of
    /// once per key.
    ticks_to: usize,
    ticks: usize,
}

impl LiteralScan {
    fn new(quoting: Quoting) -> LiteralScan {
        LiteralScan {
            quoting,
            ticks_to: 0,
            ticks: 0,
        }
    }

    /// Backticks in `b[..pos]`.
    fn backticks_before(&mut self, b: &[u8], pos: usize) -> usize {
        if pos >= self.ticks_to {
            self.ticks += memchr::memchr_iter(b'`', &b[self.ticks_to..pos]).count();
        } else {
            self.ticks -= memchr::memchr_iter(b'`', &b[pos..self.ticks_to]).count();
        }
        self.ticks_to = pos;
        self.ticks
    }

    /// Whether `pos` lies inside a string literal: a `"…"`/`'…'` string opened earlier
    /// on the same line, or a backtick string (Go raw string, JS template) opened earlier
    /// in the text, in the languages that have them. In Rust an apostrophe that does not
    /// open a character literal (`'a`, `'static`) opens nothing.
    fn inside(&mut self, text: &str, pos: usize) -> bool {
        let b = text.as_bytes();
        let line_start = lexical::line_start(text, pos);
        let line = &b[line_start..pos];
        // Jumps from quote to quote (or escape) with memchr: most lines have none.
        let mut state: Option<u8> = None;
        let mut i = 0;
        while i < line.len() {
            match state {
                None => match memchr::memchr2(b'"', b'\'', &line[i..]) {
                    Some(at) => {
                        let q = line[i + at];
                        i += at + 1;
                        if q == b'\'' && self.quoting.lifetimes && !opens_char(b, line_start + i) {
                            continue;
                        }
                        state = Some(q);
                    }
                    None => break,
                },
                Some(q) => match memchr::memchr2(q, b'\\', &line[i..]) {
                    // An escape hides the byte after it.
                    Some(at) if line[i + at] == b'\\' => i += at + 2,
                    Some(at) => {
                        state = None;
                        i += at + 1;
                    }
                    None => break,
                },
            }
        }
        if state.is_some() {
            return true;
        }
        self.quoting.backticks && self.backticks_before(b, pos) % 2 == 1
    }
}

/// Whether the apostrophe just before `b[at]` opens a Rust character literal: an escape
/// follows it, or one character and a closing apostrophe.
fn opens_char(b: &[u8], at: usize) -> bool {
    let Some(&first) = b.get(at) else {
        return false;
    };
    if first == b'\\' {
        return true;
    }
    let len = match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    b.get(at + len) == Some(&b'\'')
}

impl Default for Structural {
    fn default() -> Self {
        Self::new()
    }
}

fn cand(start: usize, end: usize, detector: &'static str, tier: Tier) -> Candidate {
    Candidate {
        start,
        end,
        category: Category::SECRET,
        detector,
        priority: if tier == Tier::Strong {
            prio::STRUCTURAL
        } else {
            prio::GENERIC
        },
    }
}

/// Widens a stem hit to the whole key token (ASCII word chars, `-`, `.`, letters of
/// other scripts), including a leading `$`/`@` sigil.
fn key_token(text: &str, s: usize, e: usize) -> (usize, usize) {
    let mut ks = s;
    while ks > 0 {
        let Some(c) = text[..ks].chars().next_back() else {
            break;
        };
        let ok = if c.is_ascii() {
            lexical::is_key_byte(c as u8)
        } else {
            c.is_alphabetic()
        };
        if !ok {
            break;
        }
        ks -= c.len_utf8();
    }
    let mut ke = e;
    while ke < text.len() {
        let Some(c) = text[ke..].chars().next() else {
            break;
        };
        let ok = if c.is_ascii() {
            lexical::is_key_byte(c as u8)
        } else {
            c.is_alphabetic()
        };
        if !ok {
            break;
        }
        ke += c.len_utf8();
    }
    (ks, ke)
}

/// A builder's step named for the secret it sets (`.password("…")`, `.apiKey("…")`):
/// a method call whose name holds no verb (`.hashPassword("…")`, `.getToken("…")`
/// compute or look up).
fn is_builder_step(text: &str, ks: usize, name: &str) -> bool {
    const VERBS: &[&str] = &[
        "hash", "check", "verify", "validate", "compare", "encode", "decode", "encrypt", "decrypt",
        "get", "is", "has", "reset", "update", "change", "generate", "gen", "create", "parse",
        "read", "load", "find", "fetch", "random", "new", "mask", "store", "save", "remove",
        "delete", "clear", "revoke", "refresh", "rotate", "send", "request", "issue", "sign",
        "match", "matches", "to", "from", "print", "log", "format", "render", "show", "hide",
        "type", "enter", "input", "assert", "expect", "should", "handle", "on", "make", "build",
        "require", "ensure", "lookup", "resolve", "prompt", "ask", "add",
    ];
    let method = ks > 0 && text.as_bytes()[ks - 1] == b'.' || name.contains('.');
    let last = name.rsplit('.').next().unwrap_or(name);
    method
        && !last.eq_ignore_ascii_case("pass") // a test's `t.pass("…")`
        && classify(last).is_some_and(|c| c.tier == Tier::Strong)
        && with_words(last, |words| !words.iter().any(|w| VERBS.contains(w)))
}

/// Whether the key at `ks` starts an environment line written in a comment of source
/// code (` *   SCRAM_TEST_PGPASSWORD=qqjw4sidtu`, `# export API_TOKEN=…`): the shell
/// reads its bare value as a literal, so the comment does too. The name is in capitals
/// and `=` follows it at once.
fn env_line_in_comment(text: &str, ks: usize, name: &str, sep: Option<&u8>) -> bool {
    let head = text[lexical::line_start(text, ks)..ks].trim_start();
    let head = head.strip_suffix("export ").unwrap_or(head).trim_end();
    sep == Some(&b'=')
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && ["//", "#", "*", "/*", "--", ";"].contains(&head)
}

/// Whether the key at `ks`, just inside a quote, starts an HTTP header line: the quote
/// is a `-H`/`--header` argument, or the name has a header's shape (`X-Auth-Token`,
/// `Api-Key`: capitalized parts joined by dashes).
fn is_header_line(text: &str, ks: usize, name: &str) -> bool {
    let before = text[..ks.saturating_sub(1)].trim_end_matches([' ', '\t', '=']);
    let flag = before.ends_with(" -H") || before.ends_with("--header");
    let shaped = name.contains('-')
        && name
            .split('-')
            .all(|p| p.bytes().next().is_some_and(|b| b.is_ascii_uppercase()));
    flag || shaped
}

/// Whether the key at `ks` is the name of a setting whose value follows after blanks:
/// the first name of a Dockerfile `ENV` instruction, or of a console's `set` command
/// whose one value ends the line (`set password prompts for one` is a sentence).
fn is_space_separated_setting(text: &str, ks: usize, rest: &str) -> bool {
    let head = text[lexical::line_start(text, ks)..ks].trim();
    let one_value = || {
        let line = rest.split(['\n', '\r']).next().unwrap_or("");
        line.split_whitespace().count() == 1
    };
    head.eq_ignore_ascii_case("env") || head.eq_ignore_ascii_case("set") && one_value()
}

fn starts_with_setter(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    with_words(last, |words| {
        words.len() >= 2 && matches!(words[0], "set" | "with" | "use")
    })
}

/// Splits a key into lower-case words at `_ - . $ @ :` and case/digit changes.
pub(crate) fn split_words(key: &str) -> Vec<String> {
    if key.is_ascii() {
        return split_ascii_words(key.as_bytes());
    }
    split_words_unicode(key)
}

/// [`split_words`] of an ASCII key, byte by byte (keys are nearly always ASCII, and the
/// character path costs a `Vec<char>` and Unicode case tables per key).
fn split_ascii_words(b: &[u8]) -> Vec<String> {
    let mut words = Vec::new();
    ascii_word_spans(b, |s, e| {
        words.push(String::from_utf8(b[s..e].to_ascii_lowercase()).expect("ASCII"));
        true
    });
    words
}

/// Calls `word(start, end)` with the byte range of each word of an ASCII key, in order,
/// while it returns true. A word is a run of letters and digits, split where lower case
/// turns upper (`apiKey`), letters turn digits or back (`oauth2Client`), and before the
/// last capital of an acronym followed by lower case (`HMACSecret`).
fn ascii_word_spans(b: &[u8], mut word: impl FnMut(usize, usize) -> bool) {
    let mut start: Option<usize> = None;
    for (i, &c) in b.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if let Some(s) = start.take()
                && !word(s, i)
            {
                return;
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let p = b[i - 1];
        let boundary = (p.is_ascii_lowercase() && c.is_ascii_uppercase())
            || (p.is_ascii_alphabetic() && c.is_ascii_digit())
            || (p.is_ascii_digit() && c.is_ascii_alphabetic())
            || (p.is_ascii_uppercase()
                && c.is_ascii_uppercase()
                && b.get(i + 1).is_some_and(|n| n.is_ascii_lowercase()));
        if boundary {
            if !word(s, i) {
                return;
            }
            start = Some(i);
        }
    }
    if let Some(s) = start {
        word(s, b.len());
    }
}

/// Calls `f` with the words of `key` as [`split_words`] gives them, without allocating
/// for the keys the detectors meet nearly always (short ASCII ones).
fn with_words<R>(key: &str, f: impl FnOnce(&[&str]) -> R) -> R {
    const MAX_LEN: usize = 128;
    const MAX_WORDS: usize = 24;
    let b = key.as_bytes();
    if key.is_ascii() && b.len() <= MAX_LEN {
        let mut lower = [0u8; MAX_LEN];
        lower[..b.len()].copy_from_slice(b);
        lower[..b.len()].make_ascii_lowercase();
        let lower = std::str::from_utf8(&lower[..b.len()]).expect("ASCII");
        let mut words = [""; MAX_WORDS];
        let mut n = 0;
        ascii_word_spans(b, |s, e| {
            if n < MAX_WORDS {
                words[n] = &lower[s..e];
            }
            n += 1;
            n <= MAX_WORDS
        });
        if n <= MAX_WORDS {
            return f(&words[..n]);
        }
    }
    let owned = split_words(key);
    let words: Vec<&str> = owned.iter().map(String::as_str).collect();
    f(&words)
}

/// [`split_words`] for any key, character by character.
fn split_words_unicode(key: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = key.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if !cur.is_empty() {
            let p = chars[i - 1];
            let boundary = (p.is_lowercase() && c.is_uppercase())
                || (p.is_alphabetic() && c.is_ascii_digit())
                || (p.is_ascii_digit() && c.is_alphabetic())
                || (p.is_uppercase()
                    && c.is_uppercase()
                    && chars.get(i + 1).is_some_and(|n| n.is_lowercase()));
            if boundary {
                words.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// Where the value of a type-annotated declaration starts, given the position just
/// after the key's `:`: a type (`string`, `&'static str`, `Optional[str]`,
/// `string | null`), blanks, then a single `=`. `None` when no `=` follows the type.
fn typed_value_start(text: &str, from: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut p = from;
    while p < b.len() && matches!(b[p], b' ' | b'\t') {
        p += 1;
    }
    let type_start = p;
    let limit = (p + 80).min(b.len());
    let mut depth = 0usize; // inside `<…>` / `[…]`, where a `,` separates type arguments
    while p < limit {
        match b[p] {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => {}
            b'_' | b'.' | b':' | b'&' | b'*' | b'?' | b'|' | b' ' | b'\t' => {}
            b'<' | b'[' => depth += 1,
            b'>' | b']' if depth > 0 => depth -= 1,
            b',' if depth > 0 => {}
            // A Rust lifetime: `&'static str`.
            b'\'' if p > type_start && b[p - 1] == b'&' => {}
            _ => break,
        }
        p += 1;
    }
    let first = *b.get(type_start)?;
    if p == type_start
        || !(first.is_ascii_alphabetic() || matches!(first, b'&' | b'[' | b'_'))
        // `token: x <= y`, `>=`, `!=`: a comparison, not an assignment.
        || matches!(b[p - 1], b'<' | b'>' | b'!')
    {
        return None;
    }
    single_equals_at(b, p)
}

/// Whether the key at `ks` is a `case` label (`case "password":`, Swift's
/// `case .password:`), whose `:` opens a statement rather than a type.
fn is_case_label(text: &str, ks: usize) -> bool {
    let before = text[lexical::line_start(text, ks)..ks]
        .trim_end_matches(['"', '\'', '`', '.'])
        .trim_end();
    before.ends_with("case") || before.ends_with("default")
}

/// Where the value starts after a key in a declaration written without `:`: Go's
/// `var apiKey string = "…"` (the key opens its line or follows `var`/`const`, then a
/// type, then `=`), a C array `char password[] = "…"`, or `#define API_KEY "…"`
/// (the value must then be quoted, as `read_value` checks for the caller).
fn declared_value_start(text: &str, ks: usize, sep_start: usize, pos: usize) -> Option<usize> {
    let b = text.as_bytes();
    let line_start = lexical::line_start(text, ks);
    let before = text[line_start..ks].trim();
    if pos > sep_start {
        if before == "#define" && lexical::quote_at(text, pos).is_some() {
            return Some(pos);
        }
        if !matches!(before, "" | "var" | "const") {
            return None;
        }
        let type_start = pos;
        let mut p = pos;
        while p < b.len()
            && (b[p].is_ascii_alphanumeric() || matches!(b[p], b'_' | b'.' | b'*' | b'[' | b']'))
        {
            p += 1;
        }
        if p == type_start
            || !b[type_start].is_ascii_alphabetic() && !matches!(b[type_start], b'*' | b'[')
        {
            return None;
        }
        return single_equals_at(b, p);
    }
    // `password[]` / `password[64]` right after the key.
    let rest = b.get(pos..)?.strip_prefix(b"[")?;
    let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    if rest.get(digits) != Some(&b']') {
        return None;
    }
    single_equals_at(b, pos + 1 + digits + 1)
}

/// The content lines of a YAML block scalar whose indicator (`|`, `>`, with chomping or
/// indentation marks and an optional comment) starts at `pos`, after the `:` of the key
/// at `ks`: the following lines indented deeper than the key's line, blank lines
/// allowed, each trimmed; at most 64. `None` when `pos` holds no such indicator.
fn block_scalar_lines(text: &str, ks: usize, pos: usize) -> Option<Vec<(usize, usize)>> {
    let b = text.as_bytes();
    if !matches!(b.get(pos), Some(b'|' | b'>')) {
        return None;
    }
    let line_end = memchr::memchr(b'\n', &b[pos..]).map_or(b.len(), |i| pos + i);
    let indicator = text[pos + 1..line_end].trim_end_matches('\r');
    let indicator = indicator
        .split_once('#')
        .map_or(indicator, |(head, _)| head);
    if !indicator
        .trim_end()
        .bytes()
        .all(|c| matches!(c, b'-' | b'+' | b'1'..=b'9'))
    {
        return None;
    }
    // Content must sit deeper than the key itself (`- password: |` in a list item: its
    // sibling keys are at the key's column, not the dash's).
    let key_column = ks - lexical::line_start(text, ks);
    let mut lines = Vec::new();
    let mut at = line_end + 1;
    while at < b.len() && lines.len() < 64 {
        let end = memchr::memchr(b'\n', &b[at..]).map_or(b.len(), |i| at + i);
        let line = text[at..end].trim_end_matches('\r');
        if !line.trim().is_empty() {
            if indent_of(line) <= key_column {
                break;
            }
            let content = line.trim();
            let vs = at + (line.len() - line.trim_start().len());
            lines.push((vs, vs + content.len()));
        }
        at = end + 1;
    }
    Some(lines)
}

/// Leading blanks of a line.
fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// Where the value starts when a sensitive name is itself a value that a neighbouring
/// key pairs with a value:
/// - `name: DB_PASSWORD` followed by `value: …` within the same item (Kubernetes and
///   compose `env` lists, ECS and CloudFormation `{"name": …, "value": …}`, HCL
///   `name = "…"` / `value = "…"`): `S3.name-value`;
/// - Terraform `variable "db_password" { default = "…" }`: `S3.variable-default`.
///
/// `ks` is the key's start, `key_quote` its quote, `pos` just after it (and its quote).
fn paired_value_start(
    text: &str,
    ks: usize,
    key_quote: Option<&str>,
    pos: usize,
) -> Option<(usize, &'static str)> {
    // At most this far ahead (bytes, line breaks) for the paired key.
    const REACH: usize = 400;
    const LINES: usize = 4;
    let b = text.as_bytes();
    let line_start = lexical::line_start(text, ks);
    let before = text[line_start..ks - key_quote.map_or(0, str::len)].trim_end();
    let window_end = (pos + REACH).min(b.len());
    if let Some(key) = before.strip_suffix([':', '=']) {
        // The key before the separator, without its quotes: `name`, `"Name"`.
        let key = key.trim_end().trim_end_matches(['"', '\'']);
        let word = &key[key
            .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
            .len()..];
        if !word.eq_ignore_ascii_case("name") {
            return None;
        }
        let mut line_breaks = 0;
        let mut p = pos;
        while p < window_end {
            match b[p] {
                b'\n' => {
                    line_breaks += 1;
                    if line_breaks > LINES {
                        return None;
                    }
                }
                // The item ends: a JSON object or an HTML/XML tag closes, the next
                // YAML item starts.
                b'}' | b'>' | b'<' => return None,
                b'-' if text[lexical::line_start(text, p)..p].trim().is_empty() => {
                    return None;
                }
                b'v' | b'V'
                    if (p == 0 || !lexical::is_key_byte(b[p - 1]))
                        && b[p..].len() >= 5
                        && b[p..p + 5].eq_ignore_ascii_case(b"value") =>
                {
                    let mut q = p + 5;
                    if matches!(b.get(q), Some(b'"' | b'\'')) {
                        q += 1;
                    }
                    while q < b.len() && matches!(b[q], b' ' | b'\t') {
                        q += 1;
                    }
                    if matches!(b.get(q), Some(b':' | b'=')) && b.get(q + 1) != Some(&b'=') {
                        return Some((q + 1, "S3.name-value"));
                    }
                }
                _ => {}
            }
            p += 1;
        }
        return None;
    }
    if before == "variable" && key_quote.is_some() && text[pos..].trim_start().starts_with('{') {
        // The block's own `default = …`, before it closes.
        let open = pos + text[pos..].find('{')?;
        let mut depth = 0usize;
        let mut p = open;
        while p < window_end {
            match b[p] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return None;
                    }
                }
                b'd' if depth == 1
                    && text[p..].starts_with("default")
                    && !lexical::is_key_byte(b[p - 1]) =>
                {
                    let q = p + "default".len();
                    if let Some(after) = single_equals_at(b, q) {
                        return Some((after, "S3.variable-default"));
                    }
                }
                _ => {}
            }
            p += 1;
        }
    }
    None
}

/// After blanks from `p`, a `=` that is not `==`, `=>` or `=~`: the position after it.
fn single_equals_at(b: &[u8], mut p: usize) -> Option<usize> {
    while p < b.len() && matches!(b[p], b' ' | b'\t') {
        p += 1;
    }
    (b.get(p) == Some(&b'=') && !matches!(b.get(p + 1), Some(b'=' | b'>' | b'~'))).then_some(p + 1)
}

/// After a PHP `serialize()` key's closing quote (`rest` starts there): the string
/// value's offset in `rest` and its length in bytes, when `;s:<length>:"` follows and
/// the value's closing quote is where the length says.
fn php_serialized_value(rest: &str) -> Option<(usize, usize)> {
    let tail = rest.strip_prefix(";s:")?;
    let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 7 {
        return None; // no serialized string of 10 MB or more is read this way
    }
    let len: usize = tail[..digits].parse().ok()?;
    let value_at = ";s:".len() + digits + ":\"".len();
    let after = rest.get(value_at..)?;
    (tail[digits..].starts_with(":\"") && after.as_bytes().get(len) == Some(&b'"'))
        .then_some((value_at, len))
}

/// Go's two-value declaration after its first target (`, err :=`, `, _ :=`): the
/// length up to and including `:=`.
fn go_second_target(rest: &str) -> Option<usize> {
    let tail = rest.strip_prefix(',')?;
    let name_at = tail.len() - tail.trim_start_matches([' ', '\t']).len();
    let name = tail[name_at..]
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    let after = &tail[name_at + name..];
    let gap = after.len() - after.trim_start_matches([' ', '\t']).len();
    (name > 0 && after[gap..].starts_with(":=")).then_some(1 + name_at + name + gap + 2)
}

/// Key material written over several lines: base64 lines of one block, 64 characters
/// or more in all (a PEM body without its armour).
fn is_base64_block(v: &str) -> bool {
    let mut chars = 0;
    for c in v.bytes() {
        match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' | b'=' => chars += 1,
            b'\n' | b'\r' | b' ' | b'\t' => {}
            _ => return false,
        }
    }
    chars >= 64
}

/// Whether the quote opening at `quote_at` is the first argument of a call: `(` before
/// it, blanks allowed between.
fn first_call_argument(text: &str, quote_at: usize) -> bool {
    text[..quote_at]
        .trim_end_matches([' ', '\t'])
        .ends_with('(')
}

/// Judges a key name by its head word.
fn classify(name: &str) -> Option<KeyClass> {
    // Key names repeat within and across files (`token`, `api_key`, `keyboard`), and
    // classifying one splits it into words and looks each up: remember the answers
    // per thread (foldhash: SipHash cost more than the lookup saved on short keys).
    const MEMO_CAP: usize = 32_768;
    thread_local! {
        static MEMO: std::cell::RefCell<foldhash::HashMap<Box<str>, Option<KeyClass>>> =
            std::cell::RefCell::new(foldhash::HashMap::default());
    }
    MEMO.with_borrow_mut(|memo| {
        if let Some(class) = memo.get(name) {
            return *class;
        }
        let class = classify_uncached(name);
        if memo.len() >= MEMO_CAP {
            memo.clear();
        }
        memo.insert(name.into(), class);
        class
    })
}

fn classify_uncached(name: &str) -> Option<KeyClass> {
    with_words(name, |words| {
        if is_negated(words) {
            return None;
        }
        let tier = classify_tier(words)?;
        let password = words.iter().any(|w| {
            roles(w) & role::PASSWORD != 0
                || ["password", "passwd", "pwd"].iter().any(|s| w.ends_with(s))
        });
        Some(KeyClass { tier, password })
    })
}

/// A key that says there is no secret (sudoers' `NOPASSWD:`, `no_password`,
/// `withoutPassword`): a flag, not a holder of one.
fn is_negated(words: &[&str]) -> bool {
    let negation = |w: &str| matches!(w, "no" | "without" | "skip");
    words.iter().enumerate().any(|(i, w)| {
        let rest = w.strip_prefix("no").filter(|r| !r.is_empty());
        rest.is_some_and(|r| roles(r) & role::PASSWORD != 0)
            || (i > 0 && negation(words[i - 1]) && roles(w) & role::PASSWORD != 0)
    })
}

/// Bits of [`roles`]: the word lists a key's words are looked up in.
mod role {
    pub const MODIFIER: u8 = 1;
    pub const STRONG_HEAD: u8 = 1 << 1;
    pub const WEAK_HEAD: u8 = 1 << 2;
    pub const KEY_QUALIFIER: u8 = 1 << 3;
    pub const NOT_KEY_QUALIFIER: u8 = 1 << 4;
    pub const NOT_TOKEN_QUALIFIER: u8 = 1 << 5;
    pub const PASSWORD: u8 = 1 << 6;
}

/// The lists a lower-case word is on, as [`role`] bits: one hash lookup instead of a
/// scan of each list.
fn roles(word: &str) -> u8 {
    static ROLES: LazyLock<foldhash::HashMap<&'static str, u8>> = LazyLock::new(|| {
        let mut map: foldhash::HashMap<&'static str, u8> = Default::default();
        for (list, bit) in [
            (MODIFIERS, role::MODIFIER),
            (STRONG_HEADS, role::STRONG_HEAD),
            (WEAK_HEADS, role::WEAK_HEAD),
            (KEY_QUALIFIERS, role::KEY_QUALIFIER),
            (NOT_KEY_QUALIFIERS, role::NOT_KEY_QUALIFIER),
            (NOT_TOKEN_QUALIFIERS, role::NOT_TOKEN_QUALIFIER),
            (PASSWORD_WORDS, role::PASSWORD),
        ] {
            for word in list {
                *map.entry(word).or_default() |= bit;
            }
        }
        map
    });
    ROLES.get(word).copied().unwrap_or(0)
}

/// Head words of password-like keys.
const PASSWORD_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passwort",
    "pwd",
    "pass",
    "passphrase",
    "passcode",
    "passw",
    "passe",
    "contraseña",
    "contrasena",
    "senha",
    "пароль",
    "密码",
    "口令",
    "parola",
    "wachtwoord",
    "haslo",
    "hasło",
    "clave",
];

/// The tier of a key split into lower-case words (see [`split_words`]).
fn classify_tier(words: &[&str]) -> Option<Tier> {
    let mut i = words.len();
    while i > 0 {
        let w = words[i - 1];
        let numeric = w.chars().all(|c| c.is_ascii_digit());
        if numeric || roles(w) & role::MODIFIER != 0 {
            i -= 1;
            continue;
        }
        break;
    }
    if i == 0 {
        return None;
    }
    let head = words[i - 1];
    let prev = if i >= 2 { words[i - 2] } else { "" };
    if (head == "token" || head == "tokens") && roles(prev) & role::NOT_TOKEN_QUALIFIER != 0 {
        return None;
    }
    if head == "token" && prev == "cluster" && i >= 3 && words[i - 3] == "initial" {
        // etcd's `--initial-cluster-token`: a name that keeps clusters bootstrapping
        // side by side apart (its docs: not a credential), not a secret.
        return None;
    }
    if matches!(head, "token" | "key" | "keys") && words[..i - 1].contains(&"public") {
        return None; // `PublicKeyToken=b77a5c561934e089`: a public key's fingerprint
    }
    let head_roles = roles(head);
    if head_roles & role::STRONG_HEAD != 0
        || STRONG_SUFFIXES
            .iter()
            .any(|s| head.len() > s.len() && head.ends_with(s))
    {
        return Some(Tier::Strong);
    }
    if head
        .strip_suffix("key")
        .is_some_and(|q| COMPOUND_KEY_QUALIFIERS.contains(&q))
    {
        return Some(Tier::Strong); // `masterkey`, `signingkey`, `hmackey`
    }
    if head == "appid" || (head == "id" && prev == "app") {
        // An application id paired with its secret (`appid`/`appsecret`, WeChat's
        // `wx…`, Alipay's `app_id`): it names the account, and only a random-looking
        // value is taken.
        return Some(Tier::Weak);
    }
    if head == "key" || head == "keys" {
        let prev_roles = roles(prev);
        if prev_roles & role::NOT_KEY_QUALIFIER != 0 {
            return None;
        }
        return if prev_roles & role::KEY_QUALIFIER != 0
            || prev.ends_with("secret")
            || prev.ends_with("private")
        {
            Some(Tier::Strong)
        } else {
            Some(Tier::Weak)
        };
    }
    if head == "code" {
        return matches!(
            prev,
            "auth"
                | "authorization"
                | "verification"
                | "otp"
                | "mfa"
                | "oauth"
                | "recovery"
                | "backup"
        )
        .then_some(Tier::Weak);
    }
    if matches!(head, "connection" | "conn")
        && words.get(i).is_some_and(|w| matches!(*w, "string" | "str"))
    {
        return Some(Tier::Strong);
    }
    if head_roles & role::WEAK_HEAD != 0 || head.ends_with("nkey") {
        return Some(Tier::Weak);
    }
    None
}

/// Reads the value starting at `pos`: `(start, end, quoted)`.
fn read_value(text: &str, mut pos: usize, xml: bool) -> Option<(usize, usize, bool)> {
    let b = text.as_bytes();
    if pos >= b.len() || matches!(b[pos], b'\n' | b'\r') {
        return None;
    }
    if xml {
        let end = text[pos..]
            .find(['<', '\n'])
            .map_or(text.len(), |i| pos + i);
        let v = text[pos..end].trim();
        let vs = pos + text[pos..end].find(v).unwrap_or(0);
        return (!v.is_empty()).then_some((vs, vs + v.len(), true));
    }
    for w in WRAPPERS {
        if text[pos..].starts_with(w) {
            pos += w.len();
            break;
        }
    }
    // String prefixes: b'' r"" u'' f"" rb'' @"" $"".
    let mut p = pos;
    while p < b.len()
        && p - pos < 2
        && matches!(
            b[p],
            b'b' | b'r' | b'u' | b'f' | b'B' | b'R' | b'U' | b'F' | b'@' | b'$'
        )
    {
        p += 1;
    }
    if p > pos && lexical::quote_at(text, p).is_some_and(|q| q.len() == 1) {
        pos = p;
    }
    if let Some(q) = lexical::quote_at(text, pos) {
        let vs = pos + q.len();
        if let Some(close) = lexical::find_closing(text, vs, q) {
            return Some((vs, close, true));
        }
        // A string continued on the next lines: keep its first line when that line
        // is one base64 run (key material written over several lines).
        let line_end = text[vs..].find('\n').map_or(text.len(), |i| vs + i);
        let rest = text[vs..line_end].trim_end();
        let b64 = rest.len() >= 32
            && rest
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
        return b64.then_some((vs, vs + rest.len(), true));
    }
    let mut end = pos;
    while end < b.len() {
        let c = b[end];
        if c.is_ascii_whitespace()
            || matches!(
                c,
                b',' | b';' | b'"' | b'\'' | b'`' | b')' | b']' | b'}' | b'<' | b'&' | b'\\'
            )
        {
            break;
        }
        end += 1;
    }
    let end = lexical::ceil_boundary(text, end);
    (end > pos).then_some((pos, end, false))
}

/// Whether a SQL password literal's quotes pair up: one quote, or (dynamic SQL, where a
/// quote inside a string is written twice) a run of 2, 4, 8… closed by at least as
/// many and holding one unbroken word: `''` alone is an empty string, not an opener.
fn sql_quoting_nests(caps: &regex::Captures) -> bool {
    let open = caps.get(1).map_or(0, |m| m.len());
    let close = caps.get(3).map_or(0, |m| m.len());
    open == 1
        || open.is_power_of_two()
            && close >= open
            && !caps
                .get(2)
                .is_some_and(|v| v.as_str().contains(char::is_whitespace))
}

/// Whether `a` and `b` hold the same letters and digits in the same order, up to case
/// (`db_password` and `DB-PASSWORD`).
fn same_normalized(a: &str, b: &str) -> bool {
    fn normalized(s: &str) -> impl Iterator<Item = char> + '_ {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
    }
    normalized(a).eq(normalized(b))
}

/// Decides whether a value read after a sensitive key is a literal worth redacting.
/// Whether `value`, read after a key of `class`, is a literal secret. `catalog`: the file
/// is a translation catalog (see [`filekind::is_translation_catalog`]).
fn accept(
    value: &str,
    quoted: bool,
    kind: FileKind,
    catalog: bool,
    class: KeyClass,
    key: &str,
) -> bool {
    let v = value;
    let tier = class.tier;
    if v.chars().count() < 4 || v.len() > 4096 {
        return false;
    }
    if values::is_natural_language(v) {
        return false; // a word or sentence in another script: "重复输入密码", "Пароль"
    }
    if catalog && !v.bytes().any(|b| b.is_ascii_digit()) {
        return false; // a translated UI string: "LABEL_PASSWORD": "Contrasenya"
    }
    if values::is_placeholder(v)
        || looks_like_path(v)
        || is_dotted_name(v)
        || is_constant_name(v)
        || values::is_issue_key(v)
    {
        return false;
    }
    // The metasyntactic variables of examples, as the whole value (a random value may
    // hold `Foo` or `bar` as a hump).
    let metasyntactic = !class.password
        && lexical::is_one_of_ignore_ascii_case(
            &[
                "foo",
                "bar",
                "baz",
                "qux",
                "quux",
                "foobar",
                "foobarbaz",
                "testing",
            ],
            v,
        );
    // A key that says its value is not real (`MOCK_ACCESS_TOKEN`, `fakeSecret`).
    let declared_fake = with_words(key, |words| {
        words
            .first()
            .is_some_and(|w| matches!(*w, "mock" | "fake" | "dummy"))
    });
    if declared_fake || !class.password && is_stand_in_compound(v) {
        return false;
    }
    if metasyntactic || is_stand_in(v, class.password) || is_hex_word_fill(v) || is_call_chain(v) {
        return false;
    }
    if is_file_name(v) {
        return false; // `key: ovn4nfv_k8s.conf`, `ssl_key: server.key`
    }
    let capitals = !v.bytes().any(|b| b.is_ascii_lowercase());
    if v.starts_with(|c: char| c.is_ascii_uppercase())
        && with_words(key, |words| {
            (quoted && words.len() > 1 || capitals)
                && words.last().is_some_and(|w| same_normalized(v, w))
        })
    {
        // `HintTextPassword = "Password"`: the field's label; `/password:PASSWORD` in a
        // usage line: the field's name standing for its value.
        return false;
    }
    if quoted && is_concatenation_edge(v) {
        return false; // `pass = '".md5($password,true)."'`: the literal is code around it
    }
    let numeric = v
        .bytes()
        .filter(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    if v.contains('.') && numeric * 10 >= v.len() * 8 {
        return false; // versions, OIDs
    }
    if !v.bytes().any(|b| b.is_ascii_alphanumeric()) && !quoted {
        return false; // prose in another script ("留空即可"), punctuation
    }
    let alphabet = b"abcdefghijklmnopqrstuvwxyz";
    if v.len() >= 4
        && alphabet
            .get(..v.len())
            .is_some_and(|run| run.eq_ignore_ascii_case(v.as_bytes()))
    {
        return false; // alphabet run
    }
    if !class.password && is_fill_pattern(v) {
        return false; // `secret="qwer"`, `token=abc123`, `cookie_secret="0123456789"`
    }
    if !class.password
        && lexical::is_one_of_ignore_ascii_case(
            &[
                "read",
                "write",
                "none",
                "all",
                "admin",
                "readonly",
                "read-only",
                "read_only",
                "write-only",
                "read-write",
                "read_write",
                "enabled",
                "disabled",
                "required",
                "optional",
            ],
            v,
        )
    {
        return false; // a permission level: `"secrets": "read"`
    }
    if (lexical::starts_with_ignore_ascii_case(v, "http://")
        || lexical::starts_with_ignore_ascii_case(v, "https://"))
        && !v.contains('@')
    {
        return false;
    }
    // Checked last, only for a spaced scalar (the costliest test).
    let passphrase = || quoted && class.password && is_passphrase(v);
    if v.contains(char::is_whitespace)
        && !v.starts_with('{')
        && !v.starts_with('[')
        && !passphrase()
    {
        return false;
    }
    if !quoted {
        if v.starts_with([':', '&', '*', '!', '|', '>', '[', '{', '(', '='])
            || v.contains(['(', '{', '['])
        {
            return false;
        }
        match kind {
            FileKind::Code => {
                if same_normalized(v, key) {
                    return false;
                }
                let identifier = v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                    && v.bytes().next().is_some_and(|c| !c.is_ascii_digit())
                    && v.bytes().any(|c| c.is_ascii_lowercase());
                if identifier
                    || v.contains('(')
                    || v.contains('.')
                    || v.contains('[')
                    || v.contains("->")
                {
                    return false;
                }
                if !values::looks_random(v, 12, 3.0) {
                    return false;
                }
            }
            FileKind::Prose => {
                if lexical::is_one_of_ignore_ascii_case(values::PROSE_FILLER, v) {
                    return false;
                }
            }
            FileKind::Config => {}
        }
    } else if same_normalized(v, key) && with_words(key, |words| words.len() > 1) {
        return false;
    }
    if !class.password
        && lexical::is_one_of_ignore_ascii_case(
            &[
                "secret",
                "token",
                "apikey",
                "api_key",
                "credentials",
                "auth",
            ],
            v,
        )
    {
        return false;
    }
    if tier == Tier::Weak
        && (!values::looks_random(v, 8, 2.5)
            || v.starts_with(['-', '_', '.', '/'])
            || v.ends_with(['-', '_', '.', '/']))
    {
        return false; // weak keys need a token-like value, not a fragment being concatenated
    }
    true
}

/// A lower-case value that is stand-in words run together (`testtoken`, `mysecretkey`,
/// `secrettoken`): it names what goes there.
fn is_stand_in_compound(v: &str) -> bool {
    const PREFIXES: &[&str] = &["test", "my", "your", "some", "the", "a"];
    fn splits(rest: &str, words: usize) -> bool {
        if rest.is_empty() {
            return words >= 2;
        }
        STAND_IN_WORDS
            .iter()
            .chain(PREFIXES)
            .any(|w| rest.strip_prefix(w).is_some_and(|r| splits(r, words + 1)))
    }
    v.len() <= 40 && v.bytes().all(|b| b.is_ascii_lowercase()) && splits(v, 0)
}

/// A quoted "value" that is the inside of a concatenation: it starts by closing another
/// string and joining it (`".md5($p)."`, `' + user + '`), or ends by opening one.
fn is_concatenation_edge(v: &str) -> bool {
    let joins = |s: &str| s.starts_with(['.', '+']);
    let (head, tail) = (v.trim_start(), v.trim_end());
    head.strip_prefix(['"', '\''])
        .is_some_and(|r| joins(r.trim_start()))
        || tail
            .strip_suffix(['"', '\''])
            .is_some_and(|r| r.trim_end().ends_with(['.', '+']))
}

/// The hex words of debugging and tests repeated (`deadbeefdeadbeef…`, `cafebabe`):
/// a pattern that fills a hex field, not a key.
fn is_hex_word_fill(v: &str) -> bool {
    const WORDS: &[&str] = &["deadbeef", "cafebabe", "feedface", "baadf00d", "deadc0de"];
    let lower = v.to_ascii_lowercase();
    WORDS.iter().any(|w| {
        lower.len() >= w.len()
            && lower
                .as_bytes()
                .chunks(w.len())
                .all(|c| w.as_bytes().starts_with(c))
    })
}

/// A value made of two or more calls joined by dots (`Base64(Header).Base64(Data)`):
/// code that computes a value, not one.
fn is_call_chain(v: &str) -> bool {
    let mut calls = 0;
    for part in v.split_inclusive(").") {
        let part = part.strip_suffix('.').unwrap_or(part);
        let Some((name, args)) = part.split_once('(') else {
            return false;
        };
        let ident = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !ident || !args.ends_with(')') || args[..args.len() - 1].contains(['(', ')']) {
            return false;
        }
        calls += 1;
    }
    calls >= 2
}

/// A file name with an extension of configuration, key or data files
/// (`ovn4nfv_k8s.conf`, `server.key`, `client.p12`): what a key names, not its value.
fn is_file_name(v: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        "conf",
        "cfg",
        "ini",
        "json",
        "yaml",
        "yml",
        "toml",
        "xml",
        "properties",
        "txt",
        "pem",
        "crt",
        "cer",
        "key",
        "pub",
        "p12",
        "pfx",
        "jks",
        "keystore",
        "der",
        "csr",
        "env",
        "log",
        "db",
        "sqlite",
    ];
    let Some((stem, ext)) = v.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && stem.bytes().any(|b| b.is_ascii_alphabetic())
        && EXTENSIONS.iter().any(|e| e.eq_ignore_ascii_case(ext))
}

/// A value typed to fill a field, not chosen (tokens and keys; a password may well be
/// one of these): a run along a keyboard row (`asdf`, `qwer`, `zxcv`, `hjkl`), a run of
/// consecutive digits (`0123456789`, `4321`), or such a letter run followed by a digit
/// run (`abc123`, `asdf1234`); at most 10 characters.
fn is_fill_pattern(v: &str) -> bool {
    const ROWS: &[&str] = &[
        "qwertyuiop",
        "asdfghjkl",
        "zxcvbnm",
        "abcdefghijklmnopqrstuvwxyz",
        "0123456789",
        "9876543210",
    ];
    // A long run is a (weak) key someone configured, not a filler.
    if v.len() > 10 {
        return false;
    }
    let lower = v.to_ascii_lowercase();
    let is_run = |s: &str| s.len() >= 3 && ROWS.iter().any(|row| row.contains(s));
    if lower.len() >= 4 && is_run(&lower) {
        return true;
    }
    let letters = lower.bytes().take_while(u8::is_ascii_lowercase).count();
    let (head, tail) = lower.split_at(letters);
    letters > 0 && tail.bytes().all(|b| b.is_ascii_digit()) && is_run(head) && is_run(tail)
}

/// A literal a secret is compared with (or a builder step is given) that is a chosen
/// value, not a sentinel word
/// (`'admin'`, `'MEAN'`, `'function'`): it holds a digit or a symbol, or looks random.
fn is_chosen_value(v: &str) -> bool {
    v.chars().any(|c| !c.is_alphabetic()) || values::looks_random(v, 12, 3.0)
}

/// A quoted password of a few words (`"open sesame"`, `'Zt. H33hwkl'`) rather than a
/// label or message about one (`"Enter your password"`, `"Mot de passe"`, `"Passwords
/// do not match."`): two to four words, at most 40 characters, no word that talks
/// about the field, no sentence-final punctuation, not Title Case, no format markers.
fn is_passphrase(v: &str) -> bool {
    const FIELD_TALK: &[&str] = &[
        "enter",
        "your",
        "please",
        "must",
        "should",
        "required",
        "invalid",
        "incorrect",
        "wrong",
        "new",
        "old",
        "confirm",
        "repeat",
        "retype",
        "type",
        "field",
        "here",
        "not",
        "match",
        "characters",
        "least",
        "forgot",
        "reset",
        "change",
        "show",
        "hide",
        "login",
        "log",
        "sign",
        "user",
        "username",
        "email",
        "is",
        "are",
        "was",
        "be",
        "empty",
        "missing",
        "too",
        "short",
        "long",
        "weak",
        "strong",
        "current",
        "set",
        "update",
        "save",
        "cancel",
        "none",
        "null",
        "todo",
        "fixme",
        "xxx",
    ];
    let words: Vec<&str> = v.split_whitespace().collect();
    // A quote escaped inside the string (`"dmb \"vg-mn\""`) is part of the value.
    let unescaped = if v.contains('\\') {
        std::borrow::Cow::Owned(v.replace("\\\"", ""))
    } else {
        std::borrow::Cow::Borrowed(v)
    };
    if !(2..=4).contains(&words.len())
        || v.chars().count() > 40
        || v.trim_end().ends_with(['.', '?', '!', ':', '…'])
        || unescaped.contains([
            '%', '{', '}', '<', '>', '$', '\\', '\n', '\'', '"', '`', '=',
        ])
        || words.iter().any(|w| !w.chars().any(char::is_alphanumeric))
    {
        return false;
    }
    // `Change Password`, `Secret Agent`: a label (a word with digits is not one).
    let title_case = words.iter().all(|w| {
        w.chars().next().is_some_and(char::is_uppercase) && !w.chars().any(|c| c.is_ascii_digit())
    });
    !title_case
        && !words.iter().any(|w| {
            let w = w
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            FIELD_TALK.contains(&w.as_str())
                || PASSWORD_WORDS.iter().any(|p| w.contains(p))
                || w.contains("kennwort")
                || w.contains("mot")
        })
}

/// A value that names what it stands for (`test_token`, `someToken`, `my_cookie_key`,
/// `key-material`, `randomSecretString`): a word of [`STAND_IN_WORDS`] (or, for
/// passwords, of a shorter list) as a whole word, in a value with at most two digits.
/// Digits are not part of naming: a value that adds three (`BetaEnvSecret555`,
/// `Hunter2-Very-Secret-99`) is a chosen password that happens to hold a word.
fn is_stand_in(v: &str, password: bool) -> bool {
    if v.bytes().filter(u8::is_ascii_digit).count() >= 3 {
        return false;
    }
    // A constant-style name that says what it is: `GHTOKEN`, `ENTOKEN`, `MY_SECRET`.
    if !password
        && v.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
        && ["TOKEN", "SECRET", "APIKEY", "API_KEY"]
            .iter()
            .any(|w| v.contains(w))
    {
        return true;
    }
    with_words(v, |words| {
        if password {
            return words.iter().any(|w| {
                matches!(
                    *w,
                    "example" | "sample" | "dummy" | "placeholder" | "random" | "specific"
                )
            });
        }
        words.iter().enumerate().any(|(i, w)| {
            STAND_IN_WORDS.contains(w)
                || (i == 0 && matches!(*w, "test" | "some" | "my" | "your" | "the" | "a"))
        })
    })
}

/// `./x`, `../x`, `~/x`, `/a/b/c`, `a/b/c` made of lower-case path words: a file or
/// resource path, not a value.
fn looks_like_path(v: &str) -> bool {
    if v.starts_with("./") || v.starts_with("../") || v.starts_with("~/") {
        return true;
    }
    // A directory is written with its closing slash (`/latest/meta-data/iam/`).
    let path = v.trim_start_matches('/');
    let path = path.strip_suffix('/').unwrap_or(path);
    let segs = || path.split('/');
    let seg_count = memchr::memchr_iter(b'/', path.as_bytes()).count() + 1;
    // An absolute path of lower-case names (`/bin/bash`, `/usr/local/lib`).
    let lower_name = |s: &str| {
        s.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    };
    if v.starts_with('/') && seg_count >= 2 && segs().all(lower_name) {
        return true;
    }
    seg_count >= 3
        && !v.contains(['+', '='])
        && segs()
            .all(|s| !s.is_empty() && s.bytes().all(|b| !b.is_ascii_uppercase() || s.len() > 12))
        && segs().any(|s| s.len() >= 3 && s.bytes().all(|b| b.is_ascii_lowercase()))
        || (v.starts_with('/') && seg_count >= 2 && segs().any(|s| s.contains('.') && s.len() > 3))
}

/// `session.redis.password`, `duo_api.secret_key`, `example.com`: a dotted name.
fn is_dotted_name(v: &str) -> bool {
    let lower_part = |p: &str| {
        p.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-')
    };
    // A qualified class name ends in one: `allauth.account.forms.ChangePasswordForm`.
    let class_part = |p: &str| {
        p.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let Some((packages, last)) = v.rsplit_once('.') else {
        return false;
    };
    packages.split('.').all(lower_part)
        && (lower_part(last) || packages.contains('.') && class_part(last))
}

/// `LET_ME_IN`, `GCM_AZREPOS_SP_SECRET`: a constant's name standing in for a value.
fn is_constant_name(v: &str) -> bool {
    let parts = || v.split('_');
    let word = |p: &&str| p.bytes().all(|b| b.is_ascii_uppercase());
    v.contains('_')
        && parts().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        })
        && (parts().filter(word).count() >= 2 || parts().any(|p| p.len() >= 3 && word(&p)))
}

impl Family for Structural {
    fn name(&self) -> &'static str {
        "S3 values of sensitive keys"
    }

    fn words(&self) -> Vec<&str> {
        Structural::words().to_vec()
    }

    fn scan(&self, f: &Facts, words: WordIds, out: &mut Sink) {
        self.scan(
            f.text,
            f.kind,
            f.quoting,
            filekind::is_translation_catalog(f.rel_path),
            f.hits,
            words,
            f.literals,
            &mut out.candidates,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_keys_split_as_the_character_path_splits_them() {
        let pieces = [
            "a", "B", "cd", "EF", "Gh", "iJ", "0", "12", "_", "-", ".", "$", "@", ":", "api",
            "KEY", "Token", "URL", "v2", "x",
        ];
        for key in crate::engine::testgen::texts(&pieces, 20_000, 6, 3) {
            assert_eq!(
                split_ascii_words(key.as_bytes()),
                split_words_unicode(&key),
                "{key:?}"
            );
        }
    }

    /// Key/value pairs searched from the `key` words the keyword scan found equal a
    /// search of the whole text.
    #[test]
    fn key_value_pairs_from_key_words_equal_the_whole_text_search() {
        let detector = super::super::Detector::new();
        let (compiled, family_words) = detector.pass_for("S3 values of sensitive keys");
        let structural = Structural::new();
        let pieces = [
            "key",
            "\"key\": \"DB_PASSWORD\"",
            "'key'='api_key'",
            ", \"value\": \"s3cr3tV4lue99\"",
            ",'value'='Zx81pQ77wr'",
            "\"",
            "'",
            ":",
            "=",
            " ",
            "\n",
            ",",
            "value",
            "monkey",
            "{",
            "\"key\"",
            "\"",
            "s3cr3tV4lue99",
        ];
        let mut found = 0;
        for text in crate::engine::testgen::texts(&pieces, 6000, 12, 4) {
            let hits = compiled.automaton.scan(&text);
            let (mut whole, mut near) = (Vec::new(), Vec::new());
            for (anywhere, out) in [(true, &mut whole), (false, &mut near)] {
                structural.key_value_pairs(
                    &text,
                    FileKind::Config,
                    &hits,
                    family_words,
                    anywhere,
                    out,
                );
            }
            let spans = |c: &Vec<Candidate>| c.iter().map(|c| (c.start, c.end)).collect::<Vec<_>>();
            found += usize::from(!whole.is_empty());
            assert_eq!(spans(&near), spans(&whole), "{text:?}");
        }
        assert!(found > 100, "{found} texts with pairs");
    }

    /// The quote-to-quote jumps of [`LiteralScan::inside`] read lines as the plain state
    /// machine, one byte at a time, reads them, with and without Rust's lifetimes.
    #[test]
    fn string_literal_jumps_agree_with_the_byte_by_byte_reading() {
        fn byte_by_byte(b: &[u8], line_start: usize, lifetimes: bool) -> bool {
            let (mut state, mut i) = (None, line_start);
            while i < b.len() {
                let c = b[i];
                match state {
                    Some(_) if c == b'\\' => i += 1,
                    Some(q) if c == q => state = None,
                    None if c == b'\'' && lifetimes && !opens_char(b, i + 1) => {}
                    None if c == b'"' || c == b'\'' => state = Some(c),
                    _ => {}
                }
                i += 1;
            }
            state.is_some()
        }
        let pieces = [
            "a", "\"", "'", "\\", "\\\\", "`", " ", "\n", "x=", "\u{e9}", "'a'",
        ];
        for text in crate::engine::testgen::texts(&pieces, 3000, 14, 8) {
            let b = text.as_bytes();
            let line_start = text.rfind('\n').map_or(0, |i| i + 1);
            let ticks = b.iter().filter(|&&c| c == b'`').count();
            for backticks in [false, true] {
                for lifetimes in [false, true] {
                    let expected =
                        byte_by_byte(b, line_start, lifetimes) || backticks && ticks % 2 == 1;
                    let mut scan = LiteralScan::new(Quoting {
                        backticks,
                        lifetimes,
                    });
                    assert_eq!(scan.inside(&text, text.len()), expected, "{text:?}");
                }
            }
        }
    }

    #[test]
    fn an_apostrophe_opens_a_rust_char_only_before_one_char_and_a_closing_one() {
        for (text, opens) in [
            ("'x'", true),
            ("'\\n'", true),
            ("'\\''", true),
            ("'é'", true),
            ("'😀'", true),
            ("'a>", false),
            ("'static str", false),
            ("'_>", false),
            ("'", false),
        ] {
            assert_eq!(opens_char(text.as_bytes(), 1), opens, "{text}");
        }
    }

    #[test]
    fn words_split_on_case_digits_and_separators() {
        assert_eq!(
            split_words("AWS_SECRET_ACCESS_KEY"),
            ["aws", "secret", "access", "key"]
        );
        assert_eq!(
            split_words("OAuth2ClientSecret"),
            ["o", "auth", "2", "client", "secret"]
        );
        assert_eq!(split_words("HMACSecret"), ["hmac", "secret"]);
        assert_eq!(
            split_words("ses_smtp_password_v4"),
            ["ses", "smtp", "password", "v", "4"]
        );
        assert_eq!(
            split_words("app.config.db-pass"),
            ["app", "config", "db", "pass"]
        );
    }

    #[test]
    fn borrowed_words_equal_the_split_words_of_any_key() {
        let many = ["a"; 30].join("_");
        let long = format!("{}Secret", "x".repeat(140));
        for key in [
            "AWS_SECRET_ACCESS_KEY",
            "OAuth2ClientSecret",
            "HMACSecret",
            "_leading__and_trailing_",
            "9lives",
            "",
            "--",
            &many,
            &long,
            "Passwort_für_DB",
            "пароль",
        ] {
            let borrowed = with_words(key, |w| w.iter().map(|w| w.to_string()).collect::<Vec<_>>());
            assert_eq!(borrowed, split_words(key), "{key}");
        }
    }

    #[test]
    fn keys_are_judged_by_their_head_word() {
        for k in [
            "password",
            "DB_PASSWORD",
            "clientSecret",
            "aws_secret_access_key",
            "api_key",
            "x-api-key",
            "Apitoken",
            "ses_smtp_password_v4",
            "password_confirmation",
            "consumerKey",
            "PGPASSWORD",
            "пароль",
            "mot_de_passe",
            "connection_string",
            "testPasswordOld",
            "secret",
            "secret_key_base",
        ] {
            assert_eq!(classify(k).map(|c| c.tier), Some(Tier::Strong), "{k}");
        }
        for k in [
            "password_file",
            "token_type",
            "api_key_id",
            "tokenEndpoint",
            "passwordField",
            "secret_name",
            "keyboard",
            "public_key",
            "foreign_key",
            "key_base_url",
            "database",
        ] {
            assert_eq!(classify(k), None, "{k}");
        }
        for k in ["key", "oauth_signature", "oauth_nonce", "authCode", "nkey"] {
            assert_eq!(classify(k).map(|c| c.tier), Some(Tier::Weak), "{k}");
        }
    }
}
