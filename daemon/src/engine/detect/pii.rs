//! P1–P5: validated PII. Each shape is checked before it is reported, so ordinary code
//! keeps its version strings, UUIDs, dates and digit runs:
//! - P1 emails with a real top-level domain; reserved example domains (`example.com`,
//!   `*.example`, `*.invalid`, `*.test`, `localhost`) and URL userinfo are exempt;
//! - P2 phones only in E.164 form (`+…`) or after a context word (phone, tel, mobile, fax…);
//! - P3 payment cards with an issuer prefix and a Luhn check, IBANs with the country length
//!   and mod-97, US SSNs with the invalid-area/group/serial rules;
//! - P4 IP addresses parsed with `std::net`, exempting loopback, unspecified, link-local,
//!   multicast, broadcast and documentation ranges, and version contexts (`v1.2.3.4`);
//! - P5 person names only in structured places: `Name <email>`, `Signed-off-by:` and other
//!   trailers, `@author`, manifest author/maintainer fields, copyright lines.

use super::anchored;
use super::family::{Facts, Family, Sink};
use super::filekind::FileKind;
use super::lexical;
use super::lexical::line_around;
use super::number_gates;
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::byteclass;
use crate::engine::prepass::keywords;
use crate::engine::prepass::keywords::KeywordHits;
use crate::engine::prepass::keywords::WordIds;
use crate::engine::prepass::literals;
use crate::engine::prepass::literals::Literals;
use crate::engine::prepass::{Shape, Shapes};
use crate::engine::stages::patterns::{PHONE_DIGITS, PHONE_RUN};
use regex::Regex;
use regex_automata::meta::Regex as MetaRegex;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Generic top-level domains accepted for emails (every two-letter ccTLD is accepted
/// too, except those that are common file extensions).
const GTLDS: &[&str] = &[
    "com",
    "net",
    "org",
    "edu",
    "gov",
    "mil",
    "int",
    "info",
    "biz",
    "name",
    "pro",
    "io",
    "ai",
    "app",
    "dev",
    "cloud",
    "tech",
    "online",
    "site",
    "email",
    "systems",
    "xyz",
    "store",
    "shop",
    "blog",
    "page",
    "live",
    "company",
    "solutions",
    "services",
    "network",
    "software",
    "digital",
    "agency",
    "consulting",
    "group",
    "team",
    "global",
    "world",
    "studio",
    "design",
    "media",
    "news",
    "works",
    "space",
    "today",
    "zone",
    "one",
    "mobi",
    "asia",
    "eu",
    "museum",
    "coop",
    "aero",
    "jobs",
    "travel",
    "academy",
    "center",
    "city",
    "club",
    "codes",
    "engineering",
    "expert",
    "finance",
    "health",
    "host",
    "inc",
    "ltd",
    "llc",
    "mail",
    "me",
    "money",
    "partners",
    "security",
    "social",
    "support",
    "systems",
    "tools",
    "ventures",
    "website",
    "icu",
    "top",
    "wiki",
    "work",
    "rocks",
    "ninja",
    "guru",
    "capital",
    "energy",
    "bank",
    "insurance",
    "law",
    "legal",
    "university",
    "school",
    "science",
    "technology",
];
/// Two-letter endings that are file extensions far more often than countries.
const NOT_CCTLD: &[&str] = &[
    "js", "ts", "rb", "go", "cs", "hh", "el", "jl", "kt", "md", "sh", "py", "cc", "mm", "ml", "rs",
];

/// Words that make a "name" an organisation or a heading instead of a person.
const NOT_NAME_WORDS: &[&str] = &[
    "inc",
    "inc.",
    "llc",
    "ltd",
    "ltd.",
    "corp",
    "corp.",
    "corporation",
    "foundation",
    "authors",
    "contributors",
    "project",
    "team",
    "company",
    "gmbh",
    "software",
    "technologies",
    "group",
    "labs",
    "university",
    "the",
    "and",
    "all",
    "rights",
    "reserved",
    "developers",
    "community",
    "maintainers",
    "systems",
    "limited",
    "co",
    "co.",
    "ag",
    "sa",
    "bv",
    "oy",
    "ab",
    "org",
    "http",
    "https",
    "see",
    "license",
    "copyright",
    "by",
    "todo",
    "fixme",
    "unknown",
    "anonymous",
    "various",
    "others",
    "et",
    "al",
    "google",
    "microsoft",
    "amazon",
    "apple",
    "facebook",
    "meta",
    "github",
    "gitlab",
    "mozilla",
    "apache",
    "linux",
    "oracle",
    "ibm",
    "intel",
    "netflix",
    "twilio",
    "docker",
];

/// IBAN lengths by country (ISO 13616 registry, common subset).
const IBAN_LEN: &[(&str, usize)] = &[
    ("AD", 24),
    ("AE", 23),
    ("AL", 28),
    ("AT", 20),
    ("AZ", 28),
    ("BA", 20),
    ("BE", 16),
    ("BG", 22),
    ("BH", 22),
    ("BR", 29),
    ("CH", 21),
    ("CR", 22),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DK", 18),
    ("DO", 28),
    ("EE", 20),
    ("EG", 29),
    ("ES", 24),
    ("FI", 18),
    ("FO", 18),
    ("FR", 27),
    ("GB", 22),
    ("GE", 22),
    ("GI", 23),
    ("GL", 18),
    ("GR", 27),
    ("GT", 28),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IL", 23),
    ("IQ", 23),
    ("IS", 26),
    ("IT", 27),
    ("JO", 30),
    ("KW", 30),
    ("KZ", 20),
    ("LB", 28),
    ("LC", 32),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("MC", 27),
    ("MD", 24),
    ("ME", 22),
    ("MK", 19),
    ("MR", 27),
    ("MT", 31),
    ("MU", 30),
    ("NL", 18),
    ("NO", 15),
    ("PK", 24),
    ("PL", 28),
    ("PS", 29),
    ("PT", 25),
    ("QA", 29),
    ("RO", 24),
    ("RS", 22),
    ("SA", 24),
    ("SC", 31),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("ST", 25),
    ("SV", 28),
    ("TL", 23),
    ("TN", 24),
    ("TR", 26),
    ("UA", 29),
    ("VA", 22),
    ("VG", 24),
    ("XK", 20),
];

/// The compiled PII scanner.
pub struct Pii {
    email: Regex,
    phone_e164: Regex,
    phone_local: Regex,
    card: Regex,
    iban: Regex,
    ssn: MetaRegex,
    ipv4: MetaRegex,
    ipv6: MetaRegex,
    name_email: Regex,
    trailer: Regex,
    author_tag: Regex,
    manifest_author: MetaRegex,
    /// [`NAME`], searched anchored where [`copyright_name_at`] says a name may start.
    name: MetaRegex,
}

/// The words [`Pii::scan`] needs from the shared keyword scan: first the triggers of the
/// structured-name regexes, then the context words of a local phone number (longest
/// first where one begins another: a leftmost-first match takes `telephone` over `tel`).
const WORDS: &[&str] = &[
    "-by:",
    "author",
    "maintainer",
    "contributor",
    "developer",
    "copyright",
    "owner",
    "phone",
    "telephone",
    "tel",
    "mobile",
    "cell",
    "fax",
    "whatsapp",
    "sms",
    "call",
];
/// Index in [`WORDS`] of the first phone context word.
const PHONE_WORDS_FROM: usize = 7;

fn re(src: &str) -> Regex {
    Regex::new(src).expect("static regex")
}

/// The same pattern for searches limited to a range ([`anchored::captures_near`]); the meta
/// regex under `regex::Regex`, built with the same defaults.
fn meta(src: &str) -> MetaRegex {
    MetaRegex::new(src).expect("static regex")
}

/// Every match of the IP and SSN patterns lies within these bytes ahead of and behind
/// its first separator: at most three digits of up to 4 bytes and one guard character
/// before it, at most 44 bytes of groups, separators and guard after it.
const NEAR_SEPARATOR: (usize, usize) = (16, 48);

const NAME: &str = r"\p{Lu}[\p{L}'’\-]*\.?(?:[ \t]+(?:\p{Lu}[\p{L}'’\-]*\.?|(?:van|von|der|de|da|di|du|la|le|del|bin|al)\b)){0,4}";

impl Pii {
    pub fn new() -> Pii {
        Pii {
            email: re(
                r"[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}\b",
            ),
            phone_e164: re(
                r"(?:^|[^\w+\-/.=])(\+[1-9]\d{0,2}(?:[ .\-]?\(?\d{1,4}\)?)(?:[ .\-]?\d{2,5}){1,4})(?:$|[^\w.\-/]|\.(?:$|[^\w.\-/]))",
            ),
            phone_local: re(
                r"(?:^|[^\w\-/.])(\(?\d{2,4}\)?[ .\-]\d{2,4}[ .\-]\d{3,5}|\d{10,11})(?:$|[^\w\-/.]|\.(?:$|[^\w\-/.]))",
            ),
            card: re(r"(?:^|[^\w\-.])(\d(?:[ \-]?\d){12,18})(?:$|[^\w\-.])"),
            iban: re(r"\b([A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)\b"),
            ssn: meta(r"(?:^|[^\w\-.])(\d{3})-(\d{2})-(\d{4})(?:$|[^\w\-.])"),
            ipv4: meta(
                r"(?:^|[^\w.\-])(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})(?:$|[^\w.\-]|\.(?:$|[^\w]))",
            ),
            ipv6: meta(
                r"(?:^|[^\w:.\-])([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?:$|[^\w:.\-])",
            ),
            name_email: re(&format!(
                r"({NAME})[ \t]*<[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+>"
            )),
            trailer: re(
                r"(?im)^[ \t#*/\-]*(?:signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|helped-by):[ \t]*([^<\n]+?)[ \t]*(?:<|$)",
            ),
            author_tag: re(&format!(r"@author[ \t]+({NAME})")),
            manifest_author: meta(&format!(
                r#"(?i)\b(?:author|authors|maintainer|maintainers|contributors|developer|owner)["']?[ \t]*(?:=|:|=>)[ \t]*\[?[ \t]*["']({NAME})"#
            )),
            name: meta(NAME),
        }
    }

    /// The words whose occurrences [`Pii::scan`] needs from the shared keyword scan.
    pub fn words() -> &'static [&'static str] {
        WORDS
    }

    /// Appends PII candidates; `hits` holds the occurrences of [`Pii::words`] under `ids`.
    /// Returns which of the baseline's numeric shapes its passes saw in the text.
    #[inline(never)] // one frame per family in profiles
    pub fn scan(
        &self,
        text: &str,
        _kind: FileKind,
        hits: &KeywordHits,
        ids: WordIds,
        literals: &Literals,
        out: &mut Vec<Candidate>,
    ) -> Shapes {
        if lexical::has_byte(text, b'@') {
            self.emails(text, out);
            self.names_with_email(text, out);
        }
        self.names_structured(text, hits, ids, literals, out);
        self.phones(text, hits, ids, out);
        let anchors = SeparatorAnchors::of(text);
        let gates = anchors.gates;
        if gates.card {
            self.cards(text, out);
        }
        if gates.iban {
            self.ibans(text, out);
        }
        // Most texts have no anchor for one pattern or more: skip its set-up too.
        if !anchors.ssn.is_empty() {
            self.ssns(text, &anchors.ssn, out);
        }
        if !anchors.ipv4.is_empty() {
            self.ipv4s(text, &anchors.ipv4, out);
        }
        if !anchors.ipv6.is_empty() {
            self.ipv6s(text, &anchors.ipv6, out);
        }
        // An SSN anchor is a dash between digit-like bytes, an IPv4 one such a dot
        // with the second dot close behind: the baseline's SSN and IPv4 shapes. The
        // card gates read ASCII digits only; `\d` reads others too.
        Shapes::UNKNOWN
            .knowing(Shape::DashInDigits, !anchors.ssn.is_empty())
            .knowing(Shape::DottedDigits, !anchors.ipv4.is_empty())
            .knowing(Shape::CardDigits, gates.loose_card || anchors.non_ascii)
            .knowing(Shape::PhoneDigits, anchors.phone_run)
    }

    fn emails(&self, text: &str, out: &mut Vec<Candidate>) {
        for m in self.email.find_iter(text) {
            let e = m.as_str();
            let (local, domain) = e.split_once('@').expect("regex has @");
            let domain = domain.to_ascii_lowercase();
            if reserved_domain(&domain) || local.eq_ignore_ascii_case("git") {
                continue;
            }
            let tld = domain.rsplit('.').next().unwrap_or("");
            let tld_ok = if tld.len() == 2 {
                !NOT_CCTLD.contains(&tld)
            } else {
                GTLDS.contains(&tld)
            };
            if !tld_ok {
                continue;
            }
            // Part of a URL (userinfo) or a format string: not an address.
            let tok_start = text[..m.start()]
                .rfind(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '(' | '<' | '[' | ',')
                })
                .map_or(0, |i| i + 1);
            if text[tok_start..m.start()].contains("://") || text[..m.start()].ends_with(['%', ':'])
            {
                continue;
            }
            out.push(cand(m.start(), m.end(), Category::EMAIL, "P1.email"));
        }
    }

    fn names_with_email(&self, text: &str, out: &mut Vec<Candidate>) {
        for (s, e) in self.names_before_emails(text) {
            if let Some((s, e)) = plausible_name(text, s, e, 2) {
                out.push(cand(s, e, Category::PERSON, "P5.name-email"));
            }
        }
    }

    /// What group 1 of `name_email` captures in `text`, searched only on the lines where
    /// an `@` follows a `<` and one or more of the pattern's address characters: neither
    /// those characters nor any other of the pattern is a line break or an `@`, so every
    /// match lies on such a line. A search of the whole text paid for the Unicode name
    /// classes on every byte; searching every line with a `<` somewhere before an `@`
    /// still paid for them on source lines where generics or arrows precede an address
    /// in a comment.
    fn names_before_emails(&self, text: &str) -> Vec<(usize, usize)> {
        let b = text.as_bytes();
        let address_byte =
            |c: &&u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'%' | b'+' | b'-');
        let mut lines = Vec::new();
        for at in memchr::memchr_iter(b'@', b) {
            if lines.last().is_some_and(|&(_, end)| at < end) {
                continue;
            }
            let local = b[..at].iter().rev().take_while(address_byte).count();
            if local > 0 && at > local && b[at - local - 1] == b'<' {
                lines.push(line_around(text, at));
            }
        }
        captures_on_lines(&self.name_email, text, &lines)
    }

    fn names_structured(
        &self,
        text: &str,
        hits: &KeywordHits,
        ids: WordIds,
        literals: &Literals,
        out: &mut Vec<Candidate>,
    ) {
        let lower_has = |word: &str| hits.has_word(ids, &WORDS[..PHONE_WORDS_FROM], word);
        // Every structured-name regex matches within one line, so each runs only on the
        // lines that hold one of its trigger words (the whole file was scanned before),
        // or anchored at those words.
        let lines_with = |words: &[&str]| {
            let starts = hits.starts_of_words(ids, WORDS, words);
            let mut lines: Vec<(usize, usize)> = Vec::new();
            for at in starts {
                if lines.last().is_some_and(|&(_, end)| at < end) {
                    continue;
                }
                lines.push(line_around(text, at));
            }
            lines
        };
        // Captures of group 1 of `re` on the given lines, as offsets into `text`.
        let names_on = |re: &Regex, lines: &[(usize, usize)]| captures_on_lines(re, text, lines);
        if lower_has("-by:") {
            for (s, e) in names_on(&self.trailer, &lines_with(&["-by:"])) {
                let v = text[s..e].trim();
                if !v.is_empty() && v.len() <= 80 && !v.contains('@') {
                    out.push(cand(s, s + v.len(), Category::PERSON, "P5.trailer"));
                }
            }
        }
        if literals.has(&literals::AUTHOR_TAG) {
            for caps in self.author_tag.captures_iter(text) {
                let n = caps.get(1).expect("group");
                if let Some((s, e)) = plausible_name(text, n.start(), n.end(), 1) {
                    out.push(cand(s, e, Category::PERSON, "P5.author-tag"));
                }
            }
        }
        if lower_has("author")
            || lower_has("maintainer")
            || lower_has("contributor")
            || lower_has("developer")
        {
            for (s, e) in self.manifest_authors(text, hits, ids, literals) {
                if let Some((s, e)) = plausible_name(text, s, e, 2) {
                    out.push(cand(s, e, Category::PERSON, "P5.manifest-author"));
                }
            }
        }
        if lower_has("copyright") {
            for (s, e) in self.copyright_names(text, hits, ids) {
                if let Some((s, e)) = plausible_name(text, s, e, 2) {
                    out.push(cand(s, e, Category::PERSON, "P5.copyright"));
                }
            }
        }
    }

    /// What group 1 of `manifest_author` captures in `text`. Every match starts at one of
    /// its field words, found by the keyword scan, so the pattern is searched anchored
    /// there; a text where the scan may miss a Unicode case variant of a word (`ſ`) is
    /// searched whole.
    fn manifest_authors(
        &self,
        text: &str,
        hits: &KeywordHits,
        ids: WordIds,
        literals: &Literals,
    ) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        let mut name = |caps: &regex_automata::util::captures::Captures| {
            let n = caps.get_group(1).expect("group");
            found.push((n.start, n.end));
        };
        if literals.has_non_ascii_fold_of_ascii() {
            let caps = self.manifest_author.captures_iter(text);
            caps.for_each(|caps| name(&caps));
        } else {
            let words = ["author", "maintainer", "contributor", "developer", "owner"];
            let starts = hits.starts_of_words(ids, WORDS, &words);
            anchored::captures_at_starts(&self.manifest_author, text, starts, name);
        }
        found
    }

    /// The names of copyright lines: what group 1 of `copyright_pattern()` captures, match by
    /// match, in each line that holds a `copyright`. Every match begins at a `copyright`
    /// the keyword scan found, so the notice is parsed by hand from there and only the
    /// name is a regex search, anchored (a capturing search of the whole pattern cost
    /// about 4 µs a line).
    fn copyright_names(&self, text: &str, hits: &KeywordHits, ids: WordIds) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        let mut resume = 0;
        for at in hits.starts_of(ids, keywords::word_index(WORDS, "copyright")) {
            if at < resume {
                continue;
            }
            let Some(name_at) = copyright_name_at(text, at) else {
                continue;
            };
            let (_, line_end) = line_around(text, name_at);
            let input = regex_automata::Input::new(&text[..line_end])
                .span(name_at..line_end)
                .anchored(regex_automata::Anchored::Yes);
            if let Some(m) = self.name.search(&input) {
                found.push((m.start(), m.end()));
                resume = m.end();
            }
        }
        found
    }

    fn phones(&self, text: &str, hits: &KeywordHits, ids: WordIds, out: &mut Vec<Candidate>) {
        // A match starts with `+` and a digit 1 to 9, and is taken with 8 or more ASCII
        // digits: without such a `+`, the search over the whole text cannot find one.
        let b = text.as_bytes();
        let plus_digit = memchr::memchr_iter(b'+', b)
            .any(|i| b.get(i + 1).is_some_and(|c| (b'1'..=b'9').contains(c)));
        if plus_digit {
            for caps in self.phone_e164.captures_iter(text) {
                let m = caps.get(1).expect("group");
                let digits = m.as_str().bytes().filter(u8::is_ascii_digit).count();
                if (8..=15).contains(&digits) && !expanded_year_date(m.as_str()) {
                    out.push(cand(m.start(), m.end(), Category::PHONE, "P2.phone-e164"));
                }
            }
        }
        let context_words = hits
            .leftmost_first(ids.from(PHONE_WORDS_FROM))
            .into_iter()
            .filter(|&(s, e, _)| lexical::is_word_bounded(text, s, e) && !is_code_name(b, s, e));
        for (_, ctx_end, _) in context_words {
            // The number must follow the context word on the same line, within 40 bytes.
            let from = ctx_end;
            let line_end = text[from..].find('\n').map_or(text.len(), |i| from + i);
            let to = super::lexical::floor_boundary(text, (from + 40).min(line_end));
            // A number is taken with 7 or more ASCII digits, all inside this window.
            if b[from..to].iter().filter(|c| c.is_ascii_digit()).count() < 7 {
                continue;
            }
            for caps in self.phone_local.captures_iter(&text[from..to]) {
                let m = caps.get(1).expect("group");
                let s = m.as_str();
                let digits = s.bytes().filter(u8::is_ascii_digit).count();
                let date_like = s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-';
                if (7..=15).contains(&digits) && !date_like {
                    out.push(cand(
                        from + m.start(),
                        from + m.end(),
                        Category::PHONE,
                        "P2.phone-context",
                    ));
                }
            }
        }
    }

    /// Cards, in a text that passed [`number_gates::card_and_iban_gates`].
    fn cards(&self, text: &str, out: &mut Vec<Candidate>) {
        for caps in self.card.captures_iter(text) {
            let m = caps.get(1).expect("group");
            if valid_card(m.as_str()) && !in_number_table(text, m.start(), m.end()) {
                out.push(cand(m.start(), m.end(), Category::CARD, "P3.card"));
            }
        }
    }

    /// IBANs, in a text that passed [`number_gates::card_and_iban_gates`].
    fn ibans(&self, text: &str, out: &mut Vec<Candidate>) {
        for caps in self.iban.captures_iter(text) {
            let m = caps.get(1).expect("group");
            if valid_iban(m.as_str()) {
                out.push(cand(m.start(), m.end(), Category::IBAN, "P3.iban"));
            }
        }
    }

    fn ssns(&self, text: &str, anchors: &[usize], out: &mut Vec<Candidate>) {
        let anchors = anchors.iter().copied();
        anchored::captures_near(&self.ssn, text, anchors, NEAR_SEPARATOR, |caps| {
            let group = |i| caps.get_group(i).expect("group");
            let (a, g, s) = (group(1), group(2), group(3));
            if valid_ssn(&text[a.range()], &text[g.range()], &text[s.range()]) {
                out.push(cand(a.start, s.end, Category::SSN, "P3.ssn"));
            }
        });
    }

    fn ipv4s(&self, text: &str, anchors: &[usize], out: &mut Vec<Candidate>) {
        anchored::captures_near(
            &self.ipv4,
            text,
            anchors.iter().copied(),
            NEAR_SEPARATOR,
            |caps| {
                let m = caps.get_group(1).expect("group");
                let Ok(ip) = text[m.range()].parse::<Ipv4Addr>() else {
                    return;
                };
                if exempt_v4(ip)
                    || version_context(text, m.start)
                    || section_context(text, m.start, m.end)
                {
                    return;
                }
                out.push(cand(m.start, m.end, Category::IP, "P4.ipv4"));
            },
        );
    }

    fn ipv6s(&self, text: &str, anchors: &[usize], out: &mut Vec<Candidate>) {
        anchored::captures_near(
            &self.ipv6,
            text,
            anchors.iter().copied(),
            NEAR_SEPARATOR,
            |caps| {
                let m = caps.get_group(1).expect("group");
                let s = &text[m.range()];
                let groups = s.split(':').filter(|g| !g.is_empty()).count();
                if groups < 2
                    || !s.bytes().any(|b| b.is_ascii_digit())
                    || !(s.contains("::") || s.matches(':').count() == 7)
                {
                    return;
                }
                let Ok(ip) = s.parse::<Ipv6Addr>() else {
                    return;
                };
                if exempt_v6(ip) {
                    return;
                }
                out.push(cand(m.start, m.end, Category::IP, "P4.ipv6"));
            },
        );
    }
}

