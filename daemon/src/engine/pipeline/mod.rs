//! The redaction pipeline (spec 5.4): stage order, markers, placeholders, path redaction.

use crate::engine::detect::{DetectContext, Detector, Finding};
use crate::engine::stages::folded::FoldedSet;
use crate::engine::stages::gate::{LiteralGated, has_ascii_fold_stand_in};
pub(crate) mod markers;

use crate::engine::placeholder::{self, Category, normalize_value};
use crate::engine::policy::{DetectorProfile, Mode, Policy};
use crate::engine::prepass::Seen;
use crate::engine::python::re::{
    FindCache, Finder, Guard, PyPattern, Splicer, shadow, substitute, substitute_into,
};
use crate::engine::python::text::is_py_space;
use crate::engine::stages::names::{ACRONYM, ByHeading, IDENTITY_NAME, ProperNames, TITLECASE};
use crate::engine::stages::patterns::{
    CODE_STAGES, EARLY_STAGES, EXTENDED_STAGES, IDENTITY_LINE, ORG_SUFFIX, PATH_TOKENS,
    PLACEHOLDER_GATE, PRIVATE_HOSTS, SPEAKER_LABEL, Stage,
};
use crate::engine::wordlists::{
    COMMON_CAPITALIZED_WORDS, DEFAULT_ALLOW_TERMS, HEADING_TERMS, MONTHS_AND_DAYS,
    PATH_ALLOW_TERMS, RESERVED_PLACEHOLDER_WORDS,
};
use markers::{Markers, line_breaks};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;

/// Per-category substitution counts of one redaction (every occurrence counts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<Category, u64>);

impl Counts {
    pub fn add(&mut self, category: Category, n: u64) {
        if n > 0 {
            *self.0.entry(category).or_default() += n;
        }
    }

    pub fn merge(&mut self, other: &Counts) {
        for (category, n) in &other.0 {
            self.add(*category, *n);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Options of one content redaction.
#[derive(Clone, Copy, Debug, Default)]
pub struct RedactOptions<'a> {
    /// Keep every line break a redacted value spanned, so line numbers do not shift.
    pub preserve_line_count: bool,
    /// The text is prose (Markdown, plain text, …). Only `Mode::Code` looks at this.
    pub prose: bool,
    /// Root-relative path of the file, a hint for the built-in detectors (`.env`, YAML,
    /// lockfiles, …). Empty when unknown.
    pub path: &'a str,
}

/// Redacted text plus what was replaced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    pub counts: Counts,
    /// Some placeholder carries the line breaks of its value (`preserve_line_count`):
    /// only then can the plain variant of the same text differ.
    pub kept_line_breaks: bool,
}

/// Failures of the engine itself; messages are fixed and never carry input.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum EngineError {
    #[error("Could not allocate internal redaction markers.")]
    NoMarkerBlock,
    #[error("Placeholder collision for {0}.")]
    Collision(Category),
    /// A built-in detector failed (a bug): the text is refused rather than served with
    /// only the baseline's redactions.
    #[error("A built-in detector failed on this text.")]
    DetectorFailed,
}

/// A compiled policy, ready to redact. Cheap to share between threads.
pub struct Engine {
    policy: Arc<Policy>,
    /// Configured-term matchers, in stage order (CLIENT, ORG, PERSON, SENSITIVE).
    terms: Vec<(Category, LiteralGated)>,
    /// Allow-list matcher (built-in + months/days + config `allow`), gated on its first
    /// words when the detector layer locates them.
    allow: Option<LiteralGated>,
    /// Casefolded allow list.
    allow_lookup: FoldedSet,
    /// Allow list plus heading words plus common capitalized words, casefolded.
    heading_lookup: FoldedSet,
    /// Normalized declared alias → (group entity hex, form suffix).
    alias_links: HashMap<String, (String, String)>,
    /// The built-in secret/PII detector layer, when the policy enables it.
    detector: Option<Detector>,
    /// The policy salt as a ready HMAC key.
    key: placeholder::SaltKey,
    /// Tells this engine's entries in a thread's placeholder memo from another's.
    id: u64,
}

/// Text for [`Engine::warm_up`]: one of everything the stages and detectors look for.
/// Every value is made up.
const WARM_UP_SAMPLE: &str = "# Warm-up Notes for Example Holdings Inc

Copyright 2024 Jane Example. SPDX-License-Identifier: Apache-2.0
Signed-off-by: Jane Example <jane@acme-mail.io>
@author John Sample
Attendees: Jane Example, John Sample
Speaker: Welcome from Globex Corporation and ACME GmbH.
\"author\": \"Jane Example <jane.example@mail.test>\",
DB_PASSWORD=hunter2-not-real-000
api_key: \"zq8r7t6y5u4i3o2p1a0s\"
password = \"correct-horse-battery\"
export TOKEN='abcd1234efgh5678ijkl'
Authorization: Bearer abcdefghijklmnopqrstuvwx.yz0123456789
Cookie: session=0123456789abcdef0123456789abcdef
curl -u admin:s3cretpass https://build.internal:8443/api?token=abc123def456ghi7
postgres://app:pa55word@db01.corp:5432/main
AKIAIOSFODNN7EXAMPLE ghp_abcdefghijklmnopqrstuvwxyz0123456789
eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlLW5vdC1yZWFs
$2b$12$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234
c2VjcmV0LXZhbHVlLWZvci13YXJtLXVwLW9ubHktbm90LXJlYWwtYXQtYWxs
0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
-----BEGIN PRIVATE KEY-----
MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEAwarmupnotreal
-----END PRIVATE KEY-----
Call +1 (555) 010-2030 or 555.010.2031; card 4111 1111 1111 1111; SSN 536-22-8741
IBAN DE89 3704 0044 0532 0130 00, host 10.0.0.7, 2001:db8::1, 00:1A:2B:3C:4D:5E
See https://docs.example.com/guide and www.example.net, mail ops@example.com, @handle_x
Ünïcödé Nämé Straße İstanbul ſtate \u{212A}elvin ٣٤٥ \u{a0}\u{2003}end
";

/// Entries one thread's placeholder memo holds before it starts over (a few MB).
const PLACEHOLDER_MEMO_ENTRIES: usize = 50_000;

/// Placeholders a thread made, for the engine that made them last. Starting over
/// empties the maps but keeps their capacity, so a long run does not regrow them.
#[derive(Default)]
struct PlaceholderMemo {
    engine: u64,
    len: usize,
    entries: foldhash::HashMap<Category, foldhash::HashMap<String, Rc<str>>>,
}

impl PlaceholderMemo {
    fn start_over(&mut self) {
        self.entries.values_mut().for_each(|m| m.clear());
        self.len = 0;
    }
}

thread_local! {
    static PLACEHOLDER_MEMO: std::cell::RefCell<PlaceholderMemo> =
        std::cell::RefCell::new(PlaceholderMemo::default());
}

/// Engine ids start at 1, so a fresh memo (engine 0) never matches one.
static NEXT_ENGINE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// State of one redaction call: markers and counts.
struct Call<'e> {
    engine: &'e Engine,
    markers: Markers,
    counts: Counts,
    preserve: bool,
    kept_line_breaks: bool,
}

impl Call<'_> {
    /// Replaces `value` with a marker for its placeholder (plus its line breaks when
    /// line counts are preserved).
    fn redact(&mut self, category: Category, value: &str) -> String {
        self.counts.add(category, 1);
        let placeholder = self.engine.placeholder(category, value);
        let mut marker = self.markers.stash(placeholder);
        if self.preserve {
            let breaks = line_breaks(value);
            self.kept_line_breaks |= !breaks.is_empty();
            marker.push_str(&breaks);
        }
        marker
    }

    /// Protects `value` verbatim from every later stage.
    fn protect(&mut self, value: &str) -> String {
        self.markers.stash(value)
    }
}

/// The text between stages, with its word-class [`shadow`] kept in step: stages that
/// change a few words splice the shadow instead of shadowing the whole text again.
struct Working {
    text: String,
    shadow: Shadow,
    /// The text lowercased, as [`FindCache::ascii_lower`]: literal-gated stages in a
    /// row (salt and secret assignments, configured terms) share it while none
    /// changes the text.
    ascii_lower: Option<Option<String>>,
    /// Where the literal-gated stages' literals start, from the detector layer's scan.
    starts: LiteralStarts,
    /// The text was ASCII when the pipeline began (its shadow then stays ASCII).
    ascii_source: bool,
}

/// Which of the [`LiteralStarts`] lists a stage takes its candidates from.
#[derive(Clone, Copy, Debug)]
enum Literals {
    /// The secret gate literals: `generic_secret`, `provider_tokens`.
    Secret,
    /// The configured terms' first words: the terms stages.
    Terms,
    /// The allow list's first words: the allow stage.
    Allow,
}

/// Where the literal-gated stages' literals start in the text (see
/// [`FindCache::literal_starts`]), as the detector layer's scan found them and moved
/// through every rewrite since ([`Splicer::move_starts`]); a list that cannot be moved
/// is dropped and its stages search for themselves.
#[derive(Default)]
struct LiteralStarts {
    secret: Option<Vec<usize>>,
    terms: Option<Vec<usize>>,
    allow: Option<Vec<usize>>,
}

impl LiteralStarts {
    fn list(&mut self, which: Literals) -> &mut Option<Vec<usize>> {
        match which {
            Literals::Secret => &mut self.secret,
            Literals::Terms => &mut self.terms,
            Literals::Allow => &mut self.allow,
        }
    }

    /// Moves the lists to the text `splicer` rewrites.
    fn move_through(&mut self, splicer: &Splicer<'_>) {
        for list in [&mut self.secret, &mut self.terms, &mut self.allow] {
            if let Some(starts) = list
                && !splicer.move_starts(starts)
            {
                *list = None;
            }
        }
    }
}

