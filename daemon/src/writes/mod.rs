//! Controlled writes and rehydration (spec 9): `redctx_submit_doc` and the map behind
//! `redctx rehydrate`.
//!
//! A submission runs the reference's checks in its order, and the first failure answers
//! with nothing written: writes enabled, the map (`map.rs`), the target path rehydrated
//! (`tokens.rs`) and checked (`target.rs`), the text rehydrated, the round trip
//! (`round_trip.rs`), an existing target, then the atomic publish (`publish.rs`). The
//! new file is put in the index at once, so every tool sees it on the next call.
//!
//! Raw values are held only by this call's map and the restored text, dropped when it
//! returns; errors are fixed texts (the only echoed input: unresolved tokens, which are
//! placeholder- or id-shaped).

mod map;
mod publish;
pub(crate) mod round_trip;
mod target;
mod tokens;

pub use map::Scope;
pub use target::{has_symlink_component, py_strip, relative_parts};

use crate::cancel::Stop;
use crate::engine::Counts;
use crate::engine::placeholder::casefold;
use crate::fs::content::ContentKind;
use crate::root::ServedRoot;
use crate::tools::{Budget, ToolError, ToolOutput};
use crate::view::{Limits, RootView};
use redctx_proto::WriteOptions;
use redctx_proto::tools::SubmitDocArgs;
use std::collections::BTreeSet;
use std::path::Path;

/// Why a submission wrote nothing; `Display` is the exact text the agent sees.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("Writes are disabled. Start the server with --enable-writes.")]
    Disabled,
    #[error("{0}")]
    Tool(#[from] ToolError),
    /// Tokens left after rehydration: the formatted message.
    #[error("{0}")]
    Unresolved(String),
    #[error("target_path must not be empty.")]
    TargetEmpty,
    #[error("target_path must not contain ':'.")]
    TargetColon,
    #[error("target_path must be a relative file path inside the write subdirectory.")]
    TargetNotRelative,
    #[error("target_path must not contain symlinks.")]
    TargetSymlink,
    #[error("target_path must stay inside the write subdirectory.")]
    TargetEscapes,
    #[error("Write target is protected.")]
    Protected,
    /// A document suffix: read back through extraction, which the round trip cannot
    /// check (the restored text is not what extraction would serve).
    #[error(
        "Write target names a document format (.docx, .pptx, .pdf, .xlsx, .xls, .doc, \
         .ppt). Submit the text under a text name such as .md or .txt."
    )]
    DocumentTarget,
    #[error(
        "Rehydrated document would not redact consistently on read-back. Keep placeholder \
         references separated by spaces or punctuation so restored values redact cleanly."
    )]
    RoundTrip,
    #[error("Target already exists as a directory.")]
    TargetIsDir,
    #[error("Target already exists. Pass overwrite=true to replace it.")]
    TargetExists,
    #[error("Output already exists.")]
    OutputExists,
    #[error("Could not publish output atomically.")]
    Publish,
    #[error("Tool execution failed.")]
    Failed,
}

/// `redctx_submit_doc` on `root`; `writes` is `None` for a session without
/// `--enable-writes`. `config` is the policy's config file (never a target).
pub fn submit_doc(
    root: &ServedRoot,
    config: &Path,
    writes: Option<&WriteOptions>,
    args: &SubmitDocArgs,
    stop: &Stop,
) -> ToolOutput {
    let mut counts = Counts::default();
    match submit(root, config, writes, args, stop, &mut counts) {
        Ok(text) => ToolOutput::ok(text, counts),
        Err(e) => ToolOutput {
            text: e.to_string(),
            is_error: true,
            counts,
        },
    }
}

