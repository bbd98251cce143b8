//! `bundle`: many whole files in one answer, each between BEGIN/END markers (spec 3.3).

use super::targets::target_files;
use super::walk::Budget;
use super::{Scanned, Skipped, ToolError, ToolOutput, scan_content};
use crate::cancel::Stop;
use crate::engine::Counts;
use crate::engine::python::text::{char_len, truncate_redacted};
use crate::view::RootView;

/// Arguments of `redctx_bundle` / `bundle`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleArgs {
    /// Scopes (paths or ids); empty = the whole root.
    pub paths: Vec<String>,
    /// fnmatch patterns on the raw relative path (any may match).
    pub glob: Vec<String>,
    /// Default 80 (a soft cap: the bundle stops with a truncation line).
    pub max_files: usize,
    /// Default 30,000.
    pub max_chars_per_file: usize,
    /// Default 300,000 (checked before each file, so the last file may pass it).
    pub max_total_chars: usize,
}

impl Default for BundleArgs {
    fn default() -> Self {
        BundleArgs {
            paths: Vec::new(),
            glob: Vec::new(),
            max_files: 80,
            max_chars_per_file: 30_000,
            max_total_chars: 300_000,
        }
    }
}

/// `bundle`: for each readable file in scope, in walk order, a blank line, `--- BEGIN
/// <ref> <rpath> ---`, the file redacted without line preservation and cut at
/// `max_chars_per_file`, then `--- END <ref> ---`. Before a further file, when
/// `max_files` files are out or the emitted characters reached `max_total_chars`, the
/// line `[TRUNCATED: file or total character limit reached]` ends the bundle. A file over
/// the byte limit fails the whole call.
///
/// `stop` ends the call between files; a file that vanishes or keeps changing during the
/// call is left out, and so is a file named like text that is not, counted in a closing
/// `[SKIPPED: …]` line ([`scan_content`]).
pub fn bundle(view: &dyn RootView, args: &BundleArgs, stop: &Stop) -> ToolOutput {
    let mut counts = Counts::default();
    match bundle_inner(view, args, stop, &mut counts) {
        Ok(text) => ToolOutput::ok(text, counts),
        Err(error) => ToolOutput::error(error, counts),
    }
}

fn bundle_inner(
    view: &dyn RootView,
    args: &BundleArgs,
    stop: &Stop,
    counts: &mut Counts,
) -> Result<String, ToolError> {
    let mut budget = Budget::from_limits(view.limits()).stopping(stop);
    let targets = target_files(view, &args.paths, &args.glob, true, &mut budget)?;
    let mut out = String::new();
    let mut total_chars = 0usize;
    let mut files = 0usize;
    let mut skipped = Skipped::default();
    for entry in &targets.files {
        if files >= args.max_files
            || total_chars >= args.max_total_chars
            || out.len() >= super::MAX_ANSWER_BYTES
        {
            out.push_str("[TRUNCATED: file or total character limit reached]\n");
            out.push_str(&skipped.note());
            return Ok(out);
        }
        // A document over the extraction cap, or a file over the per-file byte limit,
        // is left out uncharged, like a file that fails on its own below.
        if super::check_document_size(entry).is_err() || budget.over_file_limit(entry.size) {
            skipped.unreadable += 1;
            continue;
        }
        budget.consume_file(entry.size)?;
        let doc = match scan_content(view, entry, false, stop)? {
            Scanned::Content(doc) => doc,
            left_out => {
                skipped.count(&left_out);
                continue;
            }
        };
        files += 1;
        counts.merge(&doc.counts);
        // At most a quarter of the answer bound in characters: under it in bytes.
        let per_file = args.max_chars_per_file.min(super::MAX_ANSWER_BYTES / 4);
        let text = truncate_redacted(&doc.text, per_file);
        let path = view.path(&entry.rel);
        counts.merge(&path.counts);
        out.push_str(&format!("\n--- BEGIN {} {} ---\n", path.id, path.text));
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("--- END {} ---\n", path.id));
        total_chars += char_len(&text);
    }
    match targets.error {
        Some(error) => Err(error),
        None => {
            out.push_str(&skipped.note());
            Ok(out)
        }
    }
}
