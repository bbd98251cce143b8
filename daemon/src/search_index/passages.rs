//! The passage index: for each segment of the search index, which passages of which of
//! its files hold each term (retrieve's tokens, casefolded) and how often, and every
//! passage's length in tokens. That is what BM25 and retrieve's ranking need, so a
//! whole-root `retrieve` reads the postings of its few terms instead of every file. Not
//! stored: where in a passage a term first occurs, which orders the summing of a score's
//! terms (float addition is not associative past two terms); retrieve reads that back
//! for the few passages whose rank it can change (`tools::retrieve`).
//!
//! Built per segment after the gram postings (in the background, from the cached redacted
//! text of the very version each file was indexed at) and stored under the same
//! generation, so the file numbers and the freshness test (the slot's record against the
//! file's stat now) are the gram index's.
//!
//! Shape of one segment: postings in [`BUCKETS`] buckets by a stable hash of the term; a
//! bucket value is `[0][entries]`, or `[1][length of the entries: varint][the entries,
//! zstd]` when that is shorter (a third smaller on the generated bench tree, and a
//! retrieve decompresses only the few buckets its terms fall in); the entries are a run
//! sorted by term,
//! `[term length][term][entry length][count][posting…]`, a posting being a varint
//! `where << 2 | (occurrences > 1) << 1 | new file`, `where` the file gap (then the
//! passage follows) for a file's first posting, else the passage delta - 1; then, when
//! more than one, `occurrences - 2`. Most postings are a further passage of the same file
//! holding the term once: one byte. A table (kept in memory) holds the buckets' offsets
//! and, per file number, its token count and passage lengths. Anything that does not
//! decode answers "unknown" (the file is read).

use super::postings::{push_varint, read_varint};
use crate::passages::{folded, for_each_passage, for_each_token};
use foldhash::HashMap;
use serde::{Deserialize, Serialize};

/// Buckets per segment: few enough that the offsets of every segment stay in memory
/// (16 KiB each), many enough that a bucket is one or two pages.
pub const BUCKETS: usize = 4096;

/// Version of the stored shape; a table of another version is rebuilt.
const PASSAGE_FORMAT: u32 = 4;

/// Bytes a bucket's entries may take once decompressed (a damaged length is refused
/// before anything is allocated).
const MAX_BUCKET_BYTES: usize = 1 << 28;

/// The bucket of a term: a hash that never changes between runs (it is stored).
pub fn bucket_of(term: &str) -> usize {
    let hash = blake3::hash(term.as_bytes());
    let bytes = hash.as_bytes();
    usize::from(u16::from_le_bytes([bytes[0], bytes[1]])) % BUCKETS
}

/// One term in one passage of one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Posting {
    pub file: u32,
    pub passage: u32,
    pub occurrences: u32,
}

/// One file's passages, with file-local term numbers.
#[derive(Debug, Default)]
pub struct FileTerms {
    /// Tokens of each passage.
    lengths: Vec<u32>,
    names: Vec<String>,
    /// (local term, passage, occurrences), by passage.
    postings: Vec<(u32, u32, u32)>,
}

impl FileTerms {
    /// Cuts `text` into retrieve's passages and counts their terms.
    pub fn of(text: &str) -> FileTerms {
        let mut out = FileTerms::default();
        let mut numbers: HashMap<String, u32> = HashMap::default();
        // Per local term: (passage + 1 it was last seen in, its posting there).
        let mut seen: Vec<(u32, usize)> = Vec::new();
        let mut passage = 0u32;
        for_each_passage(text, &mut |_, _, lines| {
            let mut length = 0u32;
            for line in lines {
                for_each_token(line, &mut |token| {
                    length += 1;
                    let key = folded(token);
                    let key = key.as_ref();
                    let number = match numbers.get(key) {
                        Some(&n) => n,
                        None => {
                            let n = out.names.len() as u32;
                            numbers.insert(key.to_owned(), n);
                            out.names.push(key.to_owned());
                            seen.push((0, 0));
                            n
                        }
                    };
                    let last = &mut seen[number as usize];
                    if last.0 == passage + 1 {
                        out.postings[last.1].2 += 1;
                    } else {
                        *last = (passage + 1, out.postings.len());
                        out.postings.push((number, passage, 1));
                    }
                });
            }
            out.lengths.push(length);
            passage += 1;
        });
        out
    }
}

