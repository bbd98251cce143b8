//! S8: encoded secrets. Base64, hex and percent-encoded segments are decoded and the
//! decoded text is scanned again by the key, token, structural, URL and HTTP families
//! (not PII); a finding inside marks the whole encoded segment. Values under `data:` of
//! a Kubernetes `kind: Secret` manifest are base64 by definition and are redacted as is.

use super::{Candidate, DetectContext, Detector, prio};
use crate::engine::placeholder::Category;
use crate::engine::prepass::literals;
use crate::engine::prepass::literals::Literals;
use crate::engine::prepass::runs::LongRuns;
use regex::Regex;
use std::sync::LazyLock;

/// Deepest nesting of encodings followed (gitleaks goes to 5; 2 covers real files).
const MAX_DEPTH: u8 = 2;

/// Shortest base64 run taken for an encoded segment.
const MIN_B64: usize = 20;
/// The base64 runs [`b64_runs`] finds, as a pattern (the tests compare the two).
#[cfg(test)]
static B64: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_\-]{20,}={0,2}").expect("static regex"));
/// Shortest hex word taken for an encoded segment (16 bytes).
const MIN_HEX: usize = 32;
static PCT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:%[0-9A-Fa-f]{2}|[A-Za-z0-9._~+\-=&:/@]){12,}").expect("static regex")
});

/// Adds decoded-and-rescanned candidates of `text` to `cands`.
#[inline(never)] // one frame per family in profiles
pub fn rescan(
    det: &Detector,
    text: &str,
    ctx: &DetectContext,
    literals: &Literals,
    runs: &LongRuns,
    cands: &mut Vec<Candidate>,
) {
    rescan_at(det, text, ctx, runs, cands, 0);
    if literals.has(&literals::KIND_SECRET) || literals.has(&literals::KIND_SECRET_QUOTED) {
        k8s_secret_data(text, cands);
    }
}

