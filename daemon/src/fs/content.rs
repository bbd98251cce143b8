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
//! 3. **The encoding** ([`classify`]): bytes that fail that check but start with a
//!    UTF-32 or UTF-16 byte-order mark, and decode to a prefix without NUL, are wide
//!    text ([`Encoding`]). The reference refuses them (`Refusing to print non-text
//!    file.`) and so do `strict` and `balanced`; `code` mode reads them, as ripgrep
//!    does, so Windows-authored files are readable and searchable ([`Decoding`]). The
//!    cache keeps the encoding in a file's record, so one record serves every mode, and
//!    redacted content is keyed by the policy fingerprint, which holds the mode.
//!
//! A [`ContentKind::Document`] is never decoded as text: without `--documents` a read
//! refuses it (`Document extraction is disabled.`, [`ContentKind::refusal`]); with it,
//! `crate::documents` extracts it to Markdown. The indexing pass keeps it as metadata.

use crate::engine::Mode;
use crate::engine::placeholder::casefold;
use crate::engine::wordlists::TEXT_EXTENSIONS;
use crate::view::ViewError;
use serde::{Deserialize, Serialize};
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
    /// A document format: metadata only for the indexing pass; without `--documents`
    /// refused by reads (`Document extraction is disabled.`) and excluded by the default
    /// globs, with it extracted (`crate::documents`).
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
            return ContentKind::Sniffed;
        }
        // Full case folding can map a non-ASCII suffix onto a listed one (`ſ` → `s`);
        // ASCII folding is lowercasing, done in a buffer (this runs once per file of a
        // whole-root call). No listed suffix is longer than the buffer.
        let mut buffer = [0u8; 16];
        let folded: Cow<str> = match buffer.get_mut(..suffix.len()) {
            Some(lower) if suffix.is_ascii() => {
                lower.copy_from_slice(suffix.as_bytes());
                lower.make_ascii_lowercase();
                Cow::Borrowed(std::str::from_utf8(lower).unwrap_or_default())
            }
            _ if suffix.is_ascii() => return ContentKind::Sniffed,
            _ => Cow::Owned(casefold(suffix)),
        };
        static KINDS: std::sync::LazyLock<foldhash::HashMap<&str, ContentKind>> =
            std::sync::LazyLock::new(|| {
                let listed = |suffixes: &[&'static str], kind| {
                    suffixes.iter().map(move |s| (*s, kind)).collect::<Vec<_>>()
                };
                let documents = DocumentFormat::ALL.map(|f| (f.suffix(), ContentKind::Document(f)));
                // Inserted last wins: text, then documents, then legacy Office, so the
                // order of precedence is the lists' (a suffix in two lists is text).
                listed(&LEGACY_OFFICE_SUFFIXES, ContentKind::LegacyOffice)
                    .into_iter()
                    .chain(documents)
                    .chain(listed(TEXT_EXTENSIONS, ContentKind::Text))
                    .collect()
            });
        KINDS
            .get(folded.as_ref())
            .copied()
            .unwrap_or(ContentKind::Sniffed)
    }

    /// The kind of the file at root-relative path `rel` (by its basename).
    pub fn of_path(rel: &str) -> ContentKind {
        ContentKind::of_name(rel.rsplit('/').next().unwrap_or(rel))
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

/// How a text file's bytes encode its characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Encoding {
    /// Everything the reference reads as text ([`sniff`]), decoded as UTF-8.
    Utf8,
    /// UTF-8 the reference refuses only because its sniff window ends inside a character
    /// and most of the window is not ASCII (a Chinese or Japanese document): its strict
    /// decode of the window fails there, and its fallback counts every multi-byte
    /// character against the text. Text to `code` mode only, decoded as UTF-8.
    Utf8Cut,
    /// A byte-order mark, then 16-bit (or 32-bit) code units; text to `code` mode only.
    Utf16Le,
    Utf16Be,
    Utf32Le,
    Utf32Be,
}