/// A segment's passage table as stored.
#[derive(Serialize, Deserialize)]
struct StoredTable {
    format: u32,
    /// Offset of each bucket in the postings, and their end.
    directory: Vec<u32>,
    /// Per file number: the passage lengths of its text, if it was analysed.
    files: Vec<Option<Vec<u32>>>,
}

/// Collects a segment's files (in file-number order) into its stored postings and table.
#[derive(Default)]
pub struct SegmentBuilder {
    numbers: HashMap<String, u32>,
    names: Vec<String>,
    /// (term, file, passage, occurrences), by file then passage.
    postings: Vec<(u32, u32, u32, u32)>,
    files: Vec<Option<Vec<u32>>>,
}

impl SegmentBuilder {
    /// Files pushed so far (the next file's number).
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Adds the next file number: its terms, or `None` when its text was not analysed.
    pub fn push(&mut self, terms: Option<FileTerms>) {
        let file = self.files.len() as u32;
        let Some(terms) = terms else {
            self.files.push(None);
            return;
        };
        let global: Vec<u32> = terms
            .names
            .into_iter()
            .map(|name| {
                let next = self.names.len() as u32;
                *self.numbers.entry(name).or_insert_with_key(|name| {
                    self.names.push(name.clone());
                    next
                })
            })
            .collect();
        self.postings.extend(
            terms
                .postings
                .iter()
                .map(|&(t, passage, n)| (global[t as usize], file, passage, n)),
        );
        self.files.push(Some(terms.lengths));
    }

    /// The postings blob and the table blob.
    pub fn finish(self) -> (Vec<u8>, Vec<u8>) {
        // Group postings by term, keeping file and passage order (a stable counting sort).
        let mut starts = vec![0usize; self.names.len() + 1];
        for p in &self.postings {
            starts[p.0 as usize + 1] += 1;
        }
        for t in 0..self.names.len() {
            starts[t + 1] += starts[t];
        }
        let mut grouped = vec![(0, 0, 0); self.postings.len()];
        let mut next = starts.clone();
        for &(t, file, passage, n) in &self.postings {
            grouped[next[t as usize]] = (file, passage, n);
            next[t as usize] += 1;
        }
        drop(self.postings);
        let mut order: Vec<(usize, &str, usize)> = self
            .names
            .iter()
            .enumerate()
            .map(|(t, name)| (bucket_of(name), name.as_str(), t))
            .collect();
        order.sort_unstable();
        let mut blob = Vec::new();
        let mut directory = vec![0u32; BUCKETS + 1];
        let mut entry = Vec::new();
        let mut entries = Vec::new(); // of the current bucket
        let mut bucket = 0;
        for (b, name, t) in order {
            if b != bucket {
                store_bucket(&mut blob, &mut entries);
            }
            while bucket < b {
                bucket += 1;
                directory[bucket] = blob.len() as u32;
            }
            entry.clear();
            let postings = &grouped[starts[t]..starts[t + 1]];
            push_varint(&mut entry, postings.len() as u32);
            let mut previous: Option<(u32, u32)> = None;
            for &(file, passage, n) in postings {
                let multi = u32::from(n > 1) << 1;
                match previous {
                    Some((f, p)) if f == file => {
                        push_varint(&mut entry, ((passage - p - 1) << 2) | multi);
                    }
                    _ => {
                        let gap = file - previous.map_or(0, |(f, _)| f);
                        push_varint(&mut entry, (gap << 2) | multi | 1);
                        push_varint(&mut entry, passage);
                    }
                }
                if n > 1 {
                    push_varint(&mut entry, n - 2);
                }
                previous = Some((file, passage));
            }
            push_varint(&mut entries, name.len() as u32);
            entries.extend_from_slice(name.as_bytes());
            push_varint(&mut entries, entry.len() as u32);
            entries.extend_from_slice(&entry);
        }
        store_bucket(&mut blob, &mut entries);
        while bucket < BUCKETS {
            bucket += 1;
            directory[bucket] = blob.len() as u32;
        }
        let table = StoredTable {
            format: PASSAGE_FORMAT,
            directory,
            files: self.files,
        };
        (blob, crate::cache::record::encode(&table))
    }
}

