//! Internal markers of one redaction call (spec 5.5).
//!
//! Each stage replaces what it redacts (and what it protects) with a marker made of
//! private-use characters, so later stages cannot match inside it; markers are swapped
//! for their final text at the end. The marker alphabet is a block of 1026 private-use
//! code points that does not occur in the input: a prefix, a suffix and 1024 "digits"
//! for the index in base 1024. Markers contain no ASCII, so no pattern can match into
//! them. The block choice and encoding are the reference's, because a marker can end up
//! inside a value that a later stage hashes (a URL that swallowed a secret's marker).

use crate::engine::pipeline::EngineError;
use std::rc::Rc;

const PUA_MIN: u32 = 0xE000;
const PUA_MAX: u32 = 0xF8FF;
const RADIX: u32 = 1024;
const BLOCK: u32 = RADIX + 2;

/// The marker alphabet and stashed values of one call.
pub struct Markers {
    prefix: char,
    suffix: char,
    digit_base: u32,
    values: Vec<Rc<str>>,
    /// Per marker: bytes of the original text it stands for, and bytes of line breaks
    /// written after it (`preserve_line_count`), so [`Markers::segments`] can map a
    /// working text back onto the original.
    raw: Vec<(usize, usize)>,
}

/// A stretch of a working text and the stretch of the original it stands for; `raw`:
/// unchanged original characters (else a marker and its line breaks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub original: (usize, usize),
    pub text: (usize, usize),
    pub raw: bool,
}

impl Markers {
    /// Picks the first marker block that does not occur in `source`.
    pub fn new(source: &str) -> Result<Markers, EngineError> {
        let mut used: Vec<u32> = if source.is_ascii() {
            Vec::new()
        } else {
            source
                .chars()
                .map(u32::from)
                .filter(|c| (PUA_MIN..=PUA_MAX).contains(c))
                .collect()
        };
        used.sort_unstable();
        used.dedup();
        let mut start = PUA_MIN;
        while start < PUA_MAX - BLOCK + 2 {
            let end = start + BLOCK; // exclusive
            let lo = used.partition_point(|&c| c < start);
            let clash = used.get(lo).is_some_and(|&c| c < end);
            if !clash {
                return Ok(Markers {
                    prefix: char::from_u32(start).expect("PUA code point"),
                    suffix: char::from_u32(start + 1).expect("PUA code point"),
                    digit_base: start + 2,
                    values: Vec::new(),
                    raw: Vec::new(),
                });
            }
            start += BLOCK;
        }
        Err(EngineError::NoMarkerBlock)
    }

    /// Stores `value` and returns the marker that stands for it.
    pub fn stash(&mut self, value: impl Into<Rc<str>>) -> String {
        let value = value.into();
        let raw = Rc::clone(&value);
        self.stash_for(value, &raw)
    }

    /// [`Markers::stash`] of `value` standing for `raw`, a stretch of the working text
    /// (which may hold earlier markers).
    pub fn stash_for(&mut self, value: impl Into<Rc<str>>, raw: &str) -> String {
        let raw_len = self.original_len(raw);
        let index = self.values.len() as u32;
        self.values.push(value.into());
        self.raw.push((raw_len, 0));
        // Base-1024 digits, most significant first (a u32 index has at most four).
        let mut digits = [0u32; 4];
        let mut count = 0;
        let mut n = index;
        loop {
            digits[count] = n % RADIX;
            count += 1;
            n /= RADIX;
            if n == 0 {
                break;
            }
        }
        let mut marker = String::with_capacity(3 * (count + 2));
        marker.push(self.prefix);
        for &digit in digits[..count].iter().rev() {
            marker.push(char::from_u32(self.digit_base + digit).expect("PUA digit"));
        }
        marker.push(self.suffix);
        marker
    }

    /// Records the line breaks just written after the last marker.
    pub fn set_trailer(&mut self, bytes: usize) {
        if let Some(last) = self.raw.last_mut() {
            last.1 = bytes;
        }
    }