impl Encoding {
    /// The wide encodings and their byte-order marks, UTF-32 first: its little-endian
    /// mark begins with UTF-16's.
    const WIDE: [(Encoding, &'static [u8]); 4] = [
        (Encoding::Utf32Le, b"\xff\xfe\0\0"),
        (Encoding::Utf32Be, b"\0\0\xfe\xff"),
        (Encoding::Utf16Le, b"\xff\xfe"),
        (Encoding::Utf16Be, b"\xfe\xff"),
    ];
}

/// Which encodings a policy reads as text: a function of the mode alone, so the policy
/// fingerprint (which holds the mode) keys every redacted record by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoding {
    /// `strict` and `balanced`: the reference's rule, UTF-8 only.
    Reference,
    /// `code`: UTF-16 and UTF-32 with a byte-order mark too.
    Wide,
}

impl Decoding {
    pub fn for_mode(mode: Mode) -> Decoding {
        match mode {
            Mode::Code => Decoding::Wide,
            Mode::Strict | Mode::Balanced => Decoding::Reference,
        }
    }

    /// Whether text in `encoding` is served as text.
    pub fn reads(self, encoding: Encoding) -> bool {
        encoding == Encoding::Utf8 || self == Decoding::Wide
    }

    /// `bytes` as text ([`decode`]). In code mode a byte that is not part of valid
    /// UTF-8 is read as Windows-1252 (the usual legacy encoding of Latin-1 text), where
    /// the reference shows `U+FFFD`: a configured `Jörg` written in Latin-1 then matches,
    /// instead of being shown as `J�rg`. Bytes Windows-1252 leaves undefined, and its C1
    /// controls, stay `U+FFFD`. Valid UTF-8 is unchanged.
    pub fn decode(self, bytes: &[u8], encoding: Encoding) -> Cow<'_, str> {
        let utf8 = matches!(encoding, Encoding::Utf8 | Encoding::Utf8Cut);
        if self == Decoding::Reference || !utf8 {
            return decode(bytes, encoding);
        }
        let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
        if let Ok(text) = std::str::from_utf8(body) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(body.len() + 8);
        for chunk in body.utf8_chunks() {
            out.push_str(chunk.valid());
            let (legacy, _) =
                encoding_rs::WINDOWS_1252.decode_without_bom_handling(chunk.invalid());
            out.extend(legacy.chars().map(|c| {
                if ('\u{80}'..='\u{9f}').contains(&c) {
                    char::REPLACEMENT_CHARACTER
                } else {
                    c
                }
            }));
        }
        Cow::Owned(out)
    }
}

/// The encoding of content whose first [`SNIFF_BYTES`] bytes are `content` (or all of
/// it); `None` when it is not text in any mode. The reference's [`sniff`] decides
/// first, so whatever it reads stays UTF-8 in every mode; only what it refuses may be
/// wide text: a byte-order mark, then a prefix that decodes without NUL (the wide form
/// of the NUL rule, and ripgrep's: it trusts the mark, then calls transcoded text with
/// a NUL binary).
pub fn classify(content: &[u8]) -> Option<Encoding> {
    if sniff(content) {
        return Some(Encoding::Utf8);
    }
    let chunk = &content[..content.len().min(SNIFF_BYTES)];
    if let Some((encoding, _)) = Encoding::WIDE
        .into_iter()
        .find(|(_, bom)| chunk.starts_with(bom))
    {
        return (!decode(chunk, encoding).contains('\0')).then_some(encoding);
    }
    // A full window whose only flaw is a character cut at its end.
    let cut = chunk.len() == SNIFF_BYTES
        && !chunk.contains(&0)
        && std::str::from_utf8(chunk.strip_prefix(UTF8_BOM).unwrap_or(chunk))
            .is_err_and(|e| e.error_len().is_none());
    cut.then_some(Encoding::Utf8Cut)
}

