//! `redctx benchmark`: the daemon times its own cold full-tree work on a root.
//!
//! The four phases and the report keys are the reference's (`redctx benchmark`, spec 15),
//! so the two reports can be read side by side; the work in each phase is the daemon's:
//!
//! 1. `walk_and_text_detection`: a fresh stat-only walk of the tree into a new index (the
//!    same scan a newly served root does, with its exclusions and `.gitignore` rules), then
//!    a pre-order traversal under the traversal budget, counting directories (the root
//!    included), files and their sizes, and sniffing which files are text.
//! 2. `read_all_text_files`: a verified read of every text file under the file and byte
//!    budgets, decoded as the reference decodes (`text_characters` counts characters).
//! 3. `redact_each_file_as_one_chunk`: the root's engine redacts each file whole, in the
//!    line-preserving variant the daemon caches for `read`, `search` and `retrieve`; one
//!    thread, so the figure is comparable with the reference's single-threaded one.
//! 4. `search_redacted_text`: a substring test of the query in each redacted text,
//!    case-folded by default.
//!
//! Nothing touches the served root's index or the content cache: the point is to measure
//! the work a cold cache costs, and a benchmark must not warm or change what it measures.

use crate::engine::placeholder::casefold;
use crate::engine::{Engine, RedactOptions};
use crate::fs::{self, ContentKind, content, is_prose_path};
use crate::root::{RootOptions, ServedRoot};
use crate::server::Cancel;
use crate::tools::{self, Budget, ToolError};
use crate::view::{EntryKind, RootView, ViewError};
use redctx_proto::{BenchmarkParams, BenchmarkReport};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Why a benchmark stopped; `Display` is the fixed text the user sees.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BenchError {
    /// A budget or file check failed, with the reference's message.
    #[error("{0}")]
    Tool(#[from] ToolError),
    /// The client went away (its `--max-seconds` passed, or it was interrupted).
    #[error("Operation deadline exceeded.")]
    Cancelled,
}

impl From<ViewError> for BenchError {
    fn from(e: ViewError) -> Self {
        BenchError::Tool(e.into())
    }
}

fn nanos(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Run the four phases on `root` with `engine`'s policy (see the module docs).
/// `options.limits` are the root's limits; `params` may tighten them for this run.
pub fn run(
    root: &Path,
    engine: Arc<Engine>,
    mut options: RootOptions,
    params: &BenchmarkParams,
    cancel: &Cancel,
) -> Result<BenchmarkReport, BenchError> {
    let limits = &mut options.limits;
    if let Some(v) = params.max_raw_bytes_per_file {
        limits.max_raw_bytes_per_file = v;
    }
    if let Some(v) = params.max_total_raw_bytes {
        limits.max_total_raw_bytes = v;
    }
    if let Some(v) = params.max_entries {
        limits.max_traversal_entries = v;
    }
    let mut budget = Budget::from_limits(limits);
    budget.max_files = params.max_files;
    let mut report = BenchmarkReport::default();

    // 1. Walk and text detection, from a cold index without a content cache.
    let started = Instant::now();
    let decoding = content::Decoding::for_mode(engine.policy().mode);
    let fresh = ServedRoot::open(root, engine.clone(), None, options)?;
    let view: &dyn RootView = &fresh;
    let start = view.resolve(".")?;
    let mut text_files = Vec::new();
    for item in tools::walk(view, start, None, true, &mut budget) {
        let (entry, _) = item?;
        if cancel.is_cancelled() {
            return Err(BenchError::Cancelled);
        }
        if entry.kind == EntryKind::Dir {
            report.directories += 1;
            continue;
        }
        report.files += 1;
        report.visible_bytes += entry.size;
        if ContentKind::of_name(entry.name()) != ContentKind::LegacyOffice && view.is_text(&entry) {
            text_files.push(entry);
        }
    }
    report.text_files = text_files.len() as u64;
    report.walk_and_text_detection_ns = nanos(started);

    // 2. Read every text file under the budget.
    let started = Instant::now();
    let mut texts = Vec::with_capacity(text_files.len());
    for entry in &text_files {
        if cancel.is_cancelled() {
            return Err(BenchError::Cancelled);
        }
        let path = fs::abs_path(fresh.root(), &entry.rel);
        let meta = std::fs::symlink_metadata(&path).map_err(|_| ViewError::Missing)?;
        budget.consume_file(meta.len())?;
        let (bytes, _) = fs::read_verified(&path, fresh.limits().max_raw_bytes_per_file)?;
        let Some(encoding) = content::text_encoding(&bytes, decoding) else {
            return Err(ViewError::NotText.into());
        };
        let text = decoding.decode(&bytes, encoding).into_owned();
        report.text_characters += text.chars().count() as u64;
        texts.push((entry.rel.clone(), bytes.len() as u64, text));
    }
    report.read_all_text_files_ns = nanos(started);
    drop(fresh);

    // 3 and 4. Redact each file whole, then look for the query in the result.
    let query = if params.ignore_case {
        casefold(&params.query)
    } else {
        params.query.clone()
    };
    let (mut redact_ns, mut search_ns) = (0u64, 0u64);
    for (rel, size, text) in &texts {
        if cancel.is_cancelled() {
            return Err(BenchError::Cancelled);
        }
        report.redaction_read_bytes += size;
        let started = Instant::now();
        let options = RedactOptions {
            preserve_line_count: true,
            prose: is_prose_path(rel),
            path: rel,
        };
        let redacted = engine.redact(text, options).map_err(ToolError::from)?;
        redact_ns += nanos(started);
        let started = Instant::now();
        let found = if params.ignore_case {
            casefold(&redacted.text).contains(&query)
        } else {
            redacted.text.contains(&query)
        };
        search_ns += nanos(started);
        report.matches += u64::from(found);
    }
    report.redact_each_file_as_one_chunk_ns = redact_ns;
    report.search_redacted_text_ns = search_ns;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Mode, Policy};

    fn engine(mode: Mode) -> Arc<Engine> {
        let policy = Policy {
            salt: "bench-salt".into(),
            mode,
            ..Policy::default()
        };
        Arc::new(Engine::new(Arc::new(policy)).unwrap())
    }

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let files: &[(&str, &[u8])] = &[
            ("docs/a.md", b"hello Jane\npassword = hunter22secret\n"),
            ("b.txt", "caf\u{e9} x\n".as_bytes()),
            ("c.bin", b"\x00\x01bin"),
            ("node_modules/m.js", b"excluded\n"),
        ];
        for (rel, bytes) in files {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        dir
    }

    fn params(query: &str, ignore_case: bool) -> BenchmarkParams {
        BenchmarkParams {
            query: query.into(),
            ignore_case,
            ..BenchmarkParams::default()
        }
    }

    #[test]
    fn counts_what_the_reference_counts() {
        let dir = tree();
        let run = |p: &BenchmarkParams| {
            run(
                dir.path(),
                engine(Mode::Balanced),
                RootOptions::default(),
                p,
                &Cancel::new(),
            )
        };
        let r = run(&params("HELLO", true)).unwrap();
        // The root and docs/ (node_modules/ is excluded by default).
        assert_eq!((r.directories, r.files, r.text_files), (2, 3, 2));
        assert_eq!(r.visible_bytes, 37 + 8 + 5);
        // "café x\n" is 7 characters in 8 bytes.
        assert_eq!(r.text_characters, 37 + 7);
        assert_eq!(r.redaction_read_bytes, 37 + 8);
        assert_eq!(r.matches, 1);
        assert_eq!(run(&params("HELLO", false)).unwrap().matches, 0);
        // The secret is redacted before the search sees it.
        assert_eq!(run(&params("hunter22secret", true)).unwrap().matches, 0);
    }

    #[test]
    fn budgets_fail_with_the_reference_messages() {
        let dir = tree();
        let run = |p: BenchmarkParams| {
            run(
                dir.path(),
                engine(Mode::Code),
                RootOptions::default(),
                &p,
                &Cancel::new(),
            )
            .unwrap_err()
            .to_string()
        };
        let base = params("x", true);
        let cases = [
            (
                BenchmarkParams {
                    max_entries: Some(1),
                    ..base.clone()
                },
                "Traversal entry limit exceeded.",
            ),
            (
                BenchmarkParams {
                    max_files: Some(1),
                    ..base.clone()
                },
                "File limit exceeded.",
            ),
            (
                BenchmarkParams {
                    max_raw_bytes_per_file: Some(3),
                    ..base.clone()
                },
                "Raw file byte limit exceeded.",
            ),
            (
                BenchmarkParams {
                    max_total_raw_bytes: Some(40),
                    ..base.clone()
                },
                "Total raw byte limit exceeded.",
            ),
        ];
        for (p, message) in cases {
            assert_eq!(run(p), message);
        }
        let cancel = Cancel::new();
        cancel.cancel();
        let err = super::run(
            dir.path(),
            engine(Mode::Code),
            RootOptions::default(),
            &base,
            &cancel,
        );
        assert_eq!(err, Err(BenchError::Cancelled));
    }
}
