//! The part of each tool's contract both sides must agree on: its name and the defaults
//! of its arguments.
//!
//! The shim publishes these defaults to agents in its input schemas
//! (`redctx-client`'s `tools.rs`); the daemon applies them to arguments a caller left out
//! (`redctx-daemon`'s `service.rs`). Defining them here, once, is what keeps the two from
//! drifting apart. Names and numbers only: what a tool does belongs to the daemon, how it
//! is described to an agent to the shim.

/// `redctx_tree`: a directory as an indented tree.
pub const TREE: &str = "redctx_tree";
/// `redctx_list`: a directory's entries, one per line.
pub const LIST: &str = "redctx_list";
/// `redctx_read`: one file, or a line range of it.
pub const READ: &str = "redctx_read";
/// `redctx_search`: grep-style lines.
pub const SEARCH: &str = "redctx_search";
/// `redctx_retrieve`: ranked passages.
pub const RETRIEVE: &str = "redctx_retrieve";
/// `redctx_stat`: metadata of one path.
pub const STAT: &str = "redctx_stat";
/// `redctx_bundle`: several files in one answer.
pub const BUNDLE: &str = "redctx_bundle";
/// `redctx_doctor`: the redaction setup.
pub const DOCTOR: &str = "redctx_doctor";
/// `redctx_audit`: checks of the redaction setup.
pub const AUDIT: &str = "redctx_audit";
/// `redctx_refresh_index`: re-walk the root.
pub const REFRESH_INDEX: &str = "redctx_refresh_index";

/// Every tool served, in the order `tools/list` gives them (the reference's).
pub const ALL: [&str; 10] = [
    TREE,
    LIST,
    READ,
    SEARCH,
    RETRIEVE,
    STAT,
    BUNDLE,
    DOCTOR,
    AUDIT,
    REFRESH_INDEX,
];

/// Argument defaults, as the JSON values an agent may omit.
pub mod defaults {
    /// `redctx_tree` `max_depth`.
    pub const TREE_MAX_DEPTH: u64 = 3;
    /// `redctx_read` `max_chars`.
    pub const READ_MAX_CHARS: u64 = 120_000;
    /// `redctx_search` `ignore_case` (the CLI's `grep` is case-sensitive unless `-i`).
    pub const SEARCH_IGNORE_CASE: bool = true;
    /// `redctx_search` `context`.
    pub const SEARCH_CONTEXT: u64 = 0;
    /// `redctx_search` `max_results` (output lines).
    pub const SEARCH_MAX_RESULTS: u64 = 200;
    /// `redctx_retrieve` `max_results` (passages).
    pub const RETRIEVE_MAX_RESULTS: i64 = 8;
    /// `redctx_retrieve` `max_chars`.
    pub const RETRIEVE_MAX_CHARS: i64 = 12_000;
    /// `redctx_bundle` `max_files`.
    pub const BUNDLE_MAX_FILES: u64 = 80;
    /// `redctx_bundle` `max_chars_per_file`.
    pub const BUNDLE_MAX_CHARS_PER_FILE: u64 = 30_000;
    /// `redctx_bundle` `max_total_chars`.
    pub const BUNDLE_MAX_TOTAL_CHARS: u64 = 300_000;
}
