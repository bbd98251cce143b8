//! The search index of one served root: which files' **redacted** text holds which
//! trigrams, so that `search` reads only the files a query can match in.
//!
//! What it is for: ruling files out. A file is skipped only when the index holds it at
//! the stat it has on disk now (one `lstat`, the same freshness test as every content
//! answer) and its grams lack the query's ([`plan`]); every other file (not indexed,
//! changed since, a candidate) is read and matched exactly as without an index. So the
//! index changes the time a search takes, never its answer, and a stale or damaged index
//! only costs time.
//!
//! What it is not: a store of text (grams only; the text stays in the content cache),
//! nor a source of output (every line printed comes from a verified read).
//!
//! Shape: the root's files in walk order are cut into segments of about
//! [`SEGMENT_TEXT_BYTES`] of text; each segment has a file table (path, the file record
//! its text was indexed at, the text's redaction counts) and postings per gram
//! ([`postings`]), all stored in the cache database (`cache::grams`) under a build
//! generation that is published last. In memory: only the file tables (a path, a stat
//! and counts per file); postings are read per query, a few small values per segment.

pub mod passages;
pub mod plan;
pub mod postings;
mod slots;

use crate::cache::{
    Cache, ContentRecord, FileRecord, GRAM_CHUNK_BYTES, GramHead, GramPart, record,
};
use crate::engine::Counts;
use crate::fs::{StatBatch, StatKey};
use crate::view::RedactedPath;
use passages::{FileTerms, IndexedHits, Located, PassageSegment, Posting, SegmentBuilder};
use plan::{Gram, GramPlan};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use slots::SlotTable;
use std::sync::{Arc, OnceLock};

/// Layout version of stored segments; a head of another format is rebuilt.
pub const INDEX_FORMAT: u32 = 2;

/// Text a segment covers, about (by file size): bounds the memory a build holds at once
/// (its gram pairs, 4 bytes per distinct gram of each file, and the files' gram lists
/// as long: about 3 bytes of text each).
const SEGMENT_TEXT_BYTES: u64 = 8 << 20;

/// Files a segment holds at most (its numbers are 16 bits in the build's pairs).
const SEGMENT_MAX_FILES: usize = postings::MAX_SEGMENT_FILES;

/// Files changed since the index was built past which it is rebuilt, at least; a root
/// also rebuilds past 1% of its files. Each such file is read by every whole-root search,
/// so the bound is what a search may spend on them (a cached read is ~0.1 ms).
const STALE_REBUILD_FILES: usize = 200;

/// One indexed file.
#[derive(Debug)]
struct Slot {
    segment: u32,
    /// Its number in the segment's postings; `None` for a file indexed without text (not
    /// text, too large, not read by the pass): always read, never stale at its stat.
    number: Option<u32>,
    /// Not text at the record's stat ([`Indexed::NotText`]).
    not_text: bool,
    record: FileRecord,
    counts: Counts,
    /// Its redacted path under the index's policy, kept by the first retrieve that
    /// needed it (whole-root retrieves need every file's: one lookup instead of two).
    /// Boxed: most slots never hold one, and unboxed it made every slot 70 bytes
    /// larger (7 MB on a 106k-file root).
    path: OnceLock<Box<RedactedPath>>,
}

/// A file table row as stored.
#[derive(Serialize, Deserialize)]
struct StoredSlot {
    rel: String,
    text: bool,
    not_text: bool,
    record: FileRecord,
    counts: Vec<(String, u64)>,
}

/// A segment as stored: its file table, and where each postings bucket lies in its
/// postings (bucket, byte offset, length), sorted by bucket.
#[derive(Serialize, Deserialize)]
struct StoredSegment {
    slots: Vec<StoredSlot>,
    directory: Vec<(u16, u32, u32)>,
}

/// What the cache knows of a file at its current stat.
pub enum Indexed {
    /// Text, with its redacted content.
    Text(FileRecord, Arc<ContentRecord>),
    /// Not served as text at this stat (the record's stat is what is compared later).
    Opaque(FileRecord),
    /// Refused as not text in this mode at this stat, as a read from the cache would
    /// answer: a search skips it unread.
    NotText(FileRecord),
}

