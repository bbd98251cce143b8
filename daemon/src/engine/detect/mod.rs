//! The built-in secret and PII detector layer (issue 6, `shared/spec/detection.md`).
//!
//! What it is for: finding the *values* in a text that must not reach an agent — private
//! keys, provider tokens, passwords in configuration, credentials in URLs and HTTP
//! headers, password hashes, and validated PII — precisely enough that ordinary code
//! stays readable. The pipeline decides what to do with the spans; this module only
//! finds them.
//!
//! What it is not for: replacing text, counting, or reproducing the reference's own
//! stages (those live in `pipeline.rs`). Like the rest of the engine it does no IO:
//! the rule packs are compiled into the binary.
//!
//! Detector families (ids in [`Finding::detector`] start with the family):
//! `S1` private key material, `S2` provider tokens (a gitleaks-schema rule pack),
//! `S3` values of sensitive keys in configuration and code, `S4` credentials in URLs and
//! connection strings, `S5` HTTP authorization material, `S6` password hashes,
//! `S7` keyword + entropy fallback, `S8` base64/hex/percent-encoded secrets,
//! `P1`–`P5` validated PII (email, phone, card/IBAN/SSN, IP, names in structured places).

mod anchored;
mod cli;
mod decode;
mod filekind;
mod hashes;
mod http;
mod keys;
mod lexical;
mod number_gates;
mod pii;
mod rulepack;
mod structural;
mod urls;
mod values;

use super::patterns::{GATE_WORDS, SECRET_GATE_LITERALS};
use super::placeholder::Category;
use super::prepass::{GateWords, Seen, Shape, Shapes};
use crate::engine::prepass::keywords;
use crate::engine::prepass::literals;
use crate::engine::prepass::runs;
use std::sync::{Arc, LazyLock};

/// Version of the detector layer, reported in receipts so a redaction can be traced to
/// the rules that produced it. Bump it whenever a rule or threshold changes output.
pub const DETECTOR_VERSION: &str = "redctx-detect/0.1.7+gitleaks-8.30.1";

/// Name of the detector layer in receipts (`builtin_detector.name`).
pub const DETECTOR_NAME: &str = "redctx-detect";

/// Release of the detector layer in receipts (`builtin_detector.version`); the part of
/// [`DETECTOR_VERSION`] between the name and the rule pack.
pub const DETECTOR_RELEASE: &str = "0.1.7";

/// The rule packs the layer runs, for receipts: `gitleaks-8.30.1 (N rules) + redctx (M
/// rules)`, counting only the rules that are active (vendored rules that another family
/// replaces are not counted). Computed from the packs' text, without compiling them.
pub fn rules_label() -> &'static str {
    static LABEL: LazyLock<String> = LazyLock::new(|| {
        let (gitleaks, ours) = rulepack::active_rule_counts();
        format!("gitleaks-8.30.1 ({gitleaks} rules) + redctx ({ours} rules)")
    });
    &LABEL
}

/// What the detector knows about the text besides its content.
#[derive(Clone, Copy, Debug, Default)]
pub struct DetectContext<'a> {
    /// Root-relative POSIX path; its name and extension select file-kind hints
    /// (`.env`, YAML, JSON, properties, Terraform, source languages, …).
    pub rel_path: &'a str,
    /// The text is prose (Markdown, plain text): unquoted values are read as literals
    /// but English filler words after a key are not taken for secrets.
    pub prose: bool,
}

/// One span to redact: the value only, never the key that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Byte offset of the first byte of the value (a char boundary).
    pub start: usize,
    /// Byte offset one past the value (a char boundary).
    pub end: usize,
    /// Placeholder category the value should be redacted as.
    pub category: Category,
    /// Rule id, e.g. `S3.assignment` or `S2.github-pat`, for receipts and debugging.
    pub detector: &'static str,
}

/// A candidate before overlap resolution; higher `priority` is more specific.
#[derive(Clone, Debug)]
pub(crate) struct Candidate {
    pub start: usize,
    pub end: usize,
    pub category: Category,
    pub detector: &'static str,
    pub priority: u8,
}

