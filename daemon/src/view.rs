//! The read-only view of one served root that tool renderers work on.
//!
//! Invariant: renderers (`tools/`) see a root only through [`RootView`]. They never touch
//! the filesystem, the cache or the watcher, and everything a view hands out is already
//! redacted (content, paths) or an opaque id. The index/cache layer implements the trait;
//! a view is a consistent snapshot of one policy, so a reload swaps whole views.

use crate::engine::{Counts, Engine};
use crate::fs::StatKey;
use crate::search_index::passages::{IndexedHits, Located};
use crate::search_index::plan::GramPlan;
use crate::watch::Synced;
use std::sync::Arc;

/// What an index entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    Dir,
    File,
}

/// One listed entry of the root. `rel` is the raw root-relative POSIX path (`.` for the
/// root); it never leaves the daemon unredacted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub rel: Arc<str>,
    pub kind: EntryKind,
    /// `st_size` (directories report the OS directory size).
    pub size: u64,
    /// The `lstat` the view took of this file while handing it out (walk or resolve);
    /// `None` when it answered from what it had indexed. Lets the search index judge a
    /// file by the stat the walk just took instead of taking another.
    pub stat: Option<StatKey>,
    /// Whether the file at `stat` is text, when the index had already decided it (a
    /// listing from the index hands it out, sparing the text check a lookup per file).
    pub text: Option<bool>,
}

impl Entry {
    /// Last path component (`.` for the root).
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }
}

/// An entry held through the directory listing it came from: a whole-root file list is
/// a pointer and a position per file instead of a copy of each entry, and the listings
/// themselves are the ones the index keeps for the next walk.
#[derive(Clone, Debug)]
pub struct ListedEntry {
    list: Arc<[Entry]>,
    at: usize,
}

impl ListedEntry {
    /// Entry `at` of `list`; `None` past its end.
    pub fn new(list: Arc<[Entry]>, at: usize) -> Option<ListedEntry> {
        (at < list.len()).then_some(ListedEntry { list, at })
    }

    /// An entry that came from no listing (a walk's start).
    pub fn alone(entry: Entry) -> ListedEntry {
        ListedEntry {
            list: Arc::from([entry]),
            at: 0,
        }
    }
}

impl std::ops::Deref for ListedEntry {
    type Target = Entry;

    fn deref(&self) -> &Entry {
        &self.list[self.at]
    }
}

/// The 48 bits of an opaque path id `@p_<12hex>`, held as a number so a listing of
/// thousands of entries carries its ids without one string allocation each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PathId(pub u64);

impl PathId {
    /// Parses `@p_` followed by exactly 12 hex digits.
    pub fn parse(id: &str) -> Option<PathId> {
        let hex = id.strip_prefix("@p_")?;
        if hex.len() != 12 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(hex, 16).ok().map(PathId)
    }

    /// Appends the id as the engine spells it (`@p_` and 12 lowercase hex digits).
    pub fn push_to(self, out: &mut String) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.push_str("@p_");
        for shift in (0..12).rev() {
            out.push(char::from(HEX[((self.0 >> (shift * 4)) & 15) as usize]));
        }
    }
}

/// One line of a `tree`: a child's opaque id, its name redacted alone, and for a
/// directory the entry to expand. Files carry no entry: a tree prints thousands of them
/// and needs nothing else of theirs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeRow {
    /// The id of the child's root-relative path.
    pub id: PathId,
    /// `RootView::name` of the child's last path component.
    pub name: RedactedPath,
    /// `Some` for a directory, `None` for a file.
    pub dir: Option<Entry>,
}

/// Redacted text of a file in one variant (line-preserving or not).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedactedDoc {
    pub text: Arc<str>,
    /// Substitutions made redacting this content (for receipts).
    pub counts: Counts,
}

/// A redacted path with its opaque id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RedactedPath {
    /// `@p_<12hex>`.
    pub id: Arc<str>,
    /// The root-relative path, redacted (spec 5.8).
    pub text: Arc<str>,
    /// Substitutions made redacting the path (for receipts).
    pub counts: Counts,
}

/// Operator limits (spec 6.5). `Default` gives the reference's values; a served root
/// replaces the traversal and per-call byte budgets it was not given with ours
/// (`tools::DEFAULT_TRAVERSAL_ENTRIES`, `tools::DEFAULT_TOTAL_RAW_BYTES`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_raw_bytes_per_file: u64,
    pub max_total_raw_bytes: u64,
    pub max_traversal_entries: u64,
    pub max_resource_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_raw_bytes_per_file: 5_000_000,
            max_total_raw_bytes: 50_000_000,
            max_traversal_entries: 10_000,
            max_resource_bytes: 1_000_000,
        }
    }
}