impl Default for Pii {
    fn default() -> Self {
        Self::new()
    }
}

/// The spans group 1 of `re` captures in each of `lines` (ranges of `text`), as offsets
/// into `text`.
fn captures_on_lines(re: &Regex, text: &str, lines: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    for &(ls, le) in lines {
        for caps in re.captures_iter(&text[ls..le]) {
            let n = caps.get(1).expect("group");
            found.push((ls + n.start(), ls + n.end()));
        }
    }
    found
}

impl Family for Pii {
    fn name(&self) -> &'static str {
        "P1-P5 validated PII"
    }

    fn words(&self) -> Vec<&str> {
        Pii::words().to_vec()
    }

    fn scans_decoded(&self) -> bool {
        false
    }

    fn scan(&self, f: &Facts, words: WordIds, out: &mut Sink) {
        out.shapes = self.scan(
            f.text,
            f.kind,
            f.hits,
            words,
            f.literals,
            &mut out.candidates,
        );
    }
}

/// The copyright-notice pattern whose group 1 [`Pii::copyright_names`] reports (kept as
/// the definition the hand parser [`copyright_name_at`] is tested against).
#[cfg(test)]
fn copyright_pattern() -> String {
    format!(
        r"(?i:copyright)[ \t]+(?:\((?i:c)\)|©)?[ \t]*\d{{4}}(?:[ \t]*[-–,][ \t]*\d{{4}})*,?[ \t]+({NAME})"
    )
}

