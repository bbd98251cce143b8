//! The built-in secret and PII detector layer (issue 6, `shared/spec/detection.md`).
//!
//! What it is for: finding the *values* in a text that must not reach an agent — private
//! keys, provider tokens, passwords in configuration, credentials in URLs and HTTP
//! headers, password hashes, and validated PII — precisely enough that ordinary code
//! stays readable. The pipeline decides what to do with the spans; this module only
//! finds them.
//!
//! What it is not for: replacing text, counting, or reproducing the reference's own
//! stages (those live in `engine::pipeline`). Like the rest of the engine it does no IO:
//! the rule packs are compiled into the binary.
//!
//! Detector families (ids in [`Finding::detector`] start with the family):
//! `S1` private key material, `S2` provider tokens (a gitleaks-schema rule pack),
//! `S3` values of sensitive keys in configuration and code, `S4` credentials in URLs and
//! connection strings, `S5` HTTP authorization material, `S6` password hashes,
//! `S7` keyword + entropy fallback, `S8` base64/hex/percent-encoded secrets,
//! `P1`–`P5` validated PII (email, phone, card/IBAN/SSN, IP, names in structured places).
//!
//! Layout: [`family`] is the boundary every family implements (`keys`, `rulepack`,
//! `structural`, `urls`, `http`, `cli`, `hashes`, `pii`); `decode` rescans decoded
//! blobs with the whole set; `lexical`, `values`, `filekind`, `anchored` and
//! `number_gates` are helpers the families share. The facts a family reads (keyword
//! hits, gate literals, long runs) come from `engine::prepass`.
//!
//! Adding a family: one file with a type that implements [`family::Family`] (its
//! words, its scan, a priority from [`prio`]), one line in [`builtin_families`], and a
//! bump of the release in `release!` (the cache keys on it).

mod anchored;
mod cli;
mod decode;
mod family;
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

use super::placeholder::Category;
use super::prepass::keywords::KeywordHits;
#[cfg(test)]
use super::prepass::keywords::WordIds;
use super::prepass::literals::Literals;
use super::prepass::runs::LongRuns;
use super::prepass::{KeywordPass, Seen, Shapes};
use family::{Facts, Family, Sink};
use filekind::{FileKind, Quoting};
use std::sync::{Arc, LazyLock};

/// The release of the detector layer and the vendored rule pack's, written once: the
/// constants below are built from them. Bump the release whenever a rule or threshold
/// changes output (the cache keys on [`DETECTOR_VERSION`]).
macro_rules! release {
    () => {
        "0.1.9"
    };
}
macro_rules! gitleaks {
    () => {
        "gitleaks-8.30.1"
    };
}

/// Version of the detector layer, reported in receipts so a redaction can be traced to
/// the rules that produced it.
pub const DETECTOR_VERSION: &str = concat!("redctx-detect/", release!(), "+", gitleaks!());

/// Name of the detector layer in receipts (`builtin_detector.name`).
pub const DETECTOR_NAME: &str = "redctx-detect";

/// Release of the detector layer in receipts (`builtin_detector.version`).
pub const DETECTOR_RELEASE: &str = release!();

