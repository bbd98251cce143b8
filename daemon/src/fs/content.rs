//! The content classifier: what kind of content a file holds, and how its bytes become
//! text (spec 6.3 text detection, spec 8 document formats). Every caller that asks "is
//! this text, a document, or neither, and how is it decoded" asks here: the indexing pass
//! and the content path (`root.rs`), the renderers' checks (`tools/`), and `doctor`'s
//! document globs.
//!
//! Two questions, answered in order:
//! 1. **The name** ([`ContentKind::of_name`]): a suffix on the reference's text list (or
//!    the name `.gitignore`) is text without reading; `.docx .pptx .pdf .xlsx .xls` are
//!    [`ContentKind::Document`]s; `.doc`/`.ppt` are [`ContentKind::LegacyOffice`], always
//!    refused; anything else is [`ContentKind::Sniffed`]. Suffixes are Python's
//!    `PurePath.suffix`, case-folded (without allocating for an ASCII suffix).
//! 2. **The bytes** ([`sniff`]): the first [`SNIFF_BYTES`] bytes hold no NUL and either
//!    decode as strict UTF-8 (BOM allowed) or are more than 85% printable ASCII. A sniffed
//!    file is listed as text by this check; every file read for its content (text by name
//!    too) must pass it, else `Refusing to print non-text file.` Like the reference, a
//!    UTF-8 sequence cut by the 4,096-byte boundary makes the strict decode fail, so such
//!    a prefix falls back to the printable ratio. [`decode`] then strips one BOM and
//!    replaces invalid sequences.
//!
//! Documents are not extracted yet: a [`ContentKind::Document`] is not text, kept as
//! metadata only by the indexing pass, and refused by a read with
//! `Document extraction is disabled.` ([`ContentKind::refusal`]). Extraction is the
//! handling of that arm.

use crate::engine::placeholder::casefold;
use crate::engine::wordlists::TEXT_EXTENSIONS;
use crate::view::ViewError;
use std::borrow::Cow;
use std::path::Path;

/// Bytes examined by the content sniff.
pub const SNIFF_BYTES: usize = 4096;

const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// A document format the reference extracts with `--documents` (spec 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DocumentFormat {
    Docx,
    Pptx,
    Pdf,
    Xlsx,
    Xls,
}

impl DocumentFormat {
    /// Every format, in the reference's order.
    pub const ALL: [DocumentFormat; 5] = [
        DocumentFormat::Docx,
        DocumentFormat::Pptx,
        DocumentFormat::Pdf,
        DocumentFormat::Xlsx,
        DocumentFormat::Xls,
    ];

    /// The (case-folded) suffix that names the format.
    pub fn suffix(self) -> &'static str {
        match self {
            DocumentFormat::Docx => ".docx",
            DocumentFormat::Pptx => ".pptx",
            DocumentFormat::Pdf => ".pdf",
            DocumentFormat::Xlsx => ".xlsx",
            DocumentFormat::Xls => ".xls",
        }
    }
}

/// Legacy Office suffixes (case-folded): refused even with document extraction.
const LEGACY_OFFICE_SUFFIXES: [&str; 2] = [".doc", ".ppt"];

/// What a file's name says about its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContentKind {
    /// Text by its suffix (or the name `.gitignore`): listed as text without reading. Its
    /// bytes are still [`sniff`]ed when it is read.
    Text,
    /// A document format. Until extraction exists: not text, metadata only for the
    /// indexing pass, refused by reads (`Document extraction is disabled.`) and, with the
    /// default globs, excluded.
    Document(DocumentFormat),
    /// A legacy `.doc`/`.ppt` file: reads refuse it with their own message; whether it is
    /// listed as text (`stat` counts its lines) is sniffed like any other file.
    LegacyOffice,
    /// Nothing in the name decides: the first [`SNIFF_BYTES`] bytes do ([`sniff`]).
    Sniffed,
}

impl ContentKind {
    /// The kind of a file named `name` (a basename).
    pub fn of_name(name: &str) -> ContentKind {
        if name == ".gitignore" {
            return ContentKind::Text;
        }
        let suffix = python_suffix(name);
        if suffix.is_empty() {
            ContentKind::Sniffed
        } else if suffix.is_ascii() {
            // ASCII case folding is ASCII lowercasing; every listed suffix is lowercase.
            ContentKind::of_folded_suffix(|listed| listed.eq_ignore_ascii_case(suffix))
        } else {
            // Full case folding can map a non-ASCII suffix onto a listed one (`ſ` → `s`).
            let folded = casefold(suffix);
            ContentKind::of_folded_suffix(|listed| listed == folded)
        }
    }

    /// The kind of the file at root-relative path `rel` (by its basename).
    pub fn of_path(rel: &str) -> ContentKind {
        ContentKind::of_name(rel.rsplit('/').next().unwrap_or(rel))
    }

