//! Literal strings whose presence in a text gates a detector's pattern (`BEGIN`,
//! `PuTTY-User-Key-File`, `://`, …). They ride along in the shared keyword scan, so a
//! detector asks [`Literals::has`] instead of reading the whole text once more for each.
//! (Not to be confused with the pipeline's `markers`: the private-use stand-ins a stage
//! leaves in the text.)

use super::keywords::{KeywordHits, WordIds};

/// One literal: its index in [`ALL`] and its text (matched case-sensitively).
pub struct Literal(pub usize, pub &'static str);

pub const BEGIN: Literal = Literal(0, "BEGIN");
pub const PUTTY: Literal = Literal(1, "PuTTY-User-Key-File");
pub const AGE: Literal = Literal(2, "AGE-SECRET-KEY-1");
pub const PEM_BASE64: Literal = Literal(3, "LS0tLS1CRUdJTi");
pub const KTY: Literal = Literal(4, "kty");
pub const BRACE_S: Literal = Literal(5, "{S");
pub const BRACE_C: Literal = Literal(6, "{C");
pub const TRIPLE_COLON: Literal = Literal(7, ":::");
pub const VALUE: Literal = Literal(8, "value");
pub const AUTHOR_TAG: Literal = Literal(9, "@author");
pub const SCHEME: Literal = Literal(10, "://");
pub const WEBHOOKS: Literal = Literal(11, "/api/webhooks/");
pub const MACHINE: Literal = Literal(12, "machine");
pub const PASSWORD: Literal = Literal(13, "password");
pub const KIND_SECRET: Literal = Literal(14, "kind: Secret");
pub const KIND_SECRET_QUOTED: Literal = Literal(15, "kind: \"Secret\"");
pub const IDENTIFIED: Literal = Literal(16, "identified");
/// The characters that a Unicode case-insensitive pattern equates with an ASCII
/// letter although ASCII case folding does not (`ſ` with `s`, the Kelvin sign with
/// `k`), and the two more that Python's IGNORECASE adds (`İ`, `ı` with `i`): where
/// a text holds one, words found by the ASCII keyword scan may miss a pattern's
/// matches.
pub const LONG_S: Literal = Literal(17, "\u{17F}");
pub const KELVIN: Literal = Literal(18, "\u{212A}");
pub const DOTTED_I: Literal = Literal(19, "\u{130}");
pub const DOTLESS_I: Literal = Literal(20, "\u{131}");
/// Calls that build a symmetric key or a MAC from their argument (see `detect::keys`).
pub const SECRET_KEY_SPEC: Literal = Literal(21, "SecretKeySpec");
pub const CREATE_SECRET_KEY: Literal = Literal(22, "createSecretKey");
pub const SIGNED_STRING: Literal = Literal(23, "SignedString");
pub const CREATE_HMAC: Literal = Literal(24, "createHmac");
pub const HMAC_NEW: Literal = Literal(25, "hmac.new");
/// How base64 of a DER private key begins, by the length form of its outer SEQUENCE
/// (see `detect::keys`): two length bytes (`MII`, RSA and most PKCS #8), one (`MIG`,
/// `MIH`: EC keys in PKCS #8 or SEC1 of P-384/P-521), or none (`MHcC`: SEC1 P-256;
/// `MC4C`: Ed25519 in PKCS #8).
pub const DER_LONG: Literal = Literal(26, "MII");
pub const DER_MID_G: Literal = Literal(27, "MIG");
pub const DER_MID_H: Literal = Literal(28, "MIH");
pub const DER_SEC1_P256: Literal = Literal(29, "MHcC");
pub const DER_ED25519: Literal = Literal(30, "MC4C");

/// Every literal, in index order (the words registered in the shared scan).
pub const ALL: &[&Literal] = &[
    &BEGIN,
    &PUTTY,
    &AGE,
    &PEM_BASE64,
    &KTY,
    &BRACE_S,
    &BRACE_C,
    &TRIPLE_COLON,
    &VALUE,
    &AUTHOR_TAG,
    &SCHEME,
    &WEBHOOKS,
    &MACHINE,
    &PASSWORD,
    &KIND_SECRET,
    &KIND_SECRET_QUOTED,
    &IDENTIFIED,
    &LONG_S,
    &KELVIN,
    &DOTTED_I,
    &DOTLESS_I,
    &SECRET_KEY_SPEC,
    &CREATE_SECRET_KEY,
    &SIGNED_STRING,
    &CREATE_HMAC,
    &HMAC_NEW,
    &DER_LONG,
    &DER_MID_G,
    &DER_MID_H,
    &DER_SEC1_P256,
    &DER_ED25519,
];

/// The literals' texts, in index order.
pub fn words() -> impl Iterator<Item = &'static str> {
    ALL.iter().map(|m| m.1)
}

/// Which [literals](self) a text holds, read from its shared keyword scan.
pub struct Literals<'a> {
    text: &'a str,
    hits: &'a KeywordHits,
    ids: WordIds,
}