/// The loaded index of one root (file tables; postings stay in the database).
#[derive(Debug)]
pub struct SearchIndex {
    root_key: [u8; 32],
    head: GramHead,
    files: SlotTable<Slot>,
    /// Per segment, where its buckets lie ([`StoredSegment::directory`]).
    directories: Vec<Vec<(u16, u32, u32)>>,
    /// Per segment, its passage table once the passage index of the segment is built
    /// ([`passages`]; built after the grams, in the background).
    passages: Vec<OnceLock<PassageSegment>>,
}

/// What the build needs of a file: its record and redacted content, if the cache holds
/// them for the file's stat under the served policy.
pub type ReadIndexed<'a> = dyn Fn(&str, &StatKey) -> Option<Indexed> + Sync + 'a;

impl SearchIndex {
    /// Loads the root's published index if it was built under `fingerprint` by this
    /// format; `None` otherwise (or on any damage), and the caller builds one.
    pub fn load(cache: &Cache, root_key: &[u8; 32], fingerprint: &[u8; 32]) -> Option<SearchIndex> {
        let head = cache.gram_head(root_key, fingerprint)?;
        if head.fingerprint != *fingerprint || head.format != INDEX_FORMAT {
            return None;
        }
        let mut files = SlotTable::default();
        let mut directories = Vec::with_capacity(head.segments as usize);
        for segment in 0..head.segments {
            let table = cache.gram_part(root_key, head.generation, segment, GramPart::FileTable)?;
            let stored: StoredSegment = record::decode(&table)?;
            directories.push(stored.directory);
            let mut numbers = 0..;
            for row in stored.slots {
                let slot = Slot {
                    segment,
                    number: row.text.then(|| numbers.next()).flatten(),
                    not_text: row.not_text,
                    record: row.record,
                    counts: record::load_counts(&row.counts)?,
                    path: OnceLock::new(),
                };
                files.insert(row.rel.into_boxed_str(), slot);
            }
        }
        let passages = (0..head.segments)
            .map(|segment| {
                let table = cache
                    .gram_part(root_key, head.generation, segment, GramPart::PassageTable)
                    .and_then(|bytes| PassageSegment::decode(&bytes));
                table.map_or_else(OnceLock::new, OnceLock::from)
            })
            .collect();
        files.shrink_to_fit();
        Some(SearchIndex {
            root_key: *root_key,
            head,
            files,
            directories,
            passages,
        })
    }

