//! Differential test: our engine against the reference (redacted-context-mcp 0.10.1).
//!
//! For each corpus (hand-written tricky files with the Fixture A config, the same files
//! with an empty config, a 5 MB single line, token soup, and a generated monorepo) the oracle redacts every text file
//! (line-count preservation on and off), every path and every path id in strict and
//! balanced × default and extended. Our `Engine` is built from the oracle's derived
//! policy lists with built-in detectors off, and must produce the same bytes and the
//! same per-call receipt counts. Every mismatch is listed; the first ones are shown
//! with the first differing line of each side and the receipt counts that differ.
//!
//! Knobs (environment):
//! - `REDCTX_DIFF_TREE=<dir>`: also compare on that tree, as it is, with an empty config
//!   (real text: a checkout, a documents folder); skipped when unset;
//! - `REDCTX_DIFF_FILTER=<substring>`: only files/paths containing it;
//! - `REDCTX_DIFF_CORPUS_FILES=<n>`: size of the generated corpus (default 300);
//! - `REDCTX_DIFF_MODES=strict,balanced`, `REDCTX_DIFF_PROFILES=default,extended`;
//! - `REDCTX_DIFF_DETAILS=<n>`: how many items to show in detail (default 30);
//! - `REDCTX_DIFF_KEEP=1`: keep the corpus on disk and print where (to rerun the
//!   reference CLI by hand: `redctx --root R --config C --mode M cat PATH` with
//!   `REDACTED_CONTEXT_SALT` set to the printed salt);
//! - `REDCTX_ORACLE_PYTHON`, `REDCTX_SKIP_ORACLE=1`: see `tests/corpus/oracle.rs`.

mod corpus;

use corpus::Corpus;
use corpus::oracle::{self, Dump, OracleAvailability, RefOut};
use redctx_daemon::engine::{DetectorProfile, Engine, Mode, RedactOptions, Redacted};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

#[test]
fn engine_matches_reference_on_tricky_files_with_fixture_a_config() {
    differential("tricky-fixture", |dir| {
        corpus::tricky_fixture(dir).map_err(|e| e.to_string())
    });
}

#[test]
fn engine_matches_reference_on_tricky_files_with_empty_config() {
    differential("tricky-empty", |dir| {
        corpus::tricky_empty(dir).map_err(|e| e.to_string())
    });
}

/// Default profile only: the extended stages add nothing on this content, and each
/// reference pass over 5 MB takes seconds.
#[test]
fn engine_matches_reference_on_a_5mb_single_line() {
    differential_with("big-line", &["default"], |dir| {
        corpus::big_line(dir).map_err(|e| e.to_string())
    });
}

#[test]
fn engine_matches_reference_on_token_soup() {
    differential("token-soup", |dir| {
        corpus::token_soup(dir, 250, 7).map_err(|e| e.to_string())
    });
}

#[test]
fn engine_matches_reference_on_generated_monorepo() {
    let files = env_usize("REDCTX_DIFF_CORPUS_FILES", 300);
    differential("generated", |dir| corpus::generated(dir, files, 1));
}