#[inline(never)] // one frame per family in profiles
fn rescan_at(
    det: &Detector,
    text: &str,
    ctx: &DetectContext,
    runs: &LongRuns,
    cands: &mut Vec<Candidate>,
    depth: u8,
) {
    if depth >= MAX_DEPTH {
        return;
    }
    let mut segments: Vec<(usize, usize, Vec<u8>, &'static str)> = Vec::new();
    let runs = b64_runs(runs);
    for &(start, end) in &runs {
        let s = &text[start..end];
        // Identifiers and paths are long runs of letters too; demand base64 texture: a
        // digit, `+`, `/` or `=`.
        if !s
            .bytes()
            .any(|c| c.is_ascii_digit() || matches!(c, b'+' | b'/' | b'='))
        {
            continue;
        }
        if let Some(d) = base64_decode(s) {
            segments.push((start, end, d, "S8.base64"));
        }
    }
    for (start, end) in hex_words_in_runs(text, &runs) {
        if let Some(d) = hex_decode(&text[start..end]) {
            segments.push((start, end, d, "S8.hex"));
        }
    }
    // A segment is kept only with two `%XX` escapes in it: without two in the text the
    // pattern's matches would all be dropped.
    if percent_escapes(text).nth(1).is_some() {
        for m in PCT.find_iter(text) {
            let s = m.as_str();
            if s.matches('%').count() >= 2 {
                segments.push((m.start(), m.end(), percent_decode(s), "S8.percent"));
            }
        }
    }
    for (start, end, bytes, detector) in segments {
        let Ok(decoded) = String::from_utf8(bytes) else {
            continue;
        };
        if decoded.len() < 8 || !mostly_printable(&decoded) {
            continue;
        }
        let decoded_runs = LongRuns::new(&decoded);
        let mut inner = det.candidates(&decoded, ctx, depth + 1, &decoded_runs);
        rescan_at(det, &decoded, ctx, &decoded_runs, &mut inner, depth + 1);
        if inner.iter().any(|c| c.category == Category::SECRET) {
            cands.push(Candidate {
                start,
                end,
                category: Category::SECRET,
                detector,
                priority: prio::DECODED,
            });
        }
    }
}

/// The offsets of `%XX` escapes (two hex digits after the `%`) in `text`.
fn percent_escapes(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    memchr::memchr_iter(b'%', b).filter(move |&i| {
        b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
    })
}

/// The matches of [`B64`] in the text of `runs`, without the regex: every maximal run of
/// at least [`MIN_B64`] base64 bytes (the text's [`LongRuns`]), with up to two `=`
/// after it.
fn b64_runs(runs: &LongRuns) -> Vec<(usize, usize)> {
    const { assert!(MIN_B64 == crate::engine::prepass::runs::LONG_RUN) };
    let b = runs.bytes();
    // `=` is outside the run class, so padding never starts the next run.
    runs.base64()
        .iter()
        .map(|&(start, end)| {
            let pad = b[end..].iter().take(2).take_while(|&&c| c == b'=').count();
            (start, end + pad)
        })
        .collect()
}

/// The matches of `\b(?:[0-9a-fA-F]{2}){16,}\b` in `text`, found inside the base64
/// runs `runs` (spans of [`b64_runs`]) instead of by a second regex pass over the text: hex
/// digits are base64 characters, so every hex word of [`MIN_HEX`] or more characters
/// lies in one of those runs. A word counts when it is made of hex digits only, has an
/// even length of at least [`MIN_HEX`], and no word character touches it.
fn hex_words_in_runs(text: &str, runs: &[(usize, usize)]) -> Vec<(usize, usize)> {
    static WORD_CHAR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\w").expect("static regex"));
    let b = text.as_bytes();
    let ascii_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let word_char = |c: Option<char>| {
        c.is_some_and(|c| {
            if c.is_ascii() {
                ascii_word(c as u8)
            } else {
                WORD_CHAR.is_match(c.encode_utf8(&mut [0; 4]))
            }
        })
    };
    let mut out = Vec::new();
    for &(run_start, run_end) in runs {
        if run_end - run_start < MIN_HEX {
            continue;
        }
        let mut i = run_start;
        while i < run_end {
            if !ascii_word(b[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < run_end && ascii_word(b[i]) {
                i += 1;
            }
            // Inside the run a neighbour is `+ / - =` (not word characters); at the run's
            // edges the text decides (a non-ASCII letter would extend the word).
            let bounded_before = start > run_start || !word_char(text[..start].chars().next_back());
            let bounded_after = i < run_end || !word_char(text[i..].chars().next());
            let len = i - start;
            if bounded_before
                && bounded_after
                && len >= MIN_HEX
                && len % 2 == 0
                && b[start..i].iter().all(u8::is_ascii_hexdigit)
            {
                out.push((start, i));
            }
        }
    }
    out
}

fn mostly_printable(s: &str) -> bool {
    let total = s.chars().count();
    let printable = s
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\r' | '\t'))
        .count();
    printable * 100 >= total * 95
}

fn k8s_secret_data(text: &str, cands: &mut Vec<Candidate>) {
    let mut pos = 0;
    let mut data_indent: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let indent = body.len() - body.trim_start().len();
        let trimmed = body.trim_start();
        if trimmed == "data:" || trimmed == "stringData:" {
            data_indent = Some(indent);
        } else if let Some(di) = data_indent {
            if !trimmed.is_empty() && indent <= di {
                data_indent = None;
            } else if let Some((_, v)) = trimmed.split_once(": ") {
                let v = v.trim().trim_matches(['"', '\'']);
                if v.len() >= 4
                    && !super::values::is_placeholder(v)
                    && let Some(off) = body.rfind(v)
                {
                    cands.push(Candidate {
                        start: pos + off,
                        end: pos + off + v.len(),
                        category: Category::SECRET,
                        detector: "S8.k8s-secret-data",
                        priority: prio::DECODED,
                    });
                }
            }
        }
        pos += line.len();
    }
}

/// Decodes standard or URL-safe base64, padded or not. `None` when it is not base64.
pub fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    if s.len() < 2 || s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    /// Hex words found inside the base64 runs are exactly the matches of the hex regex
    /// they replace, on generated text mixing hex, other word characters, base64
    /// punctuation, `=` padding and non-ASCII letters and marks.
    #[test]
    fn hex_words_in_runs_equal_the_hex_regex() {
        let hex = regex::Regex::new(r"\b(?:[0-9a-fA-F]{2}){16,}\b").unwrap();
        let pieces = [
            "0123456789abcdef",
            "DEADBEEF",
            "a",
            "f0",
            "g",
            "_",
            "-",
            "+",
            "/",
            "=",
            " ",
            ".",
            "\u{e9}",
            "\u{301}",
            "\u{2014}",
            "\n",
            "x",
            "00",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut with_matches = 0;
        for _ in 0..4000 {
            let mut text = String::new();
            for _ in 0..(seed % 9) as usize + 1 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let piece = pieces[(seed % pieces.len() as u64) as usize];
                text.push_str(&piece.repeat((seed >> 20) as usize % 4 + 1));
            }
            let runs: Vec<(usize, usize)> = super::B64
                .find_iter(&text)
                .map(|m| (m.start(), m.end()))
                .collect();
            let want: Vec<(usize, usize)> =
                hex.find_iter(&text).map(|m| (m.start(), m.end())).collect();
            with_matches += usize::from(!want.is_empty());
            assert_eq!(super::hex_words_in_runs(&text, &runs), want, "{text:?}");
        }
        assert!(
            with_matches > 200,
            "only {with_matches} texts held a hex word"
        );
    }

    use super::*;

    /// The hand-written run finder reports the base64 pattern's matches, on generated
    /// text of base64 bytes, padding, separators and non-ASCII characters.
    #[test]
    fn b64_runs_equal_the_base64_pattern() {
        let pieces = [
            "abcdefghij",
            "ABCDEFGHIJKLMNOPQRSTU",
            "0123456789",
            "+",
            "/",
            "_",
            "-",
            "=",
            "==",
            "===",
            " ",
            ".",
            "\n",
            "\u{e9}",
            "x",
            "Zz9",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..4000 {
            let mut text = String::new();
            for _ in 0..(seed % 12) as usize + 1 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let piece = pieces[(seed % pieces.len() as u64) as usize];
                text.push_str(&piece.repeat((seed >> 20) as usize % 3 + 1));
            }
            let want: Vec<(usize, usize)> =
                B64.find_iter(&text).map(|m| (m.start(), m.end())).collect();
            assert_eq!(b64_runs(&LongRuns::new(&text)), want, "{text:?}");
        }
    }

    #[test]
    fn base64_round_trips_both_alphabets() {
        assert_eq!(
            base64_decode("dXNlcjpwYXNz").as_deref(),
            Some(&b"user:pass"[..])
        );
        assert_eq!(
            base64_decode("dXNlcjpwYXM=").as_deref(),
            Some(&b"user:pas"[..])
        );
        assert_eq!(base64_decode("_-8"), Some(vec![0xff, 0xef]));
        assert!(base64_decode("not base64!").is_none());
    }

    #[test]
    fn percent_and_hex_decode() {
        assert_eq!(percent_decode("a%3Ab%2F"), b"a:b/");
        assert_eq!(hex_decode("414243").as_deref(), Some(&b"ABC"[..]));
    }
}