    /// Builds and publishes an index of `files` (walk order; their paths move into the
    /// index, and each segment's part of the listing is freed once gathered) from what
    /// `read` finds in the cache, on `pool`.
    /// `None` when the database refused a write (searches then scan).
    pub fn build(
        cache: &Cache,
        root_key: &[u8; 32],
        fingerprint: &[u8; 32],
        files: Vec<(String, StatKey)>,
        read: &ReadIndexed<'_>,
        pool: Option<&rayon::ThreadPool>,
    ) -> Option<SearchIndex> {
        let generation = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let mut index = SlotTable::default();
        let mut directories = Vec::new();
        let mut segments = 0u32;
        // One file of a segment: path, record, content counts, its grams if text, and
        // whether it is not text.
        type Found = (String, FileRecord, Counts, Option<Vec<Gram>>, bool);
        let sieve = plan::GramSieve::default();
        // The path moves from the listing into the index (one copy of 100k paths, not two).
        let gram_files = |(rel, stat): &mut (String, StatKey)| -> Option<Found> {
            Some(match read(rel, stat)? {
                Indexed::Text(record, content) => {
                    let text = &content.preserved;
                    let grams = sieve.text_grams(&text.text);
                    let counts = text.counts.clone();
                    (std::mem::take(rel), record, counts, Some(grams), false)
                }
                Indexed::Opaque(record) => {
                    (std::mem::take(rel), record, Counts::default(), None, false)
                }
                Indexed::NotText(record) => {
                    (std::mem::take(rel), record, Counts::default(), None, true)
                }
            })
        };
        let segment_files = |mut chunk: Vec<(String, StatKey)>| -> Vec<Found> {
            match pool {
                Some(_) => chunk.par_iter_mut().filter_map(gram_files).collect(),
                None => chunk.iter_mut().filter_map(gram_files).collect(),
            }
        };
        // Sorts, encodes and stores one segment; false when the database refused.
        let mut store = |found: Vec<Found>| -> bool {
            let mut text_grams: Vec<Vec<Gram>> = Vec::new();
            let mut table = Vec::with_capacity(found.len());
            let mut numbers = 0u32..;
            for (rel, record, counts, grams, not_text) in found {
                let number = grams.map(|grams| {
                    text_grams.push(grams);
                    numbers.next().unwrap_or(u32::MAX)
                });
                table.push(StoredSlot {
                    rel: rel.clone(),
                    text: number.is_some(),
                    not_text,
                    record,
                    counts: record::wire_counts(&counts)
                        .into_iter()
                        .map(|(name, n)| (name.to_owned(), n))
                        .collect(),
                });
                let slot = Slot {
                    segment: segments,
                    number,
                    not_text,
                    record,
                    counts,
                    path: OnceLock::new(),
                };
                index.insert(rel.into_boxed_str(), slot);
            }
            let pairs = postings::GramPairs::sort(text_grams);
            let buckets = postings::encode_buckets(pairs.iter());
            drop(pairs);
            let mut blob = Vec::with_capacity(buckets.iter().map(|(_, v)| v.len()).sum());
            let mut directory = Vec::with_capacity(buckets.len());
            for (bucket, value) in buckets {
                directory.push((bucket, blob.len() as u32, value.len() as u32));
                blob.extend_from_slice(&value);
            }
            let stored = StoredSegment {
                slots: table,
                directory,
            };
            if !cache.put_gram_segment(
                root_key,
                generation,
                segments,
                &record::encode(&stored),
                &blob,
            ) {
                return false;
            }
            directories.push(stored.directory);
            segments += 1;
            true
        };
        // The grams of the next segment are gathered while this one is stored (the
        // store is serial: sorting, encoding, one write transaction).
        // One listing per segment, each freed once its segment is gathered (the whole
        // listing of 100k files is megabytes the end of the build would still hold).
        let ranges = segment_ranges(&files);
        let mut files = files.into_iter();
        let chunks: Vec<Vec<(String, StatKey)>> = ranges
            .iter()
            .map(|range| files.by_ref().take(range.len()).collect())
            .collect();
        drop(files);
        let segment_count = chunks.len();
        let mut chunks = chunks.into_iter();
        let mut next = join_in(pool, || chunks.next().map(segment_files), || ()).0;
        for _ in 0..segment_count {
            let found = next.take().unwrap_or_default();
            let stored;
            (stored, next) = join_in(pool, || store(found), || chunks.next().map(segment_files));
            if !stored {
                return None;
            }
        }
        let head = GramHead {
            fingerprint: *fingerprint,
            generation,
            segments,
            format: INDEX_FORMAT,
        };
        if !cache.publish_grams(root_key, &head) {
            return None;
        }
        index.shrink_to_fit();
        Some(SearchIndex {
            root_key: *root_key,
            head,
            files: index,
            directories,
            passages: (0..segments).map(|_| OnceLock::new()).collect(),
        })
    }