/// Input-free failures a view reports; `Display` is the exact text a client may see.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    #[error("Path is excluded by policy.")]
    Excluded,
    #[error("Path does not exist.")]
    Missing,
    #[error("Refusing path outside root.")]
    OutsideRoot,
    #[error("Refusing unsafe path.")]
    Unsafe,
    #[error("Not a file.")]
    NotAFile,
    #[error("Not a directory.")]
    NotADirectory,
    #[error("Refusing to print non-text file. Use stat/list to inspect metadata.")]
    NotText,
    #[error(
        "Legacy .doc and .ppt files are unsupported. Export them as .docx, .pptx, or PDF first."
    )]
    LegacyOffice,
    #[error(
        "Document extraction is disabled. Install the documents extra and start with --documents."
    )]
    DocumentsDisabled,
    /// A document that gave no text (spec 8), in the reference's words.
    #[error("{0}")]
    Document(#[from] crate::documents::DocError),
    /// Carries the opaque id the caller gave (already opaque: safe to echo).
    #[error("Unknown path id: {0}")]
    UnknownId(String),
    #[error("Opaque path id collision detected.")]
    IdCollision,
    #[error("Raw file byte limit exceeded.")]
    FileByteLimit,
    #[error("Total raw byte limit exceeded.")]
    TotalByteLimit,
    #[error("Traversal entry limit exceeded.")]
    EntryLimit,
    #[error("File changed during read.")]
    ChangedDuringRead,
    #[error("Could not read file.")]
    ReadFailed,
    /// The policy is blocked (spec 5.13); the message is the fixed blocked text.
    #[error("{0}")]
    Blocked(&'static str),
    #[error("Tool execution failed.")]
    Internal,
    /// A plugged detector refused the text (spec 5.12's fixed sentences, on the
    /// reference's safe list).
    #[error("{0}")]
    Detector(crate::engine::plugged::PluggedError),
}

impl ViewError {
    /// Failures that say a file changed under the reader rather than anything about the
    /// request: it vanished (`Missing`), became a directory (`NotAFile`) or a symlink or
    /// a link to a protected file (`Unsafe`, `Excluded`), moved while being read, or
    /// could not be read. A scan over many files skips such a file
    /// (`tools::scan_content`) instead of failing.
    pub fn is_churn(&self) -> bool {
        matches!(
            self,
            ViewError::Missing
                | ViewError::NotAFile
                | ViewError::Unsafe
                | ViewError::Excluded
                | ViewError::ChangedDuringRead
                | ViewError::ReadFailed
        )
    }

    /// Failures of one file's content that say nothing about the request or the policy:
    /// it is over the per-file byte limit, a document gave no text (or took too long),
    /// or a plugged detector refused its text. A scan over many files leaves such a file
    /// out and says how many it left out (`tools::Skipped`); a read of it still fails.
    pub fn is_per_file(&self) -> bool {
        matches!(
            self,
            ViewError::FileByteLimit
                | ViewError::Document(_)
                | ViewError::LegacyOffice
                | ViewError::DocumentsDisabled
                | ViewError::Detector(_)
        )
    }
}

/// A consistent, read-only snapshot of one served root under one policy.
pub trait RootView: Send + Sync {
    /// The compiled policy this snapshot redacts with.
    fn engine(&self) -> &Engine;

    /// Operator limits in force.
    fn limits(&self) -> &Limits;

    /// Resolves user input — `@p_<id>`, `p_<id>`, `redctx://p_<id>` (resources), a
    /// root-relative or absolute path — to an entry, with the checks of spec 6.1 and 6.2
    /// (containment, no symlink component, never-serve and exclusions). Freshly created
    /// files resolve without any refresh call.
    fn resolve(&self, input: &str) -> Result<Entry, ViewError>;

    /// Children of a directory in reference order (directories first, then files, each by
    /// casefolded name); excluded, protected and symlinked entries omitted.
    fn children(&self, dir: &Entry) -> Result<Vec<Entry>, ViewError>;

    /// Asks the root's watcher to vouch that the index holds every change made before
    /// this call (`crate::watch::sync`). With the proof, a walk lists
    /// [`RootView::synced_children`]; `None` (no watcher, or it cannot vouch now): it
    /// lists [`RootView::children`]. No default, like `search_screen`.
    fn watch_sync(&self) -> Option<Synced>;

    /// [`RootView::children`], the same entries in the same order, from the index alone:
    /// each file's `stat` is the one the watcher last saw, which `proof` makes as good
    /// as an `lstat` now.
    fn synced_children(&self, dir: &Entry, proof: &Synced) -> Result<Arc<[Entry]>, ViewError>;

    /// The children of `children`, in the same order and as fresh in membership and
    /// kinds, each with its id and redacted name: what `tree` prints. A tree shows no
    /// sizes, so a view may hand out the sizes it indexed instead of re-reading each
    /// file's metadata. The default builds the rows from `children`, `engine().path_id`
    /// and `name`.
    fn tree_children(&self, dir: &Entry) -> Result<Vec<TreeRow>, ViewError> {
        self.children(dir)?
            .into_iter()
            .map(|entry| {
                let id =
                    PathId::parse(&self.engine().path_id(&entry.rel)).ok_or(ViewError::Internal)?;
                let name = self.name(entry.name());
                let dir = (entry.kind == EntryKind::Dir).then_some(entry);
                Ok(TreeRow { id, name, dir })
            })
            .collect()
    }

    /// Whether a file is served as text: by its name, else by the content sniff (spec 6.3,
    /// `fs::content`).
    fn is_text(&self, file: &Entry) -> bool;

    /// Redacted content, never stale: the file is re-checked against the disk before
    /// answering. `preserve_line_count` selects the line-preserving variant (read, search,
    /// retrieve) or the plain one (bundle, resources).
    fn content(&self, file: &Entry, preserve_line_count: bool) -> Result<RedactedDoc, ViewError>;

    /// Number of `\n` bytes (+1 when non-empty and not newline-terminated), for `stat`.
    fn stat_line_count(&self, file: &Entry) -> Result<u64, ViewError>;

    /// The redacted root-relative path and id of an entry.
    fn path(&self, rel: &str) -> RedactedPath;

    /// Redacts one path component (tree names) with the path redactor.
    fn name(&self, name: &str) -> RedactedPath;

    /// The search index's pre-screen of files for one query (`crate::search_index`):
    /// `None` when the view has no usable index, and every file in scope is read. No
    /// default, so that a wrapping view cannot silently drop its inner view's index.
    fn search_screen(&self, plan: &GramPlan) -> Option<Box<dyn FileScreen + '_>>;

    /// The passage index's answer to one retrieve query (`terms` casefolded, in the
    /// query's order): `None` when the view has none, and every file in scope is read.
    /// No default, for the same reason as `search_screen`.
    fn passage_index(&self, terms: &[String]) -> Option<Box<dyn PassageIndex + '_>>;
}

/// What the passage index knows of the files of one retrieve query's scope.
pub trait PassageIndex: Sync {
    /// Where the index holds `file`'s text, with its totals, content counts and redacted
    /// path, if it holds the text `file` has on disk now (its walk `stat`, else a fresh
    /// `lstat`); `None`: read it.
    fn locate(&self, file: &Entry) -> Option<(&Counts, &RedactedPath, Located)>;

    /// The passages holding a query term of the files `located` (each with the
    /// caller's doc number); `None` on damage (the caller then reads every file).
    fn hits(&self, located: &[(Located, u32)]) -> Option<IndexedHits>;

    /// The redacted (line-preserving) text `file`'s postings were made from, to print
    /// passages of; `None` if it is no longer at hand.
    fn text(&self, file: &Entry) -> Option<Arc<str>>;

    /// Told when a passage read back did not hold what [`PassageIndex::hits`] said (the
    /// call then answers from a scan).
    fn mismatch(&self);
}

/// Which files of a query's scope cannot match, known without reading them.
pub trait FileScreen: Sync {
    /// What is known of `file` as it is on disk now (its walk `stat`, else a fresh
    /// `lstat`) without reading it.
    fn screen(&self, file: &Entry) -> Screened<'_>;
}

/// A screen's answer for search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Screened<'a> {
    /// Holds no match; the counts of its redacted content (what reading it would add
    /// to a receipt).
    NoMatch(&'a Counts),
    /// Not text: reading it would answer `NotText`.
    NotText,
    /// Read it.
    Read,
}
