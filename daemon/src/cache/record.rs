//! Stored record shapes. Each value starts with a format byte; anything that does not
//! decode as the current format is a cache miss (and is overwritten), never an error.

use crate::engine::{Category, Counts};
use crate::fs::StatKey;
use crate::fs::content::Encoding;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Format byte of every value written by this build.
pub const RECORD_FORMAT: u8 = 1;

/// One redacted variant of a content, as served: the text is shared, so handing it to a
/// renderer copies nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredText {
    pub text: Arc<str>,
    pub counts: Counts,
}

/// The non-line-preserving variant, stored in full only when its text differs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlainVariant {
    /// Same text as the line-preserving variant; only the counts are kept.
    SameText {
        counts: Counts,
    },
    Different(StoredText),
}

/// What the cache keeps for one (content, policy, prose) key: redacted text only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentRecord {
    /// `preserve_line_count: true` (read, search, retrieve).
    pub preserved: StoredText,
    /// `preserve_line_count: false` (bundle, resources).
    pub plain: PlainVariant,
}

impl ContentRecord {
    /// Bytes of redacted text it holds (both variants when they differ).
    pub fn text_bytes(&self) -> usize {
        self.preserved.text.len()
            + match &self.plain {
                PlainVariant::SameText { .. } => 0,
                PlainVariant::Different(plain) => plain.text.len(),
            }
    }

    /// The text and counts of one variant.
    pub fn variant(&self, preserve_line_count: bool) -> (&Arc<str>, &Counts) {
        match (&self.plain, preserve_line_count) {
            (_, true) => (&self.preserved.text, &self.preserved.counts),
            (PlainVariant::SameText { counts }, false) => (&self.preserved.text, counts),
            (PlainVariant::Different(plain), false) => (&plain.text, &plain.counts),
        }
    }
}

/// Per-category counts on disk: category names, not indices, so a record from another
/// build with an unknown category is detected (and is a miss).
type WireCounts<'a> = Vec<(&'a str, u64)>;

/// The stored shape of a [`StoredText`] (postcard; borrowed when decoding, so the text is
/// copied once, into its `Arc`).
#[derive(Serialize, Deserialize)]
struct WireText<'a> {
    #[serde(borrow)]
    text: &'a str,
    #[serde(borrow)]
    counts: WireCounts<'a>,
}

#[derive(Serialize, Deserialize)]
enum WirePlain<'a> {
    SameText {
        #[serde(borrow)]
        counts: WireCounts<'a>,
    },
    #[serde(borrow)]
    Different(WireText<'a>),
}

#[derive(Serialize, Deserialize)]
struct WireRecord<'a> {
    #[serde(borrow)]
    preserved: WireText<'a>,
    #[serde(borrow)]
    plain: WirePlain<'a>,
}

/// Plugged detectors' counts travel as extra entries, `#n<i>` (nominated) and `#p<i>`
/// (positional), which no category name can be.
pub(crate) fn wire_counts(counts: &Counts) -> WireCounts<'static> {
    let mut wire: WireCounts<'static> = counts.0.iter().map(|(c, n)| (c.as_str(), *n)).collect();
    for (i, (nominated, positional)) in counts.1.iter().enumerate() {
        let i = i.min(PLUGGED_KEYS.len() - 1);
        wire.push((PLUGGED_KEYS[i].0, *nominated));
        wire.push((PLUGGED_KEYS[i].1, *positional));
    }
    wire
}

/// Wire keys of plugged detectors' counts (more detectors than this is not a launch
/// anyone types).
const PLUGGED_KEYS: [(&str, &str); 8] = [
    ("#n0", "#p0"),
    ("#n1", "#p1"),
    ("#n2", "#p2"),
    ("#n3", "#p3"),
    ("#n4", "#p4"),
    ("#n5", "#p5"),
    ("#n6", "#p6"),
    ("#n7", "#p7"),
];

/// `None` when a category is unknown to this build.
pub(crate) fn load_counts<S: AsRef<str>>(stored: &[(S, u64)]) -> Option<Counts> {
    let mut counts = Counts::default();
    for (name, n) in stored {
        let name = name.as_ref();
        if let Some(i) = PLUGGED_KEYS.iter().position(|(k, _)| *k == name) {
            counts.add_plugged(i, *n, 0);
        } else if let Some(i) = PLUGGED_KEYS.iter().position(|(_, k)| *k == name) {
            counts.add_plugged(i, 0, *n);
        } else {
            counts.add(Category::from_name(name)?, *n);
        }
    }
    Some(counts)
}

impl WireText<'_> {
    fn load(&self) -> Option<StoredText> {
        Some(StoredText {
            text: Arc::from(self.text),
            counts: load_counts(&self.counts)?,
        })
    }
}