    /// Builds the passage index of every segment that has none yet ([`passages`]), from
    /// the redacted text `content` finds for each slot's record (the indexed version
    /// itself, so edits made since cannot mix in), storing each segment as it is done.
    /// Returns the segments built. Meant for a background thread after "ready"; a file
    /// whose text is not found is left out (retrieve reads it).
    pub fn build_passages(
        &self,
        cache: &Cache,
        content: &(dyn Fn(&str, &FileRecord) -> Option<Arc<ContentRecord>> + Sync),
        pool: Option<&rayon::ThreadPool>,
    ) -> usize {
        let mut by_segment: Vec<Vec<(u32, &str, &FileRecord)>> =
            (0..self.head.segments).map(|_| Vec::new()).collect();
        for (rel, slot) in self.files.iter() {
            if let (Some(number), Some(list)) =
                (slot.number, by_segment.get_mut(slot.segment as usize))
            {
                list.push((number, rel, &slot.record));
            }
        }
        let mut built = 0;
        for (segment, mut files) in by_segment.into_iter().enumerate() {
            if self.passages[segment].get().is_some() {
                continue;
            }
            files.sort_unstable_by_key(|f| f.0);
            let mut builder = SegmentBuilder::default();
            // Files analysed at once: bounds the texts and terms held before they are
            // merged, by bytes (a segment's few large files) and by count (its many
            // small ones).
            for batch in by_bytes(&files, |f| f.2.size, PASSAGE_BATCH_BYTES, 256) {
                let analyse = |&(_, rel, record): &(u32, &str, &FileRecord)| {
                    content(rel, record).map(|c| FileTerms::of(&c.preserved.text))
                };
                let terms: Vec<Option<FileTerms>> = match pool {
                    Some(pool) => pool.install(|| batch.par_iter().map(analyse).collect()),
                    None => batch.iter().map(analyse).collect(),
                };
                for (expected, (&(number, _, _), terms)) in
                    (builder.len() as u32..).zip(batch.iter().zip(terms))
                {
                    if number != expected {
                        return built; // numbers are dense; anything else is damage
                    }
                    builder.push(terms);
                }
            }
            let (postings, table) = builder.finish();
            let Some(decoded) = PassageSegment::decode(&table) else {
                return built;
            };
            if !cache.put_passage_segment(
                &self.root_key,
                &self.head,
                segment as u32,
                &postings,
                &table,
            ) {
                return built; // a newer build replaced this one, or the database refused
            }
            let _ = self.passages[segment].set(decoded);
            built += 1;
        }
        built
    }

    /// Whether every segment's passage index is built.
    pub fn passages_built(&self) -> bool {
        self.passages.iter().all(|p| p.get().is_some())
    }

    /// Segments, and those whose passage index is built.
    pub fn segments(&self) -> (u32, u32) {
        let built = self.passages.iter().filter(|p| p.get().is_some()).count();
        (self.head.segments, built as u32)
    }

    /// Files indexed.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether so many of `files` (path and stat now) are missing from the index or
    /// changed since it was built that it should be rebuilt.
    pub fn is_stale_for(&self, files: &[(String, StatKey)]) -> bool {
        let stale = files
            .iter()
            .filter(|(rel, stat)| stat.is_regular() && !self.knows(rel, stat))
            .count();
        too_stale(stale, files.len())
    }

    /// Whether the index holds `rel` as it is at `stat`.
    pub fn knows(&self, rel: &str, stat: &StatKey) -> bool {
        self.files.get(rel).is_some_and(|slot| slot.known_at(stat))
    }

    /// The screen of one query: for each segment, the files that may hold the plan's
    /// grams. `None` when the postings cannot be read (a newer build replaced them, a
    /// database failure): the search then reads every file.
    pub fn screen(self: &Arc<Self>, cache: &Cache, plan: &GramPlan) -> Option<Screen> {
        let mut grams: Vec<Gram> = plan.alternatives.iter().flatten().copied().collect();
        grams.sort_unstable();
        grams.dedup();
        // Where each wanted bucket lies, and the chunks that hold those bytes.
        let place = |segment: u32, gram: Gram| {
            let directory = self.directories.get(segment as usize)?;
            let bucket = postings::bucket_of(gram);
            let at = directory.binary_search_by_key(&bucket, |e| e.0).ok()?;
            Some((directory[at].1 as usize, directory[at].2 as usize))
        };
        let spans = (0..self.head.segments).flat_map(|segment| {
            let place = &place;
            grams.iter().filter_map(move |&gram| {
                let (offset, len) = place(segment, gram)?;
                Some((segment, offset, len))
            })
        });
        let read = Span::read(self, cache, GramPart::Postings, spans)?;
        // A bucket's bytes; `Some(None)` when no file holds a gram of that bucket, `None`
        // when a chunk is missing (damage: read every file).
        let bucket = |segment: u32, gram: Gram| -> Option<Option<Vec<u8>>> {
            let Some((offset, len)) = place(segment, gram) else {
                return Some(None);
            };
            read.bytes(segment, offset, len).map(Some)
        };
        let candidates = (0..self.head.segments)
            .map(|segment| {
                let mut any: Vec<u32> = Vec::new();
                for alternative in &plan.alternatives {
                    let mut all: Option<Vec<u32>> = None;
                    for &gram in alternative {
                        let files = postings::files_with(bucket(segment, gram)?.as_deref(), gram)?;
                        all = Some(match all {
                            None => files,
                            Some(so_far) => postings::intersect(&so_far, &files),
                        });
                        if all.as_ref().is_some_and(Vec::is_empty) {
                            break;
                        }
                    }
                    any.extend(all.unwrap_or_default());
                }
                any.sort_unstable();
                any.dedup();
                Some(any)
            })
            .collect();
        Some(Screen {
            index: self.clone(),
            candidates,
        })
    }
}