/// Appends one bucket's `entries` to `blob` (compressed when that is shorter; see the
/// module doc) and empties them. An empty bucket takes no bytes.
fn store_bucket(blob: &mut Vec<u8>, entries: &mut Vec<u8>) {
    if entries.is_empty() {
        return;
    }
    let mut header = Vec::with_capacity(6);
    header.push(1);
    push_varint(&mut header, entries.len() as u32);
    match crate::cache::record::zstd_compress(entries) {
        Some(packed) if header.len() + packed.len() < 1 + entries.len() => {
            blob.extend_from_slice(&header);
            blob.extend_from_slice(&packed);
        }
        _ => {
            blob.push(0);
            blob.extend_from_slice(entries);
        }
    }
    entries.clear();
}

/// A stored bucket's entries (decompressed); `None` when they do not decode.
fn bucket_entries(bucket: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
    let Some(&kind) = bucket.first() else {
        return Some(std::borrow::Cow::Borrowed(bucket)); // an empty bucket: no terms
    };
    match kind {
        0 => Some(std::borrow::Cow::Borrowed(&bucket[1..])),
        1 => {
            let mut at = 1;
            let size = read_varint(bucket, &mut at)? as usize;
            if size > MAX_BUCKET_BYTES {
                return None;
            }
            let raw = crate::cache::record::zstd_decompress(&bucket[at..], size)?;
            Some(std::borrow::Cow::Owned(raw))
        }
        _ => None,
    }
}

/// A segment's passage table in memory.
#[derive(Debug)]
pub struct PassageSegment {
    directory: Vec<u32>,
    /// Per file number: (tokens, first length's index, passages).
    files: Vec<Option<(u64, u32, u32)>>,
    lengths: Vec<u32>,
}

/// A file's place in the passage index and its totals (what it adds to BM25's passage
/// and token counts whatever the query).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    pub segment: u32,
    pub number: u32,
    pub passages: u64,
    pub tokens: u64,
}

/// The passages of a query's files that hold a query term, as a scan would find them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexedHits {
    /// Per query term: passages holding it.
    pub df: Vec<u64>,
    pub passages: Vec<IndexedPassage>,
    /// Every passage's (query term, occurrences), each passage's run by term (not in
    /// the order of first occurrence, which the index does not know).
    pub hits: Vec<(u32, u32)>,
}

/// A passage holding a query term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedPassage {
    /// The caller's number for its file.
    pub doc: u32,
    /// Its number in the file (0 for the first).
    pub ordinal: u32,
    /// Tokens.
    pub length: u32,
    /// Its run in [`IndexedHits::hits`].
    pub hits: std::ops::Range<u32>,
}

impl IndexedHits {
    /// Appends `other` (its runs moved after this one's).
    pub fn append(&mut self, other: IndexedHits) {
        let shift = self.hits.len() as u32;
        if self.df.len() < other.df.len() {
            self.df.resize(other.df.len(), 0);
        }
        for (sum, n) in self.df.iter_mut().zip(&other.df) {
            *sum += n;
        }
        self.passages
            .extend(other.passages.into_iter().map(|p| IndexedPassage {
                hits: p.hits.start + shift..p.hits.end + shift,
                ..p
            }));
        self.hits.extend(other.hits);
    }
}

impl PassageSegment {
    /// Decodes a stored table; `None` if damaged or of another version.
    pub fn decode(bytes: &[u8]) -> Option<PassageSegment> {
        let stored: StoredTable = crate::cache::record::decode(bytes)?;
        if stored.format != PASSAGE_FORMAT
            || stored.directory.len() != BUCKETS + 1
            || stored.directory.windows(2).any(|w| w[0] > w[1])
        {
            return None;
        }
        let mut lengths = Vec::new();
        let files = stored
            .files
            .into_iter()
            .map(|file| {
                file.map(|file| {
                    let at = lengths.len() as u32;
                    let tokens = file.iter().map(|&n| u64::from(n)).sum();
                    let count = file.len() as u32;
                    lengths.extend(file);
                    (tokens, at, count)
                })
            })
            .collect();
        Some(PassageSegment {
            directory: stored.directory,
            files,
            lengths,
        })
    }

