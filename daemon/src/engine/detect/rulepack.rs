//! S2 (and the S7 `generic-*` rules): a rule-pack engine that reads gitleaks' TOML
//! schema and applies it the way gitleaks does.
//!
//! Per text: one ASCII-case-insensitive Aho-Corasick pass over every rule's keywords
//! selects the rules to run (rules without keywords always run); each selected rule's
//! regex (compiled for bytes, ASCII classes, size-limited) yields a secret — `secretGroup`,
//! else the first non-empty group, else the whole match — which must beat the rule's
//! entropy threshold and escape the global and per-rule allowlists (`regexes` against
//! `regexTarget`, `stopwords`, `paths`, `condition = OR|AND`). A `gitleaks:allow` marker
//! on the line suppresses a finding. The packs ship in `daemon/rules/`.
//!
//! Searches read less than a regex pass per rule where that provably changes nothing:
//! a rule whose every match begins with one of its keywords (and is at most
//! [`MAX_ANCHORED_MATCH`] bytes long) is tried only at those keywords' hits, and a rule
//! whose every match holds a long run of one byte class skips a text without such a run
//! (rules that need the same class share one reading of the text).

use super::family::{Facts, Family, Sink};
use super::values::shannon_entropy;
use super::{Candidate, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::byteclass::{ByteClass, class_runs};
use crate::engine::prepass::keywords::KeywordHits;
use crate::engine::prepass::keywords::WordIds;
use crate::engine::prepass::runs::BASE64_BYTES;
use crate::engine::prepass::runs::LONG_RUN;
use crate::engine::prepass::runs::LongRuns;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder};
use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;
use std::sync::OnceLock;

/// gitleaks' default configuration (MIT, notice in `rules/gitleaks.LICENSE`).
pub(crate) const GITLEAKS_TOML: &str = include_str!("../../../rules/gitleaks.toml");
/// redctx's own rules in the same schema, for shapes gitleaks lacks.
const REDCTX_TOML: &str = include_str!("../../../rules/redctx.toml");

/// Rules of the vendored pack that another family covers better: `generic-api-key` is
/// replaced by S3 (strong keys, no entropy floor) and its S7 weak tier, which judge the
/// key by its head word instead of any keyword nearby (`OAuthClientId`, `PrivateKey =
/// ed25519.PrivateKey` and `HashPassword("password", salt)` are not secrets);
/// `kubernetes-secret-yaml` captures key and value together where S3/S8 take the value;
/// `private-key` takes any 64 characters between the armour lines, code included, where
/// S1 reads the body as key material.
const REPLACED_RULES: &[&str] = &["generic-api-key", "kubernetes-secret-yaml", "private-key"];

/// How many rules of (gitleaks' pack, ours) run: every `[[rules]]` table minus the
/// vendored rules in [`REPLACED_RULES`]. Counted on the text, so receipts can name the
/// packs without compiling them.
pub(crate) fn active_rule_counts() -> (usize, usize) {
    let count = |toml: &str| toml.lines().filter(|l| l.trim_end() == "[[rules]]").count();
    let replaced = REPLACED_RULES
        .iter()
        .filter(|id| GITLEAKS_TOML.contains(&format!("id = \"{id}\"")))
        .count();
    (count(GITLEAKS_TOML) - replaced, count(REDCTX_TOML))
}

/// Compiled regexes are capped at this many bytes each (gitleaks-sized patterns fit).
const REGEX_SIZE_LIMIT: usize = 8 << 20;