/// Priorities used in overlap resolution (more specific families win).
pub(crate) mod prio {
    pub const PRIVATE_KEY: u8 = 100;
    pub const PROVIDER: u8 = 90;
    pub const URL_CREDENTIAL: u8 = 85;
    pub const HTTP_AUTH: u8 = 85;
    pub const HASH: u8 = 80;
    pub const STRUCTURAL: u8 = 70;
    pub const PII: u8 = 60;
    pub const DECODED: u8 = 55;
    pub const GENERIC: u8 = 45;
}

/// Everything compiled once per process and shared by every [`Detector`] clone.
struct Compiled {
    rules: rulepack::RulePack,
    structural: structural::Structural,
    pii: pii::Pii,
    /// The keyword pass of a detector that locates no configured terms.
    keywords: Arc<Keywords>,
}

/// One pass finds the trigger words of every family, and the words the pipeline's
/// stages look for; the ids each family's words got in it.
struct Keywords {
    automaton: keywords::KeywordScan,
    rule_words: keywords::WordIds,
    stem_words: keywords::WordIds,
    pii_words: keywords::WordIds,
    http_words: keywords::WordIds,
    cli_words: keywords::WordIds,
    marker_words: keywords::WordIds,
    /// The pipeline's [`SECRET_GATE_LITERALS`], located (most are other families' words).
    secret_gate_words: keywords::WordSet,
    /// The configured terms' first words the pipeline's terms stages start from.
    term_words: keywords::WordSet,
    /// The allow list's first words the pipeline's allow stage starts from.
    allow_words: keywords::WordSet,
    /// The pipeline's [`GATE_WORDS`], presence only.
    gate_words: keywords::WordIds,
}

impl Keywords {
    /// The families' words, plus `term_words` and `allow_words` (lower-case ASCII) for
    /// the terms and allow stages. About a millisecond. `None` when the automaton would
    /// be too large (see [`keywords::KeywordBuilder::build`]).
    fn build(
        rules: &rulepack::RulePack,
        term_words: &[String],
        allow_words: &[String],
    ) -> Option<Keywords> {
        let mut words = keywords::KeywordBuilder::default();
        let rule_words = words.add(rules.keywords());
        let stem_words = words.add(structural::Structural::words());
        let pii_words = words.add(pii::Pii::words());
        let http_words = words.add(http::TRIGGER_WORDS);
        let cli_words = words.add(cli::TRIGGER_WORDS);
        let marker_words = words.add(literals::words());
        let secret_gate_words = words.add_shared(SECRET_GATE_LITERALS.iter());
        let term_words = words.add_shared(term_words);
        let allow_words = words.add_shared(allow_words);
        let gate_words = words.add_presence(GATE_WORDS.iter());
        Some(Keywords {
            automaton: words.build()?,
            rule_words,
            stem_words,
            pii_words,
            http_words,
            cli_words,
            marker_words,
            secret_gate_words,
            term_words,
            allow_words,
            gate_words,
        })
    }
}

static COMPILED: LazyLock<Arc<Compiled>> = LazyLock::new(|| {
    let rules = rulepack::RulePack::builtin();
    let keywords = Arc::new(Keywords::build(&rules, &[], &[]).expect("the built-in words fit"));
    Arc::new(Compiled {
        rules,
        structural: structural::Structural::new(),
        pii: pii::Pii::new(),
        keywords,
    })
});

/// The detector layer, compiled once. Cloning is a reference-count bump, so each worker
/// thread may hold its own copy; `detect` takes `&self` and allocates only its output.
#[derive(Clone)]
pub struct Detector {
    compiled: Arc<Compiled>,
    keywords: Arc<Keywords>,
}

impl Default for Detector {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Detector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detector")
            .field("version", &DETECTOR_VERSION)
            .finish()
    }
}

impl Detector {
    /// The detector with every built-in rule. The first call compiles the rule packs
    /// (tens of milliseconds); later calls share that work.
    pub fn new() -> Detector {
        let compiled = Arc::clone(&COMPILED);
        Detector {
            keywords: Arc::clone(&compiled.keywords),
            compiled,
        }
    }