/// Whether `stale` changed or new files out of `total` call for a rebuild.
pub fn too_stale(stale: usize, total: usize) -> bool {
    stale > STALE_REBUILD_FILES.max(total / 100)
}

/// What one query's plan leaves of the index: per segment, the files that may match
/// (`None`: unknown, every file of the segment is read).
#[derive(Debug)]
pub struct Screen {
    index: Arc<SearchIndex>,
    candidates: Vec<Option<Vec<u32>>>,
}

/// A screen's verdict on one file.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// Indexed at its current stat and without the query's grams: it cannot match; these
    /// are the counts its redaction has.
    RuledOut(&'a Counts),
    /// Indexed at its current stat and a candidate (or indexed without text): read it.
    Candidate,
    /// Known not to be text at its current stat: what reading it would find, unread.
    NotText,
    /// Not indexed, changed since, or gone: read it.
    Unknown,
}

impl Screen {
    /// The verdict on `rel`: its current stat (`walked`, the one the call's walk just
    /// took, else an `lstat` through `stats`) must be the one it was indexed at.
    pub fn verdict(&self, stats: &StatBatch, rel: &str, walked: Option<StatKey>) -> Verdict<'_> {
        let Some(slot) = self.index.files.get(rel) else {
            return Verdict::Unknown;
        };
        let Some(Some(candidates)) = self.candidates.get(slot.segment as usize) else {
            return Verdict::Unknown;
        };
        let Some(stat) = walked.or_else(|| stats.lstat(rel)) else {
            return Verdict::Unknown;
        };
        if !slot.known_at(&stat) {
            return Verdict::Unknown;
        }
        if slot.not_text && slot.record.trusted_for(&stat) {
            return Verdict::NotText;
        }
        match slot.number {
            Some(number) if candidates.binary_search(&number).is_err() => {
                Verdict::RuledOut(&slot.counts)
            }
            _ => Verdict::Candidate,
        }
    }
}

impl SearchIndex {
    /// The postings of one retrieve query's `terms` (casefolded) in every segment whose
    /// passage index is built. `None` when the postings cannot be read (a newer build
    /// replaced them, a database failure): retrieve then reads every file.
    pub fn passage_screen(
        self: &Arc<Self>,
        cache: &Cache,
        terms: &[String],
    ) -> Option<PassageScreen> {
        let places: Vec<Option<Vec<(usize, usize)>>> = self
            .passages
            .iter()
            .map(|p| {
                p.get()
                    .map(|seg| terms.iter().map(|t| seg.bucket(t)).collect())
            })
            .collect();
        let spans = places.iter().enumerate().flat_map(|(segment, spans)| {
            let spans = spans.iter().flatten();
            spans.map(move |&(offset, len)| (segment as u32, offset, len))
        });
        let read = Span::read(self, cache, GramPart::PassagePostings, spans)?;
        let postings = places
            .iter()
            .enumerate()
            .map(|(segment, spans)| {
                spans
                    .as_ref()?
                    .iter()
                    .zip(terms)
                    .map(|(&(offset, len), term)| {
                        if len == 0 {
                            return Some(Vec::new());
                        }
                        let bytes = read.bytes(segment as u32, offset, len)?;
                        passages::postings_of(&bytes, term)
                    })
                    .collect::<Option<Vec<_>>>()
            })
            .collect();
        Some(PassageScreen {
            index: self.clone(),
            postings,
        })
    }
}