/// The rule packs the layer runs, for receipts: `gitleaks-8.30.1 (N rules) + redctx (M
/// rules)`, counting only the rules that are active (vendored rules that another family
/// replaces are not counted). Computed from the packs' text, without compiling them.
pub fn rules_label() -> &'static str {
    static LABEL: LazyLock<String> = LazyLock::new(|| {
        let (gitleaks, ours) = rulepack::active_rule_counts();
        format!(
            concat!(gitleaks!(), " ({} rules) + redctx ({} rules)"),
            gitleaks, ours
        )
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

/// The built-in families, in the order their candidates are gathered (the order breaks
/// ties in overlap resolution, so it is part of the output). Each is compiled here;
/// [`Detector::new`] shares one compiled set per process.
pub(crate) fn builtin_families() -> Vec<Arc<dyn Family>> {
    vec![
        Arc::new(keys::PrivateKeys),
        Arc::new(rulepack::RulePack::builtin()),
        Arc::new(structural::Structural::new()),
        Arc::new(urls::UrlCredentials),
        Arc::new(http::HttpAuth),
        Arc::new(cli::CliFlags),
        Arc::new(hashes::PasswordHashes),
        Arc::new(pii::Pii::new()),
    ]
}

/// The built-in set, compiled on first use (tens of milliseconds) and shared by every
/// engine that adds nothing to it.
static BUILTIN: LazyLock<Detector> = LazyLock::new(|| {
    Detector::of(builtin_families().into(), &[], &[]).expect("the built-in words fit")
});

/// A set of detector families and the one keyword pass over their words. Cloning is a
/// reference-count bump, so each worker thread may hold its own copy; `detect` takes
/// `&self` and allocates only its output.
#[derive(Clone)]
pub struct Detector {
    families: Arc<[Arc<dyn Family>]>,
    keywords: Arc<KeywordPass>,
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
            .field(
                "families",
                &self.families.iter().map(|f| f.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The ASCII words of a list, lower-cased (others are left to the stages' own search).
fn ascii_lower<'a>(words: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    words
        .into_iter()
        .filter(|w| !w.is_empty() && w.is_ascii())
        .map(str::to_ascii_lowercase)
        .collect()
}

impl Detector {
    /// The detector with every built-in family.
    pub fn new() -> Detector {
        BUILTIN.clone()
    }

    /// `families` and one keyword pass over their words and the given stage words.
    fn of(
        families: Arc<[Arc<dyn Family>]>,
        term_words: &[String],
        allow_words: &[String],
    ) -> Option<Detector> {
        let keywords =
            KeywordPass::build(families.iter().map(|f| f.words()), term_words, allow_words)?;
        Some(Detector {
            families,
            keywords: Arc::new(keywords),
        })
    }

    /// This detector with `extra` families after its own: their candidates meet the
    /// built-in ones in overlap resolution, and their words join the shared pass.
    /// `None` when the words no longer fit one automaton.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "the plug-in detectors build on it; tests use it today"
        )
    )]
    pub(crate) fn with_extra(&self, extra: Vec<Arc<dyn Family>>) -> Option<Detector> {
        let families: Vec<_> = self.families.iter().cloned().chain(extra).collect();
        Detector::of(families.into(), &[], &[])
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
        let (words, allow) = (ascii_lower(term_words), ascii_lower(allow_words));
        let detector = Detector::new();
        if words.is_empty() && allow.is_empty() {
            return detector;
        }
        Detector::of(Arc::clone(&detector.families), &words, &allow).unwrap_or(detector)
    }

    /// Finds the values to redact in `text`: non-overlapping, sorted by start, on char
    /// boundaries. Where two rules claim overlapping spans the more specific rule wins,
    /// then the longer span.
    pub fn detect(&self, text: &str, ctx: &DetectContext) -> Vec<Finding> {
        self.detect_and_see(text, ctx, false).0
    }

    /// [`Detector::detect`], and what the pipeline's stages need to know of the text:
    /// the layer's keyword pass reads every byte anyway, so the stages that need one of
    /// the gate words need not search a text that holds none, and the secret, terms
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
        let literals = Literals::new(text, &hits, k.literal_words);
        let runs = LongRuns::new(text);
        let (mut cands, shapes) = self.candidates_with(text, ctx, 0, &hits, &runs);
        decode::rescan(self, text, ctx, &literals, &runs, &mut cands);
        let seen = k.seen(&hits, &literals, &runs, shapes, literal_starts);
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
        runs: &LongRuns,
    ) -> Vec<Candidate> {
        let hits = self.keywords.automaton.scan(text);
        self.candidates_with(text, ctx, depth, &hits, runs).0
    }

    /// [`Detector::candidates`] with the text's keyword scan done, and the baseline's
    /// numeric shapes the families' passes saw in the text.
    #[inline(never)] // one frame in profiles
    fn candidates_with(
        &self,
        text: &str,
        ctx: &DetectContext,
        depth: u8,
        hits: &KeywordHits,
        runs: &LongRuns,
    ) -> (Vec<Candidate>, Shapes) {
        let k = &*self.keywords;
        let literals = Literals::new(text, hits, k.literal_words);
        let facts = Facts {
            text,
            rel_path: ctx.rel_path,
            kind: FileKind::of(ctx.rel_path, ctx.prose),
            quoting: Quoting::of(ctx.rel_path),
            hits,
            literals: &literals,
            runs,
        };
        let mut sink = Sink {
            candidates: Vec::new(),
            shapes: Shapes::UNKNOWN,
        };
        for (family, &words) in self.families.iter().zip(&k.detector_words) {
            if depth == 0 || family.scans_decoded() {
                family.scan(&facts, words, &mut sink);
            }
        }
        (sink.candidates, sink.shapes)
    }

    /// The shared pass and the ids the words of the family named `name` got in it.
    #[cfg(test)]
    pub(crate) fn pass_for(&self, name: &str) -> (&KeywordPass, WordIds) {
        let i = self
            .families
            .iter()
            .position(|f| f.name() == name)
            .expect("a built-in family");
        (&self.keywords, self.keywords.detector_words[i])
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