/// What is known of the shadow of [`Working::text`].
enum Shadow {
    /// The text is ASCII: it is its own shadow.
    Ascii,
    Known(String),
    Unknown,
}

impl Working {
    fn new(text: String) -> Working {
        let ascii_source = text.is_ascii();
        Working {
            text,
            shadow: if ascii_source {
                Shadow::Ascii
            } else {
                Shadow::Unknown
            },
            ascii_lower: None,
            starts: LiteralStarts::default(),
            ascii_source,
        }
    }

    /// The shadow, when known without computing it.
    fn known_shadow(&self) -> Option<&str> {
        match &self.shadow {
            Shadow::Ascii => Some(&self.text),
            Shadow::Known(s) => Some(s),
            Shadow::Unknown => None,
        }
    }

    /// What a `\b` pattern must search: the text itself when it is ASCII, else its
    /// shadow (computed now if unknown).
    fn boundary_hay(&mut self) -> &str {
        if let Shadow::Unknown = self.shadow {
            self.shadow = Shadow::Known(shadow(&self.text));
        }
        self.known_shadow().expect("shadow just made known")
    }

    /// One stage: every match of `finder` becomes `replace(match)`.
    fn apply<F: Finder + ?Sized>(&mut self, finder: &F, mut replace: impl FnMut(&str) -> String) {
        self.apply_at(finder, |_, m| replace(m));
    }

    /// As [`Working::apply`], `replace` also getting each match's start.
    fn apply_at<F: Finder + ?Sized>(
        &mut self,
        finder: &F,
        replace: impl FnMut(usize, &str) -> String,
    ) {
        self.substitute(finder, None, replace);
    }

    /// One baseline stage (see [`Stage::starts_from_scan`]).
    fn apply_stage(&mut self, stage: &Stage, mut replace: impl FnMut(&str) -> String) {
        let literals = stage.starts_from_scan.then_some(Literals::Secret);
        self.substitute(&*stage.finder, literals, |_, m| replace(m));
    }

    /// Every match of `finder` becomes `replace(start, match)`; with `literals`, the
    /// finder (a [`LiteralGated`]) is given that list of known starts.
    fn substitute<F: Finder + ?Sized>(
        &mut self,
        finder: &F,
        literals: Option<Literals>,
        replace: impl FnMut(usize, &str) -> String,
    ) {
        if finder.uses_word_boundary() {
            self.boundary_hay();
        }
        let mut starts = std::mem::take(&mut self.starts);
        let mut cache = FindCache {
            ascii_lower: self.ascii_lower.take(),
            literal_starts: literals.and_then(|which| starts.list(which).take()),
            ..FindCache::default()
        };
        if self.ascii_source && finder.uses_word_boundary() {
            // The shadow of an ASCII text stays ASCII through every rewrite (markers
            // become `\x07` bytes): the windowed search has no non-ASCII to look for.
            cache.non_ascii = Some((0, usize::MAX));
        }
        let hay = if finder.uses_word_boundary() {
            self.known_shadow().expect("boundary hay made known")
        } else {
            &self.text
        };
        let mut splicer = Splicer::new(&self.text, self.known_shadow());
        substitute_into(finder, hay, &mut splicer, &mut cache, replace);
        if let Some(which) = literals {
            *starts.list(which) = cache.literal_starts.take();
        }
        starts.move_through(&splicer);
        match splicer.finish() {
            Some((text, shadow)) => {
                self.text = text;
                self.shadow = shadow.map_or(Shadow::Unknown, Shadow::Known);
            }
            // Unchanged text: what the finders learnt of it still holds.
            None => self.ascii_lower = cache.ascii_lower,
        }
        self.starts = starts;
    }

    /// A literal-gated stage whose own scan for its literals would cost more than its
    /// pattern's search (the allow list's): it starts from the known starts when the
    /// detector layer's keyword pass listed them, else the plain pattern searches.
    fn substitute_at_known_starts(
        &mut self,
        gated: &LiteralGated,
        which: Literals,
        replace: impl FnMut(usize, &str) -> String,
    ) {
        if self.starts.list(which).is_some() {
            self.substitute(gated, Some(which), replace);
        } else {
            self.substitute(&gated.inner, None, replace);
        }
    }

    /// A stage that rewrites the text through a splicer, searching the boundary hay.
    fn splice(&mut self, f: impl FnOnce(&str, &mut Splicer<'_>)) {
        self.boundary_hay();
        let hay = self.known_shadow().expect("boundary hay made known");
        let mut splicer = Splicer::new(&self.text, Some(hay));
        f(hay, &mut splicer);
        if let Some((text, shadow)) = splicer.finish() {
            self.text = text;
            self.shadow = shadow.map_or(Shadow::Unknown, Shadow::Known);
            self.ascii_lower = None;
            self.starts = LiteralStarts::default();
        }
    }

    /// A stage that rewrites the text by other means.
    fn set(&mut self, text: String) {
        self.text = text;
        self.shadow = Shadow::Unknown;
        self.ascii_lower = None;
        self.starts = LiteralStarts::default();
    }
}

/// Python `re.escape(token)` length: which characters it escapes decides the order of
/// equally long alternatives, so the reference's ordering is reproduced exactly.
fn py_escape_len(token: &str) -> usize {
    token
        .chars()
        .map(|c| {
            if "()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c".contains(c) {
                2
            } else {
                1
            }
        })
        .sum()
}

fn is_term_separator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '_' | '-')
}