#[derive(Deserialize, Default)]
struct PackToml {
    #[serde(default)]
    allowlist: Option<AllowlistToml>,
    #[serde(default)]
    allowlists: Vec<AllowlistToml>,
    #[serde(default)]
    rules: Vec<RuleToml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleToml {
    id: String,
    regex: Option<String>,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    #[serde(default)]
    keywords: Vec<String>,
    path: Option<String>,
    allowlist: Option<AllowlistToml>,
    #[serde(default)]
    allowlists: Vec<AllowlistToml>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct AllowlistToml {
    condition: Option<String>,
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    commits: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

struct Allowlist {
    and: bool,
    target: Target,
    regexes: Vec<Regex>,
    stopwords: Option<AhoCorasick>,
    paths: Vec<Regex>,
    has_commits: bool,
}

impl Allowlist {
    fn compile(a: &AllowlistToml, errors: &mut Vec<String>) -> Allowlist {
        let target = match a.regex_target.as_deref() {
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            _ => Target::Secret,
        };
        let regexes = a
            .regexes
            .iter()
            .filter_map(|r| compile(r, errors))
            .collect();
        let paths = a.paths.iter().filter_map(|r| compile(r, errors)).collect();
        let stopwords = if a.stopwords.is_empty() {
            None
        } else {
            let words: Vec<String> = a.stopwords.iter().map(|w| w.to_lowercase()).collect();
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .build(&words)
                .ok()
        };
        Allowlist {
            and: a
                .condition
                .as_deref()
                .is_some_and(|c| c.eq_ignore_ascii_case("and")),
            target,
            regexes,
            stopwords,
            paths,
            has_commits: !a.commits.is_empty(),
        }
    }

    /// gitleaks semantics: OR — any listed check allows; AND — every listed check must.
    fn allows(&self, path: &str, secret: &[u8], matched: &[u8], line: &[u8]) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => matched,
            Target::Line => line,
        };
        let path_ok = || self.paths.iter().any(|p| p.is_match(path.as_bytes()));
        let regex_ok = || self.regexes.iter().any(|r| r.is_match(target));
        let stop_ok = || {
            self.stopwords
                .as_ref()
                .is_some_and(|ac| ac.is_match(secret))
        };
        if self.and {
            let mut any = false;
            if self.has_commits {
                return false; // no commit context here: an AND on commits never holds
            }
            if !self.paths.is_empty() {
                any = true;
                if !path_ok() {
                    return false;
                }
            }
            if !self.regexes.is_empty() {
                any = true;
                if !regex_ok() {
                    return false;
                }
            }
            if self.stopwords.is_some() {
                any = true;
                if !stop_ok() {
                    return false;
                }
            }
            any
        } else {
            (!self.paths.is_empty() && path_ok()) || regex_ok() || stop_ok()
        }
    }
}

struct Rule {
    detector: &'static str,
    priority: u8,
    /// Pattern source (braces escaped); compiled on first use so a process pays only
    /// for the rules its texts activate.
    source: String,
    regex: OnceLock<Option<Regex>>,
    /// The pattern without its leading identifier prefixes, and how far back they reach
    /// (see [`Rule::for_each_match`]); compiled with `regex`.
    unprefixed: OnceLock<Option<(Regex, usize)>>,
    /// The rule's keywords, as indices into [`RulePack::keywords`].
    keyword_ids: Vec<usize>,
    /// Which keywords start every match of the searched pattern; built with `regex`.
    anchor: OnceLock<Option<Anchor>>,
    /// A run of one byte class that every match holds, when a long one exists (see
    /// [`required_run`]): a text without one is not searched. Built with `regex`.
    /// (length, class, whether the class lies inside [`BASE64_BYTES`]).
    run_gate: OnceLock<Option<(usize, ByteClass, bool)>>,
    secret_group: usize,
    entropy: Option<f64>,
    generic: bool,
    path: Option<Regex>,
    allowlists: Vec<Allowlist>,
}

/// A compiled set of gitleaks-schema rules.
pub struct RulePack {
    rules: Vec<Rule>,
    /// The rules' keywords; keyword i belongs to rules `kw_rules[i]`.
    keyword_list: Vec<String>,
    kw_rules: Vec<Vec<usize>>,
    always: Vec<usize>,
    global: Vec<Allowlist>,
    /// The global allowlists' path patterns, honoured ones only, as one set: a path is
    /// tested once per text instead of once per pattern.
    global_paths: RegexSet,
    /// Rules or patterns that failed to load (empty for the built-in packs; a unit
    /// test holds it so).
    #[cfg_attr(not(test), allow(dead_code))]
    pub errors: Vec<String>,
}

/// Go RE2 reads a `{` that does not start a repetition as a literal; Rust's parser
/// rejects it. Escape such braces (and their stray `}`) outside character classes.
pub fn escape_stray_braces(pat: &str) -> String {
    let b = pat.as_bytes();
    let mut out = String::with_capacity(pat.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && i + 1 < b.len() {
            let ch_end = next_char_end(pat, i + 1);
            out.push_str(&pat[i..ch_end]);
            i = ch_end;
            continue;
        }
        if in_class {
            if c == b']' {
                in_class = false;
            }
        } else if c == b'[' {
            in_class = true;
            // A leading `]` or `^]` is a literal member.
            let mut j = i + 1;
            if j < b.len() && b[j] == b'^' {
                j += 1;
            }
            if j < b.len() && b[j] == b']' {
                out.push_str(&pat[i..=j]);
                i = j + 1;
                continue;
            }
        } else if c == b'{' {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let digits = j > i + 1;
            if digits && j < b.len() && b[j] == b',' {
                j += 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
            }
            if digits && j < b.len() && b[j] == b'}' {
                out.push_str(&pat[i..=j]);
                i = j + 1;
                continue;
            }
            out.push_str("\\{");
            i += 1;
            continue;
        } else if c == b'}' {
            out.push_str("\\}");
            i += 1;
            continue;
        }
        let ch_end = next_char_end(pat, i);
        out.push_str(&pat[i..ch_end]);
        i = ch_end;
    }
    out
}

fn next_char_end(s: &str, i: usize) -> usize {
    let mut j = i + 1;
    while j < s.len() && !s.is_char_boundary(j) {
        j += 1;
    }
    j
}

/// What [`compile`] hands the regex builder for a gitleaks pattern.
fn compile_source(pat: &str) -> String {
    format!("(?-u){}", escape_stray_braces(pat))
}

/// `pat` parsed as [`compile`] reads it, for questions about its shape.
fn parse_hir(pat: &str) -> Option<regex_syntax::hir::Hir> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(&compile_source(pat))
        .ok()
}

