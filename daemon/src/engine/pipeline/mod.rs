//! The redaction pipeline (spec 5.4): stage order, markers, placeholders, path redaction.

use crate::engine::detect::{DetectContext, Detector, Finding};
use crate::engine::stages::folded::FoldedSet;
use crate::engine::stages::gate::{LiteralGated, has_ascii_fold_stand_in};
mod call;
mod glued;
pub(crate) mod markers;
mod nominated;
mod path_shapes;
mod plugged;
mod terms;
mod variants;

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
use call::{Call, LiteralStarts, StartList, Working};
use markers::{Markers, line_breaks};
use nominated::{collapse_space, multi_line_parts, nominated_matches, nominated_pattern, py_words};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use terms::compile_terms;

/// Per-category substitution counts of one redaction (every occurrence counts), and
/// per plugged detector, in launch order, the values it nominated into the alternation
/// and the spans redacted only where they were found (the receipt's `detectors`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub CategoryCounts, pub Vec<(u64, u64)>);

impl Counts {
    pub fn add(&mut self, category: Category, n: u64) {
        if n > 0 {
            self.0.add(category, n);
        }
    }

    /// Adds one plugged detector's counts (`index` in launch order).
    pub fn add_plugged(&mut self, index: usize, nominated: u64, positional: u64) {
        if nominated + positional == 0 {
            return;
        }
        if self.1.len() <= index {
            self.1.resize(index + 1, (0, 0));
        }
        self.1[index].0 += nominated;
        self.1[index].1 += positional;
    }

    pub fn merge(&mut self, other: &Counts) {
        for (category, n) in &other.0 {
            self.add(*category, *n);
        }
        for (i, (nominated, positional)) in other.1.iter().enumerate() {
            self.add_plugged(i, *nominated, *positional);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty() && self.1.is_empty()
    }
}

/// Counts by category, held sorted by category: the entries and order a `BTreeMap`
/// would give, in one small allocation. The search index keeps one per file of a root,
/// and a map's first node takes about 280 bytes for the one or two categories most
/// files have (8 MB of a 106k-file root's index).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CategoryCounts(Vec<(Category, u64)>);

impl CategoryCounts {
    /// Adds `n` to `category`'s count.
    pub fn add(&mut self, category: Category, n: u64) {
        match self.0.binary_search_by(|(c, _)| c.cmp(&category)) {
            Ok(i) => self.0[i].1 += n,
            Err(i) => self.0.insert(i, (category, n)),
        }
    }

    pub fn get(&self, category: &Category) -> Option<&u64> {
        let i = self.0.binary_search_by(|(c, _)| c.cmp(category)).ok()?;
        Some(&self.0[i].1)
    }

    pub fn contains_key(&self, category: &Category) -> bool {
        self.get(category).is_some()
    }