/// `compile_terms_pattern`: one case-insensitive alternation of terms whose words match
/// across any run of space, tab, `_` or `-`, longest pattern first, guarded by ASCII
/// letters/digits on both sides; with the first word of every term (every match starts
/// with one, for a [`LiteralGated`] scan).
fn compile_terms<'a>(
    terms: impl IntoIterator<Item = &'a str>,
) -> Option<(PyPattern, Vec<&'a str>)> {
    let mut seen = HashSet::new();
    let mut parts: Vec<(usize, String)> = Vec::new();
    let mut first_words: Vec<&str> = Vec::new();
    for term in terms {
        let cleaned = term.trim_matches(is_py_space);
        if cleaned.is_empty() {
            continue;
        }
        let tokens: Vec<&str> = cleaned
            .split(is_term_separator)
            .filter(|t| !t.is_empty())
            .collect();
        let key = placeholder::casefold(&tokens.join(" "));
        // Python's key keeps a leading/trailing separator run as a space.
        let key = format!(
            "{}{}{}",
            if cleaned.starts_with(is_term_separator) {
                " "
            } else {
                ""
            },
            key,
            if cleaned.ends_with(is_term_separator) && !tokens.is_empty() {
                " "
            } else {
                ""
            }
        );
        if !seen.insert(key) || tokens.is_empty() {
            continue;
        }
        first_words.push(tokens[0]);
        let py_len =
            tokens.iter().map(|t| py_escape_len(t)).sum::<usize>() + (tokens.len() - 1) * 8;
        let source = tokens
            .iter()
            .map(|t| regex::escape(t))
            .collect::<Vec<_>>()
            .join(r"[ \t_-]+");
        parts.push((py_len, source));
    }
    if parts.is_empty() {
        return None;
    }
    parts.sort_by_key(|p| std::cmp::Reverse(p.0));
    let body = parts
        .iter()
        .map(|(_, p)| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    let pattern = PyPattern::with_one_char_tail(
        &format!(r"(?i)({body})(?-i:[^A-Za-z0-9\x{{130}}\x{{131}}\x{{17F}}\x{{212A}}]|\z)"),
        Guard::NotAlnumCi,
    );
    Some((pattern, first_words))
}

impl Engine {
    pub fn new(policy: Arc<Policy>) -> Result<Engine, EngineError> {
        let mut allow_terms: Vec<&str> = DEFAULT_ALLOW_TERMS
            .iter()
            .chain(MONTHS_AND_DAYS)
            .copied()
            .collect();
        allow_terms.extend(policy.allow.iter().map(String::as_str));
        allow_terms.retain(|t| !t.is_empty());
        let allow_lookup: FoldedSet = allow_terms.iter().copied().collect();
        let mut heading_lookup = allow_lookup.clone();
        for word in HEADING_TERMS.iter().chain(COMMON_CAPITALIZED_WORDS) {
            heading_lookup.insert(word);
        }
        let allow = compile_terms(allow_terms.iter().copied());
        // The allow stage starts from its first words only where the detector layer's
        // keyword pass located them: a scan of its own would cost more than the
        // regex's (`AD`, `AI`, `CI` start inside most identifiers). Code mode runs the
        // stage on prose alone, so locating the words in every source file would cost
        // the keyword pass more than it saves.
        let allow_words: Vec<String> = allow
            .iter()
            .filter(|_| policy.mode != Mode::Code)
            .flat_map(|(_, words)| words.iter().map(|w| w.to_string()))
            .collect();
        let allow = allow.map(|(pattern, words)| LiteralGated::new(pattern, words));

        let mut alias_links = HashMap::new();
        let mut alias_terms: HashMap<Category, Vec<&str>> = HashMap::new();
        for group in &policy.alias_groups {
            let entity = placeholder::digest(
                &policy.salt,
                group.category,
                &normalize_value(&group.canonical),
            );
            for alias in &group.aliases {
                let normalized = normalize_value(alias);
                let suffix = placeholder::alias_form_suffix(&policy.salt, &normalized);
                alias_links
                    .entry(normalized)
                    .or_insert_with(|| (entity.clone(), suffix));
            }
            alias_terms
                .entry(group.category)
                .or_default()
                .extend(group.aliases.iter().map(String::as_str));
        }
        let reserved: HashSet<&str> = RESERVED_PLACEHOLDER_WORDS.iter().copied().collect();
        let (mut terms, mut term_words) = (Vec::new(), Vec::new());
        for (category, list) in [
            (Category::CLIENT, &policy.clients),
            (Category::ORG, &policy.organizations),
            (Category::PERSON, &policy.people),
            (Category::SENSITIVE, &policy.terms),
        ] {
            let all = list
                .iter()
                .map(String::as_str)
                .chain(alias_terms.get(&category).into_iter().flatten().copied())
                .filter(|t| !reserved.contains(placeholder::casefold(t).as_str()));
            if let Some((pattern, first_words)) = compile_terms(all) {
                term_words.extend(first_words.iter().map(|w| w.to_string()));
                terms.push((category, LiteralGated::new(pattern, first_words)));
            }
        }
        let policy_detectors = policy.detectors.then(|| {
            Detector::locating(
                term_words.iter().map(String::as_str),
                allow_words.iter().map(String::as_str),
            )
        });
        Ok(Engine {
            terms,
            allow,
            allow_lookup,
            heading_lookup,
            alias_links,
            detector: policy_detectors,
            key: placeholder::SaltKey::new(&policy.salt),
            id: NEXT_ENGINE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            policy,
        })
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The detector layer this engine runs, built for its policy (locating its terms'
    /// and allow list's first words); `None` with the layer off.
    pub fn detector(&self) -> Option<&Detector> {
        self.detector.as_ref()
    }

    /// The placeholder for `value` in `category` (a linked form for declared aliases),
    /// from this thread's memo when this engine made it before: code repeats its words
    /// across files, and a fresh placeholder costs a normalisation and an HMAC.
    fn placeholder(&self, category: Category, value: &str) -> Rc<str> {
        PLACEHOLDER_MEMO.with_borrow_mut(|memo| {
            if memo.engine != self.id {
                memo.engine = self.id;
                memo.start_over();
            }
            if let Some(p) = memo.entries.get(&category).and_then(|m| m.get(value)) {
                return Rc::clone(p);
            }
            let p: Rc<str> = self.fresh_placeholder(category, value).into();
            if memo.len >= PLACEHOLDER_MEMO_ENTRIES {
                memo.start_over();
            }
            memo.entries
                .entry(category)
                .or_default()
                .insert(value.to_owned(), Rc::clone(&p));
            memo.len += 1;
            p
        })
    }

    fn fresh_placeholder(&self, category: Category, value: &str) -> String {
        let normalized = normalize_value(value);
        match self.alias_links.get(&normalized) {
            Some((entity, suffix)) => format!("[{category}_{entity}.{suffix}]"),
            None => format!("[{category}_{}]", self.key.digest(category, &normalized)),
        }
    }

    /// Redacts file content.
    pub fn redact(&self, text: &str, opts: RedactOptions<'_>) -> Result<Redacted, EngineError> {
        let heuristics = match self.policy.mode {
            Mode::Strict | Mode::Balanced => true,
            Mode::Code => opts.prose,
        };
        let context = DetectContext {
            rel_path: opts.path,
            prose: opts.prose,
        };
        self.run(text, opts.preserve_line_count, heuristics, Some(&context))
    }

    /// Redacts a built-in sample that reaches every stage and detector family, under a
    /// few file kinds, and drops the result. Run it on a thread before that thread
    /// serves edits: the matchers build part of their state lazily and per thread
    /// (lazy DFA states, capture caches), and the first real file to need the
    /// Unicode-heavy name patterns would otherwise pay ~15 ms for it.
    pub fn warm_up(&self) {
        for path in [
            "warm-up.md",
            "warm-up.py",
            "warm-up.env",
            "config/warm-up.yaml",
            "warm-up.json",
        ] {
            for preserve_line_count in [true, false] {
                let _ = self.redact(
                    WARM_UP_SAMPLE,
                    RedactOptions {
                        preserve_line_count,
                        prose: path.ends_with(".md"),
                        path,
                    },
                );
            }
        }
    }

    /// The stage pipeline of spec 5.4 over one whole text.
    fn run(
        &self,
        text: &str,
        preserve: bool,
        heuristics: bool,
        detect: Option<&DetectContext<'_>>,
    ) -> Result<Redacted, EngineError> {
        if text.is_empty() {
            return Ok(Redacted::default());
        }
        // Code mode with detectors: the precise detectors replace the reference's
        // imprecise stages (generic assignments, cards without Luhn, IPv4 without
        // parsing, phones on dates, every URL and domain).
        let precise = self.policy.mode == Mode::Code && self.detector.is_some();
        let (findings, mut seen) = match (&self.detector, detect) {
            (Some(detector), Some(context)) => {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    detector.detect_and_see(text, context, !precise)
                }))
                .map_err(|_| EngineError::DetectorFailed)?
            }
            _ => (Vec::new(), Seen::UNKNOWN),
        };
        let mut call = Call {
            engine: self,
            markers: Markers::new(text)?,
            counts: Counts::default(),
            preserve,
            kept_line_breaks: false,
        };
        let (placeholders, _) = &*PATH_TOKENS;
        let mut starts = LiteralStarts {
            secret: seen.secret_literal_starts.take(),
            terms: seen.term_starts.take(),
            allow: seen.allow_starts.take(),
        };
        let mut w = Working::new(if precise {
            redact_positions(text, &findings, &mut call, &mut starts)
        } else {
            text.to_owned()
        });
        w.starts = starts;
        let (seen, fold_free, shapes) = (seen.words, seen.fold_free, seen.shapes);
        if seen.may_match(*PLACEHOLDER_GATE) {
            w.apply(placeholders, |m| call.protect(m));
        }
        let stages: &[Stage] = if precise { &CODE_STAGES } else { &EARLY_STAGES };
        let may_match = |s: &&Stage| seen.may_match(s.needs) && shapes.may_match(s.shape);
        for stage in stages.iter().filter(may_match) {
            w.apply_stage(stage, |m| call.redact(stage.category, m));
        }
        if precise && let Some(hosts) = PRIVATE_HOSTS.knowing(seen) {
            w.apply(&hosts, |m| call.redact(Category::URL, m));
        }
        if self.policy.detector_profile == DetectorProfile::Extended {
            for stage in EXTENDED_STAGES.iter() {
                w.apply(&*stage.finder, |m| call.redact(stage.category, m));
            }
        }
        for (category, pattern) in &self.terms {
            w.substitute(pattern, Some(Literals::Terms), |_, m| {
                call.redact(*category, m)
            });
        }
        // Strict and balanced keep the reference's baseline and only add: every
        // occurrence of a value the detectors nominated that the baseline left.
        let nominate = !precise && !findings.is_empty();
        // Protection only matters to the stages after it: the heuristics and the
        // nominated values, which only strict and balanced add and which always run
        // the heuristics. Code mode outside prose runs neither, so it skips the
        // allow-list search, which read every byte of every source file.
        debug_assert!(heuristics || !nominate);
        if heuristics && let Some(allow) = &self.allow {
            w.substitute_at_known_starts(allow, Literals::Allow, |_, m| call.protect(m));
        }
        // No literal-gated stage follows: stop moving the lists.
        w.starts = LiteralStarts::default();
        if heuristics {
            w.apply(&*ORG_SUFFIX, |m| call.redact(Category::ORG, m));
            let names = ByHeading::new(&ProperNames, &w.text);
            w.apply_at(&names, |at, m| {
                self.proper_name(m, names.on_heading(at), &mut call)
            });
            w.splice(|hay, splicer| identity_lines(hay, splicer, &mut call));
            w.apply(&*SPEAKER_LABEL, |m| call.redact(Category::PERSON, m));
            if self.policy.mode == Mode::Strict {
                w.apply(&ACRONYM, |m| {
                    if self.allow_lookup.contains(m) {
                        m.to_owned()
                    } else {
                        call.redact(Category::ENTITY, m)
                    }
                });
                let titled = ByHeading::new(&TITLECASE, &w.text);
                w.apply_at(&titled, |at, m| {
                    let lookup = if titled.on_heading(at) {
                        &self.heading_lookup
                    } else {
                        &self.allow_lookup
                    };
                    if lookup.contains(m) || COMMON_CAPITALIZED_WORDS.contains(&m) {
                        m.to_owned()
                    } else {
                        call.redact(Category::ENTITY, m)
                    }
                });
            }
        }
        if nominate && let Some((values, categories)) = self.nominated(text, &findings, &w.text) {
            let mut redact = |m: &str| {
                let key = placeholder::casefold(&collapse_space(m));
                let category = categories.get(&key).copied();
                call.redact(category.unwrap_or(Category::SENSITIVE), m)
            };
            match nominated_matches(&values, &w.text, fold_free) {
                Some(spans) => {
                    if let Some(changed) = replace_spans(&w.text, &spans, &mut redact) {
                        w.set(changed);
                    }
                }
                None => w.apply(&nominated_pattern(&values), redact),
            }
        }
        Ok(Redacted {
            text: call.markers.restore(&w.text),
            counts: call.counts,
            kept_line_breaks: call.kept_line_breaks,
        })
    }

    /// A multi-word proper name: allow-listed runs stay; on heading lines, heading words
    /// at either end stay and only the span between the first and last other word goes.
    fn proper_name(&self, value: &str, heading: bool, call: &mut Call<'_>) -> String {
        if self.allow_lookup.contains(value) {
            return value.to_owned();
        }
        let (mut start, mut end) = (0, value.len());
        if heading {
            let words: Vec<(usize, usize)> = py_words(value)
                .filter(|&(a, b)| !self.heading_lookup.contains(&value[a..b]))
                .collect();
            let (Some(first), Some(last)) = (words.first(), words.last()) else {
                return value.to_owned();
            };
            (start, end) = (first.0, last.1);
        }
        let placeholder = call.redact(Category::PERSON, &value[start..end]);
        format!("{}{placeholder}{}", &value[..start], &value[end..])
    }

    /// Every value the detectors nominated that may still occur in `hay` (the text the
    /// baseline left), in the order spec 5.12 tries them (longest first), with each
    /// value's category. Allow-listed and reserved values are left out, and so are
    /// addresses when `hay` holds no `@`: no case folding reaches `@`, and the baseline's
    /// email stage has usually replaced every address the detectors found, so the
    /// search for them would be most of this stage's work and find nothing.
    fn nominated(
        &self,
        text: &str,
        findings: &[Finding],
        hay: &str,
    ) -> Option<(Vec<String>, foldhash::HashMap<String, Category>)> {
        let mut categories: foldhash::HashMap<String, Category> = Default::default();
        let mut values: Vec<String> = Vec::new();
        let hay_has_at =
            std::cell::LazyCell::new(|| memchr::memchr(b'@', hay.as_bytes()).is_some());
        for f in findings {
            let value = collapse_space(&text[f.start..f.end]);
            if value.contains('@') && !*hay_has_at {
                continue;
            }
            let key = placeholder::casefold(&value);
            if value.is_empty()
                || self.allow_lookup.contains_folded(&key)
                || RESERVED_PLACEHOLDER_WORDS.contains(&key.as_str())
                || categories.contains_key(&key)
            {
                continue;
            }
            categories.insert(key, f.category);
            values.push(value);
        }
        if values.is_empty() {
            return None;
        }
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        Some((values, categories))
    }

    /// Redacts a root-relative POSIX path (or a single name): the baseline pipeline, then
    /// (strict and balanced) every remaining 3+ character ASCII token that is not allowed.
    pub fn redact_path(&self, rel: &str) -> Result<Redacted, EngineError> {
        let code = self.policy.mode == Mode::Code;
        let mut redacted = self.run(rel, false, !code, None)?;
        if code {
            return Ok(redacted);
        }
        let (placeholders, tokens) = &*PATH_TOKENS;
        let text = std::mem::take(&mut redacted.text);
        let shadow_text;
        let hay = if !text.is_ascii() {
            shadow_text = shadow(&text);
            shadow_text.as_str()
        } else {
            text.as_str()
        };
        let mut out = String::with_capacity(text.len());
        let mut pos = 0;
        let mut last = 0;
        loop {
            let ph = placeholders.find_at(hay, pos);
            let tok = tokens.find_at(hay, pos);
            let (s, e, is_placeholder) = match (ph, tok) {
                (None, None) => break,
                (Some((s, e)), None) => (s, e, true),
                (None, Some((s, e))) => (s, e, false),
                (Some((ps, pe)), Some((ts, te))) => {
                    if ps <= ts {
                        (ps, pe, true)
                    } else {
                        (ts, te, false)
                    }
                }
            };
            pos = e;
            if is_placeholder {
                continue;
            }
            let token = &text[s..e];
            let key = placeholder::casefold(token);
            if self.allow_lookup.contains_folded(&key)
                || PATH_ALLOW_TERMS.contains(&key.as_str())
                || Category::from_name(token).is_some()
            {
                continue;
            }
            out.push_str(&text[last..s]);
            redacted.counts.add(Category::ENTITY, 1);
            out.push_str(&self.placeholder(Category::ENTITY, token));
            last = e;
        }
        out.push_str(&text[last..]);
        redacted.text = out;
        Ok(redacted)
    }

    /// The opaque `@p_<12hex>` id of a root-relative POSIX path (`.` for the root).
    pub fn path_id(&self, rel: &str) -> String {
        self.key.path_id(rel)
    }
}