impl<'a> Literals<'a> {
    /// The literals of `text`, whose scan `hits` registered [`words`] as `ids`.
    pub fn new(text: &'a str, hits: &'a KeywordHits, ids: WordIds) -> Literals<'a> {
        Literals { text, hits, ids }
    }

    /// Whether the text contains the literal exactly (the scan matched it ignoring ASCII
    /// case; each place it matched is compared as written).
    pub fn has(&self, m: &Literal) -> bool {
        self.has_ignore_ascii_case(m)
            && self
                .hits
                .starts_of(self.ids, m.0)
                .any(|s| self.text.as_bytes()[s..].starts_with(m.1.as_bytes()))
    }

    /// Whether the text contains the literal ignoring ASCII case.
    pub fn has_ignore_ascii_case(&self, m: &Literal) -> bool {
        self.hits.has(self.ids, m.0)
    }

    /// Where the literal starts, ignoring ASCII case, ascending.
    pub fn starts_ignore_ascii_case(&self, m: &Literal) -> impl Iterator<Item = usize> + '_ {
        self.hits.starts_of(self.ids, m.0)
    }

    /// Whether the text holds `ſ` or the Kelvin sign (see [`LONG_S`]), read from
    /// the scan.
    pub fn has_non_ascii_fold_of_ascii(&self) -> bool {
        // Non-ASCII literals have no other case to ignore.
        self.has_ignore_ascii_case(&LONG_S) || self.has_ignore_ascii_case(&KELVIN)
    }

    /// Whether the text holds one of the four characters of [`LONG_S`]'s list,
    /// read from the scan ([`crate::engine::stages::gate::has_ascii_fold_stand_in`] reads the
    /// text).
    pub fn has_ascii_fold_stand_in(&self) -> bool {
        self.has_non_ascii_fold_of_ascii()
            || self.has_ignore_ascii_case(&DOTTED_I)
            || self.has_ignore_ascii_case(&DOTLESS_I)
    }
}

/// Whether `text` holds a character that a Unicode case-insensitive pattern equates with
/// an ASCII letter although ASCII case folding does not (`ſ` with `s`, the Kelvin sign
/// with `k`): there, words found by the ASCII keyword scan may miss a pattern's matches.
/// The detectors read this from the scan ([`Literals::has_non_ascii_fold_of_ascii`]);
/// the tests, from the text.
#[cfg(test)]
pub fn has_non_ascii_fold_of_ascii(text: &str) -> bool {
    crate::engine::python::text::has_any_char(text, &['\u{17F}', '\u{212A}'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prepass::keywords::KeywordBuilder;

    #[test]
    fn markers_are_listed_at_their_index() {
        for (i, m) in ALL.iter().enumerate() {
            assert_eq!(m.0, i, "{}", m.1);
        }
    }

    /// A literal is found as written, not in another case, wherever it sits.
    #[test]
    fn markers_match_case_sensitively() {
        let mut words = KeywordBuilder::default();
        let ids = words.add(super::words());
        let scan = words.build().expect("few words");
        for (text, begin) in [
            ("-----BEGIN RSA", true),
            ("begin BeGiN", false),
            ("xBEGIN", true),
            ("BEGI", false),
            ("begin then BEGIN", true),
        ] {
            let hits = scan.scan(text);
            let literals = Literals::new(text, &hits, ids);
            assert_eq!(literals.has(&BEGIN), begin, "{text}");
            assert!(literals.has_ignore_ascii_case(&BEGIN) || !begin);
        }
    }

    /// `(?i)identified` in the `regex` crate matches exactly the ASCII case variants: the
    /// letters have no other simple case folds, so the ASCII-case-insensitive literal
    /// gates the pattern exactly.
    #[test]
    fn identified_has_no_unicode_case_variants() {
        let re = regex::Regex::new("(?i)identified").unwrap();
        for t in [
            "IDENTIFIED",
            "IdEnTiFiEd",
            "\u{130}dentified",
            "\u{131}dentified",
            "ıdentıfıed",
        ] {
            assert_eq!(re.is_match(t), t.is_ascii(), "{t}");
        }
    }

    /// The literals for the characters that IGNORECASE equates with ASCII letters answer as
    /// the searches of the text they stand for.
    #[test]
    fn fold_markers_answer_as_the_text_searches() {
        let mut builder = KeywordBuilder::default();
        let ids = builder.add(super::words());
        let scan = builder.build().expect("few words");
        let pieces = [
            "s", "k", "i", "I", "\u{17F}", "\u{212A}", "\u{130}", "\u{131}", "é", "\u{212B}",
            "\u{17E}", " ", "password",
        ];
        let mut seen = [0usize; 2];
        for text in crate::engine::testgen::texts(&pieces, 3000, 8, 14) {
            let hits = scan.scan(&text);
            let literals = Literals::new(&text, &hits, ids);
            let fold = has_non_ascii_fold_of_ascii(&text);
            let stand_in = crate::engine::stages::gate::has_ascii_fold_stand_in(&text);
            assert_eq!(literals.has_non_ascii_fold_of_ascii(), fold, "{text:?}");
            assert_eq!(literals.has_ascii_fold_stand_in(), stand_in, "{text:?}");
            seen[usize::from(fold)] += 1;
            seen[usize::from(stand_in)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 500), "{seen:?}");
    }
}