/// Where the name of a copyright notice starting at `at` (a `copyright`, any case)
/// would start: after `[ \t]+`, `(c)` or `©` (optional), `[ \t]*`, a year, more years
/// after `-`, `–` or `,`, an optional `,` and `[ \t]+`. Years are four Unicode decimal
/// digits, as the regex crate's `\d` reads them. Each piece starts with a character the
/// piece before cannot take, so a greedy parse finds what the pattern's backtracking
/// finds: a year group that fails to complete is given back whole, and what follows
/// it then could never have been `,?[ \t]+` and a capital.
fn copyright_name_at(text: &str, at: usize) -> Option<usize> {
    let blank = |c: char| c == ' ' || c == '\t';
    let skip_blanks = |pos: usize| {
        pos + text[pos..]
            .bytes()
            .take_while(|&b| b == b' ' || b == b'\t')
            .count()
    };
    let year = |pos: usize| {
        let mut chars = text[pos..].char_indices();
        for _ in 0..4 {
            chars
                .next()
                .filter(|&(_, c)| crate::engine::python::text::is_py_digit(c))?;
        }
        Some(chars.next().map_or(text.len(), |(i, _)| pos + i))
    };
    let mut pos = at + "copyright".len();
    if !text[pos..].starts_with(blank) {
        return None;
    }
    pos = skip_blanks(pos);
    for mark in ["(c)", "(C)", "©"] {
        if text[pos..].starts_with(mark) {
            pos += mark.len();
            break;
        }
    }
    pos = year(skip_blanks(pos))?;
    loop {
        let sep = skip_blanks(pos);
        let Some(dash) = ['-', '–', ',']
            .into_iter()
            .find(|&d| text[sep..].starts_with(d))
        else {
            break;
        };
        match year(skip_blanks(sep + dash.len_utf8())) {
            Some(end) => pos = end,
            None => break,
        }
    }
    if text[pos..].starts_with(',') {
        pos += 1;
    }
    if !text[pos..].starts_with(blank) {
        return None;
    }
    Some(skip_blanks(pos))
}