/// One case-insensitive alternation of `values` (spec 5.12: in the given order,
/// whitespace-flexible, ASCII letter/digit guards on both sides).
fn nominated_pattern(values: &[String]) -> PyPattern {
    let body = values
        .iter()
        .map(|v| {
            format!(
                "(?:{})",
                v.split(' ')
                    .map(regex::escape)
                    .collect::<Vec<_>>()
                    .join(r"[\s\x1C-\x1F]+")
            )
        })
        .collect::<Vec<_>>()
        .join("|");
    PyPattern::with_one_char_tail(
        &format!(r"(?i)({body})(?-i:[^A-Za-z0-9]|\z)"),
        Guard::NotAsciiAlnum,
    )
}

/// The matches of [`nominated_pattern`] over `values` in `hay`, left to right, or `None`
/// when only that pattern can tell: `hay` holds one of the non-ASCII characters Python's
/// IGNORECASE equates with ASCII letters (`İ ı ſ K`; `fold_free` says it holds none,
/// known from the keyword pass), or a tie (below). Compiling the pattern per file cost
/// more than the rest of balanced mode, so the plain values (ASCII, single spaces: the
/// common case, tokens, passwords, addresses, `Name Surname`) are found by
/// [`ascii_value_matches_with`]'s scan, and the others (accented names, odd spacing) by
/// a pattern made of them alone: one accented name used to send every value of the file
/// to the whole pattern, a sixth of `balanced` mode's time on licence and copyright
/// files. The two are merged as the alternation would take them: the leftmost start
/// wins, and a match resumes the search at its end. At one start the alternation would
/// pick by the values' order, which neither side knows of the other: that rare tie
/// answers `None`.
fn nominated_matches(values: &[String], hay: &str, fold_free: bool) -> Option<Vec<(usize, usize)>> {
    if !fold_free && has_ascii_fold_stand_in(hay) {
        return None;
    }
    if values.iter().all(|v| is_plain_value(v)) {
        return ascii_value_matches_with(values, hay, true);
    }
    let (plain, other): (Vec<String>, Vec<String>) =
        values.iter().cloned().partition(|v| is_plain_value(v));
    let candidates = if plain.is_empty() {
        Vec::new()
    } else {
        ascii_value_candidates(&plain, hay, true)
    };
    let others = nominated_pattern(&other);
    let mut spans = Vec::new();
    let (mut pos, mut next) = (0, 0);
    let mut other_match = others.find_at(hay, 0);
    loop {
        while candidates.get(next).is_some_and(|&(s, _, _)| s < pos) {
            next += 1;
        }
        if other_match.is_some_and(|(s, _)| s < pos) {
            other_match = others.find_at(hay, pos);
        }
        let ascii = candidates.get(next).map(|&(s, _, e)| (s, e));
        let taken = match (ascii, other_match) {
            (None, None) => return Some(spans),
            (Some(a), Some(o)) if a.0 == o.0 => return None,
            // Starts differ here: the leftmost.
            (Some(a), Some(o)) => a.min(o),
            (Some(a), None) => a,
            (None, Some(o)) => o,
        };
        spans.push(taken);
        pos = taken.1;
    }
}

/// A value the ASCII scan can find: ASCII, words separated by single spaces.
fn is_plain_value(v: &str) -> bool {
    v.is_ascii()
        && !v
            .bytes()
            .any(|b| b.is_ascii_whitespace() && b != b' ' || (0x1c..=0x1f).contains(&b))
        && !v.contains("  ")
        && !v.starts_with(' ')
        && !v.ends_with(' ')
}

/// The matches of [`nominated_pattern`] when every value is plain ([`is_plain_value`]),
/// found without compiling it; `hay` must hold none of `İ ı ſ K`. A case-insensitive
/// search ([`FirstWords`]) lists where each value's first word occurs, the remaining
/// words are checked there (one or more Python `\s` between words), and at each start
/// the first value in pattern order whose guards hold wins, as Python's alternation
/// does. `vectorised: false` tries every place a value may start instead of searching
/// for the places (tests compare the two).
fn ascii_value_matches_with(
    values: &[String],
    hay: &str,
    vectorised: bool,
) -> Option<Vec<(usize, usize)>> {
    if !values.iter().all(|v| is_plain_value(v)) {
        return None;
    }
    let mut spans = Vec::new();
    let mut resume = 0;
    for (start, _, end) in ascii_value_candidates(values, hay, vectorised) {
        if start >= resume {
            spans.push((start, end));
            resume = end;
        }
    }
    Some(spans)
}

/// Every place one of `values` (all plain, see [`is_plain_value`]) matches as the
/// alternation would try it there: `(start, value index, end)`, sorted, so at one start
/// the value the alternation tries first comes first.
fn ascii_value_candidates(
    values: &[String],
    hay: &str,
    vectorised: bool,
) -> Vec<(usize, usize, usize)> {
    let words: Vec<Vec<&str>> = values.iter().map(|v| v.split(' ').collect()).collect();
    let bytes = hay.as_bytes();
    let alnum_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_alphanumeric);
    let firsts = FirstWords::new(words.iter().map(|w| w[0]), vectorised);
    let mut candidates: Vec<(usize, usize, usize)> = Vec::new();
    firsts.each_at_word_start(bytes, |start, value, first_end| {
        if let Some(end) = rest_of_value(hay, first_end, &words[value][1..])
            && !alnum_at(end)
        {
            candidates.push((start, value, end));
        }
    });
    candidates.sort_unstable();
    candidates
}

/// The first words of the nominated values, indexed by their first few bytes, so that a
/// vectorised search for those keys (memmem for a few, Teddy for more) over a lower-cased
/// copy of a text finds every place a value may start. Building an Aho-Corasick automaton
/// per file, or one substring search per value, cost more than the rest of the stage.
struct FirstWords<'v> {
    words: Vec<&'v [u8]>,
    /// Bytes in every key: the shortest first word's length, at most 8.
    key_len: usize,
    /// `(key, value index)` sorted ASCII-case-insensitively; the key is the word's first
    /// `key_len` bytes.
    keys: Vec<(&'v [u8], usize)>,
    /// How the places where a key occurs are found.
    search: KeySearch,
}

/// Up to this many keys are searched one by one rather than by one Teddy searcher, whose
/// construction (about 30,000 instructions) costs more than several substring searches
/// of a file. Counted on the engine bench in balanced mode, 10 did better than 4 or 20.
const FEW_KEYS: usize = 10;