    /// Where a term's bucket lies in the segment's postings: (offset, length).
    pub fn bucket(&self, term: &str) -> (usize, usize) {
        let b = bucket_of(term);
        let (start, end) = (self.directory[b] as usize, self.directory[b + 1] as usize);
        (start, end - start)
    }

    /// File `number`'s passage and token counts; `None` when its text was not analysed.
    pub fn totals(&self, number: u32) -> Option<(u64, u64)> {
        let &(tokens, _, count) = self.files.get(number as usize)?.as_ref()?;
        Some((u64::from(count), tokens))
    }

    /// The passages of `files` (file number, the caller's doc number; sorted by file
    /// number) that hold one of a query's terms, whose postings in this segment are
    /// `postings` (one list per term, each sorted by file and passage). `None` when the
    /// postings name a passage the table does not have (damage).
    pub fn hits(&self, postings: &[Vec<Posting>], files: &[(u32, u32)]) -> Option<IndexedHits> {
        let mut out = IndexedHits {
            df: vec![0; postings.len()],
            ..IndexedHits::default()
        };
        // (doc, passage, term, occurrences, file number) of the files.
        let mut found: Vec<(u32, u32, u32, u32, u32)> = Vec::new();
        for (term, list) in postings.iter().enumerate() {
            let mut at = 0;
            for p in list {
                while at < files.len() && files[at].0 < p.file {
                    at += 1;
                }
                match files.get(at) {
                    Some(&(number, doc)) if number == p.file => {
                        out.df[term] += 1;
                        found.push((doc, p.passage, term as u32, p.occurrences, number));
                    }
                    Some(_) => {}
                    None => break,
                }
            }
        }
        found.sort_unstable();
        for (doc, passage, term, occurrences, number) in found {
            let at = out.hits.len() as u32;
            out.hits.push((term, occurrences));
            match out.passages.last_mut() {
                Some(last) if last.doc == doc && last.ordinal == passage => last.hits.end = at + 1,
                _ => {
                    let &(_, first, count) = self.files.get(number as usize)?.as_ref()?;
                    if passage >= count {
                        return None;
                    }
                    let length = *self.lengths.get((first + passage) as usize)?;
                    out.passages.push(IndexedPassage {
                        doc,
                        ordinal: passage,
                        length,
                        hits: at..at + 1,
                    });
                }
            }
        }
        Some(out)
    }
}

/// The postings of `term` in a stored bucket (sorted by file, then passage); `None`
/// when the bytes do not decode.
pub fn postings_of(bucket: &[u8], term: &str) -> Option<Vec<Posting>> {
    postings_in(&bucket_entries(bucket)?, term)
}

