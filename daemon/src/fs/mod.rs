//! Filesystem policy of a served root: path input and containment, exclusion and
//! never-serve rules, `.gitignore`, text detection, verified reads and listing order
//! (spec section 6).
//!
//! Invariant: nothing here redacts or caches; functions answer "may this path be served"
//! and "what are its bytes", and their errors are the fixed texts of [`ViewError`]
//! (`crate::view::ViewError`), which never carry a path.

pub mod fnmatch;
pub mod gitignore;
pub mod paths;
pub mod protected;
pub mod rules;
pub mod text;

pub use gitignore::GitignoreRules;
pub use paths::{PathInput, abs_path, parse_input, validate_components};
pub use rules::{FsRules, is_prose_path, reference_order_key};
pub use text::{
    StatKey, decode_text, has_text_extension, looks_like_text, prefetch, read_verified,
};