/// The search for the keys of [`FirstWords`] in a lower-cased text.
enum KeySearch {
    /// A few keys: a vectorised substring search each (cheaper to build than Teddy).
    Each(Vec<memchr::memmem::Finder<'static>>),
    /// Teddy searchers of at most 64 keys each (its limit).
    Teddy(Vec<aho_corasick::packed::Searcher>),
    /// Every place is tried: tests, or a CPU without a vector unit Teddy can use.
    EveryPlace,
}

impl<'v> FirstWords<'v> {
    /// `words` are ASCII and not empty. `vectorised: false` tries every place (tests).
    fn new(words: impl Iterator<Item = &'v str>, vectorised: bool) -> FirstWords<'v> {
        let words: Vec<&[u8]> = words.map(str::as_bytes).collect();
        let key_len = words.iter().map(|w| w.len()).min().unwrap_or(1).clamp(1, 8);
        let mut keys: Vec<(&[u8], usize)> = words
            .iter()
            .enumerate()
            .map(|(i, w)| (&w[..key_len], i))
            .collect();
        keys.sort_unstable_by(|a, b| cmp_ascii_ci(a.0, b.0).then(a.1.cmp(&b.1)));
        let mut distinct: Vec<Vec<u8>> = keys.iter().map(|k| k.0.to_ascii_lowercase()).collect();
        distinct.dedup();
        let search = match &distinct[..] {
            _ if !vectorised => KeySearch::EveryPlace,
            keys if keys.len() <= FEW_KEYS => KeySearch::Each(
                keys.iter()
                    .map(|k| memchr::memmem::Finder::new(k).into_owned())
                    .collect(),
            ),
            _ => distinct
                .chunks(64)
                .map(|chunk| {
                    aho_corasick::packed::Config::new()
                        .builder()
                        .extend(chunk)
                        .build()
                })
                .collect::<Option<Vec<_>>>()
                .map_or(KeySearch::EveryPlace, KeySearch::Teddy),
        };
        FirstWords {
            words,
            key_len,
            keys,
            search,
        }
    }

    /// Calls `found(start, value, first word end)` for every place in `bytes` where a
    /// value's first word occurs ASCII-case-insensitively and the byte before is not an
    /// ASCII letter or digit: ascending by start, values in index order at one start.
    fn each_at_word_start(&self, bytes: &[u8], mut found: impl FnMut(usize, usize, usize)) {
        let try_at = |at: usize| {
            if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
                return;
            }
            let Some(head) = bytes.get(at..at + self.key_len) else {
                return;
            };
            let from = self
                .keys
                .partition_point(|&(k, _)| cmp_ascii_ci(k, head).is_lt());
            for &(key, value) in &self.keys[from..] {
                if !key.eq_ignore_ascii_case(head) {
                    break;
                }
                let word = self.words[value];
                if bytes
                    .get(at..at + word.len())
                    .is_some_and(|w| w.eq_ignore_ascii_case(word))
                {
                    found(at, value, at + word.len());
                }
            }
        };
        match &self.search {
            KeySearch::EveryPlace => (0..bytes.len()).for_each(try_at),
            KeySearch::Each(finders) => {
                let lower = bytes.to_ascii_lowercase();
                let mut starts = Vec::new();
                for finder in finders {
                    let mut at = 0;
                    while let Some(i) = finder.find(&lower[at..]) {
                        starts.push(at + i);
                        at += i + 1;
                    }
                }
                if finders.len() > 1 {
                    starts.sort_unstable();
                    starts.dedup();
                }
                starts.into_iter().for_each(try_at);
            }
            KeySearch::Teddy(searchers) => {
                let lower = bytes.to_ascii_lowercase();
                let mut starts = Vec::new();
                for searcher in searchers {
                    let mut at = 0;
                    while let Some(m) =
                        searcher.find_in(&lower, aho_corasick::Span::from(at..lower.len()))
                    {
                        starts.push(m.start());
                        at = m.start() + 1;
                    }
                }
                if searchers.len() > 1 {
                    starts.sort_unstable();
                    starts.dedup();
                }
                starts.into_iter().for_each(try_at);
            }
        }
    }
}

/// ASCII-case-insensitive byte order.
fn cmp_ascii_ci(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.iter()
        .map(u8::to_ascii_lowercase)
        .cmp(b.iter().map(u8::to_ascii_lowercase))
}

/// Where a value whose first word ends at `at` ends, if its remaining `words` follow,
/// each after one or more Python whitespace characters (ASCII case-insensitively).
fn rest_of_value(hay: &str, mut at: usize, words: &[&str]) -> Option<usize> {
    let is_space = |c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c);
    for word in words {
        let gap = hay[at..]
            .char_indices()
            .find(|&(_, c)| !is_space(c))
            .map_or(hay.len() - at, |(i, _)| i);
        if gap == 0 {
            return None;
        }
        at += gap;
        let next = hay.as_bytes().get(at..at + word.len())?;
        if !next.eq_ignore_ascii_case(word.as_bytes()) {
            return None;
        }
        at += word.len();
    }
    Some(at)
}