/// The postings of `term` in a bucket's entries.
fn postings_in(bucket: &[u8], term: &str) -> Option<Vec<Posting>> {
    let mut at = 0;
    while at < bucket.len() {
        let len = read_varint(bucket, &mut at)? as usize;
        let name = bucket.get(at..at.checked_add(len)?)?;
        at += len;
        let entry_len = read_varint(bucket, &mut at)? as usize;
        let end = at.checked_add(entry_len).filter(|&e| e <= bucket.len())?;
        match name.cmp(term.as_bytes()) {
            std::cmp::Ordering::Less => {
                at = end;
                continue;
            }
            std::cmp::Ordering::Greater => break,
            std::cmp::Ordering::Equal => {}
        }
        let entry = &bucket[at..end];
        let mut pos = 0;
        let count = read_varint(entry, &mut pos)? as usize;
        let mut out = Vec::with_capacity(count.min(entry.len() / 4));
        let (mut file, mut passage) = (0u32, 0u32);
        for k in 0..count {
            let head = read_varint(entry, &mut pos)?;
            if head & 1 == 1 {
                file = file.checked_add(head >> 2)?;
                passage = read_varint(entry, &mut pos)?;
            } else if k == 0 {
                return None; // the first posting always names its file
            } else {
                passage = passage.checked_add((head >> 2) + 1)?;
            }
            let occurrences = match head & 2 {
                0 => 1,
                _ => read_varint(entry, &mut pos)?.checked_add(2)?,
            };
            out.push(Posting {
                file,
                passage,
                occurrences,
            });
        }
        return (pos == entry.len()).then_some(out);
    }
    Some(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(texts: &[Option<&str>]) -> (Vec<u8>, PassageSegment) {
        let mut builder = SegmentBuilder::default();
        for text in texts {
            builder.push(text.map(FileTerms::of));
        }
        let (blob, table) = builder.finish();
        (blob, PassageSegment::decode(&table).unwrap())
    }

    fn lookup(blob: &[u8], segment: &PassageSegment, term: &str) -> Vec<Posting> {
        let (offset, len) = segment.bucket(term);
        postings_of(&blob[offset..offset + len], term).unwrap()
    }

    #[test]
    fn postings_round_trip_by_file_and_passage() {
        let long = "Beta alpha\n".repeat(30);
        let many: String = (0..200).map(|i| format!("x{i}\n\n\n\nalpha\n")).collect();
        let (blob, seg) = segment(&[Some("alpha beta\nALPHA"), None, Some(&long), Some(&many)]);
        let alpha = lookup(&blob, &seg, "alpha");
        let p = |file, passage, occurrences| Posting {
            file,
            passage,
            occurrences,
        };
        assert_eq!(
            alpha[..3],
            [p(0, 0, 2), p(2, 0, 24), p(2, 1, 6)],
            "24 lines close a passage"
        );
        // Passages far apart in one file, one occurrence each.
        let file3 = &alpha[3..];
        assert!(
            file3
                .iter()
                .map(|q| (q.file, q.passage))
                .eq((0..42).map(|n| (3, n)))
        );
        assert_eq!(file3.iter().map(|q| q.occurrences).sum::<u32>(), 200);
        assert_eq!(lookup(&blob, &seg, "beta")[0], p(0, 0, 1));
        assert_eq!(lookup(&blob, &seg, "x199"), vec![p(3, 41, 1)]);
        assert!(lookup(&blob, &seg, "gamma").is_empty());
        let beta = lookup(&blob, &seg, "beta");
        assert_eq!(seg.totals(2), Some((2, 60)));
        assert_eq!(seg.totals(1), None, "not analysed: read it");
        // Only the files asked for, under the caller's numbers.
        let hits = seg.hits(&[alpha, beta], &[(2, 7)]).unwrap();
        assert_eq!(hits.df, vec![2, 2]);
        let got: Vec<_> = hits
            .passages
            .iter()
            .map(|p| (p.doc, p.ordinal, p.length))
            .collect();
        assert_eq!(got, vec![(7, 0, 48), (7, 1, 12)]);
        // Each passage's hits, by term.
        let second = &hits.passages[1];
        assert_eq!(
            &hits.hits[second.hits.start as usize..second.hits.end as usize],
            &[(0, 6), (1, 6)]
        );
    }

    #[test]
    fn a_large_bucket_is_stored_compressed_and_reads_back_the_same() {
        // 300 files holding "alpha" in many passages: its bucket is long and repetitive.
        let text: String = (0..40).map(|i| format!("alpha x{i}\n\n\n\n")).collect();
        let texts: Vec<Option<&str>> = (0..300).map(|_| Some(text.as_str())).collect();
        let (blob, seg) = segment(&texts);
        let (offset, len) = seg.bucket("alpha");
        let stored = &blob[offset..offset + len];
        assert_eq!(stored[0], 1, "compressed");
        // Each file's postings are those of the same text indexed alone (stored raw).
        let (one_blob, one_seg) = segment(&[Some(text.as_str())]);
        let alone = lookup(&one_blob, &one_seg, "alpha");
        assert!(alone.len() > 1);
        let alpha = lookup(&blob, &seg, "alpha");
        let expected: Vec<Posting> = (0..300)
            .flat_map(|file| alone.iter().map(move |p| Posting { file, ..*p }))
            .collect();
        assert_eq!(alpha, expected);
        // Damage is "unknown", never "no postings".
        assert!(postings_of(&stored[..len - 1], "alpha").is_none());
        let mut unknown_kind = stored.to_vec();
        unknown_kind[0] = 2;
        assert!(postings_of(&unknown_kind, "alpha").is_none());
    }

    #[test]
    fn damaged_postings_and_tables_are_unknown_not_empty() {
        let (blob, seg) = segment(&[Some("alpha")]);
        let (offset, len) = seg.bucket("alpha");
        assert!(postings_of(&blob[offset..offset + len - 1], "alpha").is_none());
        assert!(PassageSegment::decode(b"\x00garbage").is_none());
    }
}