fn submit(
    root: &ServedRoot,
    config: &Path,
    writes: Option<&WriteOptions>,
    args: &SubmitDocArgs,
    stop: &Stop,
    counts: &mut Counts,
) -> Result<String, WriteError> {
    let writes = writes.ok_or(WriteError::Disabled)?;
    let write_rel = relative_parts(py_strip(&writes.subdir))
        .ok_or(WriteError::Failed)?
        .join("/");
    let wanted: BTreeSet<String> = tokens::tokens(&args.target_path)
        .chain(tokens::tokens(&args.text))
        .map(str::to_owned)
        .collect();
    let scope = Scope {
        prune: Some(casefold(&write_rel)),
        max_files: writes.max_submit_files,
    };
    let budget = Budget::from_limits(root.limits()).stopping(stop);
    let map = map::build(root, &wanted, &scope, budget)?;

    let (restored_target, target_count) = tokens::rehydrate(&args.target_path, &map);
    let left = tokens::unresolved(&restored_target);
    if !left.is_empty() {
        return Err(WriteError::Unresolved(tokens::unresolved_message(
            "target_path",
            &left,
        )));
    }
    let rel = target::resolve(
        root.root(),
        &write_rel,
        &restored_target,
        root.index().rules(),
        config,
    )?;
    // A document is served as what extraction finds in its bytes, not as its bytes:
    // text laid out so that extraction drops the words around a restored value would
    // pass the round trip below and serve the value raw.
    let name = rel.rsplit('/').next().unwrap_or(&rel);
    if !matches!(
        ContentKind::of_name(name),
        ContentKind::Text | ContentKind::Sniffed
    ) {
        return Err(WriteError::DocumentTarget);
    }
    let (restored_text, text_count) = tokens::rehydrate(&args.text, &map);
    let left = tokens::unresolved(&restored_text);
    if !left.is_empty() {
        return Err(WriteError::Unresolved(tokens::unresolved_message(
            "text", &left,
        )));
    }

    let (mut placeholder_values, mut path_values) = tokens::applied_values(&args.text, &map);
    let (p, q) = tokens::applied_values(&args.target_path, &map);
    placeholder_values.extend(p);
    path_values.extend(q);
    let balanced = root.balanced_engine().ok_or(WriteError::Failed)?;
    let mut engines = vec![root.engine()];
    if !std::ptr::eq(engines[0], &*balanced) {
        engines.push(&balanced);
    }
    round_trip::check(
        &engines,
        &round_trip::Restored {
            target: &restored_target,
            text: &restored_text,
            rel: &rel,
            placeholder_values: &placeholder_values,
            path_values: &path_values,
        },
    )?;

    let abs = root.root().join(&rel);
    if let Ok(meta) = std::fs::symlink_metadata(&abs) {
        if meta.is_dir() {
            return Err(WriteError::TargetIsDir);
        }
        if !args.overwrite {
            return Err(WriteError::TargetExists);
        }
    }
    publish::publish(root.root(), &rel, &restored_text, args.overwrite)?;
    // Known to every tool now, not when the watcher gets to it.
    root.upsert(&rel);

    let shown = root.path(&rel);
    counts.merge(&shown.counts);
    Ok(format!(
        "Wrote rehydrated document.\nid: {}\npath: {}\nbytes: {}\nreplacements: {}\n",
        shown.id,
        shown.text,
        restored_text.len(),
        target_count + text_count
    ))
}

/// `texts` with every token the root's redaction knows restored (`redctx rehydrate`:
/// the whole root, no file count limit; unknown tokens stay).
pub fn rehydrate_texts(
    root: &ServedRoot,
    texts: &[String],
    stop: &Stop,
) -> Result<Vec<String>, ToolError> {
    let wanted: BTreeSet<String> = texts
        .iter()
        .flat_map(|t| tokens::tokens(t))
        .map(str::to_owned)
        .collect();
    let limits: &Limits = root.limits();
    let mut budget = Budget::default().stopping(stop);
    budget.max_file_bytes = Some(limits.max_raw_bytes_per_file);
    let map = map::build(root, &wanted, &Scope::default(), budget)?;
    Ok(texts.iter().map(|t| tokens::rehydrate(t, &map).0).collect())
}
