//! Which files a draft is made from, and their raw samples (the operator's commands
//! only; the samples go to the local model and nowhere else).

use crate::cancel::Stop;
use crate::root::ServedRoot;
use crate::tools::{Budget, ToolError, target_files};
use crate::view::{RootView, ViewError};

/// Which files [`sample`] reads, and how much of each.
#[derive(Clone, Debug, Default)]
pub struct Params {
    /// Scopes (paths or ids); empty = the whole root.
    pub paths: Vec<String>,
    /// fnmatch patterns, as `bundle`'s.
    pub globs: Vec<String>,
    /// Most files sampled (walk order).
    pub max_files: u64,
    /// Bytes of each file's sample (of a document's extracted text: characters).
    pub max_chars_per_file: u64,
    /// Raw bytes of all samples (`Discovery total byte limit exceeded.`).
    pub max_total_raw_bytes: u64,
    /// Absolute paths (files or directories) never sampled: what the discovery's own
    /// detectors read, protected as the reference protects them.
    pub unsampled: Vec<std::path::PathBuf>,
}

/// What [`sample`] found.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    /// In walk order.
    pub files: Vec<Sample>,
    /// The people the root's config lists (alias proposals check against them).
    pub known_people: Vec<String>,
}

/// The start of one file, decoded (UTF-8, BOM dropped, invalid bytes replaced).
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Root-relative POSIX path.
    pub rel: String,
    pub text: String,
    /// The file was longer than the sample.
    pub truncated: bool,
    /// Hex SHA-256 of the whole file's bytes (what `discover-update --changed` compares).
    pub sha256: String,
}

/// Why sampling failed; every text is fixed and input-free.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    #[error("{0}")]
    Tool(#[from] ToolError),
    #[error("Discovery total byte limit exceeded.")]
    TotalBytes,
}

/// The first `max_files` readable files in scope (`iter_target_files` order: scopes in
/// turn, walk order, text files and enabled documents only, each once), each sampled by
/// [`ServedRoot::raw_sample`]; the samples' raw bytes may not pass `max_total_raw_bytes`.
/// A file that vanishes or changes while sampled is left out, as the tools do, and so
/// is one over the per-file byte limit (the reference samples its start).
pub fn sample(root: &ServedRoot, params: &Params, stop: &Stop) -> Result<Samples, SampleError> {
    let mut budget = Budget::from_limits(root.limits()).stopping(stop);
    budget.max_total_bytes = None;
    let targets = target_files(root, &params.paths, &params.globs, true, &mut budget)?;
    let max_files = usize::try_from(params.max_files).unwrap_or(usize::MAX);
    let max_chars = usize::try_from(params.max_chars_per_file).unwrap_or(usize::MAX);
    let mut files = Vec::new();
    let mut total = 0u64;
    let sampled = targets.files.iter().filter(|entry| {
        let path = root.root().join(entry.rel.to_string());
        !params.unsampled.iter().any(|p| path.starts_with(p))
    });
    for entry in sampled.take(max_files) {
        stop.check().map_err(ToolError::from)?;
        let sample = match root.raw_sample(&entry.rel, max_chars) {
            Ok(sample) => sample,
            // Gone, changed, not text, or over the per-file byte limit: left out.
            Err(e)
                if e.is_churn() || matches!(e, ViewError::NotText | ViewError::FileByteLimit) =>
            {
                continue;
            }
            Err(e) => return Err(ToolError::from(e).into()),
        };
        total += sample.charged;
        if total > params.max_total_raw_bytes {
            return Err(SampleError::TotalBytes);
        }
        files.push(Sample {
            rel: entry.rel.to_string(),
            text: sample.text,
            truncated: sample.truncated,
            sha256: sample.sha256,
        });
    }
    if targets.files.len() <= max_files
        && let Some(error) = targets.error
    {
        return Err(error.into());
    }
    Ok(Samples {
        files,
        known_people: root.engine().policy().people.clone(),
    })
}
