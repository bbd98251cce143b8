//! Filesystem policy of a served root: path input and containment, exclusion and
//! never-serve rules, `.gitignore`, content classification (text, document or neither,
//! and decoding), verified reads and listing order (spec section 6).
//!
//! Invariant: nothing here redacts or caches; functions answer "may this path be served",
//! "what kind of content is this" and "what are its bytes", and their errors are the fixed
//! texts of [`ViewError`] (`crate::view::ViewError`), which never carry a path.

pub mod content;
pub mod fnmatch;
pub mod gitignore;
pub mod paths;
pub mod protected;
pub mod read;
pub mod rules;
pub mod statat;

pub use content::{ContentKind, DocumentFormat};
pub use gitignore::GitignoreRules;
pub use paths::{PathInput, abs_path, open_beneath, parse_input, validate_components};
pub use read::{OpenedFile, StatKey, prefetch, read_verified};
pub use rules::{FsRules, is_prose_path, reference_order_key};
pub use statat::StatBatch;