fn compile(pat: &str, errors: &mut Vec<String>) -> Option<Regex> {
    match RegexBuilder::new(&compile_source(pat))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
    {
        Ok(r) => Some(r),
        Err(e) => {
            errors.push(format!("{pat}: {e}"));
            None
        }
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl Family for RulePack {
    fn name(&self) -> &'static str {
        "S2 provider tokens"
    }

    fn words(&self) -> Vec<&str> {
        self.keywords().iter().map(String::as_str).collect()
    }

    fn scan(&self, f: &Facts, words: WordIds, out: &mut Sink) {
        self.scan_selected(
            f.text,
            f.rel_path,
            f.hits,
            words,
            f.runs,
            &mut out.candidates,
        );
    }
}

/// Every match of a regex, each with every group's span.
#[cfg(test)]
pub(super) type Spans = Vec<Vec<Option<(usize, usize)>>>;

/// Lazy runs of identifier bytes that many gitleaks rules open with (`(?i)` or `(?i:`
/// may come before the second), each able to reach back this many bytes.
const IDENTIFIER_PREFIX: &str = r"[\w.-]{0,50}?";
const IDENTIFIER_PREFIX_REACH: usize = 50;

/// `pat` without its leading [`IDENTIFIER_PREFIX`]es, with their total reach; `None`
/// when it has none or could match an empty string (the search in
/// [`Rule::for_each_match`] assumes every match moves forward).
fn unprefixed(pat: &str) -> Option<(String, usize)> {
    let mut head = String::new();
    let mut rest = pat;
    let mut reach = 0;
    loop {
        if let Some(r) = rest.strip_prefix(IDENTIFIER_PREFIX) {
            rest = r;
            reach += IDENTIFIER_PREFIX_REACH;
        } else if let Some(flag) = ["(?i)", "(?i:"].into_iter().find(|f| rest.starts_with(f)) {
            head.push_str(flag);
            rest = &rest[flag.len()..];
        } else {
            break;
        }
    }
    let src = head + rest;
    let can_be_empty =
        parse_hir(&src).is_none_or(|hir| hir.properties().minimum_len().is_none_or(|n| n == 0));
    (reach > 0 && !can_be_empty).then_some((src, reach))
}

/// Keywords that start every match of a rule's searched pattern (the unprefixed one when
/// there is one), and that pattern compiled for anchored searches.
struct Anchor {
    /// Indices into [`RulePack::keywords`].
    words: Vec<usize>,
    search: regex_automata::meta::Regex,
}

/// One anchored attempt costs about as much as the pattern's prefilter spends on this
/// many bytes; with more starts than one per this many bytes, the whole text is searched.
const BYTES_PER_ANCHORED_TRY: usize = 64;

/// Longest match of a pattern searched anchored at keyword hits: each attempt then reads
/// at most this many bytes, so the attempts together read at most this many times the
/// number of hits (a pattern with unbounded matches, tried at hits that all lie in one
/// long run it accepts, would read that run once per hit).
const MAX_ANCHORED_MATCH: usize = 1024;

/// The keywords among `keywords` (lower-case, `(index, word)`) such that every match of
/// `pat` begins with one of them, ASCII case-insensitively: `pat`'s prefix literals (see
/// `regex_syntax`'s extractor) must be a finite set, each starting with such a keyword.
/// `None` when no such set exists (a class or repetition opens the pattern, or the
/// keywords sit further in), or when a match may be longer than [`MAX_ANCHORED_MATCH`].
/// The keyword scan then reports every place a match can start.
fn anchor_words(pat: &str, keywords: &[(usize, &str)]) -> Option<Vec<usize>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let hir = parse_hir(pat)?;
    if hir
        .properties()
        .maximum_len()
        .is_none_or(|len| len > MAX_ANCHORED_MATCH)
    {
        return None;
    }
    let seq = Extractor::new()
        .kind(ExtractKind::Prefix)
        .limit_total(512)
        .extract(&hir);
    let literals = seq.literals()?;
    if literals.is_empty() {
        return None;
    }
    let mut words = Vec::new();
    for lit in literals {
        let lower = lit.as_bytes().to_ascii_lowercase();
        let before = words.len();
        words.extend(
            keywords
                .iter()
                .filter(|(_, k)| !k.is_empty() && lower.starts_with(k.as_bytes()))
                .map(|&(i, _)| i),
        );
        if words.len() == before {
            return None;
        }
    }
    words.sort_unstable();
    words.dedup();
    Some(words)
}

/// Shortest run worth a gate: shorter runs of a rule's class are common in any text.
const MIN_GATE_RUN: usize = 16;

/// The runs of each byte class asked about in one text, read as far as the questions
/// needed. Rules share a handful of classes (`[a-zA-Z0-9]`, hex digits, base64), and
/// finding a class's runs is a pass over the text: at most one pass per class instead
/// of one per rule, still stopping at the first run long enough. A class inside
/// [`BASE64_BYTES`] asked for a run of [`LONG_RUN`] bytes or more (the Twilio SID and
/// NKEY rules, which have no keywords and are asked about in every text) is read only
/// inside the text's [`LongRuns`], which the decoder finds anyway: each such run lies
/// in one (unless those runs are much of the text, which is then read whole).
struct LongestRuns<'r> {
    text: &'r LongRuns<'r>,
    /// (class, its longest run read so far, where reading stopped).
    known: Vec<(&'r ByteClass, usize, usize)>,
    /// (class, length, whether the long runs hold a run of it that long).
    inside_long: Vec<(&'r ByteClass, usize, bool)>,
}

impl<'r> LongestRuns<'r> {
    /// Nothing read yet of the text of `text`.
    fn new(text: &'r LongRuns<'r>) -> LongestRuns<'r> {
        LongestRuns {
            text,
            known: Vec::new(),
            inside_long: Vec::new(),
        }
    }

    /// Whether the text holds a run of at least `len` bytes of `class` (`len` at least
    /// [`MIN_GATE_RUN`]; `in_long`: the class lies inside [`BASE64_BYTES`]).
    fn has_run(&mut self, class: &'r ByteClass, in_long: bool, len: usize) -> bool {
        debug_assert!(len >= MIN_GATE_RUN);
        if in_long && len >= LONG_RUN {
            if let Some(&(.., found)) = self
                .inside_long
                .iter()
                .find(|(c, l, _)| *c == class && *l == len)
            {
                return found;
            }
            if let Some(found) = self.text.has_run(class, len) {
                self.inside_long.push((class, len, found));
                return found;
            }
        }
        let bytes = self.text.bytes();
        let i = match self.known.iter().position(|(c, ..)| *c == class) {
            Some(i) => i,
            None => {
                self.known.push((class, 0, 0));
                self.known.len() - 1
            }
        };
        let (_, longest, read) = &mut self.known[i];
        if *longest >= len {
            return true;
        }
        for (start, end) in class_runs(bytes, *read, MIN_GATE_RUN, class) {
            *longest = (*longest).max(end - start);
            *read = end;
            if end - start >= len {
                return true;
            }
        }
        *read = bytes.len();
        false
    }
}