/// What one pass over a text's separators and digits tells: where its SSN, IPv4 and
/// IPv6 matches may be, the card and IBAN gates, and whether it holds the baseline's
/// phone shape.
#[derive(Debug, Default, PartialEq, Eq)]
struct SeparatorAnchors {
    /// The `-` after an SSN's area number: digits on both sides.
    ssn: Vec<usize>,
    /// The first `.` of an IPv4 address: digits on both sides and a second `.` after at
    /// most three digits (up to 12 bytes: `\d` reads digits of every script). Decimals
    /// (`0.5`) and most version strings stop there.
    ipv4: Vec<usize>,
    /// The first `:` of an IPv6 address, followed by a hex digit or a second `:`, after
    /// at most four hex digits that follow the text's start or a byte the pattern's guard
    /// admits (not an ASCII word character, `:`, `.` or `-`; any byte of a multi-byte
    /// character may be one). Paths like `std::io` and `key:value` stop there.
    ipv6: Vec<usize>,
    /// Two digit-like bytes side by side in a run of [`PHONE_RUN`] bytes that holds
    /// [`PHONE_DIGITS`] digit-like bytes (the baseline's phone shape, for the pipeline:
    /// the layer's own phones need context).
    phone_run: bool,
    /// The card and IBAN gates, read from the runs around ASCII digits.
    gates: number_gates::CardAndIbanGates,
    /// The text holds a byte of 0x80 or above (digit-like but not an ASCII digit).
    non_ascii: bool,
}

impl SeparatorAnchors {
    fn of(text: &str) -> SeparatorAnchors {
        let b = text.as_bytes();
        let mut out = SeparatorAnchors::default();
        // Bit 63's right neighbour is the next block's first byte, read only for a
        // separator there.
        let right_of_last = |seps: u64, after: usize, test: fn(u8) -> bool| -> u64 {
            if seps >> 63 == 0 {
                return 0;
            }
            u64::from(b.get(after).is_some_and(|&c| test(c))) << 63
        };
        // A separator at the text's start has no left neighbour to test.
        let mut digit_before_block = 1;
        // Pairs of digits, and digits, before these lie in runs read already.
        let (mut phone_read_to, mut gates_read_to) = (0, 0);
        byteclass::for_each_separator_block(b, |start, m| {
            let after = start + 64;
            let digit_left = m.digit_like << 1 | digit_before_block;
            digit_before_block = m.digit_like >> 63;
            let digit_right =
                m.digit_like >> 1 | right_of_last(m.dash | m.dot, after, lexical::digit_like);
            let hex_right = m.hex_or_colon >> 1 | right_of_last(m.colon, after, hex_or_colon);
            let digits_around = digit_left & digit_right;
            push_bits(&mut out.ssn, start, m.dash & digits_around, |_| true);
            push_bits(&mut out.ipv4, start, m.dot & digits_around, |i| {
                second_dot_follows(b, i)
            });
            push_bits(&mut out.ipv6, start, m.colon & hex_right, |i| {
                ipv6_head_fits(b, i)
            });
            if !out.phone_run {
                let mut pairs = m.digit_like
                    & (m.digit_like >> 1 | right_of_last(m.digit_like, after, lexical::digit_like));
                while pairs != 0 && !out.phone_run {
                    let i = start + pairs.trailing_zeros() as usize;
                    pairs &= pairs - 1;
                    if i >= phone_read_to {
                        (out.phone_run, phone_read_to) = phone_run_at(b, i);
                    }
                }
            }
            out.non_ascii |= m.digit_like & !m.digit != 0;
            let mut digits = m.digit;
            while digits != 0 && !out.gates.settled() {
                let i = start + digits.trailing_zeros() as usize;
                digits &= digits - 1;
                if i >= gates_read_to {
                    gates_read_to = out.gates.add_run_around(b, i);
                }
            }
        });
        out
    }
}

/// Whether the run of [`PHONE_RUN`] bytes around `b[i]` (a digit-like byte, so in the
/// class) holds [`PHONE_DIGITS`] digit-like bytes, and where it ends.
#[inline(never)] // rare (a pair of digits); keeps the block loop's closure inlined
fn phone_run_at(b: &[u8], i: usize) -> (bool, usize) {
    let (start, end) = byteclass::run_extent(b, i, 0, |c| PHONE_RUN.has(c));
    let digits = b[start..end]
        .iter()
        .filter(|&&c| lexical::digit_like(c))
        .count();
    (digits >= PHONE_DIGITS, end)
}