/// One retrieve query's postings, per segment.
#[derive(Debug)]
pub struct PassageScreen {
    index: Arc<SearchIndex>,
    /// Per segment, per query term, its postings; `None` where the segment has no passage
    /// index yet (its files are read).
    postings: Vec<Option<Vec<Vec<Posting>>>>,
}

impl PassageScreen {
    /// Where the index holds `rel`'s text and its totals, with its content counts and
    /// redacted path (`path` makes it the first time), if it holds the text `rel` has at
    /// its current stat (`walked`, else an `lstat` through `stats`) and its segment's
    /// passages are built; `None`: read it.
    pub fn locate(
        &self,
        stats: &StatBatch,
        rel: &str,
        walked: Option<StatKey>,
        path: impl FnOnce() -> RedactedPath,
    ) -> Option<(&Counts, &RedactedPath, Located)> {
        let slot = self.index.files.get(rel)?;
        let number = slot.number?;
        self.postings.get(slot.segment as usize)?.as_ref()?;
        let segment = self.index.passages.get(slot.segment as usize)?.get()?;
        let (passages, tokens) = segment.totals(number)?;
        let stat = walked.or_else(|| stats.lstat(rel))?;
        if !slot.known_at(&stat) {
            return None;
        }
        let located = Located {
            segment: slot.segment,
            number,
            passages,
            tokens,
        };
        Some((
            &slot.counts,
            slot.path.get_or_init(|| Box::new(path())),
            located,
        ))
    }

    /// The passages holding a query term of the files `located` (each with the caller's
    /// doc number), per segment in parallel. `None` on damage (the caller then scans).
    pub fn hits(&self, located: &[(Located, u32)]) -> Option<IndexedHits> {
        let mut by_segment: Vec<Vec<(u32, u32)>> = vec![Vec::new(); self.postings.len()];
        for (at, doc) in located {
            by_segment
                .get_mut(at.segment as usize)?
                .push((at.number, *doc));
        }
        let parts: Vec<Option<IndexedHits>> = by_segment
            .into_par_iter()
            .enumerate()
            .filter(|(_, files)| !files.is_empty())
            .map(|(segment, mut files)| {
                files.sort_unstable();
                let postings = self.postings.get(segment)?.as_ref()?;
                let table = self.index.passages.get(segment)?.get()?;
                table.hits(postings, &files)
            })
            .collect();
        let mut out = IndexedHits::default();
        for part in parts {
            out.append(part?);
        }
        Some(out)
    }

    /// The record `rel`'s indexed text was made from (its text is the one to print).
    pub fn record(&self, rel: &str) -> Option<&FileRecord> {
        Some(&self.index.files.get(rel)?.record)
    }
}

/// The chunk numbers (parts) holding `len` bytes at `offset` of a part's blob.
fn chunks_of(part: GramPart, offset: usize, len: usize) -> impl Iterator<Item = u32> {
    let first = offset / GRAM_CHUNK_BYTES;
    let end = if len == 0 {
        first
    } else {
        (offset + len - 1) / GRAM_CHUNK_BYTES + 1
    };
    (first..end).map(move |c| part.base() + c as u32)
}

/// The chunks one query read of one blob of the segments: `chunks[i]` is part
/// `wanted[i]` (segment, part).
struct Span {
    part: GramPart,
    wanted: Vec<(u32, u32)>,
    chunks: Vec<Vec<u8>>,
}