/// The encoding `decoding` reads `content` in, or `None` when it is not text to it.
pub fn text_encoding(content: &[u8], decoding: Decoding) -> Option<Encoding> {
    classify(content).filter(|e| decoding.reads(*e))
}

/// [`classify`] of a file on disk (its first [`SNIFF_BYTES`] bytes), without following
/// a symlink. Unreadable files are not text.
pub fn classify_file(path: &Path) -> Option<Encoding> {
    super::read::read_prefix(path, SNIFF_BYTES).and_then(|prefix| classify(&prefix))
}

/// Decodes file bytes. UTF-8 as the reference does: strip one BOM, then replace each
/// maximal invalid subpart with U+FFFD (CPython's `errors="replace"` and Rust's lossy
/// decoding follow the same Unicode recommendation); valid UTF-8, nearly every source
/// file, is borrowed rather than copied. Wide text: strip its BOM, replace each lone
/// surrogate or invalid scalar with U+FFFD, and a cut unit at the end with one more, as
/// a lossy decoder does.
///
/// Hand-written rather than `encoding_rs`: that crate (the WHATWG set) has no UTF-32,
/// is not in the lockfile, and `char::decode_utf16` gives the same replacement rules.
pub fn decode(bytes: &[u8], encoding: Encoding) -> Cow<'_, str> {
    let unit = match encoding {
        Encoding::Utf8 | Encoding::Utf8Cut => {
            let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
            // `from_utf8` checks ASCII a word at a time; the lossy decoder walks every
            // byte even of valid text (1.6% of a cold index's CPU on the real corpus).
            return match std::str::from_utf8(body) {
                Ok(text) => Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(body),
            };
        }
        Encoding::Utf16Le | Encoding::Utf16Be => 2,
        Encoding::Utf32Le | Encoding::Utf32Be => 4,
    };
    let bom = Encoding::WIDE
        .iter()
        .find(|(e, _)| *e == encoding)
        .map_or(&b""[..], |(_, bom)| bom);
    let body = bytes.strip_prefix(bom).unwrap_or(bytes);
    let units = body.chunks_exact(unit);
    let cut = !units.remainder().is_empty();
    let mut text = String::with_capacity(body.len() / unit + 3);
    match encoding {
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let big = encoding == Encoding::Utf16Be;
            let code_units = units.map(|u| {
                let u = [u[0], u[1]];
                if big {
                    u16::from_be_bytes(u)
                } else {
                    u16::from_le_bytes(u)
                }
            });
            text.extend(
                char::decode_utf16(code_units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)),
            );
        }
        _ => {
            let big = encoding == Encoding::Utf32Be;
            text.extend(units.map(|u| {
                let u = [u[0], u[1], u[2], u[3]];
                let scalar = if big {
                    u32::from_be_bytes(u)
                } else {
                    u32::from_le_bytes(u)
                };
                char::from_u32(scalar).unwrap_or(char::REPLACEMENT_CHARACTER)
            }));
        }
    }
    if cut {
        text.push(char::REPLACEMENT_CHARACTER);
    }
    Cow::Owned(text)
}

