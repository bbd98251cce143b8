//! How a file's values are written, from its name: whether unquoted values are literals
//! (configuration, prose) or expressions (code), and which quotes delimit strings.

use std::sync::LazyLock;

/// How unquoted values are read, from the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Source code: an unquoted value is an expression (a variable, a call), not a literal.
    Code,
    /// Configuration, shell, env files: an unquoted value is a literal string.
    Config,
    /// Prose (Markdown, text, HTML docs): literal, but English filler is not a value.
    Prose,
}

const CODE_EXTS: &[&str] = &[
    "go", "rs", "py", "pyi", "rb", "js", "jsx", "ts", "tsx", "mjs", "cjs", "java", "kt", "kts",
    "scala", "cs", "php", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "swift", "m", "mm", "dart",
    "lua", "pl", "pm", "r", "ex", "exs", "erl", "clj", "groovy", "gradle", "vue", "svelte", "fs",
    "vb", "tf", "hcl", "json", "jsonc", "ipynb", "sql", "zig", "nim", "jl", "cr", "elm", "hs",
    "ml", "coffee",
];
const PROSE_EXTS: &[&str] = &[
    "md", "markdown", "txt", "rst", "adoc", "html", "htm", "textile", "org", "tex",
];

/// Source languages in which a backtick opens a string (Go raw strings, JavaScript
/// templates) or a shell command (Ruby, Perl, PHP, Julia, Crystal), whose text is then
/// literal. Elsewhere a backtick opens nothing a key could sit in: Markdown code in Rust,
/// Python or C comments (a fence is three backticks, an odd count), identifiers in
/// Kotlin, Scala and SQL.
const BACKTICK_STRING_EXTS: &[&str] = &[
    "go", "js", "jsx", "ts", "tsx", "mjs", "cjs", "vue", "svelte", "coffee", "rb", "pl", "pm",
    "php", "jl", "cr",
];

/// Calls `f` with the lower-case file name of a root-relative path and its extension
/// (`None` when it has none). Asked twice per text: the name is lower-cased on the
/// stack, and the callers look the extension up in sets.
fn with_file_name<R>(rel_path: &str, f: impl FnOnce(&str, Option<&str>) -> R) -> R {
    let name = rel_path.rsplit_once('/').map_or(rel_path, |(_, name)| name);
    let mut buf = [0u8; 128];
    let owned;
    let lower = match buf.get_mut(..name.len()) {
        Some(head) => {
            head.copy_from_slice(name.as_bytes());
            head.make_ascii_lowercase();
            std::str::from_utf8(head).expect("ASCII case changes keep UTF-8")
        }
        None => {
            owned = name.to_ascii_lowercase();
            &owned
        }
    };
    f(lower, lower.rsplit_once('.').map(|(_, ext)| ext))
}

static CODE_EXT_SET: LazyLock<foldhash::HashSet<&'static str>> =
    LazyLock::new(|| CODE_EXTS.iter().copied().collect());
static PROSE_EXT_SET: LazyLock<foldhash::HashSet<&'static str>> =
    LazyLock::new(|| PROSE_EXTS.iter().copied().collect());
static BACKTICK_EXT_SET: LazyLock<foldhash::HashSet<&'static str>> =
    LazyLock::new(|| BACKTICK_STRING_EXTS.iter().copied().collect());

/// How a source file's language quotes strings, as far as telling whether a key sits
/// inside one goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quoting {
    /// A backtick opens a string or a command (see [`BACKTICK_STRING_EXTS`]).
    pub backticks: bool,
    /// An apostrophe may begin a lifetime or a loop label (`'a`, `'static`) rather than a
    /// character literal (Rust).
    pub lifetimes: bool,
}

impl Quoting {
    /// The quoting of the language the path's extension names.
    pub fn of(rel_path: &str) -> Quoting {
        with_file_name(rel_path, |_, ext| {
            let ext = ext.unwrap_or("");
            Quoting {
                backticks: BACKTICK_EXT_SET.contains(ext),
                lifetimes: ext == "rs",
            }
        })
    }
}

impl FileKind {
    /// Classifies a root-relative path; `prose` forces [`FileKind::Prose`].
    pub fn of(rel_path: &str, prose: bool) -> FileKind {
        if prose {
            return FileKind::Prose;
        }
        with_file_name(rel_path, |name, ext| {
            if name.starts_with(".env") || name.contains(".env.") || name.ends_with(".env") {
                return FileKind::Config;
            }
            match ext {
                Some(ext) if CODE_EXT_SET.contains(ext) => FileKind::Code,
                Some(ext) if PROSE_EXT_SET.contains(ext) => FileKind::Prose,
                _ => FileKind::Config,
            }
        })
    }
}

/// Directory names under which a project keeps its translation catalogs (i18n JSON and
/// YAML, gettext, `.properties` bundles): files there map message ids to UI text, so a
/// `"LABEL_PASSWORD": "Contrasenya"` line names a field, it holds no password.
const CATALOG_DIRS: &[&str] = &[
    "i18n",
    "l10n",
    "lang",
    "langs",
    "locale",
    "locales",
    "translations",
];

/// Whether `rel_path` lies in a translation catalog directory (any case).
pub fn is_translation_catalog(rel_path: &str) -> bool {
    let mut dirs = rel_path.split('/');
    dirs.next_back(); // the file name
    dirs.any(|d| CATALOG_DIRS.iter().any(|c| c.eq_ignore_ascii_case(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_kinds_follow_extensions() {
        assert_eq!(FileKind::of("a/b/.env", false), FileKind::Config);
        assert_eq!(FileKind::of("a/_.env.local.txt", false), FileKind::Config);
        assert_eq!(FileKind::of("src/main.go", false), FileKind::Code);
        assert_eq!(FileKind::of("config.yml", false), FileKind::Config);
        assert_eq!(FileKind::of("README.md", false), FileKind::Prose);
        assert_eq!(FileKind::of("main.go", true), FileKind::Prose);
    }

    #[test]
    fn translation_catalogs_are_known_by_their_directory() {
        for path in [
            "frontend/src/assets/i18n/zh_CN.json",
            "config/locales/de.yml",
            "app/Resources/translations/messages.fr.xlf",
            "po/LOCALE/fr.po",
            "resources/lang/en/auth.php",
        ] {
            assert!(is_translation_catalog(path), "{path}");
        }
        for path in [
            "i18n.json",
            "src/lang.rs",
            "docs/locales.md",
            "config/secrets.yml",
        ] {
            assert!(!is_translation_catalog(path), "{path}");
        }
    }
}
