//! What code mode finds in file and directory names besides configured terms: values
//! whose shape alone says what they are, as the detector layer finds them in text (an
//! email address, an IP address, a phone number, a card or IBAN that passes its
//! checksum, an SSN), with each name's extension apart (`host_vars/10.0.0.5.yml`,
//! `jo@example.io.md`); and private hosts that are a whole name but for an extension
//! (`hosts/db.acme.internal/`, `vault.acme.internal.yaml`).
//!
//! Names otherwise keep their words in code mode: the detector families that read
//! context (a key before a value, a keyword nearby) and the entropy of tokens are not
//! asked about names, where content hashes, versions and generated ids are ordinary.

use super::*;
use crate::engine::stages::patterns::PRIVATE_HOST_SUFFIXES;

/// Categories of the detector layer's findings kept in a name: the validated PII shapes.
const NAME_SHAPES: [Category; 6] = [
    Category::EMAIL,
    Category::IP,
    Category::PHONE,
    Category::CARD,
    Category::IBAN,
    Category::SSN,
];

/// Private-network suffixes that also end ordinary file names before their extension
/// (`appsettings.local.json`, `key.private.pem`): a name holding one is a host only
/// when the suffix ends it.
const SUFFIXES_ALSO_IN_FILE_NAMES: [&str; 2] = [".local", ".private"];

/// The findings of `rel` (a root-relative path, or one name), in order and apart. What
/// the layer saw is not passed on: it saw the names with their extensions set apart,
/// where a configured term with a dot (`acme.io/`) would not be found, so the stages
/// after it search the path itself (a path is short).
pub(super) fn findings(detector: &Detector, rel: &str) -> (Vec<Finding>, Seen) {
    let context = DetectContext {
        rel_path: rel,
        prose: false,
    };
    // Each name's extension set apart by a blank (same length: offsets hold), so that
    // `jo@example.io.md` reads as an address and an extension, as the name means.
    let mut spaced = String::with_capacity(rel.len());
    for (i, name) in rel.split('/').enumerate() {
        if i > 0 {
            spaced.push('/');
        }
        match without_extension(name) {
            Some(stem) => {
                spaced.push_str(stem);
                spaced.push(' ');
                spaced.push_str(&name[stem.len() + 1..]);
            }
            None => spaced.push_str(name),
        }
    }
    let (found, _) = detector.detect_and_see(&spaced, &context, false);
    let mut kept: Vec<Finding> = found
        .into_iter()
        .filter(|f| NAME_SHAPES.iter().any(|c| c.same(&f.category)))
        .collect();
    for host in whole_name_hosts(rel) {
        if !kept
            .iter()
            .any(|f| f.start < host.end && host.start < f.end)
        {
            kept.push(host);
        }
    }
    kept.sort_by_key(|f| f.start);
    (kept, Seen::UNKNOWN)
}

/// Private hosts that are a whole name of `rel`, or one but for its extension.
fn whole_name_hosts(rel: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut at = 0;
    for name in rel.split('/') {
        if let Some(len) = host_length(name) {
            out.push(Finding {
                start: at,
                end: at + len,
                category: Category::URL,
                detector: "path.private-host",
            });
        }
        at += name.len() + 1;
    }
    out
}

/// `name` without its extension (1 to 8 ASCII letters or digits after the last dot, one
/// a letter: `1.2.3.4.5` is a version), if it has one.
fn without_extension(name: &str) -> Option<&str> {
    let (stem, extension) = name.rsplit_once('.')?;
    ((1..=8).contains(&extension.len())
        && extension.bytes().all(|b| b.is_ascii_alphanumeric())
        && extension.bytes().any(|b| b.is_ascii_alphabetic()))
    .then_some(stem)
}

/// The length of the private host `name` is, or starts with before one extension: DNS
/// labels (ASCII letters, digits, `-`) with a private suffix. With an extension after
/// it, the host must have three labels or more and a suffix that ordinary file names do
/// not use (`vault.acme.internal.yaml`, but not `settings.local.json`).
fn host_length(name: &str) -> Option<usize> {
    let lower = name.to_ascii_lowercase();
    let is_host = |host: &str, whole: bool| {
        let labels: Vec<&str> = host.split('.').collect();
        let suffix_ok = PRIVATE_HOST_SUFFIXES.iter().any(|s| {
            host.ends_with(s)
                && host.len() > s.len()
                && (whole || !SUFFIXES_ALSO_IN_FILE_NAMES.contains(s))
        });
        suffix_ok
            && labels.len() >= if whole { 2 } else { 3 }
            && labels.iter().all(|l| {
                !l.is_empty()
                    && !l.starts_with('-')
                    && !l.ends_with('-')
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    };
    if is_host(&lower, true) {
        return Some(name.len());
    }
    let host = without_extension(&lower)?;
    is_host(host, false).then_some(host.len())
}

#[cfg(test)]
mod tests {
    use super::host_length;

    #[test]
    fn a_name_is_a_private_host_when_the_suffix_ends_it_or_only_an_extension_follows() {
        assert_eq!(host_length("db.acme.internal"), Some(16));
        assert_eq!(host_length("db-primary.prod.corp"), Some(20));
        assert_eq!(host_length("printer.local"), Some(13));
        assert_eq!(host_length("vault.acme.internal.yaml"), Some(19));
        assert_eq!(host_length("Vault.Acme.Internal.YAML"), Some(19));
        // Ordinary names.
        for name in [
            "appsettings.local.json",
            "docker-compose.local.yml",
            "key.private.pem",
            "webpack.config.local.js",
            "db.internal.yaml", // two labels and an extension: a file about a host
            "internal",
            ".internal",
            "notes.internal.md.bak",
            "a..internal",
            "-x.corp",
            "src",
            "main.rs",
        ] {
            assert_eq!(host_length(name), None, "{name}");
        }
    }
}