/// `text` with each of `spans` (ascending, disjoint) replaced; `None` when there are none.
fn replace_spans(
    text: &str,
    spans: &[(usize, usize)],
    replace: &mut impl FnMut(&str) -> String,
) -> Option<String> {
    if spans.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for &(s, e) in spans {
        out.push_str(&text[last..s]);
        out.push_str(&replace(&text[s..e]));
        last = e;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// Identity lines (`Attendees: Avery, Kim`): the label is protected, every name-like
/// word of the value becomes a PERSON. `hay` is the splicer's source or its shadow.
fn identity_lines(hay: &str, splicer: &mut Splicer<'_>, call: &mut Call<'_>) {
    let text = splicer.source();
    for caps in IDENTITY_LINE.captures_iter(hay) {
        let span = |i: usize| caps.get(i).map_or(0..0, |m| m.range());
        let whole = span(0);
        let label = call.protect(&text[span(1)]);
        let value = &text[span(4)];
        let names = substitute(&IDENTITY_NAME, value, |m| call.redact(Category::PERSON, m));
        let names = names.as_deref().unwrap_or(value);
        let line = format!("{label}{}:{}{names}", &text[span(2)], &text[span(3)]);
        splicer.replace(whole.start, whole.end, &line);
    }
}

/// Replaces detector findings at their positions in the original text, except where
/// they overlap a placeholder-shaped token already in the text (kept verbatim).
/// `starts` are moved to the result.
fn redact_positions(
    text: &str,
    findings: &[Finding],
    call: &mut Call<'_>,
    starts: &mut LiteralStarts,
) -> String {
    let existing: Vec<(usize, usize)> = placeholder::PLACEHOLDER_RE
        .find_iter(text)
        .map(|m| (m.start(), m.end()))
        .collect();
    let mut splicer = Splicer::new(text, None);
    let mut last = 0;
    for f in findings {
        if f.start < last || existing.iter().any(|&(s, e)| s < f.end && f.start < e) {
            continue;
        }
        splicer.replace(
            f.start,
            f.end,
            &call.redact(f.category, &text[f.start..f.end]),
        );
        last = f.end;
    }
    starts.move_through(&splicer);
    splicer
        .finish()
        .map_or_else(|| text.to_owned(), |(out, _)| out)
}

/// Whitespace runs collapsed to one space, trimmed (the key of a nominated value).
fn collapse_space(value: &str) -> String {
    // Most values: a token without spaces, most often ASCII (read by bytes then).
    let spaced = if value.is_ascii() {
        value.bytes().any(|b| is_py_space(char::from(b)))
    } else {
        value.contains(is_py_space)
    };
    if !spaced {
        return value.to_owned();
    }
    value
        .split(is_py_space)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Byte spans of Python `\S+` runs.
fn py_words(value: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in value.char_indices() {
        match (is_py_space(c), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, value.len()));
    }
    spans.into_iter()
}

/// Whether `value` standing alone would lose characters before the configured-term
/// stage (an existing placeholder or an early baseline stage matches inside it). Alias
/// validation refuses such canonical values.
pub fn claimed_before_configured_terms(value: &str) -> bool {
    placeholder::PLACEHOLDER_RE.is_match(value)
        || EARLY_STAGES
            .iter()
            .any(|stage| stage.finder.find_from(value, 0).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::policy::AliasGroup;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    /// `text` redacted as the file `path` (not prose), line count kept.
    fn redact_as(engine: &Engine, text: &str, path: &str) -> Redacted {
        let opts = RedactOptions {
            preserve_line_count: true,
            prose: false,
            path,
        };
        engine.redact(text, opts).unwrap()
    }

    /// An engine of `mode` with the detector layer on and nothing configured.
    fn layer_engine(salt: &str, mode: Mode) -> Engine {
        plain_engine(salt, mode, true)
    }

    /// An engine of `mode` with nothing configured, the detector layer on or off.
    fn plain_engine(salt: &str, mode: Mode, detectors: bool) -> Engine {
        Engine::new(Arc::new(Policy {
            salt: salt.into(),
            mode,
            detectors,
            ..Policy::default()
        }))
        .unwrap()
    }

    /// Fixture A of the reference spec plus the alias group of its section 17 golden,
    /// with the derived lists the reference's loader produces for a root named `kb`.
    fn fixture_a(mode: Mode) -> Engine {
        let policy = Policy {
            salt: "spec-salt".into(),
            mode,
            clients: strs(&["kb", "Client Alpha", "CA"]),
            organizations: strs(&["Riverton Partners"]),
            people: strs(&[
                "Taylor Reed",
                "Taylor",
                "Reed",
                "Jordan Vale",
                "Jordan",
                "Vale",
            ]),
            terms: strs(&["Project Meridian"]),
            allow: strs(&["Azure", "PostgreSQL"]),
            alias_groups: vec![AliasGroup {
                canonical: "Taylor Reed".into(),
                category: Category::PERSON,
                aliases: strs(&["Taylor", "taylor.reed@example.invalid"]),
            }],
            ..Policy::default()
        };
        Engine::new(Arc::new(policy)).unwrap()
    }

    const GOLDEN_INPUT: &str = "# Client Alpha notes\n\nTaylor Reed met Jordan Vale from Riverton Partners.\nEmail taylor.reed@example.invalid and visit https://example.invalid/private.\nProject Meridian depends on Azure and PostgreSQL policy controls.\npassword = superSecret1234\nCall +1 415 555 0100 or ping @tay_reed. Host 10.12.30.4, db01.internal.example.\nAttendees: Avery, Kim, Al\n";

    // Spec section 17, strict mode.
    const GOLDEN_STRICT: &str = "# [CLIENT_8ca314beac5e5cb66ab81b057057cdba] notes\n\n[PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] met [PERSON_5e8a430d9a172e7fb5d020d63efef30d] from [ORG_a7ed159dc65788927721df2f8876b8d7].\n[ENTITY_807fa148abba143d9d275dd37e4003f0] [EMAIL_b6e03a41f7e5c4a5d77d8f67fcef2327.bfdfbd5d] and visit [URL_ca77d628c2b78c833d3a894eec8a7b86]\n[SENSITIVE_2bf22bc42b32f4e971534d7ec1dbefaf] depends on Azure and PostgreSQL policy controls.\n[SECRET_8b3729e29e3d6c71a14e63e914715ae4]\n[ENTITY_d7635fa56b71f55065f3fe27c57d14b8] [PHONE_e8dec1fd8ac9a67e26b2b83d151c2d40] or ping [HANDLE_3b53685ffd63412ece39a214e5ecdf20] [ENTITY_b1431a5307835d4963f15be2dc1979d6] [IP_d3b3683b822146a0d30763db64ee79d8], [DOMAIN_7ed8861d820004935723317cca193ece].\nAttendees: [PERSON_80947927a2988995ec102c2a299eafb4], [PERSON_e585a9b6a71c612a105c65b10d436557], [PERSON_edba91fe24cd44d75981f835a9e34551]\n";

    fn counts_of(r: &Redacted) -> Vec<(&'static str, u64)> {
        r.counts.0.iter().map(|(c, n)| (c.as_str(), *n)).collect()
    }

    #[test]
    fn spec_golden_strict_text_and_counts() {
        let engine = fixture_a(Mode::Strict);
        let content = engine
            .redact(
                GOLDEN_INPUT,
                RedactOptions {
                    preserve_line_count: true,
                    prose: true,
                    path: "",
                },
            )
            .unwrap();
        assert_eq!(content.text, GOLDEN_STRICT);
        let path = engine
            .redact_path("context/Client Alpha - Taylor Reed notes.md")
            .unwrap();
        assert_eq!(
            path.text,
            "context/[CLIENT_8ca314beac5e5cb66ab81b057057cdba] - [PERSON_b6e03a41f7e5c4a5d77d8f67fcef2327] notes.md"
        );
        assert_eq!(
            engine.path_id("context/Client Alpha - Taylor Reed notes.md"),
            "@p_e3f7588807ee"
        );
        let mut total = content.counts.clone();
        total.merge(&path.counts);
        let total = Redacted {
            kept_line_breaks: false,
            text: String::new(),
            counts: total,
        };
        assert_eq!(
            counts_of(&total),
            vec![
                ("CLIENT", 2),
                ("DOMAIN", 1),
                ("EMAIL", 1),
                ("ENTITY", 3),
                ("HANDLE", 1),
                ("IP", 1),
                ("ORG", 1),
                ("PERSON", 6),
                ("PHONE", 1),
                ("SECRET", 1),
                ("SENSITIVE", 1),
                ("URL", 1)
            ]
        );
    }

    #[test]
    fn spec_golden_balanced_keeps_capitalized_words() {
        let engine = fixture_a(Mode::Balanced);
        let content = engine
            .redact(
                GOLDEN_INPUT,
                RedactOptions {
                    preserve_line_count: true,
                    prose: true,
                    path: "",
                },
            )
            .unwrap();
        let expected = GOLDEN_STRICT
            .replace("[ENTITY_807fa148abba143d9d275dd37e4003f0]", "Email")
            .replace("[ENTITY_d7635fa56b71f55065f3fe27c57d14b8]", "Call")
            .replace("[ENTITY_b1431a5307835d4963f15be2dc1979d6]", "Host");
        assert_eq!(content.text, expected);
        assert!(!content.counts.0.contains_key(&Category::ENTITY));
    }

    /// A nominated value is redacted wherever IGNORECASE finds it, also where a character
    /// it equates with an ASCII letter spells it (the Kelvin sign for `k`): the keyword
    /// pass sees that character and the value search then reads the text as Python does.
    #[test]
    fn nominated_values_spelt_with_a_fold_character_are_redacted() {
        let engine = layer_engine("fold-salt", Mode::Balanced);
        let value = "kq7Vx2LmP9rT4wZs";
        let kelvin = value.replacen('k', "\u{212A}", 1);
        let text = format!("db:\n  password: \"{value}\"\nnote: {kelvin} rotates weekly\n");
        let out = redact_as(&engine, &text, "config/app.yaml");
        assert!(!out.text.contains(&value[1..]), "{}", out.text);
        assert!(out.text.contains("rotates weekly"), "{}", out.text);
    }

    /// The reference's email pattern starts an address at a word boundary, so it leaves
    /// one written straight after Chinese text (`邮箱ops@…`, no space) whole; the
    /// detectors' address is then searched for in what the baseline left and found
    /// there twice, though the baseline replaced the other address. (Addresses are
    /// skipped only in a text left without any `@`; this one keeps two.)
    #[test]
    fn nominated_addresses_are_redacted_where_the_baseline_missed_them() {
        let text =
            "邮箱ops@acme-freight.com 或 dana@acme-freight.com\n抄送:邮箱ops@acme-freight.com\n";
        let engine = layer_engine("at-salt", Mode::Balanced);
        let out = redact_as(&engine, text, "OWNERS");
        assert!(!out.text.contains("ops@"), "{}", out.text);
        assert!(!out.text.contains("dana@"), "{}", out.text);
        assert_eq!(out.counts.0.get(&Category::EMAIL), Some(&3), "{}", out.text);
        // The baseline alone leaves the first address: the layer's search removed it.
        let baseline = plain_engine("at-salt", Mode::Balanced, false);
        let alone = redact_as(&baseline, text, "OWNERS").text;
        assert_eq!(alone.matches("ops@acme-freight.com").count(), 2, "{alone}");
    }

    /// A client list of 1,500 unrelated names is more than the keyword pass can locate
    /// (its states have 16-bit ids): the engine still builds, and the terms stages find
    /// every name by their own search.
    #[test]
    fn thousands_of_client_names_build_an_engine_that_redacts_them() {
        let mut next = crate::engine::testgen::picker(41);
        let mut word = || -> String {
            let mut w: String = (0..9).map(|_| char::from(b'a' + next(26) as u8)).collect();
            w[..1].make_ascii_uppercase();
            w
        };
        let clients: Vec<String> = (0..1500)
            .map(|_| format!("{} {}", word(), word()))
            .collect();
        for mode in [Mode::Code, Mode::Balanced] {
            let engine = Engine::new(Arc::new(Policy {
                salt: "many-salt".into(),
                mode,
                detectors: true,
                clients: clients.clone(),
                ..Policy::default()
            }))
            .expect("a long client list compiles");
            let named = [&clients[0], &clients[749], &clients[1499]];
            let text = format!(
                "met {} and {}\nthen {} again\n",
                named[0],
                named[1].to_uppercase(),
                named[2]
            );
            let out = redact_as(&engine, &text, "notes.txt");
            for name in named {
                for part in name.split(' ') {
                    assert!(!out.text.contains(part), "{mode:?}: {part} in {}", out.text);
                }
            }
            assert_eq!(out.counts.0.get(&Category::CLIENT), Some(&3), "{mode:?}");
        }
    }

    #[test]
    fn code_mode_redacts_private_hosts_of_any_scheme_and_keeps_public_ones() {
        let engine = layer_engine("hosts-salt", Mode::Code);
        let opts = RedactOptions {
            preserve_line_count: true,
            prose: false,
            path: "config/app.py",
        };
        for (line, host) in [
            ("primary = \"postgresql://pg.corp:5432/app\"\n", "pg.corp"),
            ("cache: redis://cache.internal:6379/0\n", "cache.internal"),
            (
                "jdbc = \"jdbc:mysql://db.internal:3306/app\"\n",
                "db.internal",
            ),
            ("broker = 'amqp://mq.lan/vhost'\n", "mq.lan"),
            // A private URL right after a quote that a longer public match ran through
            // (the search after the first private host starts inside that match).
            (
                "jdbc:mysql://db.internal/x.http://172.15.0.1-http://build.internal:8080192.168.1.9cache.LAN\"https://user@10.1.1.1/\n",
                "10.1.1.1",
            ),
        ] {
            let out = engine.redact(line, opts).unwrap().text;
            assert!(out.contains("[URL_") && !out.contains(host), "{out}");
        }
        for line in [
            "docs = \"https://docs.rs/regex\"\n",
            "public = \"postgresql://db.example.com:5432/app\"\n",
            "mirror = \"ftp://mirror.kernel.org/pub\"\n",
            "see file://localhost/etc/hosts\n",
        ] {
            assert_eq!(engine.redact(line, opts).unwrap().text, line);
        }
    }

    #[test]
    fn code_mode_prose_keeps_allowed_words_out_of_names() {
        // Code mode reads prose with the name heuristics, so the allow list must
        // still protect its words there (it is skipped only for source files).
        let engine = fixture_a(Mode::Code);
        let text = "The review is in Azure Hall on Friday.\n";
        let prose = RedactOptions {
            preserve_line_count: true,
            prose: true,
            path: "notes/review.md",
        };
        assert_eq!(engine.redact(text, prose).unwrap().text, text);
        let unknown = "The review is in Marlow Hall on Friday.\n";
        let redacted = engine.redact(unknown, prose).unwrap().text;
        assert!(
            redacted.contains("[PERSON_") && !redacted.contains("Marlow"),
            "{redacted}"
        );
    }

    /// With the layer on, strict and balanced start the allow stage from the words the
    /// layer's keyword pass located, the configured `allow` entries' among them: on
    /// prose holding no secret or PII for the layer to add, the output equals the
    /// layer-off engine's, which searches with the plain pattern. Allow words stay
    /// readable where capitalized words around them are taken for names.
    #[test]
    fn allow_stage_at_located_words_equals_the_searching_stage() {
        let pieces = [
            "Quorbl Atlas",
            "quorbl_atlas",
            "Quorbl",
            "Data",
            "Meeting",
            "May",
            "monday",
            "Key Vault",
            "Power  BI",
            "CI/CD",
            "AD",
            "load",
            "Dana Whitfield",
            "Marlow Hall",
            "Acme Holdings Inc",
            "Attendees: ",
            " ",
            "\t",
            ", ",
            ". ",
            "\n",
            "\n# ",
            "ſ",
            "é",
        ];
        let engine = |mode, detectors| {
            Engine::new(Arc::new(Policy {
                salt: "allow-salt".into(),
                mode,
                detectors,
                allow: strs(&["Quorbl Atlas"]),
                ..Policy::default()
            }))
            .unwrap()
        };
        let opts = RedactOptions {
            preserve_line_count: true,
            prose: true,
            path: "notes/plan.md",
        };
        let mut kept = 0;
        for mode in [Mode::Strict, Mode::Balanced] {
            let (on, off) = (engine(mode, true), engine(mode, false));
            for text in crate::engine::testgen::texts(&pieces, 300, 12, 53) {
                let out = on.redact(&text, opts).unwrap().text;
                assert_eq!(
                    out,
                    off.redact(&text, opts).unwrap().text,
                    "{mode:?}: {text:?}"
                );
                kept += usize::from(out.contains("Quorbl Atlas"));
            }
        }
        // Most texts glue the term to a letter, where it is no allow match.
        assert!(kept > 20, "{kept} outputs keep the configured allow term");
    }

    #[test]
    fn spec_golden_tree_names() {
        let engine = fixture_a(Mode::Strict);
        assert_eq!(
            engine.redact_path("blob.bin").unwrap().text,
            "[ENTITY_2ea2e2042b6c1cd6e2b51e860775f5e7].[ENTITY_c05b64e6eac7b6159f5bc974316400f7]"
        );
        assert_eq!(
            engine.redact_path("readme.txt").unwrap().text,
            "readme.[ENTITY_9077c92b491a9a5b5bea9d2a771f0234]"
        );
        assert_eq!(engine.redact_path("context").unwrap().text, "context");
        assert_eq!(engine.redact_path("docs").unwrap().text, "docs");
    }

    /// The warm-up sample is a real workout: in every mode, redacted under each file
    /// kind the warm-up uses, none of its made-up secrets and addresses stays readable.
    #[test]
    fn warm_up_sample_leaves_no_secret_readable() {
        for mode in [Mode::Strict, Mode::Balanced, Mode::Code] {
            let engine = layer_engine("warm", mode);
            engine.warm_up();
            for path in ["warm-up.md", "warm-up.py", "warm-up.env", "warm-up.json"] {
                let out = engine
                    .redact(
                        WARM_UP_SAMPLE,
                        RedactOptions {
                            preserve_line_count: true,
                            prose: path.ends_with(".md"),
                            path,
                        },
                    )
                    .unwrap()
                    .text;
                for raw in [
                    "hunter2-not-real-000",
                    "zq8r7t6y5u4i3o2p1a0s",
                    "correct-horse-battery",
                    "s3cretpass",
                    "pa55word",
                    "AKIAIOSFODNN7EXAMPLE",
                    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                    "4111 1111 1111 1111",
                    "536-22-8741",
                    "jane@acme-mail.io",
                    "MIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEAwarmupnotreal",
                ] {
                    assert!(!out.contains(raw), "{mode:?} {path}: {raw} readable");
                }
                assert_eq!(out.lines().count(), WARM_UP_SAMPLE.lines().count());
            }
        }
    }

    /// The literal gate of configured terms finds, from every start, what the plain
    /// alternation finds: on generated text of terms (and, as a harder case, the allow
    /// list's short words) in mixed case, glued to letters, split by separators, next
    /// to markers and next to the characters IGNORECASE folds onto ASCII letters.
    #[test]
    fn gated_terms_equal_the_plain_alternation() {
        let gate = |terms: &[&'static str]| {
            let (pattern, first_words) = compile_terms(terms.iter().copied()).expect("terms");
            LiteralGated::new(pattern, first_words)
        };
        let terms = [
            "Acme Logistics",
            "ZEPHYR-7",
            "Initech",
            "CI/CD",
            "Müller",
            "sk",
        ];
        let allow: Vec<&str> = DEFAULT_ALLOW_TERMS
            .iter()
            .chain(MONTHS_AND_DAYS)
            .copied()
            .collect();
        let with_non_ascii = gate(&terms);
        let ascii_terms = gate(&terms[..4]);
        let allow = gate(&allow);
        let pieces = [
            "acme",
            "ACME",
            "Acme",
            " ",
            "_",
            "-",
            "\t",
            "logistics",
            "Logistics",
            "zephyr",
            "7",
            "initech",
            "x",
            "CI/CD",
            "ci/cd",
            "API",
            "api",
            "Apis",
            "AD",
            "add",
            "May",
            "monday",
            "\u{e000}\u{e002}\u{e001}",
            "\n",
            "ſ",
            "K",
            "İ",
            "ı",
            "é",
            "müller",
            "Sk",
            ".",
            "ſk",
            "İnitech",
            "\u{212A}",
            "ınıtech",
            "AcMe",
        ];
        for hay in crate::engine::testgen::texts(&pieces, 400, 14, 29) {
            for gated in [&with_non_ascii, &ascii_terms, &allow] {
                let mut cache = crate::engine::python::re::FindCache::default();
                let mut start = 0;
                while start <= hay.len() {
                    assert_eq!(
                        gated.find_from_cached(&hay, start, &mut cache),
                        gated.inner.find_from(&hay, start),
                        "from {start} in {hay:?}"
                    );
                    start += hay[start..].chars().next().map_or(1, char::len_utf8);
                }
            }
        }
    }

    /// Nominated values in the order the pipeline tries them, case-folded duplicates out.
    fn order_values(values: &mut Vec<String>) {
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup_by(|a, b| placeholder::casefold(a) == placeholder::casefold(b));
    }

    /// One to `most_values` values drawn from `words`, in pattern order, and a text of
    /// `text_pieces` pieces: a case for the value-search tests.
    fn value_case(
        next: &mut impl FnMut(usize) -> usize,
        words: &[&str],
        pieces: &[&str],
        most_values: usize,
        text_pieces: usize,
    ) -> (Vec<String>, String) {
        let mut values: Vec<String> = (0..1 + next(most_values))
            .map(|_| words[next(words.len())].to_owned())
            .collect();
        order_values(&mut values);
        let hay = (0..text_pieces)
            .map(|_| pieces[next(pieces.len())])
            .collect();
        (values, hay)
    }

    /// Every match of the spec's alternation of `values` in `hay`, left to right.
    fn alternation_matches(values: &[String], hay: &str) -> Vec<(usize, usize)> {
        let pattern = nominated_pattern(values);
        let mut found = Vec::new();
        let mut at = 0;
        while let Some((s, e)) = pattern.find_at(hay, at) {
            found.push((s, e));
            at = e.max(s + 1);
        }
        found
    }

    /// The baseline, terms and allow stages rewrite a text the same whether the
    /// literal-gated ones take their literal starts from the scan (moved through each
    /// rewrite) or search for them, also when earlier stages changed the text, with
    /// markers (the lists move) or with ASCII replacements (the lists are dropped).
    #[test]
    fn stages_with_scanned_literal_starts_equal_the_searching_stages() {
        let pieces = [
            "token = Abcdefgh12",
            "API_KEY: 'zzzzzzzzzz'",
            "password=hunter2hunter2",
            "sk-",
            "abcdefghijklmnopqrstuvwxyz",
            "AKIA",
            "ABCDEFGHIJKLMNOP",
            "Bearer ",
            "vault_salt = s4lty-s4lty",
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
            "[SECRET_0123456789abcdef0123456789abcdef]",
            "secret",
            "ſ",
            "é",
            " ",
            "\n",
            "=",
            "\"",
            "Globex Corp",
            "globex",
            "Jane  Doe",
            "jane_doe",
            "Zoë",
            "Data",
            "ad",
            "Key\tVault",
            "power-bi",
            "CI/CD",
            "May",
            "Quorbl",
        ];
        let ascii = ["Globex Corp", "Jane Doe", "doe"];
        let (pattern, words) = compile_terms(ascii).expect("terms compile");
        let ascii_terms = LiteralGated::new(pattern, words.iter().copied());
        let (pattern, with_other) = compile_terms(ascii.into_iter().chain(["Zoë"])).expect("terms");
        let other_terms = LiteralGated::new(pattern, with_other);
        let allow_terms: Vec<&str> = DEFAULT_ALLOW_TERMS
            .iter()
            .chain(MONTHS_AND_DAYS)
            .chain(&["Quorbl Atlas"])
            .copied()
            .collect();
        let (pattern, allow_words) = compile_terms(allow_terms).expect("allow list compiles");
        let allow = LiteralGated::new(pattern, allow_words.iter().copied());
        let (placeholders, _) = &*PATH_TOKENS;
        let (mut changed_then_found, mut moved, mut dropped) = (0, 0, 0);
        let mut allowed_after_change = 0;
        for (stages, marker) in [
            (&*EARLY_STAGES, "\u{E000}"),
            (&*CODE_STAGES, "\u{E000}\u{E001}"),
            // ASCII replacements that hold a term: a moved list would miss it.
            (&*EARLY_STAGES, "<globex corp>"),
        ] {
            let marker = |_: &str| marker.to_owned();
            for text in crate::engine::testgen::texts(&pieces, 500, 10, 41) {
                let mut scanned = Working::new(text.clone());
                scanned.starts = LiteralStarts {
                    secret: crate::engine::stages::patterns::tests::secret_literal_starts_in(&text),
                    terms: crate::engine::stages::patterns::tests::literal_starts_in(&text, &words),
                    allow: crate::engine::stages::patterns::tests::literal_starts_in(
                        &text,
                        &allow_words,
                    ),
                };
                let mut searching = Working::new(text.clone());
                for (i, w) in [&mut scanned, &mut searching].into_iter().enumerate() {
                    w.apply(placeholders, marker);
                    for stage in stages.iter() {
                        let before = w.text.clone();
                        w.apply_stage(stage, marker);
                        if stage.starts_from_scan && before != w.text && before != text {
                            changed_then_found += 1;
                        }
                    }
                    for terms in [&ascii_terms, &other_terms] {
                        let before = w.text.clone();
                        if i == 0 && before != text {
                            moved += usize::from(w.starts.terms.is_some());
                            dropped += usize::from(w.starts.terms.is_none());
                        }
                        w.substitute(terms, Some(Literals::Terms), |_, m| marker(m));
                        changed_then_found += usize::from(before != w.text && before != text);
                    }
                    let before = w.text.clone();
                    w.substitute_at_known_starts(&allow, Literals::Allow, |_, m| marker(m));
                    allowed_after_change += usize::from(before != w.text && before != text);
                }
                assert_eq!(scanned.text, searching.text, "in {text:?}");
            }
        }
        assert!(changed_then_found > 200, "{changed_then_found}");
        assert!(allowed_after_change > 200, "{allowed_after_change}");
        assert!(
            moved > 200 && dropped > 200,
            "{moved} moved, {dropped} dropped"
        );
    }

    /// The numeric stages skip a text in which the detector layer's passes saw none of
    /// their shapes, and the baseline rewrites every text as when each stage searches
    /// it: also after earlier stages replaced matches with markers, with or without the
    /// line breaks kept after them, and for digits of other scripts (`٣`, `１`, `𝟘`).
    #[test]
    fn numeric_stages_skipped_by_shape_equal_the_searching_stages() {
        let pieces = [
            "123",
            "45",
            "6789",
            "-",
            "--",
            ".",
            "1.2",
            ".3.4",
            " ",
            "  ",
            "\n",
            "(",
            ")",
            "+1 ",
            "555",
            "0000",
            "4111 1111",
            "deadbeef",
            "0123456789abcdef",
            "cafe-f00d",
            "-4a5b-",
            "8c9d",
            "x",
            "Q",
            "\u{663}",
            "\u{FF11}",
            "\u{1D7D8}",
            "é",
            "user@example.com",
            "https://h.example/",
            "token = ",
            "\t",
            "078-05-1120",
            "10.0.0.1",
            "4111 1111 1111 1111",
            "(555) 010-0000",
            "123e4567-e89b-12d3-a456-426614174000",
            "123e4567-e89b",
            "-12d3-a456-",
            "1.\u{1D7D8}\u{1D7D8}\u{1D7D8}.2",
            "\u{1D7D8}\u{1D7D8}\u{1D7D8}",
            "\u{1D7D8}.\u{1D7D8}\u{1D7D8}\u{1D7D8}.\u{1D7D8}\u{1D7D8}\u{1D7D8}.\u{1D7D8}\u{1D7D8}\u{1D7D8}",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ];
        let detector = crate::engine::detect::Detector::new();
        let ctx = DetectContext {
            rel_path: "notes.txt",
            prose: false,
        };
        let (placeholders, _) = &*PATH_TOKENS;
        let mut skipped = std::collections::BTreeMap::<&str, usize>::new();
        let mut found = std::collections::BTreeMap::<&str, usize>::new();
        for marker in ["\u{E000}", "\u{E000}\n\n"] {
            let marker = |_: &str| marker.to_owned();
            for text in crate::engine::testgen::texts(&pieces, 1500, 14, 71) {
                let (_, seen) = detector.detect_and_see(&text, &ctx, true);
                let mut knowing = Working::new(text.clone());
                let mut searching = Working::new(text.clone());
                for w in [&mut knowing, &mut searching] {
                    w.apply(placeholders, marker);
                }
                for stage in EARLY_STAGES.iter() {
                    let before = searching.text.clone();
                    searching.apply_stage(stage, marker);
                    if searching.text != before {
                        *found.entry(stage.name).or_default() += 1;
                    }
                    if seen.shapes.may_match(stage.shape) {
                        knowing.apply_stage(stage, marker);
                    } else {
                        *skipped.entry(stage.name).or_default() += 1;
                    }
                    assert_eq!(knowing.text, searching.text, "{} in {text:?}", stage.name);
                }
            }
        }
        // Each gated stage is skipped often, and finds matches in other texts.
        for name in ["hex_secret", "uuid", "ipv4", "ssn", "card", "phone"] {
            let (s, f) = (skipped.get(name), found.get(name));
            assert!(
                s > Some(&200) && f > Some(&20),
                "{name}: {s:?} skipped, {f:?} found"
            );
        }
    }

    #[test]
    fn ascii_value_scan_equals_the_nominated_alternation() {
        let words = [
            "ab", "AB1", "b1", "a", "ab1c", "x-y", "1", "k", "ab c", "a b1", "x y k",
        ];
        let pieces = [
            "ab", "B1", "c", " ", "-", "y", "x", "1", "\u{e9}", "K", "\u{e000}", "  ", "\n", "\t",
            "\u{a0}", "\u{1c}", "\u{2003}",
        ];
        let mut next = crate::engine::testgen::picker(5);
        for _ in 0..3000 {
            let (values, hay) = value_case(&mut next, &words, &pieces, 4, 12);
            let expected = alternation_matches(&values, &hay);
            assert_eq!(
                nominated_matches(&values, &hay, false),
                Some(expected.clone()),
                "{values:?} in {hay:?}"
            );
            assert_eq!(
                ascii_value_matches_with(&values, &hay, false),
                Some(expected),
                "every place tried: {values:?} in {hay:?}"
            );
        }
    }

    /// Plain values beside accented ones and ones with odd spacing: the merged search
    /// finds what the one alternation finds, and declines (a tie at one start) rarely.
    #[test]
    fn mixed_value_search_equals_the_nominated_alternation() {
        let words = [
            "ab",
            "AB1",
            "b1",
            "a",
            "x-y",
            "ab c",
            "a b1",
            "jörg",
            "ab é",
            "é",
            "b1\u{a0}c",
            "ä b",
            "café",
        ];
        let pieces = [
            "ab", "B1", "c", " ", "-", "y", "x", "1", "é", "É", "jÖrg", "\u{a0}", "ä", "caf", "\n",
            "K", "\u{e000}",
        ];
        let mut next = crate::engine::testgen::picker(17);
        let (mut merged, mut declined, mut found) = (0, 0, 0);
        for _ in 0..4000 {
            let (values, hay) = value_case(&mut next, &words, &pieces, 5, 14);
            let expected = alternation_matches(&values, &hay);
            match nominated_matches(&values, &hay, false) {
                Some(got) => {
                    assert_eq!(got, expected, "{values:?} in {hay:?}");
                    merged += 1;
                    found += got.len();
                }
                None => declined += 1,
            }
        }
        assert!(
            declined * 10 < merged,
            "merged {merged}, declined {declined}"
        );
        assert!(found > 500, "the texts hold matches: {found}");
    }

    /// More distinct first words than one Teddy searcher holds (64), sharing prefixes, in
    /// texts long enough for the vectorised search: the same matches as the alternation.
    #[test]
    fn ascii_value_scan_of_many_values_equals_the_nominated_alternation() {
        let letters = [
            "a", "b", "C", "d", "e", "f", "G", "h", "1", "2", ".", "@", "-",
        ];
        let mut next = crate::engine::testgen::picker(11);
        for round in 0..12 {
            let mut values: Vec<String> = (0..40 + 15 * round)
                .map(|_| {
                    let word = |next: &mut dyn FnMut(usize) -> usize| -> String {
                        (0..2 + next(5))
                            .map(|_| letters[next(letters.len())])
                            .collect()
                    };
                    match next(6) {
                        0 => format!("{} {}", word(&mut next), word(&mut next)),
                        _ => word(&mut next),
                    }
                })
                .filter(|v| v.starts_with(|c: char| c.is_ascii_alphanumeric()))
                .collect();
            order_values(&mut values);
            let hay: String = (0..300)
                .map(|_| {
                    let piece = match next(3) {
                        0 => values[next(values.len())].to_uppercase(),
                        1 => values[next(values.len())].clone(),
                        _ => letters[next(letters.len())].to_owned(),
                    };
                    piece + [" ", "\n", "  ", "x", ",", ""][next(6)]
                })
                .collect();
            let expected = alternation_matches(&values, &hay);
            assert!(expected.len() > 20, "the texts hold values");
            assert_eq!(
                nominated_matches(&values, &hay, false),
                Some(expected),
                "{} values",
                values.len()
            );
        }
    }

    #[test]
    fn line_count_is_preserved_across_multi_line_values() {
        let engine = fixture_a(Mode::Balanced);
        let text = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIB\nxyz\n-----END RSA PRIVATE KEY-----\ntarget\n";
        let r = engine
            .redact(
                text,
                RedactOptions {
                    preserve_line_count: true,
                    prose: true,
                    path: "",
                },
            )
            .unwrap();
        assert_eq!(
            crate::engine::python::text::splitlines(&r.text, false)[5],
            "target"
        );
        assert!(!r.text.contains("MIIB"));
        let plain = engine
            .redact(
                text,
                RedactOptions {
                    preserve_line_count: false,
                    prose: true,
                    path: "",
                },
            )
            .unwrap();
        assert_eq!(
            crate::engine::python::text::splitlines(&plain.text, false).len(),
            3
        );
    }
}