/// The longest run of bytes of one class that every match of `hir` holds, as `(length,
/// class)`: a repetition of a class at least `length` times that the pattern cannot
/// skip (it sits in the top-level sequence, in groups, or in a repetition taken at
/// least once). `None` when there is none.
fn required_run(hir: &regex_syntax::hir::Hir) -> Option<(usize, ByteClass)> {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Capture(group) => required_run(&group.sub),
        HirKind::Concat(parts) => parts
            .iter()
            .filter_map(required_run)
            .max_by_key(|(len, _)| *len),
        HirKind::Repetition(rep) if rep.min >= 1 => match rep.sub.kind() {
            HirKind::Class(Class::Bytes(class)) => {
                let member = |b: u8| {
                    class
                        .ranges()
                        .iter()
                        .any(|r| (r.start()..=r.end()).contains(&b))
                };
                Some((rep.min as usize, ByteClass::from_fn(member)))
            }
            HirKind::Class(Class::Unicode(class)) => {
                // Only an ASCII class is a class of bytes.
                let ranges = class.ranges();
                if ranges.iter().any(|r| !r.end().is_ascii()) {
                    return None;
                }
                let member = |b: u8| {
                    ranges
                        .iter()
                        .any(|r| (r.start()..=r.end()).contains(&char::from(b)))
                };
                Some((rep.min as usize, ByteClass::from_fn(member)))
            }
            _ => required_run(&rep.sub),
        },
        _ => None,
    }
}

/// `pat` as [`compile`] builds it, for anchored searches (`regex::bytes` has none).
fn compile_meta(pat: &str) -> Option<regex_automata::meta::Regex> {
    use regex_automata::{meta, util::syntax};
    meta::Regex::builder()
        .syntax(syntax::Config::new().utf8(false))
        .configure(
            meta::Config::new()
                .utf8_empty(false)
                .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                .hybrid_cache_capacity(REGEX_SIZE_LIMIT),
        )
        .build(&compile_source(pat))
        .ok()
}

impl Rule {
    fn compiled(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| compile(&self.source, &mut Vec::new()))
            .as_ref()
    }

    fn unprefixed(&self) -> Option<&(Regex, usize)> {
        self.unprefixed
            .get_or_init(|| {
                let (src, reach) = unprefixed(&self.source)?;
                Some((compile(&src, &mut Vec::new())?, reach))
            })
            .as_ref()
    }

    /// Whether the text of `runs` may hold a match: false only when the pattern needs a
    /// long run of one byte class and the text has none.
    fn may_match<'r>(&'r self, runs: &mut LongestRuns<'r>) -> bool {
        let gate = self.run_gate.get_or_init(|| {
            let hir = parse_hir(&self.source)?;
            let (len, class) = required_run(&hir).filter(|(len, _)| *len >= MIN_GATE_RUN)?;
            let in_long = class.is_subset(&BASE64_BYTES);
            Some((len, class, in_long))
        });
        gate.as_ref()
            .is_none_or(|(len, class, in_long)| runs.has_run(class, *in_long, *len))
    }

    /// The searched pattern's anchor, given the pack's keyword list.
    fn anchor(&self, keywords: &[String]) -> Option<&Anchor> {
        self.anchor
            .get_or_init(|| {
                // The pattern `for_each_match` searches: the unprefixed one when it
                // compiled, else the whole.
                let src = match (self.unprefixed(), unprefixed(&self.source)) {
                    (Some(_), Some((src, _))) => src,
                    _ => self.source.clone(),
                };
                let own: Vec<(usize, &str)> = self
                    .keyword_ids
                    .iter()
                    .map(|&i| (i, keywords[i].as_str()))
                    .collect();
                let words = anchor_words(&src, &own)?;
                Some(Anchor {
                    words,
                    search: compile_meta(&src)?,
                })
            })
            .as_ref()
    }

    /// Calls `f` with every match of the rule's regex in `bytes`, as `captures_iter`
    /// reports them. A lazy identifier prefix at the start of a pattern makes the regex
    /// engine try up to 50 starts before each keyword (ten times slower on text that
    /// names `jira` in every file), so the search runs the pattern without it first:
    /// every match of the whole pattern starting at `s` holds a match of the
    /// unprefixed one starting in `s..=s + reach`, and every match of the unprefixed
    /// one is a match of the whole, so the whole pattern's next match starts in
    /// `t - reach..=t`, where `t` is the unprefixed pattern's next match; searching the
    /// whole pattern from there gives the very match (groups and all) `captures_iter`
    /// would have given.
    ///
    /// `starts`, when given, are the offsets where the searched pattern (the unprefixed
    /// one, else the whole) can start: every match of it begins there, so the next one
    /// is found by anchored attempts at those offsets instead of a search of the text.
    fn for_each_match<'r>(
        &'r self,
        bytes: &[u8],
        starts: Option<(&Anchor, &[usize])>,
        runs: &mut LongestRuns<'r>,
        mut f: impl FnMut(regex::bytes::Captures<'_>),
    ) {
        let Some(regex) = self.compiled() else {
            return;
        };
        if starts.is_none() && !self.may_match(runs) {
            return;
        }
        let (search, reach) = match self.unprefixed() {
            Some((unprefixed, reach)) => (unprefixed, *reach),
            None if starts.is_none() => {
                regex.captures_iter(bytes).for_each(f);
                return;
            }
            None => (regex, 0),
        };
        let mut tried = 0; // starts already tried, when anchored
        let mut next_start = |pos: usize| -> Option<usize> {
            let Some((anchor, starts)) = starts else {
                return search.find_at(bytes, pos).map(|m| m.start());
            };
            while let Some(&at) = starts.get(tried) {
                tried += 1;
                let input = regex_automata::Input::new(bytes)
                    .range(at..)
                    .anchored(regex_automata::Anchored::Yes);
                if at >= pos && anchor.search.is_match(input) {
                    return Some(at);
                }
            }
            None
        };
        let mut pos = 0;
        while let Some(t) = next_start(pos) {
            let from = t.saturating_sub(reach).max(pos);
            let Some(caps) = regex.captures_at(bytes, from) else {
                return; // cannot happen: the searched pattern's match is one of the whole
            };
            pos = caps.get(0).map_or(bytes.len(), |m| m.end());
            f(caps);
        }
    }
}