    /// Every marker of `text`: its byte range and index.
    fn find_all(&self, text: &str) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let mut from = 0;
        while let Some(p) = text[from..].find(self.prefix) {
            let start = from + p;
            let after = start + self.prefix.len_utf8();
            let mut index: u64 = 0;
            let mut end = after;
            let mut ok = false;
            for c in text[after..].chars() {
                if let Some(d) = self.digit(c) {
                    index = index * u64::from(RADIX) + u64::from(d);
                    end += c.len_utf8();
                } else {
                    ok = c == self.suffix && end > after;
                    end += c.len_utf8();
                    break;
                }
            }
            if ok && (index as usize) < self.values.len() {
                out.push((start, end, index as usize));
                from = end;
            } else {
                from = after;
            }
        }
        out
    }

    /// Bytes of the original text a stretch of working text stands for.
    fn original_len(&self, text: &str) -> usize {
        if self.values.is_empty() || !text.contains(self.prefix) {
            return text.len();
        }
        let (mut len, mut pos) = (0, 0);
        for (start, end, index) in self.find_all(text) {
            let (raw, trailer) = self.raw[index];
            len += start.saturating_sub(pos) + raw;
            pos = (end + trailer).min(text.len());
        }
        len + text.len().saturating_sub(pos)
    }

    /// `text` (a working text of this call) as segments over `original`, or `None`
    /// when the mapping does not give back `original` exactly.
    pub fn segments(&self, text: &str, original: &str) -> Option<Vec<Segment>> {
        let mut out = Vec::new();
        let (mut pos, mut off) = (0, 0);
        let raw = |out: &mut Vec<Segment>, from: usize, to: usize, off: &mut usize| {
            let piece = text.get(from..to)?;
            let end = *off + piece.len();
            (original.get(*off..end)? == piece).then_some(())?;
            out.push(Segment {
                original: (*off, end),
                text: (from, to),
                raw: true,
            });
            *off = end;
            Some(())
        };
        for (start, end, index) in self.find_all(text) {
            if start < pos {
                return None;
            }
            if start > pos {
                raw(&mut out, pos, start, &mut off)?;
            }
            let (len, trailer) = self.raw[index];
            let end = end + trailer;
            if end > text.len() {
                return None;
            }
            out.push(Segment {
                original: (off, off + len),
                text: (start, end),
                raw: false,
            });
            off += len;
            pos = end;
        }
        if pos < text.len() {
            raw(&mut out, pos, text.len(), &mut off)?;
        }
        (off == original.len()).then_some(out)
    }

    fn digit(&self, c: char) -> Option<u32> {
        let v = u32::from(c).checked_sub(self.digit_base)?;
        (v < RADIX).then_some(v)
    }

    /// Replaces every marker with its stashed value.
    pub fn restore(&self, text: &str) -> String {
        // A text without a marker (most values a recording redaction restores) is
        // itself: no pass over the stash, which would make recording quadratic.
        if self.values.is_empty() || !text.contains(self.prefix) {
            return text.to_owned();
        }
        // Each stashed value is usually restored once: room for all of them up front
        // instead of growing (and copying) the output as placeholders lengthen it.
        let stashed: usize = self.values.iter().map(|v| v.len()).sum();
        let mut out = String::with_capacity(text.len() + stashed);
        let mut rest = text;
        while let Some(p) = rest.find(self.prefix) {
            out.push_str(&rest[..p]);
            let after = &rest[p + self.prefix.len_utf8()..];
            let mut index: u64 = 0;
            let mut consumed = 0;
            let mut ok = false;
            for c in after.chars() {
                if let Some(d) = self.digit(c) {
                    index = index * u64::from(RADIX) + u64::from(d);
                    consumed += c.len_utf8();
                } else {
                    ok = c == self.suffix && consumed > 0;
                    break;
                }
            }
            match (ok, self.values.get(index as usize)) {
                (true, Some(v)) => {
                    out.push_str(v);
                    rest = &after[consumed + self.suffix.len_utf8()..];
                }
                _ => {
                    out.push(self.prefix);
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

/// The line breaks (`\r\n`, `\r`, `\n`) of `value`, concatenated: what a placeholder keeps
/// so line numbers survive.
pub fn line_breaks(value: &str) -> String {
    let b = value.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\r' if b.get(i + 1) == Some(&b'\n') => {
                out.push_str("\r\n");
                i += 2;
            }
            b'\r' => {
                out.push('\r');
                i += 1;
            }
            b'\n' => {
                out.push('\n');
                i += 1;
            }
            _ => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_map_a_working_text_back_onto_the_original() {
        let original = "ab SECRET cd\nEF gh";
        let mut m = Markers::new(original).unwrap();
        // A value replaced, then a stretch holding that marker and a line break kept
        // after its own marker (line-count preservation).
        let inner = m.stash_for("[S]", "SECRET");
        let working = format!("ab {inner} cd\nEF gh");
        let outer_raw = format!("{inner} cd\nEF");
        let mut outer = m.stash_for("[X]", &outer_raw);
        outer.push('\n');
        m.set_trailer(1);
        let text = format!("ab {outer} gh");
        let segments = m.segments(&text, original).expect("maps");
        let raw: Vec<_> = segments
            .iter()
            .filter(|s| s.raw)
            .map(|s| s.original)
            .collect();
        assert_eq!(raw, [(0, 3), (15, 18)]);
        let marker = segments.iter().find(|s| !s.raw).unwrap();
        assert_eq!(marker.original, (3, 15));
        assert_eq!(&text[marker.text.0..marker.text.1], outer);
        assert!(m.segments(&working, original).is_some());
        // Text that is not this call's working text does not map.
        assert_eq!(m.segments("ab zz", original), None);
        assert_eq!(m.segments(&text, "ab SECRET cd\nEF gX"), None);
    }

    #[test]
    fn markers_skip_blocks_used_by_the_input_and_round_trip() {
        let input = "x\u{e000}y";
        let mut m = Markers::new(input).unwrap();
        assert_eq!(u32::from(m.prefix), 0xE000 + BLOCK);
        let a = m.stash("A");
        let many: Vec<String> = (0..2000).map(|i| m.stash(format!("<{i}>"))).collect();
        assert!(!a.bytes().any(|b| b.is_ascii_digit()));
        let text = format!("{a}-{}-{}", many[0], many[1999]);
        assert_eq!(m.restore(&text), "A-<0>-<1999>");
        assert_eq!(m.restore("plain \u{e000}"), "plain \u{e000}");
    }

    #[test]
    fn line_breaks_keep_each_kind() {
        assert_eq!(line_breaks("a\r\nb\rc\nd"), "\r\n\r\n");
        assert_eq!(line_breaks("none"), "");
    }
}