/// What a text file's last verified read found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextInfo {
    /// Keyed blake3 of the exact bytes that were decoded and redacted.
    pub hash: [u8; 32],
    /// `stat` line count of the decoded text.
    pub lines: u64,
    /// What the bytes are: UTF-8 text is served in every mode, wide text only in those
    /// that decode it (`fs::content::Decoding`), so one record serves them all.
    pub encoding: Encoding,
}

/// The file table's record of one path: the stat it was read at and what it held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// The stat was old enough when read that a later change must alter it; unsettled
    /// records are re-verified (re-read and re-hashed) before use.
    pub settled: bool,
    /// `None`: the file is not text in any mode at this stat.
    pub text: Option<TextInfo>,
    /// Fingerprint of the policy under which the redacted content of `text.hash` was
    /// stored when this record was written: a warm restart under the same policy counts
    /// the file as indexed from this table alone, without touching the (large) content
    /// table. Only a hint: a content record that went missing is recomputed on use.
    pub stored_under: Option<[u8; 32]>,
}

impl FileRecord {
    /// A record for `stat`.
    pub fn new(stat: &StatKey, settled: bool, text: Option<TextInfo>) -> FileRecord {
        FileRecord {
            dev: stat.dev,
            ino: stat.ino,
            mode: stat.mode,
            size: stat.size,
            mtime_ns: stat.mtime_ns,
            ctime_ns: stat.ctime_ns,
            settled,
            text,
            stored_under: None,
        }
    }

    /// The record with its content known stored under policy `fingerprint`.
    pub fn stored_under(mut self, fingerprint: [u8; 32]) -> FileRecord {
        self.stored_under = Some(fingerprint);
        self
    }

    /// The stat the record was written at.
    pub fn stat(&self) -> StatKey {
        StatKey {
            dev: self.dev,
            ino: self.ino,
            mode: self.mode,
            size: self.size,
            mtime_ns: self.mtime_ns,
            ctime_ns: self.ctime_ns,
        }
    }

    /// Whether the record can be trusted for a file now at `stat`: same (dev, ino, mode,
    /// size, mtime_ns, ctime_ns) and settled.
    pub fn trusted_for(&self, stat: &StatKey) -> bool {
        self.settled && self.stat() == *stat
    }
}

/// Encodes a value with its format byte.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![RECORD_FORMAT];
    // postcard only fails on writer errors, and a Vec cannot fail.
    out.extend(postcard::to_allocvec(value).unwrap_or_default());
    out
}

/// Decodes a value written by [`encode`] of this format; `None` otherwise.
pub fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Option<T> {
    let (&format, body) = bytes.split_first()?;
    if format != RECORD_FORMAT {
        return None;
    }
    postcard::from_bytes(body).ok()
}

/// Decoded content records larger than this are refused (a corrupt length header must
/// not make the reader allocate without bound).
pub const MAX_DECODED_CONTENT: usize = 1 << 30;

/// Format byte of content values written by this build (1 was LZ4; a database holding
/// those has an older `CACHE_FORMAT` and is rebuilt).
pub const CONTENT_FORMAT: u8 = 2;

/// zstd level of stored content. zstd stores redacted source in well under half its size
/// where LZ4 needed 0.55, which (with chunked storage) keeps the cache file under the
/// text it serves. Level 1 rather than 3: on the 100k-file bench tree the cache grows
/// from 257 to 265–270 MB (0.75× → 0.77× of the text) and a cold pass spends about
/// 0.4 s less CPU; decoding does not depend on the level (a 90 KB file in about 0.1 ms),
/// so caches written at either level read the same.
pub const CONTENT_ZSTD_LEVEL: i32 = 1;

/// Bytes of the content value header: format, compressed length, decoded length.
pub const CONTENT_HEADER: usize = 9;

thread_local! {
    /// zstd contexts are costly to create (the compressor's tables), so each thread keeps one.
    static ZSTD: std::cell::RefCell<Option<(zstd::bulk::Compressor<'static>, zstd::bulk::Decompressor<'static>)>> =
        const { std::cell::RefCell::new(None) };
}

fn with_zstd<R>(
    f: impl FnOnce(&mut zstd::bulk::Compressor<'static>, &mut zstd::bulk::Decompressor<'static>) -> R,
) -> Option<R> {
    ZSTD.with(|cell| {
        let mut slot = cell.try_borrow_mut().ok()?;
        if slot.is_none() {
            *slot = Some((
                zstd::bulk::Compressor::new(CONTENT_ZSTD_LEVEL).ok()?,
                zstd::bulk::Decompressor::new().ok()?,
            ));
        }
        let (c, d) = slot.as_mut()?;
        Some(f(c, d))
    })
}

/// `bytes` compressed with this thread's zstd context at [`CONTENT_ZSTD_LEVEL`] (content
/// records, the passage index's buckets).
pub fn zstd_compress(bytes: &[u8]) -> Option<Vec<u8>> {
    with_zstd(|c, _| c.compress(bytes).ok())?
}