impl Span {
    /// Reads the chunks holding `spans` (segment, offset, length) of `part` from
    /// `index`'s generation, in one transaction; `None` when that generation is gone or
    /// the database failed.
    fn read(
        index: &SearchIndex,
        cache: &Cache,
        part: GramPart,
        spans: impl Iterator<Item = (u32, usize, usize)>,
    ) -> Option<Span> {
        let mut wanted: Vec<(u32, u32)> = spans
            .flat_map(|(segment, offset, len)| {
                chunks_of(part, offset, len).map(move |c| (segment, c))
            })
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let chunks = cache.gram_chunks(&index.root_key, &index.head, &wanted)?;
        Some(Span {
            part,
            wanted,
            chunks,
        })
    }

    /// `len` bytes at `offset` of a segment's blob, joined from its chunks; `None` when a
    /// chunk is missing or short (damage).
    fn bytes(&self, segment: u32, offset: usize, len: usize) -> Option<Vec<u8>> {
        let mut bytes = Vec::with_capacity(len);
        let mut at = offset;
        while at < offset + len {
            let chunk = at / GRAM_CHUNK_BYTES;
            let k = self
                .wanted
                .binary_search(&(segment, self.part.base() + chunk as u32))
                .ok()?;
            let data = &self.chunks[k];
            let start = at - chunk * GRAM_CHUNK_BYTES;
            let end = (start + (offset + len - at)).min(data.len());
            if start >= end {
                return None;
            }
            bytes.extend_from_slice(&data[start..end]);
            at += end - start;
        }
        Some(bytes)
    }
}

impl Slot {
    /// Whether the slot describes the file now at `stat`: its text (a settled record of
    /// that stat), or, for a file indexed without text, that stat.
    fn known_at(&self, stat: &StatKey) -> bool {
        match self.number {
            Some(_) => self.record.trusted_for(stat),
            None => self.record.stat() == *stat,
        }
    }
}

/// Text a passage build analyses at once, about (by file size).
const PASSAGE_BATCH_BYTES: u64 = 4 << 20;

/// `items` cut into runs of at most `max_files` items and about `max_bytes` of their
/// sizes (a run ends with the item that reaches it; a larger item is a run of its own).
fn by_bytes<T>(
    items: &[T],
    size: impl Fn(&T) -> u64,
    max_bytes: u64,
    max_files: usize,
) -> impl Iterator<Item = &[T]> {
    let mut rest = items;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let (mut bytes, mut end) = (0u64, 0);
        while end < rest.len().min(max_files) && (end == 0 || bytes < max_bytes) {
            bytes += size(&rest[end]);
            end += 1;
        }
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some(run)
    })
}

/// `a` and `b` side by side on `pool`'s threads, or one after the other on this thread
/// without a pool (never on rayon's global pool).
fn join_in<A: Send, B: Send>(
    pool: Option<&rayon::ThreadPool>,
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    match pool {
        Some(pool) => pool.install(|| rayon::join(a, b)),
        None => (a(), b()),
    }
}

/// Consecutive ranges of `files` of about [`SEGMENT_TEXT_BYTES`] each.
fn segment_ranges(files: &[(String, StatKey)]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let (mut start, mut bytes) = (0, 0u64);
    for (i, (_, stat)) in files.iter().enumerate() {
        if i > start && (bytes >= SEGMENT_TEXT_BYTES || i - start >= SEGMENT_MAX_FILES) {
            ranges.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += stat.size;
    }
    if start < files.len() {
        ranges.push(start..files.len());
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::by_bytes;

    #[test]
    fn passage_batches_are_bounded_by_bytes_and_by_count() {
        let runs = |sizes: &[u64], max_bytes, max_files| {
            by_bytes(sizes, |s| *s, max_bytes, max_files)
                .map(<[u64]>::to_vec)
                .collect::<Vec<_>>()
        };
        // Small files: the count bounds a run.
        assert_eq!(runs(&[1; 5], 100, 2), vec![vec![1, 1], vec![1, 1], vec![1]]);
        // Large files: the bytes do; one over the bound runs alone.
        assert_eq!(
            runs(&[40, 40, 40, 500, 10], 100, 256),
            vec![vec![40, 40, 40], vec![500], vec![10]]
        );
        assert!(runs(&[], 100, 2).is_empty());
    }
}