    fn of_folded_suffix(is: impl Fn(&str) -> bool) -> ContentKind {
        if TEXT_EXTENSIONS.iter().any(|listed| is(listed)) {
            ContentKind::Text
        } else if let Some(format) = DocumentFormat::ALL.into_iter().find(|f| is(f.suffix())) {
            ContentKind::Document(format)
        } else if LEGACY_OFFICE_SUFFIXES.iter().any(|listed| is(listed)) {
            ContentKind::LegacyOffice
        } else {
            ContentKind::Sniffed
        }
    }

    /// Whether the name alone says the file is listed as text (spec 6.3): `None` when its
    /// first bytes decide ([`sniff`]).
    pub fn text_by_name(self) -> Option<bool> {
        match self {
            ContentKind::Text => Some(true),
            ContentKind::Document(_) => Some(false),
            ContentKind::LegacyOffice | ContentKind::Sniffed => None,
        }
    }

    /// Whether the indexing pass reads a file of this kind (the others are kept as
    /// metadata only).
    pub fn is_indexed(self) -> bool {
        match self {
            ContentKind::Text | ContentKind::Sniffed => true,
            ContentKind::Document(_) | ContentKind::LegacyOffice => false,
        }
    }

    /// The refusal a read of this kind's content answers before touching the file, in the
    /// reference's words; `None` for the kinds read as text.
    pub fn refusal(self) -> Option<ViewError> {
        match self {
            ContentKind::Text | ContentKind::Sniffed => None,
            ContentKind::Document(_) => Some(ViewError::DocumentsDisabled),
            ContentKind::LegacyOffice => Some(ViewError::LegacyOffice),
        }
    }
}

/// Whether `glob` is one of the five default exclusion globs of the document formats
/// (`*.docx`, …), which `--documents` lifts.
pub fn is_document_glob(glob: &str) -> bool {
    glob.strip_prefix('*')
        .is_some_and(|suffix| DocumentFormat::ALL.iter().any(|f| f.suffix() == suffix))
}

/// Python's `PurePath.suffix`: the last `.`-suffix of a name, empty for dotfiles such as
/// `.env` and for names ending in a dot.
pub fn python_suffix(name: &str) -> &str {
    match name.rfind('.') {
        Some(i) if i > 0 && i < name.len() - 1 => &name[i..],
        _ => "",
    }
}

/// The content sniff over (at most) the first [`SNIFF_BYTES`] bytes: whether they are
/// text. Empty content is text.
pub fn sniff(content: &[u8]) -> bool {
    let chunk = &content[..content.len().min(SNIFF_BYTES)];
    if chunk.contains(&0) {
        return false;
    }
    if chunk.is_empty() {
        return true;
    }
    if std::str::from_utf8(chunk.strip_prefix(UTF8_BOM).unwrap_or(chunk)).is_ok() {
        return true;
    }
    let textish = chunk
        .iter()
        .filter(|&&b| matches!(b, b'\n' | b'\r' | b'\t' | 32..=126))
        .count();
    // Same float comparison as the reference (both divisions are correctly rounded).
    textish as f64 / chunk.len() as f64 > 0.85
}

/// The content sniff of a file on disk (its first [`SNIFF_BYTES`] bytes), without
/// following a symlink. Unreadable files are not text.
pub fn sniff_file(path: &Path) -> bool {
    super::read::read_prefix(path, SNIFF_BYTES).is_some_and(|prefix| sniff(&prefix))
}

/// Decodes file bytes as the reference does: strip one UTF-8 BOM, then replace each
/// maximal invalid subpart with U+FFFD (CPython's `errors="replace"` and Rust's lossy
/// decoding follow the same Unicode recommendation). Valid UTF-8, nearly every source
/// file, is borrowed rather than copied.
pub fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    String::from_utf8_lossy(body)
}

/// `\n` count, plus one when the content is non-empty and does not end with `\n`
/// (the reference's `lines:` of `stat`).
pub fn count_lines(bytes: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        newlines + 1
    } else {
        newlines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_follows_pathlib() {
        assert_eq!(python_suffix(".env"), "");
        assert_eq!(python_suffix("a.tar.gz"), ".gz");
        assert_eq!(python_suffix("a."), "");
        assert_eq!(python_suffix("noext"), "");
        assert_eq!(ContentKind::of_name("README.MD"), ContentKind::Text);
        assert_eq!(ContentKind::of_name(".gitignore"), ContentKind::Text);
        assert_ne!(ContentKind::of_name(".env"), ContentKind::Text);
        assert_eq!(ContentKind::of_name("x.env"), ContentKind::Text);
    }

    #[test]
    fn line_count_matches_stat_rule() {
        assert_eq!(count_lines(b""), 0);
        assert_eq!(count_lines(b"a"), 1);
        assert_eq!(count_lines(b"a\n"), 1);
        assert_eq!(count_lines(b"a\nb"), 2);
        assert_eq!(count_lines(b"\r\n\r\n"), 2);
    }
}