impl RulePack {
    /// The loaded rule `id` (without its family prefix).
    #[cfg(test)]
    fn rule(&self, id: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.detector.split_once('.').is_some_and(|(_, r)| r == id))
    }

    /// What `captures_iter` of `rule`'s whole pattern reports on `text`, and what its
    /// faster search reports from `starts` (see [`Rule::for_each_match`]): every match
    /// with every group's span.
    #[cfg(test)]
    fn both_searches(
        rule: &Rule,
        text: &str,
        starts: Option<(&Anchor, &[usize])>,
    ) -> Option<(Spans, Spans)> {
        let spans = |caps: regex::bytes::Captures<'_>| {
            caps.iter()
                .map(|m| m.map(|m| (m.start(), m.end())))
                .collect::<Vec<_>>()
        };
        let want: Spans = rule
            .compiled()?
            .captures_iter(text.as_bytes())
            .map(spans)
            .collect();
        let mut got: Spans = Vec::new();
        let long_runs = LongRuns::new(text);
        let mut runs = LongestRuns::new(&long_runs);
        rule.for_each_match(text.as_bytes(), starts, &mut runs, |caps| {
            got.push(spans(caps))
        });
        Some((want, got))
    }

    /// For the rule `id`, when it searches without its identifier prefixes: what
    /// `captures_iter` reports on `text` and what the prefiltered search reports.
    #[cfg(test)]
    pub(super) fn unprefixed_search(&self, id: &str, text: &str) -> Option<(Spans, Spans)> {
        let rule = self.rule(id)?;
        unprefixed(&rule.source)?;
        Self::both_searches(rule, text, None)
    }

    /// For the rule `id`, when its pattern needs a long run of one byte class: whether
    /// `text` passes that gate and whether the whole pattern matches in `text`.
    #[cfg(test)]
    pub(super) fn run_gate(&self, id: &str, text: &str) -> Option<(bool, bool)> {
        let rule = self.rule(id)?;
        let long_runs = LongRuns::new(text);
        let passes = rule.may_match(&mut LongestRuns::new(&long_runs));
        rule.run_gate.get()?.as_ref()?;
        Some((passes, rule.compiled()?.is_match(text.as_bytes())))
    }

    /// For the rule `id`, when its searched pattern has an anchor: what `captures_iter`
    /// reports on `text` and what the anchored search reports (tried at every keyword
    /// start, however many).
    #[cfg(test)]
    pub(super) fn anchored_search(&self, id: &str, text: &str) -> Option<(Spans, Spans)> {
        let rule = self.rule(id)?;
        let anchor = rule.anchor(&self.keyword_list)?;
        let mut words = crate::engine::prepass::keywords::KeywordBuilder::default();
        let ids = words.add(&self.keyword_list);
        let starts = words
            .build()
            .expect("few words")
            .scan(text)
            .starts_of_any(ids, &anchor.words);
        Self::both_searches(rule, text, Some((anchor, &starts)))
    }

    /// Where `rule`'s searched pattern can start in a text of `len` bytes whose keyword
    /// occurrences are `hits`: ascending offsets, when the rule has an anchor and there
    /// are few enough of them for anchored attempts to beat a search of the text.
    fn anchor_starts<'r>(
        &'r self,
        rule: &'r Rule,
        hits: &KeywordHits,
        ids: WordIds,
        len: usize,
    ) -> Option<(&'r Anchor, Vec<usize>)> {
        let anchor = rule.anchor(&self.keyword_list)?;
        let starts = hits.starts_of_any(ids, &anchor.words);
        (starts.len() * BYTES_PER_ANCHORED_TRY <= len).then_some((anchor, starts))
    }

    /// The built-in packs: gitleaks' default rules plus redctx's own additions.
    pub fn builtin() -> RulePack {
        RulePack::from_tomls(&[GITLEAKS_TOML, REDCTX_TOML])
    }

    /// Compiles one or more gitleaks-schema TOML documents into one pack. Rules that do
    /// not load are skipped and listed in [`RulePack::errors`].
    pub fn from_tomls(docs: &[&str]) -> RulePack {
        let mut errors = Vec::new();
        let mut rules = Vec::new();
        let mut global = Vec::new();
        let mut global_paths = Vec::new();
        let mut kw_index: Vec<(String, usize)> = Vec::new();
        let mut always = Vec::new();
        for doc in docs {
            let pack: PackToml = match toml::from_str(doc) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("rule pack does not parse: {e}"));
                    continue;
                }
            };
            for a in pack.allowlist.iter().chain(pack.allowlists.iter()) {
                // Path allowlists exist to keep scanners out of dependency trees; a
                // redactor still has to hide secrets there, so only lockfile-like and
                // binary paths are honoured.
                for p in &a.paths {
                    if p.contains("vendor")
                        || p.contains("node_modules")
                        || p.contains("bower")
                        || p.contains("lib(?:64)?")
                    {
                        continue;
                    }
                    if compile(p, &mut errors).is_some() {
                        global_paths.push(compile_source(p));
                    }
                }
                let mut no_paths = AllowlistToml {
                    paths: Vec::new(),
                    ..AllowlistToml::default()
                };
                no_paths.condition.clone_from(&a.condition);
                no_paths.regex_target.clone_from(&a.regex_target);
                no_paths.regexes.clone_from(&a.regexes);
                no_paths.stopwords.clone_from(&a.stopwords);
                global.push(Allowlist::compile(&no_paths, &mut errors));
            }
            for r in pack.rules {
                if REPLACED_RULES.contains(&r.id.as_str()) {
                    continue;
                }
                let Some(re_src) = r.regex.as_deref() else {
                    continue;
                }; // path-only rules flag files, not spans
                // Automata are built on first use; a unit test builds every built-in one.
                let path = match r.path.as_deref() {
                    Some(p) => match compile(p, &mut errors) {
                        Some(p) => Some(p),
                        None => continue,
                    },
                    None => None,
                };
                let generic = r.id.starts_with("generic");
                let allowlists = r
                    .allowlist
                    .iter()
                    .chain(r.allowlists.iter())
                    .map(|a| Allowlist::compile(a, &mut errors))
                    .collect();
                let idx = rules.len();
                if r.keywords.is_empty() {
                    always.push(idx);
                }
                for k in &r.keywords {
                    kw_index.push((k.to_lowercase(), idx));
                }
                rules.push(Rule {
                    detector: leak(format!("{}.{}", if generic { "S7" } else { "S2" }, r.id)),
                    priority: if generic {
                        prio::GENERIC
                    } else {
                        prio::PROVIDER
                    },
                    source: re_src.to_owned(),
                    regex: OnceLock::new(),
                    unprefixed: OnceLock::new(),
                    keyword_ids: Vec::new(),
                    anchor: OnceLock::new(),
                    run_gate: OnceLock::new(),
                    secret_group: r.secret_group.unwrap_or(0),
                    entropy: r.entropy,
                    generic,
                    path,
                    allowlists,
                });
            }
        }
        let mut patterns: Vec<String> = Vec::new();
        let mut kw_rules: Vec<Vec<usize>> = Vec::new();
        for (k, idx) in kw_index {
            match patterns.iter().position(|p| *p == k) {
                Some(p) => kw_rules[p].push(idx),
                None => {
                    patterns.push(k);
                    kw_rules.push(vec![idx]);
                }
            }
        }
        for (k, owners) in kw_rules.iter().enumerate() {
            for &r in owners {
                rules[r].keyword_ids.push(k);
            }
        }
        let global_paths = RegexSetBuilder::new(&global_paths)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .unwrap_or_else(|e| {
                // Each pattern compiled alone; a set of them only fails on size. Without
                // it no path is allowlisted: every text is scanned (fail closed).
                errors.push(format!("global path allowlist: {e}"));
                RegexSet::empty()
            });
        RulePack {
            rules,
            keyword_list: patterns,
            kw_rules,
            always,
            global,
            global_paths,
            errors,
        }
    }

    /// Number of loaded rules.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the pack runs the rule `id` (replaced and path-only rules are not loaded),
    /// so tests can tell a rule's own verdict from a vacuous one.
    #[cfg(test)]
    pub fn loads(&self, id: &str) -> bool {
        self.rule(id).is_some()
    }

    /// Builds every rule's automaton now; returns the patterns that fail to build.
    #[cfg(test)]
    pub fn compile_all(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter(|r| r.compiled().is_none())
            .map(|r| r.detector.to_owned())
            .collect()
    }

    /// The rules' keywords (lowercase, deduplicated): [`RulePack::scan_selected`] asks
    /// which of them occur by their index in this list.
    pub fn keywords(&self) -> &[String] {
        &self.keyword_list
    }

    /// Appends the pack's findings in `text` to `out`, finding the keywords itself (the
    /// detector layer shares one keyword pass between families instead).
    #[cfg(test)]
    pub fn scan(&self, text: &str, rel_path: &str, out: &mut Vec<Candidate>) {
        let mut words = crate::engine::prepass::keywords::KeywordBuilder::default();
        let ids = words.add(&self.keyword_list);
        let hits = words.build().expect("few words").scan(text);
        self.scan_selected(text, rel_path, &hits, ids, &LongRuns::new(text), out);
    }

    /// Appends the pack's findings in `text` to `out`; `hits` holds the occurrences of
    /// [`RulePack::keywords`] in `text` (ASCII case-insensitively), registered as `ids`.
    #[inline(never)] // one frame per family in profiles
    pub fn scan_selected(
        &self,
        text: &str,
        rel_path: &str,
        hits: &KeywordHits,
        ids: WordIds,
        long_runs: &LongRuns,
        out: &mut Vec<Candidate>,
    ) {
        if self.global_paths.is_match(rel_path.as_bytes()) {
            return;
        }
        // The rules to run, in pack order: those without keywords and those whose
        // keywords occur.
        let mut active = self.always.clone();
        for k in hits.present_words(ids) {
            active.extend(&self.kw_rules[k]);
        }
        active.sort_unstable();
        active.dedup();
        let bytes = text.as_bytes();
        let mut runs = LongestRuns::new(long_runs);
        for rule in active.into_iter().map(|i| &self.rules[i]) {
            if let Some(p) = &rule.path
                && !p.is_match(rel_path.as_bytes())
            {
                continue;
            }
            let starts = self.anchor_starts(rule, hits, ids, bytes.len());
            let anchored = starts.as_ref().map(|(a, s)| (*a, s.as_slice()));
            rule.for_each_match(bytes, anchored, &mut runs, |caps| {
                let whole = caps.get(0).expect("group 0 always matches");
                let secret = if rule.secret_group > 0 {
                    caps.get(rule.secret_group)
                } else {
                    (1..caps.len())
                        .filter_map(|g| caps.get(g))
                        .find(|m| !m.is_empty())
                };
                let (mut s, mut e) =
                    secret.map_or((whole.start(), whole.end()), |m| (m.start(), m.end()));
                while s < e && matches!(bytes[s], b'\n' | b'\r') {
                    s += 1;
                }
                while e > s && matches!(bytes[e - 1], b'\n' | b'\r') {
                    e -= 1;
                }
                // Some rules capture the quotes around a value; the value is what we redact.
                if e - s >= 2 && matches!(bytes[s], b'"' | b'\'' | b'`') && bytes[e - 1] == bytes[s]
                {
                    s += 1;
                    e -= 1;
                }
                if s >= e {
                    return;
                }
                let secret_bytes = &bytes[s..e];
                let Ok(secret_str) = std::str::from_utf8(secret_bytes) else {
                    return;
                };
                if let Some(threshold) = rule.entropy {
                    if shannon_entropy(secret_str) <= threshold {
                        return;
                    }
                    if rule.generic && !secret_bytes.iter().any(u8::is_ascii_digit) {
                        return;
                    }
                }
                let line_start = bytes[..whole.start()]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |x| x + 1);
                let line_end = bytes[whole.end()..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |x| whole.end() + x);
                let line = &bytes[line_start..line_end];
                if line.windows(14).any(|w| w == b"gitleaks:allow") {
                    return;
                }
                let matched = &bytes[whole.start()..whole.end()];
                if self
                    .global
                    .iter()
                    .any(|a| a.allows(rel_path, secret_bytes, matched, line))
                {
                    return;
                }
                if rule
                    .allowlists
                    .iter()
                    .any(|a| a.allows(rel_path, secret_bytes, matched, line))
                {
                    return;
                }
                out.push(Candidate {
                    start: s,
                    end: e,
                    category: Category::SECRET,
                    detector: rule.detector,
                    priority: rule.priority,
                });
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(pack: &RulePack, text: &str) -> Vec<(String, &'static str)> {
        let mut out = Vec::new();
        pack.scan(text, "src/app.py", &mut out);
        out.into_iter()
            .map(|c| (text[c.start..c.end].to_owned(), c.detector))
            .collect()
    }

    #[test]
    fn global_path_allowlist_skips_lockfiles_and_binaries_but_not_dependency_trees() {
        let pack = RulePack::builtin();
        let text = "token = 'ghp_".to_owned() + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx'\n";
        let found = |path: &str| {
            let mut out = Vec::new();
            pack.scan(&text, path, &mut out);
            !out.is_empty()
        };
        for path in [
            "web/package-lock.json",
            "go.sum",
            "assets/Logo.PNG",
            "tools/gradlew",
            "Pipfile.lock",
            "gitleaks.toml",
        ] {
            assert!(!found(path), "{path} is allowlisted");
        }
        // Dependency trees are not honoured: a redactor still hides secrets there.
        for path in [
            "src/app.py",
            "node_modules/x/index.js",
            "vendor/github.com/x/y.go",
            "package-lock.json.bak",
        ] {
            assert!(found(path), "{path} is scanned");
        }
    }

    #[test]
    fn anchor_words_need_keyword_prefixes_and_bounded_matches() {
        let kw = [(0, "ghp_"), (1, "sk"), (2, "token")];
        // Every match starts with a keyword (case variants included).
        assert_eq!(
            anchor_words(r"\b(ghp_[0-9a-zA-Z]{36})\b", &kw),
            Some(vec![0])
        );
        assert_eq!(
            anchor_words(r"(?i)(?:ghp_|sk)[a-f0-9]{32}", &kw),
            Some(vec![0, 1])
        );
        // A branch that starts elsewhere, a keyword further in, an opening class.
        assert_eq!(anchor_words(r"(?:ghp_|gho_)[0-9a-z]{36}", &kw), None);
        assert_eq!(anchor_words(r"x_token[0-9a-z]{36}", &kw), None);
        assert_eq!(anchor_words(r"[a-z]sk[0-9]{20}", &kw), None);
        // Matches without a bound on their length are not tried at every hit.
        assert_eq!(anchor_words(r"ghp_[0-9a-zA-Z]{36,}", &kw), None);
        assert_eq!(
            anchor_words(&format!("sk[0-9a-f]{{{MAX_ANCHORED_MATCH}}}"), &kw),
            None
        );
    }

    #[test]
    fn builtin_packs_load_without_errors() {
        let pack = RulePack::builtin();
        assert!(pack.errors.is_empty(), "{:#?}", pack.errors);
        assert!(pack.len() > 220, "{}", pack.len());
        assert!(pack.compile_all().is_empty(), "{:?}", pack.compile_all());
    }

    #[test]
    fn stray_braces_are_escaped_outside_classes() {
        assert_eq!(
            escape_stray_braces(r"^\${(?:[A-Z_]+)}$"),
            r"^\$\{(?:[A-Z_]+)\}$"
        );
        assert_eq!(escape_stray_braces(r"a{2,3}[{}]"), r"a{2,3}[{}]");
        assert_eq!(escape_stray_braces(r"^\{\d{0,2}}$"), r"^\{\d{0,2}\}$");
    }

    #[test]
    fn secret_group_entropy_and_allowlist_follow_gitleaks() {
        let doc = r#"
[allowlist]
regexes = ['''^true$''']
[[rules]]
id = "demo"
regex = '''demo_key\s*=\s*"([a-z0-9]{8,})"'''
entropy = 2.5
keywords = ["demo_key"]
[[rules.allowlists]]
stopwords = ["example"]
"#;
        let pack = RulePack::from_tomls(&[doc]);
        assert!(pack.errors.is_empty());
        assert_eq!(
            hits(&pack, r#"demo_key = "q8w7e6r5t4""#),
            vec![("q8w7e6r5t4".to_owned(), "S2.demo")]
        );
        assert!(
            hits(&pack, r#"demo_key = "aaaaaaaaaa""#).is_empty(),
            "entropy floor"
        );
        assert!(
            hits(&pack, r#"demo_key = "example12345""#).is_empty(),
            "stopword"
        );
        assert!(
            hits(&pack, r#"demo_key = "q8w7e6r5t4" // gitleaks:allow"#).is_empty(),
            "inline marker"
        );
        assert!(
            hits(&pack, r#"other = "q8w7e6r5t4""#).is_empty(),
            "keyword prefilter"
        );
    }

    // True/false-positive examples from the vendored rules' own documentation shapes.
    #[test]
    fn provider_token_shapes() {
        let pack = RulePack::builtin();
        let tp = [
            (
                "token = 'ghp_".to_owned() + "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx'",
                "S2.github-pat",
            ),
            (
                "glpat-".to_owned() + "Jmw6hJh7z_pQ2b5S9rLn",
                "S2.gitlab-pat",
            ),
            (
                "AKIA".to_owned() + "Z2R5QW6ODJ3ZHBSY",
                "S2.aws-access-token",
            ),
            (
                "xoxb-".to_owned() + "263594206564-2343594206564-FGqddMF8t08v8N7Oq4i57vs1",
                "S2.slack-bot-token",
            ),
        ];
        for (text, det) in tp {
            let got = hits(&pack, &text);
            assert!(got.iter().any(|(_, d)| *d == det), "{text}: {got:?}");
        }
        // The AWS documentation key is allowlisted by its own rule.
        assert!(
            hits(&pack, "AKIAIOSFODNN7EXAMPLE")
                .iter()
                .all(|(_, d)| *d != "S2.aws-access-token")
        );
        // Low-entropy filler does not pass the entropy floor.
        assert!(hits(&pack, &("SK".to_owned() + &"a".repeat(32))).is_empty());
    }

    /// Questions about runs, asked in any order and shared between rules, get the
    /// answers a fresh look at the text gives, whether a class is read in the whole text
    /// or, inside [`BASE64_BYTES`], in the text's long runs.
    #[test]
    fn shared_run_answers_equal_fresh_ones() {
        use crate::engine::prepass::byteclass::ALNUM;
        let hex = ByteClass::new(b"0123456789abcdef", false);
        let base32 = ByteClass::new(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", false);
        let alnum = ByteClass::new(ALNUM, false);
        let word = ByteClass::concat(ALNUM, b"_-", false);
        // Outside base64 (`.`, a blank): always read in the whole text.
        let dotted = ByteClass::concat(ALNUM, b".", false);
        let spaced_hex = ByteClass::new(b"0123456789abcdef ", false);
        let classes = [
            (&hex, true),
            (&alnum, true),
            (&word, true),
            (&dotted, false),
            (&base32, true),
            (&spaced_hex, false),
        ];
        let pieces = [
            "a".repeat(20),
            "Q9".repeat(20),
            "f0".repeat(12),
            "SUABCDEFGH234567".repeat(2),
            "abcdef0123".to_owned(),
            "-".to_owned(),
            "_".to_owned(),
            "=".to_owned(),
            " ".to_owned(),
            "é".to_owned(),
            "x.y".to_owned(),
            "+/".to_owned(),
            // Prose, so that in some texts the long runs are a small part.
            "to be or not to be, that is the question; ".repeat(4),
            "x.y ".repeat(30),
        ];
        let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let questions = [30, 16, 50, 40, 41, 17, 24, 25, 64, 20, 56, 32, 19, 21];
        // Texts read whole (long runs are over a quarter of them), and texts whose long
        // runs alone are read.
        let mut read_inside = [0, 0];
        for text in crate::engine::testgen::texts(&pieces, 400, 12, 29) {
            let fresh = |class: &ByteClass, len: usize| {
                class_runs(text.as_bytes(), 0, len, class).next().is_some()
            };
            let long_runs = LongRuns::new(&text);
            read_inside[usize::from(long_runs.has_run(&hex, 20).is_some())] += 1;
            for rotation in 0..questions.len() {
                let mut runs = LongestRuns::new(&long_runs);
                for (k, &len) in questions.iter().cycle().skip(rotation).take(30).enumerate() {
                    let (class, in_long) = classes[k % classes.len()];
                    assert_eq!(class.is_subset(&BASE64_BYTES), in_long);
                    assert_eq!(
                        runs.has_run(class, in_long, len),
                        fresh(class, len),
                        "len {len} in {text:?}"
                    );
                }
            }
        }
        assert!(
            read_inside.iter().all(|&n| n >= 100),
            "both ways of reading were taken: {read_inside:?}"
        );
    }
}