/// A tree named in `REDCTX_DIFF_TREE`, when set (see the module doc).
#[test]
fn engine_matches_reference_on_a_tree_named_in_the_environment() {
    let Some(tree) = std::env::var_os("REDCTX_DIFF_TREE") else {
        println!("SKIPPED engine differential [tree]: REDCTX_DIFF_TREE is not set");
        return;
    };
    differential("tree", |dir| {
        corpus::existing_tree(dir, std::path::Path::new(&tree)).map_err(|e| e.to_string())
    });
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

fn env_list(name: &str, default: &[&'static str]) -> Vec<&'static str> {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => default
            .iter()
            .copied()
            .filter(|d| value.split(',').any(|v| v.trim() == *d))
            .collect(),
        _ => default.to_vec(),
    }
}

/// The comparison of one corpus; panics with a report when anything differs.
fn differential(name: &str, build: impl FnOnce(&std::path::Path) -> Result<Corpus, String>) {
    differential_with(name, &["default", "extended"], build);
}

fn differential_with(
    name: &str,
    profiles: &[&'static str],
    build: impl FnOnce(&std::path::Path) -> Result<Corpus, String>,
) {
    let python = match oracle::oracle_python() {
        Ok(OracleAvailability::Ready(python)) => python,
        Ok(OracleAvailability::Skipped) => {
            println!("SKIPPED engine differential [{name}]: REDCTX_SKIP_ORACLE=1");
            return;
        }
        Err(message) => panic!("{message}"),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut corpus = build(dir.path()).unwrap_or_else(|e| panic!("building corpus {name}: {e}"));
    if std::env::var_os("REDCTX_DIFF_KEEP").is_some() {
        let kept = dir.keep();
        println!(
            "corpus {name} kept at {} (root {}, config {:?}, salt {:?})",
            kept.display(),
            corpus.root.display(),
            corpus.config_path,
            corpus.salt
        );
    }
    if let Ok(needle) = std::env::var("REDCTX_DIFF_FILTER") {
        corpus.filter(&needle);
    }
    let modes = env_list("REDCTX_DIFF_MODES", &["strict", "balanced"]);
    let profiles = env_list("REDCTX_DIFF_PROFILES", profiles);
    let started = Instant::now();
    let dump = oracle::run(&python, &corpus, &modes, &profiles)
        .unwrap_or_else(|e| panic!("oracle on corpus {name}: {e}"));
    let mut report = Report {
        oracle_seconds: started.elapsed().as_secs_f64(),
        ..Report::default()
    };
    let started = Instant::now();
    compare_decoding(&corpus, &dump, &mut report);
    for run in &dump.runs {
        let mode = Mode::parse(&run.mode).expect("oracle mode");
        let profile = DetectorProfile::parse(&run.profile).expect("oracle profile");
        let variant = format!("{}/{}", run.mode, run.profile);
        let policy = oracle::policy_from_reference(&dump.policy, mode, profile)
            .unwrap_or_else(|e| panic!("policy from the oracle: {e}"));
        let engine = match Engine::new(Arc::new(policy)) {
            Ok(engine) => engine,
            Err(e) => {
                report
                    .fatal
                    .push(format!("Engine::new failed for {variant}: {e}"));
                continue;
            }
        };
        if report.ids_checked == 0 {
            compare_path_ids(&engine, &dump, &mut report);
        }
        for (rel, expected) in &run.files {
            let bytes = std::fs::read(corpus.root.join(rel)).expect("read corpus file");
            let text = corpus::decode_like_reference(&bytes);
            for (preserve, reference) in [(true, &expected.preserve), (false, &expected.flat)] {
                let ours = engine.redact(
                    &text,
                    RedactOptions {
                        preserve_line_count: preserve,
                        prose: false,
                        path: "",
                    },
                );
                let label = if preserve { "preserve" } else { "flat" };
                report.check(Kind::File, rel, &variant, label, reference, ours);
            }
        }
        for (rel, reference) in &run.paths {
            let ours = engine.redact_path(rel);
            report.check(Kind::Path, rel, &variant, "path", reference, ours);
        }
    }
    report.ours_seconds = started.elapsed().as_secs_f64();
    report.skipped_non_text = dump.files.values().filter(|f| !f.is_text).count();
    report.variants = dump.runs.len();

    let text = report.render(name, env_usize("REDCTX_DIFF_DETAILS", 30));
    println!("{text}");
    assert!(
        report.is_clean(),
        "engine differs from the reference on corpus {name}: {}",
        report.summary(name)
    );
}

fn compare_decoding(corpus: &Corpus, dump: &Dump, report: &mut Report) {
    for rel in &corpus.files {
        let Some(reference) = dump.files.get(rel) else {
            continue;
        };
        let bytes = std::fs::read(corpus.root.join(rel)).expect("read corpus file");
        let text = corpus::decode_like_reference(&bytes);
        let ours = hex(&Sha256::digest(text.as_bytes()));
        report.decoded += 1;
        if ours != reference.decoded_sha256 {
            report.fatal.push(format!(
                "decoding differs for {rel:?}: reference {} chars, ours {} chars",
                reference.chars,
                text.chars().count()
            ));
        }
    }
}

fn compare_path_ids(engine: &Engine, dump: &Dump, report: &mut Report) {
    for (rel, expected) in &dump.path_ids {
        report.ids_checked += 1;
        let ours = engine.path_id(rel);
        if &ours != expected {
            report.fatal.push(format!(
                "path id of {rel:?}: reference {expected}, ours {ours}"
            ));
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Kind {
    File,
    Path,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Path => "path",
        }
    }
}

/// One differing comparison.
struct Case {
    kind: Kind,
    rel: String,
    variant: String,
    label: &'static str,
    reference: Outcome,
    ours: Outcome,
}

impl Case {
    fn tag(&self) -> String {
        match self.kind {
            Kind::File => format!("{}:{}", self.variant, self.label),
            Kind::Path => self.variant.clone(),
        }
    }
}

/// Text and counts, or an error message (exception type stripped).
#[derive(PartialEq, Eq)]
enum Outcome {
    Ok(String, BTreeMap<String, u64>),
    Err(String),
}

impl Outcome {
    fn from_reference(out: &RefOut) -> Outcome {
        match (&out.text, &out.error) {
            (Some(text), None) => Outcome::Ok(text.clone(), out.counts.clone()),
            (_, Some(error)) => Outcome::Err(
                error
                    .split_once(": ")
                    .map_or(error.as_str(), |(_, m)| m)
                    .to_owned(),
            ),
            (None, None) => Outcome::Err("oracle returned neither text nor error".to_owned()),
        }
    }

    fn from_ours<E: std::fmt::Display>(result: Result<Redacted, E>) -> Outcome {
        match result {
            Ok(r) => Outcome::Ok(
                r.text,
                r.counts
                    .0
                    .iter()
                    .map(|(c, n)| (c.as_str().to_owned(), *n))
                    .collect(),
            ),
            Err(e) => Outcome::Err(e.to_string()),
        }
    }
}

#[derive(Default)]
struct Report {
    cases: Vec<Case>,
    checked: BTreeMap<Kind, usize>,
    fatal: Vec<String>,
    decoded: usize,
    ids_checked: usize,
    skipped_non_text: usize,
    /// Number of (mode, profile) runs, to abbreviate "differs everywhere" as `all`.
    variants: usize,
    oracle_seconds: f64,
    ours_seconds: f64,
}

impl Report {
    fn check<E: std::fmt::Display>(
        &mut self,
        kind: Kind,
        rel: &str,
        variant: &str,
        label: &'static str,
        reference: &RefOut,
        ours: Result<Redacted, E>,
    ) {
        *self.checked.entry(kind).or_default() += 1;
        let reference = Outcome::from_reference(reference);
        let ours = Outcome::from_ours(ours);
        if reference != ours {
            self.cases.push(Case {
                kind,
                rel: rel.to_owned(),
                variant: variant.to_owned(),
                label,
                reference,
                ours,
            });
        }
    }

    fn is_clean(&self) -> bool {
        self.cases.is_empty() && self.fatal.is_empty()
    }

    fn summary(&self, name: &str) -> String {
        let differing_items = |kind: Kind| {
            self.cases
                .iter()
                .filter(|c| c.kind == kind)
                .map(|c| c.rel.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        };
        format!(
            "[{name}] {} of {} comparisons differ ({} files, {} paths); {} other failures; \
             checked {} decodings, {} path ids; {} non-text files skipped; \
             oracle {:.1}s, ours {:.1}s",
            self.cases.len(),
            self.checked.values().sum::<usize>(),
            differing_items(Kind::File),
            differing_items(Kind::Path),
            self.fatal.len(),
            self.decoded,
            self.ids_checked,
            self.skipped_non_text,
            self.oracle_seconds,
            self.ours_seconds,
        )
    }

    fn render(&self, name: &str, max_details: usize) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "engine differential {}", self.summary(name));
        for line in &self.fatal {
            let _ = writeln!(out, "  FAIL {line}");
        }
        if self.cases.is_empty() {
            return out;
        }
        // Every differing file/path once, with the variants that differ (`all` when
        // every comparison of that item differs).
        let mut by_item: BTreeMap<(Kind, &str), Vec<&Case>> = BTreeMap::new();
        for case in &self.cases {
            by_item
                .entry((case.kind, &case.rel))
                .or_default()
                .push(case);
        }
        let _ = writeln!(out, "differing items:");
        for ((kind, rel), cases) in &by_item {
            let per_variant = if *kind == Kind::File { 2 } else { 1 };
            let tags = if cases.len() == self.variants * per_variant {
                "all".to_owned()
            } else {
                cases.iter().map(|c| c.tag()).collect::<Vec<_>>().join(" ")
            };
            let _ = writeln!(out, "  {} {:?}  [{tags}]", kind.as_str(), rel);
        }
        // Details: breadth first, one case per item (its first differing variant);
        // variants whose outcome pair is identical to the shown one are only named.
        let shown = max_details.min(by_item.len());
        let _ = writeln!(
            out,
            "details (first differing variant of {shown} of {} items):",
            by_item.len()
        );
        for (i, ((kind, rel), cases)) in by_item.iter().take(max_details).enumerate() {
            let first = cases[0];
            let same: Vec<String> = cases[1..]
                .iter()
                .filter(|c| c.reference == first.reference && c.ours == first.ours)
                .map(|c| c.tag())
                .collect();
            let other = cases.len() - 1 - same.len();
            let _ = writeln!(
                out,
                "--- [{}] {} {:?} {}{}{}",
                i + 1,
                kind.as_str(),
                rel,
                first.tag(),
                if same.is_empty() {
                    String::new()
                } else {
                    format!(" (same in {})", same.join(" "))
                },
                if other == 0 {
                    String::new()
                } else {
                    format!(" (+{other} other differing variants)")
                },
            );
            describe(&mut out, &first.reference, &first.ours);
        }
        if by_item.len() > max_details {
            let _ = writeln!(
                out,
                "... {} more differing items (raise REDCTX_DIFF_DETAILS or narrow with REDCTX_DIFF_FILTER / REDCTX_DIFF_MODES / REDCTX_DIFF_PROFILES)",
                by_item.len() - max_details
            );
        }
        out
    }
}

fn describe(out: &mut String, reference: &Outcome, ours: &Outcome) {
    match (reference, ours) {
        (Outcome::Ok(ref_text, ref_counts), Outcome::Ok(our_text, our_counts)) => {
            if ref_text != our_text {
                describe_text(out, ref_text, our_text);
            }
            if ref_counts != our_counts {
                let keys: std::collections::BTreeSet<&String> =
                    ref_counts.keys().chain(our_counts.keys()).collect();
                let diffs: Vec<String> = keys
                    .into_iter()
                    .filter(|k| ref_counts.get(*k) != our_counts.get(*k))
                    .map(|k| {
                        format!(
                            "{k}: ref {} ours {}",
                            ref_counts.get(k).copied().unwrap_or(0),
                            our_counts.get(k).copied().unwrap_or(0)
                        )
                    })
                    .collect();
                let _ = writeln!(out, "    counts differ: {}", diffs.join(", "));
            }
        }
        (Outcome::Err(e), Outcome::Ok(..)) => {
            let _ = writeln!(out, "    reference failed ({e}), ours succeeded");
        }
        (Outcome::Ok(..), Outcome::Err(e)) => {
            let _ = writeln!(out, "    ours failed ({e}), reference succeeded");
        }
        (Outcome::Err(a), Outcome::Err(b)) => {
            let _ = writeln!(out, "    both failed: reference {a:?}, ours {b:?}");
        }
    }
}

/// Shows where two texts first differ: line and column (1-based, in chars, lines split
/// at `\n`, `\r\n` and `\r`) and ~80 chars of each side's line around that point.
fn describe_text(out: &mut String, reference: &str, ours: &str) {
    let ref_chars: Vec<char> = reference.chars().collect();
    let our_chars: Vec<char> = ours.chars().collect();
    let at = ref_chars
        .iter()
        .zip(&our_chars)
        .position(|(a, b)| a != b)
        .unwrap_or(ref_chars.len().min(our_chars.len()));
    let line_start = ref_chars[..at]
        .iter()
        .rposition(|&c| c == '\n' || c == '\r')
        .map_or(0, |i| i + 1);
    let line_no = 1 + count_breaks(&ref_chars[..line_start]);
    let column = at - line_start + 1;
    let _ = writeln!(
        out,
        "    text differs at line {line_no}, column {column} (char {at}; lengths ref {} ours {} chars)",
        ref_chars.len(),
        our_chars.len()
    );
    let _ = writeln!(
        out,
        "      reference: {}",
        excerpt(&ref_chars, line_start, at)
    );
    let _ = writeln!(
        out,
        "      ours:      {}",
        excerpt(&our_chars, line_start, at)
    );
}

fn count_breaks(chars: &[char]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\r' if chars.get(i + 1) == Some(&'\n') => {
                n += 1;
                i += 1;
            }
            '\r' | '\n' => n += 1,
            _ => {}
        }
        i += 1;
    }
    n
}

/// The part of the line containing `at` from 24 chars before to 76 after, escaped.
fn excerpt(chars: &[char], line_start: usize, at: usize) -> String {
    let line_end = chars[line_start..]
        .iter()
        .position(|&c| c == '\n' || c == '\r')
        .map_or(chars.len(), |i| line_start + i);
    let from = at.saturating_sub(24).max(line_start);
    let to = (at + 76).min(line_end);
    let mut s = String::new();
    if from > line_start {
        s.push('…');
    }
    s.push('"');
    for &c in &chars[from..to.max(from)] {
        s.extend(c.escape_debug());
    }
    s.push('"');
    if to < line_end {
        s.push('…');
    }
    if at >= line_end {
        s.push_str(if line_end == chars.len() {
            " <end of text>"
        } else {
            " <end of line>"
        });
    }
    s
}