/// Appends `start + i` for each bit `i` of `bits` that `keep` accepts.
fn push_bits(out: &mut Vec<usize>, start: usize, mut bits: u64, keep: impl Fn(usize) -> bool) {
    while bits != 0 {
        let i = start + bits.trailing_zeros() as usize;
        bits &= bits - 1;
        if keep(i) {
            out.push(i);
        }
    }
}

fn hex_or_colon(c: u8) -> bool {
    c.is_ascii_hexdigit() || c == b':'
}

/// After the `.` at `i`, at most 13 digit-like bytes and another `.`.
#[inline(never)] // rare (a candidate separator); keeps the block loop's closure inlined
fn second_dot_follows(b: &[u8], i: usize) -> bool {
    let digits = b[i + 1..]
        .iter()
        .take(13)
        .take_while(|&&c| lexical::digit_like(c))
        .count();
    b.get(i + 1 + digits) == Some(&b'.')
}

/// Before the `:` at `i`, at most four hex digits, after the text's start or a byte the
/// IPv6 pattern's guard admits.
#[inline(never)] // rare (a candidate separator); keeps the block loop's closure inlined
fn ipv6_head_fits(b: &[u8], i: usize) -> bool {
    let hex = b[..i]
        .iter()
        .rev()
        .take(5)
        .take_while(|c| c.is_ascii_hexdigit())
        .count();
    hex <= 4
        && i.checked_sub(hex + 1).is_none_or(|g| {
            let c = b[g];
            !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b':' | b'.' | b'-'))
        })
}

fn cand(start: usize, end: usize, category: Category, detector: &'static str) -> Candidate {
    Candidate {
        start,
        end,
        category,
        detector,
        priority: prio::PII,
    }
}

fn reserved_domain(d: &str) -> bool {
    const EXACT: &[&str] = &["example.com", "example.org", "example.net", "localhost"];
    const SUFFIX: &[&str] = &[".example", ".invalid", ".test", ".localhost", ".local"];
    EXACT.iter().any(|x| {
        d.strip_suffix(x)
            .is_some_and(|head| head.is_empty() || head.ends_with('.'))
    }) || SUFFIX.iter().any(|s| d.ends_with(s))
}

/// Trims a captured name and rejects organisations, headings and single words where
/// `min_words` asks for more.
fn plausible_name(text: &str, s: usize, e: usize, min_words: usize) -> Option<(usize, usize)> {
    let raw = &text[s..e];
    // A name ends with its sentence: `Zachary Rice. All rights reserved`, `Raven Authors.
    // SPDX-License-Identifier: …` (a word of two or more letters ending in `.`; initials
    // such as `J.` do not end it).
    let mut end = raw.len();
    let mut pos = 0;
    for piece in raw.split_inclusive([' ', '\t']) {
        let word = piece.trim_end_matches([' ', '\t']);
        if word.len() > 2 && word.ends_with('.') {
            end = pos + word.len();
            break;
        }
        pos += piece.len();
    }
    let v = raw[..end].trim_end_matches(['.', ' ', '\t']);
    let words: Vec<&str> = v.split_whitespace().collect();
    if words.len() < min_words || words.len() > 5 || v.len() > 80 {
        return None;
    }
    if words
        .iter()
        .any(|w| NOT_NAME_WORDS.contains(&w.trim_end_matches('.').to_lowercase().as_str()))
    {
        return None;
    }
    if words
        .iter()
        .all(|w| w.chars().all(|c| c.is_uppercase() || !c.is_alphabetic()))
        && words.len() > 1
    {
        return None; // ALL CAPS HEADINGS
    }
    Some((s, s + v.len()))
}

fn digits_of(s: &str) -> Vec<u8> {
    s.bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect()
}

/// Luhn checksum over the digits.
pub fn luhn(d: &[u8]) -> bool {
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            let x = u32::from(x);
            if i % 2 == 1 {
                let y = x * 2;
                if y > 9 { y - 9 } else { y }
            } else {
                x
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// `.call(obj, 4294967297)`, `cell(3)`: a context word that is a member or a called
/// function is a name in code, not a label before a number.
fn is_code_name(b: &[u8], s: usize, e: usize) -> bool {
    (s > 0 && matches!(b[s - 1], b'.' | b':' | b'>')) || b.get(e) == Some(&b'(')
}

/// `+275760-09-13`: an ISO 8601 date with a signed six-digit year (the expanded
/// representation), not a number to call.
fn expanded_year_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |from: usize, to: usize| b[from..to].iter().all(u8::is_ascii_digit);
    let two = |i: usize| u32::from(b[i] - b'0') * 10 + u32::from(b[i + 1] - b'0');
    let year_month = b.len() >= 10
        && b[0] == b'+'
        && digits(1, 7)
        && b[7] == b'-'
        && digits(8, 10)
        && (1..=12).contains(&two(8));
    match b.len() {
        10 => year_month,
        13 => year_month && b[10] == b'-' && digits(11, 13) && (1..=31).contains(&two(11)),
        _ => false,
    }
}

fn valid_card(s: &str) -> bool {
    let d = digits_of(s);
    if !(13..=19).contains(&d.len()) || d.iter().all(|&x| x == d[0]) {
        return false;
    }
    // Separators: none, or one kind in groups of 4 (Amex 4-6-5).
    let seps: Vec<char> = s.chars().filter(|c| !c.is_ascii_digit()).collect();
    if !seps.is_empty() {
        if seps.iter().any(|&c| c != seps[0]) {
            return false;
        }
        let groups: Vec<usize> = s.split(seps[0]).map(str::len).collect();
        let four = groups[..groups.len() - 1].iter().all(|&g| g == 4);
        let amex = groups == [4, 6, 5] || groups == [4, 6, 4];
        if !four && !amex {
            return false;
        }
    }
    let prefix2 = u32::from(d[0]) * 10 + u32::from(d[1]);
    let prefix3 = prefix2 * 10 + u32::from(d[2]);
    let prefix4 = prefix3 * 10 + u32::from(d[3]);
    // Each network's documented prefixes and the lengths it issues: a number whose
    // length its prefix's network never issues is no card (`2501999792984`, 13 digits
    // under Mastercard's 16-digit 2-series).
    let n = d.len();
    let iin = match () {
        () if d[0] == 4 => matches!(n, 13 | 16 | 19),
        () if (51..=55).contains(&prefix2) || (2221..=2720).contains(&prefix4) => n == 16,
        () if prefix2 == 34 || prefix2 == 37 => n == 15,
        () if prefix4 == 6011 || prefix2 == 65 || (644..=649).contains(&prefix3) => n >= 16,
        () if prefix2 == 35 || prefix2 == 62 => n >= 16,
        () if prefix2 == 36
            || prefix2 == 38
            || (300..=305).contains(&prefix3)
            || prefix4 == 3095 =>
        {
            matches!(n, 14 | 16)
        }
        () => false,
    };
    iin && luhn(&d)
}

fn valid_iban(s: &str) -> bool {
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    // The pattern's `\d` reads digits of every script; an IBAN's are ASCII (and slicing
    // the country and check digits off assumes one byte each).
    if !compact.is_ascii() {
        return false;
    }
    let Some(&(_, len)) = IBAN_LEN.iter().find(|(cc, _)| compact.starts_with(cc)) else {
        return false;
    };
    if compact.len() != len {
        return false;
    }
    let rearranged = format!("{}{}", &compact[4..], &compact[..4]);
    let mut rem: u32 = 0;
    for c in rearranged.chars() {
        let v = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        if v >= 10 {
            rem = (rem * 100 + v) % 97;
        } else {
            rem = (rem * 10 + v) % 97;
        }
    }
    rem == 1
}

fn valid_ssn(area: &str, group: &str, serial: &str) -> bool {
    let a: u32 = area.parse().unwrap_or(0);
    let all = format!("{area}{group}{serial}");
    if a == 0 || a == 666 || a >= 900 || group == "00" || serial == "0000" {
        return false;
    }
    if all.bytes().all(|b| b == all.as_bytes()[0])
        || all == "123456789"
        || all == "078051120"
        || all == "219099999"
    {
        return false;
    }
    true
}

fn exempt_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || o[0] == 0
        || o[0] == 255
        || o[0] >= 240
}