/// The `stat` line count of text in `encoding`: [`count_lines`] of the decoded text.
/// For UTF-8 that is the count of the raw bytes (lossy decoding keeps every `\n`), so
/// only wide text is decoded for it.
pub fn decoded_lines(bytes: &[u8], encoding: Encoding) -> u64 {
    match encoding {
        Encoding::Utf8 | Encoding::Utf8Cut => count_lines(bytes),
        wide => count_lines(decode(bytes, wide).as_bytes()),
    }
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
    fn code_mode_reads_bytes_that_are_not_utf8_as_windows_1252() {
        let latin1 = b"Owner: J\xf6rg M\xfcllerstein \x80 \x81\x9d\n";
        let code = Decoding::Wide.decode(latin1, Encoding::Utf8);
        assert_eq!(code, "Owner: Jörg Müllerstein € \u{fffd}\u{fffd}\n");
        // UTF-8 around the stray bytes stays UTF-8; a BOM is dropped as before.
        let mixed = b"\xef\xbb\xbfS\xc3\xb8ren \xe9t\xe9";
        assert_eq!(Decoding::Wide.decode(mixed, Encoding::Utf8), "Søren été");
        // The reference's modes keep its replacement character.
        let reference = Decoding::Reference.decode(latin1, Encoding::Utf8);
        assert_eq!(
            reference,
            "Owner: J\u{fffd}rg M\u{fffd}llerstein \u{fffd} \u{fffd}\u{fffd}\n"
        );
        // Valid text is borrowed in every mode.
        assert!(matches!(
            Decoding::Wide.decode(b"plain", Encoding::Utf8),
            Cow::Borrowed("plain")
        ));
    }

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
        let utf8 = |b| decode(b, Encoding::Utf8);
        assert_eq!(utf8(b"\xef\xbb\xbfhi"), "hi");
        assert_eq!(utf8(b"\xef\xbb\xbf\xef\xbb\xbfhi"), "\u{feff}hi");
        assert_eq!(utf8(b"caf\xe9"), "caf\u{fffd}");
        assert_eq!(utf8(b"a\xffb"), "a\u{fffd}b");
        assert!(matches!(utf8(b"plain"), Cow::Borrowed("plain")));
    }

    /// `text` in `encoding` with its byte-order mark.
    fn wide(encoding: Encoding, text: &str) -> Vec<u8> {
        let (_, bom) = Encoding::WIDE.iter().find(|(e, _)| *e == encoding).unwrap();
        let mut out = bom.to_vec();
        match encoding {
            Encoding::Utf16Le => text
                .encode_utf16()
                .for_each(|u| out.extend(u.to_le_bytes())),
            Encoding::Utf16Be => text
                .encode_utf16()
                .for_each(|u| out.extend(u.to_be_bytes())),
            Encoding::Utf32Le => text
                .chars()
                .for_each(|c| out.extend((c as u32).to_le_bytes())),
            Encoding::Utf32Be => text
                .chars()
                .for_each(|c| out.extend((c as u32).to_be_bytes())),
            Encoding::Utf8 | Encoding::Utf8Cut => unreachable!(),
        }
        out
    }

    /// UTF-16 and UTF-32 with a byte-order mark are wide text, in either byte order;
    /// the reference's sniff still refuses them, and only `code` mode reads them.
    #[test]
    fn wide_text_is_classified_by_its_bom_and_read_in_code_mode() {
        use Encoding::*;
        let text = "naïve 日本語 \u{1f600}\r\nsecond line\n";
        for encoding in [Utf16Le, Utf16Be, Utf32Le, Utf32Be] {
            let bytes = wide(encoding, text);
            assert!(!sniff(&bytes), "{encoding:?}");
            assert_eq!(classify(&bytes), Some(encoding));
            assert_eq!(decode(&bytes, encoding), text, "{encoding:?}");
            assert_eq!(decoded_lines(&bytes, encoding), 2, "{encoding:?}");
            assert_eq!(text_encoding(&bytes, Decoding::Wide), Some(encoding));
            assert_eq!(text_encoding(&bytes, Decoding::Reference), None);
        }
        assert_eq!(Decoding::for_mode(Mode::Code), Decoding::Wide);
        assert_eq!(Decoding::for_mode(Mode::Strict), Decoding::Reference);
        assert_eq!(Decoding::for_mode(Mode::Balanced), Decoding::Reference);
        // What the reference reads is UTF-8 in every mode.
        assert_eq!(classify(b"plain\n"), Some(Utf8));
        assert_eq!(classify(b""), Some(Utf8));
        assert!(Decoding::Reference.reads(Utf8));
        // A BOM alone is empty text; lines count the decoded text.
        assert_eq!(classify(b"\xff\xfe"), Some(Utf16Le));
        assert_eq!(decode(b"\xff\xfe", Utf16Le), "");
        assert_eq!(decoded_lines(b"\xff\xfe", Utf16Le), 0);
        // U+0A0A holds two `\n` bytes and is no line break.
        let gurmukhi = wide(Utf16Le, "\u{a0a}\u{a0a}");
        assert_eq!(
            (count_lines(&gurmukhi), decoded_lines(&gurmukhi, Utf16Le)),
            (4, 1)
        );
    }

    /// Odd trailing bytes and invalid units decode to U+FFFD, as a lossy decoder does.
    #[test]
    fn wide_decoding_replaces_what_is_invalid() {
        use Encoding::*;
        // A cut last unit: one replacement character.
        assert_eq!(decode(b"\xff\xfeh\0i\0\n", Utf16Le), "hi\u{fffd}");
        assert_eq!(decode(b"\xfe\xff\0h\0", Utf16Be), "h\u{fffd}");
        assert_eq!(decode(b"\xff\xfe\0\0h\0\0\0i\0", Utf32Le), "h\u{fffd}");
        // Lone surrogates, high then low, each replaced.
        assert_eq!(
            decode(b"\xff\xfe\x3d\xd8a\0\x00\xdcb\0", Utf16Le),
            "\u{fffd}a\u{fffd}b"
        );
        assert_eq!(decode(b"\xfe\xff\xd8\x3d", Utf16Be), "\u{fffd}");
        // A surrogate pair is one character.
        assert_eq!(decode(b"\xff\xfe\x3d\xd8\x00\xde", Utf16Le), "\u{1f600}");
        // Scalars past U+10FFFF and surrogates are not characters in UTF-32.
        assert_eq!(
            decode(b"\0\0\xfe\xff\0\x11\0\0\0\0\xd8\0\0\0\0a", Utf32Be),
            "\u{fffd}\u{fffd}a"
        );
        // Only the first BOM is stripped.
        assert_eq!(decode(&wide(Utf16Le, "\u{feff}x"), Utf16Le), "\u{feff}x");
    }

    /// Without a BOM UTF-16 stays binary (its NUL bytes), as it does for the
    /// reference; so does a binary that starts with a BOM but decodes to NUL.
    #[test]
    fn cjk_utf8_cut_by_the_sniff_window_is_text_to_code_mode_only() {
        // Three-byte characters from the first byte: the 4096-byte window ends inside
        // one, and almost nothing in it is ASCII.
        let text = "微信公众平台接口说明。\n".repeat(200);
        let bytes = text.as_bytes();
        assert_ne!(SNIFF_BYTES % 3, 0, "the window must cut a character");
        assert!(!sniff(bytes), "the reference refuses it");
        assert_eq!(classify(bytes), Some(Encoding::Utf8Cut));
        assert_eq!(
            text_encoding(bytes, Decoding::Wide),
            Some(Encoding::Utf8Cut)
        );
        assert_eq!(text_encoding(bytes, Decoding::Reference), None);
        assert_eq!(decode(bytes, Encoding::Utf8Cut), text);
        assert_eq!(decoded_lines(bytes, Encoding::Utf8Cut), 200);
        // Bytes that are invalid inside the window, or a short file that ends cut, stay
        // binary.
        let mut broken = bytes.to_vec();
        broken[30] = 0xff;
        assert_eq!(classify(&broken), None);
        assert_eq!(
            classify(&bytes[..bytes.len().min(SNIFF_BYTES) - 1][..100]),
            None
        );
    }

    #[test]
    fn wide_text_needs_its_bom_and_no_nul() {
        let no_bom: Vec<u8> = "hello\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(classify(&no_bom), None);
        assert_eq!(classify(b"\xff\xfeh\0\0\0i\0"), None);
        assert_eq!(classify(b"\xff\xfe\0\0\0\0\0\0"), None);
        // NUL past the sniffed prefix does not count, as for UTF-8.
        let mut late = wide(Encoding::Utf16Le, &"a".repeat(SNIFF_BYTES));
        late.extend([0, 0]);
        assert_eq!(classify(&late), Some(Encoding::Utf16Le));
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