/// The `size` bytes [`zstd_compress`] made `bytes` from; `None` when they do not
/// decompress to exactly `size` bytes.
pub fn zstd_decompress(bytes: &[u8], size: usize) -> Option<Vec<u8>> {
    let raw = with_zstd(|_, d| d.decompress(bytes, size).ok())??;
    (raw.len() == size).then_some(raw)
}

/// Encodes a content record: [`CONTENT_FORMAT`], the length of what follows (u32 LE), the
/// decoded length of the postcard body (u32 LE), then the body compressed with zstd. The
/// cache splits the value into page-sized chunks; the first length tells a reader where it
/// ends. `None` only if the body exceeds [`MAX_DECODED_CONTENT`] or zstd fails (the record
/// is then not cached, only recomputed when needed).
pub fn encode_content(value: &ContentRecord) -> Option<Vec<u8>> {
    fn text(t: &StoredText) -> WireText<'_> {
        WireText {
            text: &t.text,
            counts: wire_counts(&t.counts),
        }
    }
    let wire = WireRecord {
        preserved: text(&value.preserved),
        plain: match &value.plain {
            PlainVariant::SameText { counts } => WirePlain::SameText {
                counts: wire_counts(counts),
            },
            PlainVariant::Different(plain) => WirePlain::Different(text(plain)),
        },
    };
    // Sized for the texts up front: growing by doubling copies a large text several
    // times, and each growth takes the allocator lock other threads contend for.
    let body = postcard::to_extend(&wire, Vec::with_capacity(value.text_bytes() + 256)).ok()?;
    if body.len() > MAX_DECODED_CONTENT {
        return None;
    }
    let compressed = zstd_compress(&body)?;
    let mut out = Vec::with_capacity(CONTENT_HEADER + compressed.len());
    out.push(CONTENT_FORMAT);
    out.extend_from_slice(&u32::try_from(compressed.len()).ok()?.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&compressed);
    Some(out)
}

/// The whole length of a content value from its first bytes (the header), if they are of
/// this format.
pub fn content_value_len(first: &[u8]) -> Option<usize> {
    if *first.first()? != CONTENT_FORMAT {
        return None;
    }
    let len = u32::from_le_bytes(first.get(1..5)?.try_into().ok()?) as usize;
    Some(CONTENT_HEADER + len)
}

/// Decodes a value written by [`encode_content`] of this format; `None` otherwise
/// (including a truncated or overlong value and a category unknown to this build).
pub fn decode_content(bytes: &[u8]) -> Option<ContentRecord> {
    if content_value_len(bytes)? != bytes.len() {
        return None;
    }
    let size = u32::from_le_bytes(bytes.get(5..9)?.try_into().ok()?) as usize;
    if size > MAX_DECODED_CONTENT {
        return None;
    }
    let raw = zstd_decompress(&bytes[CONTENT_HEADER..], size)?;
    let wire: WireRecord<'_> = postcard::from_bytes(&raw).ok()?;
    let preserved = wire.preserved.load()?;
    let plain = match &wire.plain {
        WirePlain::SameText { counts } => PlainVariant::SameText {
            counts: load_counts(counts)?,
        },
        WirePlain::Different(plain) => PlainVariant::Different(plain.load()?),
    };
    Some(ContentRecord { preserved, plain })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_records_round_trip_and_garbage_is_a_miss() {
        let mut counts = Counts::default();
        counts.add(Category::from_name("SECRET").unwrap(), 50);
        let rec = ContentRecord {
            preserved: StoredText {
                text: Arc::from("a [SECRET_x]\n".repeat(50)),
                counts: counts.clone(),
            },
            plain: PlainVariant::SameText { counts },
        };
        let bytes = encode_content(&rec).unwrap();
        assert!(bytes.len() < rec.preserved.text.len() / 4);
        assert_eq!(
            content_value_len(&bytes[..CONTENT_HEADER]),
            Some(bytes.len())
        );
        assert_eq!(decode_content(&bytes), Some(rec));
        assert_eq!(decode_content(b""), None);
        // Truncated, overlong, a lying decoded length, an older format: all misses.
        assert_eq!(decode_content(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode_content(&[bytes.as_slice(), b"x"].concat()), None);
        let mut lying = bytes.clone();
        lying[5..9].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
        assert_eq!(decode_content(&lying), None);
        let mut old = bytes.clone();
        old[0] = 1;
        assert_eq!(decode_content(&old), None);
        let file = FileRecord::new(&StatKey::default(), true, None);
        assert_eq!(decode::<FileRecord>(&encode(&file)), Some(file));
        assert_eq!(decode::<FileRecord>(&[RECORD_FORMAT, 1]), None);
    }
}