fn exempt_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (seg[0] & 0xffc0) == 0xfe80
        || (seg[0] == 0x2001 && seg[1] == 0x0db8)
        || ip.to_ipv4_mapped().is_some_and(exempt_v4)
}

/// Whether the bare number `text[s..e]` is one entry of a table of long numbers (hash
/// constants, PRNG seeds, test vectors: `16884225088663222131,\n7390739362393647554,`):
/// the neighbouring entry before or after it, past separators, is another run of ten
/// digits or more. About one such number in ten passes a card's issuer and Luhn checks.
/// A card written in groups (`4111 1111 1111 1111`) is no table entry.
fn in_number_table(text: &str, s: usize, e: usize) -> bool {
    let b = text.as_bytes();
    if !b[s..e].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let is_sep = |c: u8| matches!(c, b',' | b' ' | b'\t' | b'\n' | b'\r' | b';' | b'_');
    let digits_before = {
        let mut i = s;
        while i > 0 && is_sep(b[i - 1]) && s - i < 16 {
            i -= 1;
        }
        let end = i;
        while i > 0 && b[i - 1].is_ascii_digit() {
            i -= 1;
        }
        (end > i && end < s).then_some(end - i)
    };
    let digits_after = {
        let mut i = e;
        while i < b.len() && is_sep(b[i]) && i - e < 16 {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > start && start > e).then_some(i - start)
    };
    digits_before.is_some_and(|n| n >= 10) || digits_after.is_some_and(|n| n >= 10)
}

/// `v1.2.3.4`, `version 1.2.3.4`, `Version=1.0.0.0`: a dotted version, not an address.
fn version_context(text: &str, start: usize) -> bool {
    let from = super::lexical::floor_boundary(text, start.saturating_sub(96));
    let before = text[from..start].to_ascii_lowercase();
    let line_part = before.rsplit('\n').next().unwrap_or("");
    let trimmed = line_part.trim_end_matches(['"', '\'', ' ', '=', ':', '(', '@']);
    trimmed.ends_with('v')
        || line_part.contains("version")
        || line_part.contains("ver ")
        || line_part.contains("release")
        || line_part.contains("build")
        || line_part.contains("oid")
        || line_part.contains("id-")
}

/// `es6id: 19.4.3.4`, `§ 4.1.2.3`, `// 9.2.1.3 OrdinaryCallEvaluateBody ( F, argumentsList )`:
/// a dotted section number of a specification, not an address. The grammar of a section
/// reference, any one of:
/// - the line names a section or a specification before it (`section`, `es6id:`, `ES6`,
///   `ECMA-262`, `draft`, `proposal`), or the number is what something is "defined in",
///   "specified in" or "described in";
/// - a step of it follows (`(19.4.3.4 step 3.c)`);
/// - the number, of one- and two-digit parts, opens the line (after comment and list
///   markers) and a heading follows it: a capitalised title, an intrinsic (`%TypedArray%`),
///   an internal method (`[[Get]]`, `@@iterator`) or an accessor of one (`get %X%.size`).
fn section_context(text: &str, start: usize, end: usize) -> bool {
    let before = &text[super::lexical::line_start(text, start)..start];
    let lower = before.to_ascii_lowercase();
    let after = &text[end..];
    if SECTION_WORDS.iter().any(|w| lower.contains(w))
        || lower
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .any(is_spec_name)
        || ["defined in", "specified in", "described in"]
            .iter()
            .any(|w| lower.trim_end().ends_with(w))
        || after
            .trim_start_matches([')', ',', ' '])
            .starts_with("step ")
    {
        return true;
    }
    let opens_line = before
        .trim_start()
        .trim_start_matches(['/', '#', '*', '-', ';', '!', '%'])
        .trim()
        .is_empty();
    let small = text[start..end].split('.').all(|part| part.len() <= 2);
    let heading = after.strip_prefix(' ').is_some_and(|after| {
        let after = after.trim_start();
        let after = ["get ", "set ", "static "]
            .iter()
            .find_map(|w| after.strip_prefix(w))
            .unwrap_or(after);
        after.starts_with(char::is_uppercase)
            || ["%", "[[", "@@"].iter().any(|w| after.starts_with(w))
    });
    opens_line && small && heading
}

/// Words that, before a dotted number on its line, say it numbers a section.
const SECTION_WORDS: &[&str] = &[
    "esid:",
    "es5id:",
    "es6id:",
    "section",
    "§",
    "chapter",
    "clause",
    "ecma-262",
    "ecmascript",
    "draft",
    "proposal",
];