    /// Categories and counts, by category.
    pub fn iter(&self) -> impl Iterator<Item = (&Category, &u64)> {
        self.into_iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &u64> {
        self.0.iter().map(|(_, n)| n)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl<'a> IntoIterator for &'a CategoryCounts {
    type Item = (&'a Category, &'a u64);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Category, u64)>,
        fn(&'a (Category, u64)) -> (&'a Category, &'a u64),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(c, n)| (c, n))
    }
}

/// A running sum of many [`Counts`] (one or two per file of a whole-root call). A call
/// meets a handful of categories, each named by the same static string: a short list
/// compared by address first costs less than a map lookup by name per file.
#[derive(Debug, Default)]
pub struct CountsSum {
    categories: Vec<(Category, u64)>,
    plugged: Counts,
}

impl CountsSum {
    fn add_category(&mut self, category: Category, n: u64) {
        match self.categories.iter_mut().find(|(c, _)| c.same(&category)) {
            Some((_, sum)) => *sum += n,
            None => self.categories.push((category, n)),
        }
    }

    pub fn add(&mut self, counts: &Counts) {
        for (category, n) in &counts.0 {
            self.add_category(*category, *n);
        }
        for (i, (nominated, positional)) in counts.1.iter().enumerate() {
            self.plugged.add_plugged(i, *nominated, *positional);
        }
    }

    /// Adds another sum to this one.
    pub fn merge(&mut self, other: CountsSum) {
        for (category, n) in other.categories {
            self.add_category(category, n);
        }
        self.plugged.merge(&other.plugged);
    }

    /// Adds the sum to `counts`.
    pub fn add_to(self, counts: &mut Counts) {
        for (category, n) in self.categories {
            counts.add(category, n);
        }
        counts.merge(&self.plugged);
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

/// Receives every placeholder a recording redaction makes with the raw text it
/// replaced, in the order they are made ([`Engine::redact_recording`]). Rehydration
/// keeps the first spelling of each; the engine itself keeps nothing.
pub trait Record {
    fn placeholder(&mut self, placeholder: &str, raw: &str);
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
    /// A plugged detector refused the text (spec 5.12's fixed sentences).
    #[error("{0}")]
    Plugged(#[from] crate::engine::plugged::PluggedError),
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
    /// Plugged detectors (spec 5.12), in launch order.
    plugged: Vec<crate::engine::plugged::Plugged>,
    /// Configured terms glued into names, for code-mode paths.
    glued: glued::GluedTerms,
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
        let mut glued_lists: Vec<(Category, Vec<String>)> = Vec::new();
        for (category, list) in [
            (Category::CLIENT, &policy.clients),
            (Category::ORG, &policy.organizations),
            (Category::PERSON, &policy.people),
            (Category::SENSITIVE, &policy.terms),
        ] {
            let given: Vec<&str> = list
                .iter()
                .map(String::as_str)
                .chain(alias_terms.get(&category).into_iter().flatten().copied())
                .collect();
            // The same name typed with composed or decomposed accents (macOS file names
            // and some editors write `é` as `e` + U+0301): each written form matches.
            let other_forms: Vec<String> =
                given.iter().flat_map(|t| other_normal_forms(t)).collect();
            let wanted: Vec<&str> = given
                .iter()
                .copied()
                .chain(other_forms.iter().map(String::as_str))
                .filter(|t| !reserved.contains(placeholder::casefold(t).as_str()))
                .collect();
            glued_lists.push((category, wanted.iter().map(|t| t.to_string()).collect()));
            if let Some((pattern, first_words)) = compile_terms(wanted.iter().copied()) {
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
            plugged: policy
                .plugged
                .iter()
                .map(crate::engine::plugged::Plugged::compile)
                .collect::<Option<_>>()
                .ok_or(EngineError::Plugged(
                    crate::engine::plugged::PluggedError::Failed,
                ))?,
            glued: glued::GluedTerms::new(
                glued_lists
                    .iter()
                    .map(|(c, list)| (*c, list.iter().map(String::as_str).collect())),
            ),
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
        self.redact_with(text, opts, None)
    }

    /// [`Engine::redact`], telling `record` every placeholder made and its raw text.
    pub fn redact_recording(
        &self,
        text: &str,
        opts: RedactOptions<'_>,
        record: &mut dyn Record,
    ) -> Result<Redacted, EngineError> {
        self.redact_with(text, opts, Some(record))
    }

    fn redact_with(
        &self,
        text: &str,
        opts: RedactOptions<'_>,
        record: Option<&mut dyn Record>,
    ) -> Result<Redacted, EngineError> {
        let heuristics = match self.policy.mode {
            Mode::Strict | Mode::Balanced => true,
            Mode::Code => opts.prose,
        };
        let context = DetectContext {
            rel_path: opts.path,
            prose: opts.prose,
        };
        self.run(
            text,
            opts.preserve_line_count,
            heuristics,
            Detection::File(&context),
            record,
        )
    }

    /// Tells `record` about `placeholder` for the raw `value` (keyed as `key`), and about
    /// the ordinary placeholder a declared alias had before its group existed, which
    /// older documents still carry.
    fn record(
        &self,
        record: &mut dyn Record,
        category: Category,
        key: &str,
        placeholder: &str,
        value: &str,
    ) {
        record.placeholder(placeholder, value);
        let normalized = normalize_value(key);
        if self.alias_links.contains_key(&normalized) {
            let ordinary = format!("[{category}_{}]", self.key.digest(category, &normalized));
            record.placeholder(&ordinary, value);
        }
    }

    /// Every (ordinary placeholder, linked placeholder) pair of the declared aliases, in
    /// every category: a document written before an alias group existed carries the
    /// ordinary one, while redaction now shows the linked one.
    pub fn superseded_placeholders(&self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        for (normalized, (entity, suffix)) in &self.alias_links {
            for category in Category::ALL {
                pairs.push((
                    format!("[{category}_{}]", self.key.digest(category, normalized)),
                    format!("[{category}_{entity}.{suffix}]"),
                ));
            }
        }
        pairs
    }

    /// Whether `word` is on the allow list (built-in, months and days, the policy's),
    /// compared case-folded.
    pub fn allows(&self, word: &str) -> bool {
        self.allow_lookup.contains(word)
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
        detection: Detection<'_>,
        record: Option<&mut dyn Record>,
    ) -> Result<Redacted, EngineError> {
        if text.is_empty() {
            return Ok(Redacted::default());
        }
        // Code mode with detectors: the precise detectors replace the reference's
        // imprecise stages (generic assignments, cards without Luhn, IPv4 without
        // parsing, phones on dates, every URL and domain).
        let precise = self.policy.mode == Mode::Code && self.detector.is_some();
        let (findings, mut seen) = match (&self.detector, &detection) {
            (Some(detector), Detection::File(context)) => {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    detector.detect_and_see(text, context, !precise)
                }))
                .map_err(|_| EngineError::DetectorFailed)?
            }
            // Strict and balanced paths keep the reference's stages, which find these.
            (Some(detector), Detection::Path) if precise => {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    path_shapes::findings(detector, text)
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
            record,
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
            w.apply(&hosts, |m| call.redact_restored(Category::URL, m));
        }
        if self.policy.detector_profile == DetectorProfile::Extended {
            for stage in EXTENDED_STAGES.iter() {
                w.apply(&*stage.finder, |m| call.redact(stage.category, m));
            }
        }
        for (category, pattern) in &self.terms {
            w.substitute(pattern, Some(StartList::Terms), |_, m| {
                call.redact_composed(*category, m)
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
            w.substitute_at_known_starts(allow, StartList::Allow, |_, m| call.protect(m));
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
            w.apply(&*SPEAKER_LABEL, |m| {
                if self.policy.mode == Mode::Code && (never_names_a_person(m) || !is_name_word(m)) {
                    m.to_owned() // `Note:`, `Phone:`, `X-Auth-Token:`: a label, not a speaker
                } else {
                    call.redact(Category::PERSON, m)
                }
            });
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
        if matches!(detection, Detection::File(_)) && !self.plugged.is_empty() {
            self.apply_plugged(text, &mut w, &mut call, fold_free)?;
        }
        Ok(Redacted {
            text: call.markers.restore(&w.text),
            counts: call.counts,
            kept_line_breaks: call.kept_line_breaks,
        })
    }

    /// Plugged detectors' findings, after every other stage (spec 5.12, see
    /// [`plugged`]). When the working text cannot be mapped back onto `text` it falls
    /// back to what it can find there: every occurrence of a nominated value and every
    /// unchanged occurrence of a span's exact text, longest first.
    fn apply_plugged(
        &self,
        text: &str,
        w: &mut Working,
        call: &mut Call<'_, '_>,
        fold_free: bool,
    ) -> Result<(), EngineError> {
        let n = crate::engine::plugged::nominate(&self.plugged, text, |folded| {
            self.allow_lookup.contains_folded(folded)
                || RESERVED_PLACEHOLDER_WORDS.contains(&folded)
        })?;
        for (i, (nominated, positional)) in n.counts.iter().enumerate() {
            call.counts.add_plugged(i, *nominated, *positional);
        }
        if n.spans.is_empty() {
            return Ok(());
        }
        if let Some(segments) = call.markers.segments(&w.text, text) {
            let pieces = plugged::pieces(&n, text, &segments);
            if let Some(out) = plugged::substitute(&w.text, pieces, |c, v| call.redact(c, v)) {
                w.set(out);
            }
            return Ok(());
        }
        let hay = w.text.as_str();
        let mut covers: Vec<(usize, usize, Category, usize)> = Vec::new();
        if !n.values.is_empty() {
            let found = nominated_matches(&n.values, hay, fold_free)
                .unwrap_or_else(|| alternation_matches(&n.values, hay));
            for (s, e) in found {
                let key = placeholder::casefold(&collapse_space(&hay[s..e]));
                let (category, rank) = n
                    .categories
                    .get(&key)
                    .copied()
                    .unwrap_or((Category::SENSITIVE, usize::MAX));
                covers.push((s, e, category, rank));
            }
        }
        for &(start, end, category, rank) in &n.spans {
            let value = &text[start..end];
            for s in memchr::memmem::find_iter(hay.as_bytes(), value.as_bytes()) {
                covers.push((s, s + value.len(), category, rank));
            }
        }
        covers.sort_by_key(|&(s, e, _, rank)| (std::cmp::Reverse(e - s), rank, s));
        let mut claimed: BTreeMap<usize, (usize, Category)> = BTreeMap::new();
        for (s, e, category, _) in covers {
            let before = claimed.range(..e).next_back();
            if before.is_some_and(|(_, &(end, _))| end > s) {
                continue;
            }
            claimed.insert(s, (e, category));
        }
        let pieces = claimed
            .into_iter()
            .map(|(s, (e, c))| (s, e, c, false))
            .collect();
        if let Some(out) = plugged::substitute(hay, pieces, |c, v| call.redact(c, v)) {
            w.set(out);
        }
        Ok(())
    }

    /// A multi-word proper name: allow-listed runs stay; on heading lines, heading words
    /// at either end stay and only the span between the first and last other word goes.
    fn proper_name(&self, value: &str, heading: bool, call: &mut Call<'_, '_>) -> String {
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
        if self.policy.mode == Mode::Code {
            // Words of technical writing at either end are not part of a name (`JSON
            // Web Token`, `Secret Token` name no one; `Contact Maria Santos` keeps
            // `Maria Santos`); what is left must still be two words.
            let words: Vec<(usize, usize)> = py_words(&value[start..end])
                .map(|(a, b)| (start + a, start + b))
                .collect();
            let keep = |&&(a, b): &&(usize, usize)| {
                !never_names_a_person(&value[a..b]) && is_name_word(&value[a..b])
            };
            let first = words.iter().position(|w| keep(&w));
            let last = words.iter().rposition(|w| keep(&w));
            match (first, last) {
                (Some(f), Some(l)) if l > f => (start, end) = (words[f].0, words[l].1),
                _ => return value.to_owned(),
            }
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
            for raw in multi_line_parts(&text[f.start..f.end]) {
                let value = collapse_space(raw);
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
        self.redact_path_with(rel, None)
    }

    /// [`Engine::redact_path`], telling `record` every placeholder made and its raw text.
    pub fn redact_path_recording(
        &self,
        rel: &str,
        record: &mut dyn Record,
    ) -> Result<Redacted, EngineError> {
        self.redact_path_with(rel, Some(record))
    }

    fn redact_path_with(
        &self,
        rel: &str,
        mut record: Option<&mut dyn Record>,
    ) -> Result<Redacted, EngineError> {
        let code = self.policy.mode == Mode::Code;
        let reborrow = record.as_mut().map(|r| &mut **r as &mut dyn Record);
        let mut redacted = self.run(rel, false, !code, Detection::Path, reborrow)?;
        if code {
            let counts = &mut redacted.counts;
            if let Some(text) = self.glued.apply(&redacted.text, |category, value| {
                counts.add(category, 1);
                let placeholder = self.placeholder(category, value).to_string();
                if let Some(record) = record.as_deref_mut() {
                    self.record(record, category, value, &placeholder, value);
                }
                placeholder
            }) {
                redacted.text = text;
            }
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
            let placeholder = self.placeholder(Category::ENTITY, token);
            if let Some(record) = record.as_deref_mut() {
                self.record(record, Category::ENTITY, token, &placeholder, token);
            }
            out.push_str(&placeholder);
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

/// The Unicode normal forms (NFC, NFD) of `term` other than the one it is written in.
fn other_normal_forms(term: &str) -> Vec<String> {
    use unicode_normalization::UnicodeNormalization;
    if term.is_ascii() {
        return Vec::new();
    }
    let mut forms: Vec<String> = Vec::new();
    for form in [term.nfc().collect::<String>(), term.nfd().collect()] {
        if form != term && !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
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
fn identity_lines(hay: &str, splicer: &mut Splicer<'_>, call: &mut Call<'_, '_>) {
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
    call: &mut Call<'_, '_>,
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

/// What the detector layer reads in one run of the pipeline.
enum Detection<'a> {
    /// A file's text: every family.
    File(&'a DetectContext<'a>),
    /// A path (code mode): the shapes [`path_shapes`] keeps.
    Path,
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

/// Every match of the spec's alternation of `values` in `hay`, left to right (the
/// general path of [`nominated_matches`], and the reference for its tests).
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

#[cfg(test)]
mod tests;

/// Whether `word` is written the way a name is (code mode): not in capitals (`INSERT`,
/// `SSRF`, `NOTE`), not a compound identifier (`HockeyAppToken`: two or more humps after
/// the first; `McDonald` has one), not a header-style run of three or more dashed parts
/// (`X-Auth-Token`; `Jean-Pierre` has two), not a qualified name.
fn is_name_word(word: &str) -> bool {
    // Capitals side by side and nothing in lower case (initials, `J.R.R.`, are a name's).
    let adjacent_capitals = word
        .chars()
        .zip(word.chars().skip(1))
        .any(|(a, b)| a.is_uppercase() && b.is_uppercase());
    if adjacent_capitals && !word.chars().any(char::is_lowercase) {
        return false;
    }
    let humps = word
        .chars()
        .zip(word.chars().skip(1))
        .filter(|(a, b)| a.is_lowercase() && b.is_uppercase())
        .count();
    // A qualified name (`System.Management.Automation`) is code, not a name; initials
    // (`J.R.R.`) have one letter per part.
    let mut parts = word.split('.');
    let qualified = parts.next().is_some_and(|head| head.chars().count() >= 2)
        && parts.next().is_some_and(|next| !next.is_empty());
    humps < 2 && word.split('-').count() < 3 && !qualified
}

/// Whether `word` is one of [`wordlists::DOC_VOCABULARY`] or
/// [`wordlists::NEVER_NAME_WORDS`] (ASCII case-insensitively; the lists are ASCII), the
/// full stop that ends a sentence aside (`this License. Subject to`).
fn never_names_a_person(word: &str) -> bool {
    use crate::engine::wordlists::{DOC_VOCABULARY, NEVER_NAME_WORDS};
    let word = word.strip_suffix('.').unwrap_or(word);
    word.is_ascii()
        && DOC_VOCABULARY
            .iter()
            .chain(NEVER_NAME_WORDS)
            .any(|w| w.eq_ignore_ascii_case(word))
}