    /// [`Detector::new`] whose keyword pass also locates the first words of the
    /// configured terms and of the allow list (ASCII; others are ignored), reported by
    /// [`Detector::detect_and_see`] in [`Seen::term_starts`] and [`Seen::allow_starts`].
    /// Words too many for the automaton (thousands of long, unrelated ones) leave it as
    /// built in: the terms and allow stages then search for themselves.
    pub fn locating<'a>(
        term_words: impl IntoIterator<Item = &'a str>,
        allow_words: impl IntoIterator<Item = &'a str>,
    ) -> Detector {
        fn ascii<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<String> {
            words
                .into_iter()
                .filter(|w| !w.is_empty() && w.is_ascii())
                .map(str::to_ascii_lowercase)
                .collect()
        }
        let (words, allow) = (ascii(term_words), ascii(allow_words));
        let mut detector = Detector::new();
        if !(words.is_empty() && allow.is_empty())
            && let Some(keywords) = Keywords::build(&detector.compiled.rules, &words, &allow)
        {
            detector.keywords = Arc::new(keywords);
        }
        detector
    }

    /// Finds the values to redact in `text`: non-overlapping, sorted by start, on char
    /// boundaries. Where two rules claim overlapping spans the more specific rule wins,
    /// then the longer span.
    pub fn detect(&self, text: &str, ctx: &DetectContext) -> Vec<Finding> {
        self.detect_and_see(text, ctx, false).0
    }

    /// [`Detector::detect`], and what the pipeline's stages need to know of the text:
    /// the layer's keyword pass reads every byte anyway, so the stages that need one of
    /// the [`GATE_WORDS`] need not search a text that holds none, and the secret, terms
    /// and allow stages need not search it again for their literals (the secret ones
    /// listed when `literal_starts`: code mode rarely runs the secret stage and skips
    /// that list).
    /// Likewise the numeric stages need not search a text in which the layer's own
    /// separator and long-run passes saw none of their shapes.
    pub fn detect_and_see(
        &self,
        text: &str,
        ctx: &DetectContext,
        literal_starts: bool,
    ) -> (Vec<Finding>, Seen) {
        let k = &*self.keywords;
        let hits = k.automaton.scan(text);
        let literals = literals::Literals::new(text, &hits, k.marker_words);
        let stand_in = literals.has_ascii_fold_stand_in();
        let runs = runs::LongRuns::new(text);
        let (mut cands, shapes) = self.candidates_with(text, ctx, 0, &hits, &runs);
        decode::rescan(self, text, ctx, &literals, &runs, &mut cands);
        let seen = Seen {
            words: GateWords::scanned(stand_in, hits.present_words(k.gate_words)),
            secret_literal_starts: (literal_starts && !stand_in)
                .then(|| hits.starts_of_set(&k.secret_gate_words)),
            term_starts: (!stand_in && !k.term_words.is_empty())
                .then(|| hits.starts_of_set(&k.term_words)),
            allow_starts: (!stand_in && !k.allow_words.is_empty())
                .then(|| hits.starts_of_set(&k.allow_words)),
            fold_free: !stand_in,
            // The decoder listed the long runs of base64 bytes, which hold every run of
            // hex digits and dashes as long.
            shapes: shapes
                .knowing(Shape::LongHex, runs.may_hold(64))
                .knowing(Shape::UuidLength, runs.may_hold(36)),
        };
        (resolve(text, cands), seen)
    }

    /// Raw candidates of every family except decoding. `depth` > 0 when scanning decoded
    /// text (families that only make sense on original text are skipped then).
    /// `runs`: the long runs of `text`, which the decoder's rescan of it reads too.
    pub(crate) fn candidates(
        &self,
        text: &str,
        ctx: &DetectContext,
        depth: u8,
        runs: &runs::LongRuns,
    ) -> Vec<Candidate> {
        let hits = self.keywords.automaton.scan(text);
        self.candidates_with(text, ctx, depth, &hits, runs).0
    }

    /// [`Detector::candidates`] with the text's keyword scan done, and the baseline's
    /// numeric shapes the families' passes saw in the text.
    #[inline(never)] // one frame per family in profiles
    fn candidates_with(
        &self,
        text: &str,
        ctx: &DetectContext,
        depth: u8,
        hits: &keywords::KeywordHits,
        runs: &runs::LongRuns,
    ) -> (Vec<Candidate>, Shapes) {
        let (c, k) = (&*self.compiled, &*self.keywords);
        let kind = filekind::FileKind::of(ctx.rel_path, ctx.prose);
        let mut out = Vec::new();
        let literals = literals::Literals::new(text, hits, k.marker_words);
        keys::scan(text, &literals, &mut out);
        c.rules
            .scan_selected(text, ctx.rel_path, hits, k.rule_words, runs, &mut out);
        let quoting = filekind::Quoting::of(ctx.rel_path);
        c.structural
            .scan(text, kind, quoting, hits, k.stem_words, &literals, &mut out);
        urls::scan(text, ctx.rel_path, &literals, &mut out);
        http::scan(text, hits, k.http_words, &literals, &mut out);
        cli::scan(text, hits, k.cli_words, &mut out);
        hashes::scan(text, &literals, &mut out);
        let shapes = if depth == 0 {
            c.pii
                .scan(text, kind, hits, k.pii_words, &literals, &mut out)
        } else {
            Shapes::UNKNOWN
        };
        (out, shapes)
    }
}