/// `ES5`, `ES6`, `ES2017`: an edition of ECMAScript named before a section of it.
fn is_spec_name(word: &str) -> bool {
    word.strip_prefix("es")
        .is_some_and(|n| (n.len() == 1 || n.len() == 4) && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        let mut words = keywords::KeywordBuilder::default();
        let ids = words.add(Pii::words());
        let marker_ids = words.add(literals::words());
        let hits = words.build().expect("few words").scan(text);
        let literals = Literals::new(text, &hits, marker_ids);
        Pii::new().scan(text, FileKind::Code, &hits, ids, &literals, &mut out);
        super::super::resolve(text, out)
            .into_iter()
            .map(|f| (text[f.start..f.end].to_owned(), f.category.as_str()))
            .collect()
    }

    /// Manifest author fields searched from the field words the keyword scan found equal
    /// a search of the whole text.
    #[test]
    fn manifest_authors_from_field_words_equal_the_whole_text_search() {
        let detector = super::super::Detector::new();
        let (compiled, family_words) = detector.pass_for("P1-P5 validated PII");
        let pii = Pii::new();
        let pieces = [
            "author",
            "Authors",
            "maintainer",
            "\"owner\"",
            "developer",
            "contributors",
            ": ",
            " = ",
            "=> ",
            "[",
            "\"",
            "'",
            "Ada Lovelace",
            "Émile Zola",
            " van ",
            "Grace",
            "\n",
            "x",
            "co",
            "\t",
            "ſ",
            "author: \"Ada Lovelace\"",
            "\"maintainer\" => 'Grace Hopper'",
            "owner = [\"Émile Zola\"",
            "developer: 'Alan Turing'",
        ];
        let mut found = 0;
        for text in crate::engine::testgen::texts(&pieces, 6000, 12, 6) {
            let hits = compiled.automaton.scan(&text);
            let literals = Literals::new(&text, &hits, compiled.literal_words);
            let mut whole = Vec::new();
            for caps in pii.manifest_author.captures_iter(&text) {
                let n = caps.get_group(1).expect("group");
                whole.push((n.start, n.end));
            }
            found += usize::from(!whole.is_empty());
            assert_eq!(
                pii.manifest_authors(&text, &hits, family_words, &literals),
                whole,
                "{text:?}"
            );
        }
        assert!(found > 300, "{found} texts with authors");
    }

    /// [`SeparatorAnchors::of`] by its definition, a byte at a time.
    fn anchors_plainly(text: &str) -> SeparatorAnchors {
        let b = text.as_bytes();
        let between = |sep: u8, left: fn(u8) -> bool, right: fn(u8) -> bool| {
            (0..b.len()).filter(move |&i| {
                b[i] == sep && (i == 0 || left(b[i - 1])) && b.get(i + 1).is_some_and(|&c| right(c))
            })
        };
        let digit = lexical::digit_like;
        SeparatorAnchors {
            ssn: between(b'-', digit, digit).collect(),
            ipv4: between(b'.', digit, digit)
                .filter(|&i| second_dot_follows(b, i))
                .collect(),
            ipv6: between(b':', |_| true, hex_or_colon)
                .filter(|&i| ipv6_head_fits(b, i))
                .collect(),
            gates: number_gates::card_and_iban_gates(text),
            non_ascii: !text.is_ascii(),
            phone_run: b.split(|&c| !PHONE_RUN.has(c)).any(|run| {
                run.windows(2).any(|w| digit(w[0]) && digit(w[1]))
                    && run.iter().filter(|&&c| digit(c)).count() >= PHONE_DIGITS
            }),
        }
    }

    #[test]
    fn separator_anchors_are_those_of_their_definition() {
        // Pieces that put separators, digits, hex and multi-byte characters on both
        // sides of the 64-byte blocks the pass reads.
        let pieces = [
            ".",
            "-",
            ":",
            "::",
            "1",
            "23",
            "a",
            "F",
            "g",
            " ",
            "\n",
            "\u{663}",
            "é",
            "1.2.3.4",
            "10.0",
            "536-22-1234",
            "fe80::1",
            "x:",
            "_",
            "abcd:",
            "abcde:",
            "0.",
            "(",
            "+",
            "4111 1111",
            "1111-",
            "DE89",
            " 3704",
            "GB",
            "ABCD",
        ];
        let mut state = 7u64;
        let mut found = [0usize; 3];
        let mut phone_runs = [0usize; 2];
        let mut gates = [0usize; 2];
        for _ in 0..2000 {
            let mut text = String::new();
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = (state >> 40) as usize % 160;
            while text.len() < len {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let got = SeparatorAnchors::of(&text);
            assert_eq!(got, anchors_plainly(&text), "{text:?}");
            for (n, list) in found.iter_mut().zip([&got.ssn, &got.ipv4, &got.ipv6]) {
                *n += list.len();
            }
            phone_runs[usize::from(got.phone_run)] += 1;
            for (n, passed) in gates.iter_mut().zip([got.gates.card, got.gates.iban]) {
                *n += usize::from(passed);
            }
        }
        assert!(
            gates.iter().all(|&n| n > 50),
            "{gates:?} card, IBAN gates passed"
        );
        assert!(found.iter().all(|&n| n > 100), "{found:?}");
        assert!(
            phone_runs.iter().all(|&n| n > 100),
            "{phone_runs:?} without, with a phone run"
        );
    }

    /// The IP and SSN patterns searched near their anchors find what a search of the
    /// whole text finds, on generated text dense in digits, separators, hex, guards and
    /// digits of other scripts.
    #[test]
    fn anchored_searches_equal_whole_text_searches() {
        let pii = Pii::new();
        let pieces = [
            "1",
            "22",
            "333",
            "4444",
            ".",
            "..",
            ":",
            "::",
            "-",
            "--",
            " ",
            "\n",
            "a",
            "F",
            "fe80",
            "v",
            "_",
            "\u{663}",
            "\u{1d7ce}",
            "é",
            "1.2.3.4",
            "9.333.222.1",
            "1.\u{663}\u{663}\u{663}.3.4",
            "536-22-1234",
            "2001:db8::1",
            "=",
            "/",
            "x.",
        ];
        type Anchors = fn(&str) -> Vec<usize>;
        let cases: [(&MetaRegex, Anchors); 3] = [
            (&pii.ssn, |t| SeparatorAnchors::of(t).ssn),
            (&pii.ipv4, |t| SeparatorAnchors::of(t).ipv4),
            (&pii.ipv6, |t| SeparatorAnchors::of(t).ipv6),
        ];
        let mut state = 11u64;
        let mut matched = 0;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..16 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            for (re, anchors) in &cases {
                let mut want = Vec::new();
                for c in re.captures_iter(&text) {
                    want.push(
                        (0..c.group_len())
                            .map(|i| c.get_group(i))
                            .collect::<Vec<_>>(),
                    );
                }
                let mut got = Vec::new();
                anchored::captures_near(
                    re,
                    &text,
                    anchors(&text).into_iter(),
                    NEAR_SEPARATOR,
                    |c| {
                        got.push(
                            (0..c.group_len())
                                .map(|i| c.get_group(i))
                                .collect::<Vec<_>>(),
                        );
                    },
                );
                matched += usize::from(!want.is_empty());
                assert_eq!(got, want, "{text:?}");
            }
        }
        assert!(matched > 500, "only {matched} texts held a match");
    }

    /// The copyright parser with its anchored name search reports what group 1 of the
    /// copyright pattern captures, on generated notices: every case of `copyright`,
    /// marks, years in other scripts, five-digit and short years, every separator,
    /// names with particles and apostrophes, and a line break anywhere.
    #[test]
    fn copyright_names_equal_the_pattern() {
        let pattern = Regex::new(&copyright_pattern()).unwrap();
        let pii = Pii::new();
        let mut words = keywords::KeywordBuilder::default();
        let ids = words.add(Pii::words());
        let scan = words.build().expect("few words");
        // A notice is one piece per slot; a slot's last choices break the pattern.
        let slots: [&[&str]; 9] = [
            &["Copyright", "COPYRIGHT", "copyRight", "x copyright"],
            &[" ", "\t", "  ", ""],
            &["", "(c)", "(C)", "©", "(d)"],
            &["", " ", "\t "],
            &[
                "2020",
                "1999",
                "\u{662}\u{660}\u{662}\u{660}",
                "20201",
                "202",
            ],
            &[
                "",
                "-2021",
                " – 2022",
                ", 2023",
                ",2024 - 2025",
                "- 20",
                ", x",
            ],
            &["", ",", ",,"],
            &[" ", "\t", "", "\n"],
            &[
                "Jane Doe",
                "Ünal Öz",
                "Anna van der Berg",
                "J. O'Brien",
                "jane",
                "Inc",
                "Jane",
            ],
        ];
        let mut pick = crate::engine::testgen::picker(5);
        let mut texts = Vec::new();
        for _ in 0..6000 {
            let mut text = String::new();
            for _ in 0..1 + pick(3) {
                for slot in slots {
                    text.push_str(slot[pick(slot.len())]);
                }
                text.push_str([" and ", "\n", " ", ""][pick(4)]);
            }
            texts.push(text);
        }
        let mut matched = 0;
        for text in texts {
            let want: Vec<(usize, usize)> = pattern
                .captures_iter(&text)
                .map(|c| c.get(1).map(|m| (m.start(), m.end())).unwrap())
                .collect();
            let got = pii.copyright_names(&text, &scan.scan(&text), ids);
            matched += usize::from(!want.is_empty());
            assert_eq!(got, want, "{text:?}");
        }
        assert!(matched > 500, "only {matched} texts held a notice");
    }

    /// The line-limited search for names before addresses finds what a search of the
    /// whole text finds, on generated lines of names, brackets, addresses and breaks.
    #[test]
    fn names_before_emails_equal_a_whole_text_search() {
        let pii = Pii::new();
        let pieces = [
            "Jane",
            "Doe",
            "Ünal",
            "van",
            " ",
            "\t",
            "<",
            ">",
            "@",
            "jane@acme.io",
            "x.y",
            "\n",
            "O'Brien",
            "J.",
            "a",
            "<jd@x.org>",
            "Ann Lee <al@b.co>",
            "List<T> ",
            "a.b_c+d%e-f",
            "Jo Park <j.p_1+x%y-z@b.co>",
            "@Override ",
        ];
        let mut matched = 0;
        for text in crate::engine::testgen::texts(&pieces, 4000, 12, 9) {
            let want: Vec<(usize, usize)> = pii
                .name_email
                .captures_iter(&text)
                .map(|c| c.get(1).map(|m| (m.start(), m.end())).unwrap())
                .collect();
            matched += usize::from(!want.is_empty());
            assert_eq!(pii.names_before_emails(&text), want, "{text:?}");
        }
        assert!(
            matched > 500,
            "only {matched} texts held a name and address"
        );
    }

    #[test]
    fn emails_skip_reserved_domains_urls_and_file_names() {
        assert_eq!(
            found("mail jane.doe@acme-corp.com now"),
            [("jane.doe@acme-corp.com".to_owned(), "EMAIL")]
        );
        for t in [
            "a@example.com",
            "x@foo.example",
            "y@bar.test",
            "z@host.invalid",
            "git@github.com:o/r",
            "logo@2x.png",
            "https://user:pw@host.com/x",
            "u@localhost",
        ] {
            assert!(found(t).iter().all(|(_, c)| *c != "EMAIL"), "{t}");
        }
    }

    /// The IBAN pattern's `\d` reads digits of other scripts; such a candidate is not an
    /// IBAN and must not reach the byte slicing of the check (it panicked, and the whole
    /// text was refused).
    #[test]
    fn ibans_with_digits_of_other_scripts_are_refused_without_panicking() {
        assert!(!valid_iban("DE\u{966}\u{966} AAAA BBBB CCCC DD"));
        let text = "AB12 CDEF GHIJ DE\u{966}\u{966} AAAA BBBB CCCC DD";
        assert!(
            found(text).iter().all(|(_, c)| *c != "IBAN"),
            "{:?}",
            found(text)
        );
        assert_eq!(
            found("iban: DE89 3704 0044 0532 0130 00"),
            [("DE89 3704 0044 0532 0130 00".to_owned(), "IBAN")]
        );
    }

    #[test]
    fn a_number_in_a_table_of_long_numbers_is_no_card() {
        // A number that passes the card checks, between two long constants.
        let table = "const T: [u64; 3] = [\n    16884225088663222131,\n    4111111111111111,\n    9686916182456720060,\n];";
        assert!(found(table).is_empty(), "{:?}", found(table));
        assert_eq!(
            found("card: 4111111111111111, exp 12/29"),
            [("4111111111111111".to_owned(), "CARD")]
        );
        assert_eq!(
            found("cards 4111 1111 1111 1111, 5500 0000 0000 0004"),
            [
                ("4111 1111 1111 1111".to_owned(), "CARD"),
                ("5500 0000 0000 0004".to_owned(), "CARD")
            ]
        );
    }

    #[test]
    fn cards_need_luhn_and_an_issuer() {
        assert_eq!(
            found("card 4111 1111 1111 1111 ok"),
            [("4111 1111 1111 1111".to_owned(), "CARD")]
        );
        assert!(found("4111 1111 1111 1112").is_empty(), "Luhn fails");
        assert!(
            found("id 550e8400-e29b-41d4-a716-446655440000")
                .iter()
                .all(|(_, c)| *c != "CARD")
        );
        assert!(found("0000000000000000").is_empty());
    }

    /// Each network's test numbers, at the lengths it issues, are cards; the same
    /// prefixes at lengths their network never issues are not, Luhn or no Luhn.
    #[test]
    fn cards_have_their_networks_lengths() {
        for number in [
            "4222222222222",    // Visa, 13
            "4111111111111111", // Visa, 16
            "5555555555554444", // Mastercard
            "2223003122003222", // Mastercard 2-series
            "378282246310005",  // American Express, 15
            "6011111111111117", // Discover
            "30569309025904",   // Diners Club, 14
            "38520000023237",   // Diners Club, 14
            "3530111333300000", // JCB
            "6200000000000005", // UnionPay
        ] {
            let text = format!("card: {number}");
            assert_eq!(found(&text), [(number.to_owned(), "CARD")], "{number}");
        }
        for number in [
            "2501999792984",    // 2-series, 13 digits
            "510510510510515",  // Mastercard prefix, 15 digits
            "3782822463100052", // American Express prefix, 16 digits
        ] {
            let text = format!("card: {number}");
            assert!(found(&text).iter().all(|(_, c)| *c != "CARD"), "{number}");
        }
    }

    #[test]
    fn iban_and_ssn_are_validated() {
        assert_eq!(
            found("IBAN GB82 WEST 1234 5698 7654 32"),
            [("GB82 WEST 1234 5698 7654 32".to_owned(), "IBAN")]
        );
        assert!(found("GB82 WEST 1234 5698 7654 33").is_empty());
        assert_eq!(
            found("ssn 536-22-1234"),
            [("536-22-1234".to_owned(), "SSN")]
        );
        for t in [
            "000-12-3456",
            "666-12-3456",
            "912-12-3456",
            "123-45-6789",
            "536-00-1234",
        ] {
            assert!(found(t).is_empty(), "{t}");
        }
    }

    #[test]
    fn ips_are_parsed_with_exemptions_and_version_contexts() {
        assert_eq!(found("host 10.1.2.3 up"), [("10.1.2.3".to_owned(), "IP")]);
        for t in [
            "127.0.0.1",
            "0.0.0.0",
            "169.254.1.1",
            "224.0.0.1",
            "255.255.255.255",
            "192.0.2.10",
            "198.51.100.7",
            "203.0.113.9",
            "v1.2.3.4",
            "version 1.2.3.4",
            "1.2.3.4.5",
            "999.1.1.1",
            "::1",
            "fe80::1",
            "2001:db8::1",
        ] {
            assert!(found(t).iter().all(|(_, c)| *c != "IP"), "{t}");
        }
        assert_eq!(
            found("peer 2a00:1450:4001:81b::200e ok"),
            [("2a00:1450:4001:81b::200e".to_owned(), "IP")]
        );
        assert!(found("Foo::Bar dec::add a::b").is_empty());
    }

    #[test]
    fn phones_need_e164_or_context() {
        assert_eq!(
            found("call +1 415 555 2671 now"),
            [("+1 415 555 2671".to_owned(), "PHONE")]
        );
        assert_eq!(
            found("Phone: (415) 555-2671"),
            [("(415) 555-2671".to_owned(), "PHONE")]
        );
        assert!(found("released 2010-04-01, build 4155552671").is_empty());
        // The fewest digits taken: seven after a context word, eight after a `+`.
        assert_eq!(
            found("call 12 34 567 now"),
            [("12 34 567".to_owned(), "PHONE")]
        );
        assert!(found("call 12 34 56 now").is_empty());
        assert_eq!(
            found("x +1 234 5678"),
            [("+1 234 5678".to_owned(), "PHONE")]
        );
        assert!(found("x +1 234 567").is_empty());
        // A context word that is a method or a function in code labels nothing.
        for t in [
            "Array.prototype.indexOf.call(obj, 4294967297)",
            "let n = cell(4155552671);",
            "Foo::call 4155552671",
        ] {
            assert!(found(t).is_empty(), "{t}");
        }
        assert_eq!(
            found("call 4155552671"),
            [("4155552671".to_owned(), "PHONE")]
        );
        // ISO 8601 dates with an expanded (signed, six-digit) year are dates.
        for t in [
            "\"+275760-09-13\",",
            "min: \"+100000-01-31\"",
            "\"+275760-09\"",
        ] {
            assert!(found(t).is_empty(), "{t}");
        }
        assert_eq!(
            found("tel: +275760-19-13"),
            [("+275760-19-13".to_owned(), "PHONE")]
        );
    }

    #[test]
    fn names_only_in_structured_places() {
        assert!(
            found("Signed-off-by: Jane Q. Doe <jane@acme.io>")
                .contains(&("Jane Q. Doe".to_owned(), "PERSON"))
        );
        assert!(
            found(" * @author Max Mustermann").contains(&("Max Mustermann".to_owned(), "PERSON"))
        );
        assert!(
            found(r#""author": "Ada Lovelace <ada@math.org>","#)
                .contains(&("Ada Lovelace".to_owned(), "PERSON"))
        );
        assert!(
            found("Copyright (c) 2019 Zachary Rice")
                .contains(&("Zachary Rice".to_owned(), "PERSON"))
        );
        assert!(
            found("Copyright (c) 2019 Zachary Rice. All rights reserved.")
                .contains(&("Zachary Rice".to_owned(), "PERSON"))
        );
        assert!(
            found("// Copyright 2024 Raven Authors. SPDX-License-Identifier: Apache-2.0")
                .iter()
                .all(|(_, c)| *c != "PERSON")
        );
        assert!(
            found("Copyright (c) 2019 Google Inc.")
                .iter()
                .all(|(_, c)| *c != "PERSON")
        );
        assert!(found("let Name = Value; // The Quick Brown Fox").is_empty());
    }
}
