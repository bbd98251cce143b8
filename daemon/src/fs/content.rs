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
//!    `PurePath.suffix`, case-folded (without allocating for an ASCII suffix). The text
//!    list is `engine::wordlists::TEXT_EXTENSIONS`, with the reference's other lists; the
//!    document and legacy suffixes are defined here.
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

    /// Spec 6.3 (suffix list, `.gitignore` by name, case-folded suffix) and spec 8
    /// (document formats, legacy `.doc`/`.ppt`); dotfiles have no suffix (pathlib).
    #[test]
    fn names_classify_per_spec() {
        use ContentKind::*;
        use DocumentFormat::*;
        let table: &[(&str, ContentKind)] = &[
            ("main.py", Text),
            ("notes.txt", Text),
            ("data.jsonl", Text),
            ("x.env", Text),
            (".gitignore", Text),
            ("sub.gitignore", Text),
            // Dotfiles: no suffix, so the bytes decide (`.gitignore` is the named exception).
            (".bashrc", Sniffed),
            (".env", Sniffed),
            (".GITIGNORE", Sniffed),
            (".doc", Sniffed),
            // Upper-case suffixes fold to the listed ones, also through full case folding.
            ("README.MD", Text),
            ("Config.YAML", Text),
            ("run.\u{17f}h", Text),             // `ſ` folds to `s`: `.sh`
            ("wide.\u{ff2d}\u{ff24}", Sniffed), // full-width `ＭＤ` folds to full-width
            ("report.pdf", Document(Pdf)),
            ("a.docx", Document(Docx)),
            ("Deck.PPTX", Document(Pptx)),
            ("b.xlsx", Document(Xlsx)),
            ("C.XLS", Document(Xls)),
            ("x.txt.docx", Document(Docx)),
            ("x.docx.txt", Text),
            ("old.doc", LegacyOffice),
            ("OLD.PPT", LegacyOffice),
            ("slides.ppt", LegacyOffice),
            // Not on the reference's list: sniffed, source code included.
            ("lib.rs", Sniffed),
            ("archive.tar.gz", Sniffed),
            ("Makefile", Sniffed),
            ("name.", Sniffed),
        ];
        for &(name, kind) in table {
            assert_eq!(ContentKind::of_name(name), kind, "{name:?}");
            assert_eq!(
                ContentKind::of_path(&format!("d/e/{name}")),
                kind,
                "{name:?}"
            );
        }
        assert_eq!(ContentKind::of_path("notes.txt/Makefile"), Sniffed);
    }

    /// Spec 6.1 and 8: what each kind means for listing, indexing and reading.
    #[test]
    fn kinds_say_how_they_are_served() {
        use ContentKind::*;
        let pdf = Document(DocumentFormat::Pdf);
        assert_eq!(Text.text_by_name(), Some(true));
        assert_eq!(pdf.text_by_name(), Some(false));
        assert_eq!(LegacyOffice.text_by_name(), None);
        assert_eq!(Sniffed.text_by_name(), None);
        assert!(Text.is_indexed() && Sniffed.is_indexed());
        assert!(!pdf.is_indexed() && !LegacyOffice.is_indexed());
        assert_eq!(Text.refusal(), None);
        assert_eq!(Sniffed.refusal(), None);
        assert_eq!(
            pdf.refusal().map(|e| e.to_string()).as_deref(),
            Some(
                "Document extraction is disabled. Install the documents extra and start with \
                 --documents."
            )
        );
        assert_eq!(
            LegacyOffice.refusal().map(|e| e.to_string()).as_deref(),
            Some(
                "Legacy .doc and .ppt files are unsupported. Export them as .docx, .pptx, or \
                 PDF first."
            )
        );
        for glob in ["*.docx", "*.pptx", "*.pdf", "*.xlsx", "*.xls"] {
            assert!(is_document_glob(glob), "{glob}");
        }
        for glob in [
            "*.doc", "*.ppt", "*.PDF", ".pdf", "*.png", "x*.pdf", "*.pdf*",
        ] {
            assert!(!is_document_glob(glob), "{glob}");
        }
    }

    /// Spec 6.3: no NUL in the first 4,096 bytes, and strict UTF-8 (BOM allowed) or more
    /// than 85% of `\n \r \t` and 32..=126; empty is text.
    #[test]
    fn bytes_sniff_per_spec() {
        // 4,104 bytes: the 4,096th byte is the first of a three-byte character.
        let cjk_cut = "日本語".repeat(456);
        let mut nul_late = vec![b'a'; SNIFF_BYTES];
        nul_late.push(0);
        let mut ascii_cut = vec![b'a'; SNIFF_BYTES - 1];
        ascii_cut.extend_from_slice("é".as_bytes()); // cut after its first byte
        let two_byte_whole = "é".repeat(2049); // the prefix ends between characters
        let table: &[(&str, &[u8], bool)] = &[
            ("empty", b"", true),
            ("ascii", b"fn main() {}\n", true),
            ("utf-8", "naïve café\n".as_bytes(), true),
            ("nul byte", b"abc\0def", false),
            ("lone nul", b"\0", false),
            ("nul after the sniffed prefix", &nul_late, true),
            ("utf-8 bom", b"\xef\xbb\xbfhello\n", true),
            (
                "bom then multi-byte utf-8",
                "\u{feff}日本語".as_bytes(),
                true,
            ),
            ("utf-8 cut at 4,096, mostly ascii", &ascii_cut, true),
            ("utf-8 cut at 4,096, multi-byte", cjk_cut.as_bytes(), false),
            ("utf-8 whole at 4,096", two_byte_whole.as_bytes(), true),
            (
                "latin-1, mostly printable",
                b"caf\xe9 au lait and cr\xe8me br\xfbl\xe9e for dessert\n",
                true,
            ),
            (
                "latin-1, 85% printable",
                b"abcdefghijklmnopq\xe9\xe8\xea",
                false,
            ),
            (
                "latin-1, 90% printable",
                b"abcdefghijklmnopqr\xe9\xe8",
                true,
            ),
            ("latin-1, mostly high bytes", b"\xe9\xe8\xea a", false),
            ("utf-16le with bom", b"\xff\xfeh\0i\0\n\0", false),
            ("utf-16be with bom", b"\xfe\xff\0h\0i\0\n", false),
        ];
        for &(case, bytes, text) in table {
            assert_eq!(sniff(bytes), text, "{case}");
        }
    }

    /// A file named like text is listed without reading, and its bytes are still checked
    /// when it is read (spec 6.3: "a `.txt` with NULs is listed as readable but fails on
    /// read").
    #[test]
    fn text_names_are_still_sniffed_on_read() {
        let kind = ContentKind::of_name("notes.txt");
        assert_eq!(kind.text_by_name(), Some(true));
        assert_eq!(kind.refusal(), None);
        assert!(!sniff(b"a\0b"));
    }

    /// Spec 6.3: decode UTF-8 with BOM stripping and U+FFFD replacement.
    #[test]
    fn decode_strips_one_bom_and_replaces() {
        assert_eq!(decode(b"\xef\xbb\xbfhi"), "hi");
        assert_eq!(decode(b"\xef\xbb\xbf\xef\xbb\xbfhi"), "\u{feff}hi");
        assert_eq!(decode(b"caf\xe9"), "caf\u{fffd}");
        assert_eq!(decode(b"a\xffb"), "a\u{fffd}b");
        assert!(matches!(decode(b"plain"), Cow::Borrowed("plain")));
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