/// Overlap resolution: most specific first, then longest, then leftmost; the survivors
/// are returned sorted by start. Spans are snapped outward to char boundaries.
fn resolve(text: &str, mut cands: Vec<Candidate>) -> Vec<Finding> {
    for c in cands.iter_mut() {
        c.start = lexical::floor_boundary(text, c.start);
        c.end = lexical::ceil_boundary(text, c.end.min(text.len()));
    }
    cands.retain(|c| c.start < c.end);
    drop_contained(&mut cands);
    cands.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then((b.end - b.start).cmp(&(a.end - a.start)))
            .then(a.start.cmp(&b.start))
    });
    // Accepted spans, kept sorted by start, pairwise disjoint.
    let mut taken: Vec<(usize, usize, usize)> = Vec::new(); // (start, end, index into cands)
    for (i, c) in cands.iter().enumerate() {
        let pos = taken.partition_point(|t| t.0 < c.start);
        let clash_prev = pos > 0 && taken[pos - 1].1 > c.start;
        let clash_next = pos < taken.len() && taken[pos].0 < c.end;
        if !clash_prev && !clash_next {
            taken.insert(pos, (c.start, c.end, i));
        }
    }
    taken
        .into_iter()
        .map(|(start, end, i)| Finding {
            start,
            end,
            category: cands[i].category,
            detector: cands[i].detector,
        })
        .collect()
}

/// A span strictly inside a longer span of the same category adds nothing: the longer
/// one covers it whatever the priorities (`credentials: 'AKIA…:secret'` keeps the whole
/// value rather than the key id alone).
fn drop_contained(cands: &mut Vec<Candidate>) {
    cands.sort_by(|a, b| {
        a.category
            .cmp(&b.category)
            .then(a.start.cmp(&b.start))
            .then(b.end.cmp(&a.end))
    });
    let mut keep = vec![true; cands.len()];
    let mut reach: Option<(Category, usize, usize)> = None; // (category, start, end) of the widest open span
    for (i, c) in cands.iter().enumerate() {
        if let Some((cat, s, e)) = reach
            && cat == c.category
            && c.end <= e
            && (c.start, c.end) != (s, e)
        {
            keep[i] = false;
            continue;
        }
        if reach.is_none_or(|(cat, _, e)| cat != c.category || c.end > e) {
            reach = Some((c.category, c.start, c.end));
        }
    }
    let mut i = 0;
    cands.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

#[cfg(test)]
mod rule_examples;
#[cfg(test)]
mod tests;
