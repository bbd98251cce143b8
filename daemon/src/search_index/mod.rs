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

pub mod plan;
pub mod postings;

use crate::cache::{Cache, ContentRecord, FileRecord, GRAM_CHUNK_BYTES, GramHead, record};
use crate::engine::Counts;
use crate::fs::{StatBatch, StatKey};
use foldhash::HashMap;
use plan::{Gram, GramPlan};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Layout version of stored segments; a head of another format is rebuilt.
pub const INDEX_FORMAT: u32 = 2;

/// Text a segment covers, about (by file size): bounds the memory a build holds at once
/// (its gram pairs, 8 bytes per distinct gram of each file, about 3 bytes of text each).
const SEGMENT_TEXT_BYTES: u64 = 8 << 20;

/// Files a segment holds at most.
const SEGMENT_MAX_FILES: usize = 1 << 16;

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
    /// Retrieve's statistics of the text, learnt from the first retrieve that read it
    /// (memory only: a restart learns them again).
    passages: std::sync::OnceLock<PassageStats>,
}

/// What a file adds to retrieve's BM25 statistics when none of its passages holds a
/// query term: a function of its redacted text alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassageStats {
    pub passages: u64,
    pub tokens: u64,
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
    files: HashMap<Box<str>, Slot>,
    /// Per segment, where its buckets lie ([`StoredSegment::directory`]).
    directories: Vec<Vec<(u16, u32, u32)>>,
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
        let mut files = HashMap::default();
        let mut directories = Vec::with_capacity(head.segments as usize);
        for segment in 0..head.segments {
            let table = cache.gram_file_table(root_key, head.generation, segment)?;
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
                    passages: std::sync::OnceLock::new(),
                };
                files.insert(row.rel.into_boxed_str(), slot);
            }
        }
        Some(SearchIndex {
            root_key: *root_key,
            head,
            files,
            directories,
        })
    }

    /// Builds and publishes an index of `files` (walk order) from what `read` finds in the
    /// cache, on `pool`. `None` when the database refused a write (searches then scan).
    pub fn build(
        cache: &Cache,
        root_key: &[u8; 32],
        fingerprint: &[u8; 32],
        files: &[(String, StatKey)],
        read: &ReadIndexed<'_>,
        pool: Option<&rayon::ThreadPool>,
    ) -> Option<SearchIndex> {
        let generation = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let mut index = HashMap::default();
        let mut directories = Vec::new();
        let mut segments = 0u32;
        for chunk in segment_ranges(files) {
            let gram_files = |(rel, stat): &(String, StatKey)| {
                Some(match read(rel, stat)? {
                    Indexed::Text(record, content) => {
                        let text = &content.preserved;
                        let grams = plan::text_grams(&text.text);
                        (rel.clone(), record, text.counts.clone(), Some(grams), false)
                    }
                    Indexed::Opaque(record) => {
                        (rel.clone(), record, Counts::default(), None, false)
                    }
                    Indexed::NotText(record) => {
                        (rel.clone(), record, Counts::default(), None, true)
                    }
                })
            };
            let found: Vec<_> = match pool {
                Some(pool) => {
                    pool.install(|| files[chunk].par_iter().filter_map(gram_files).collect())
                }
                None => files[chunk].iter().filter_map(gram_files).collect(),
            };
            let mut pairs: Vec<(Gram, u32)> = Vec::with_capacity(
                found
                    .iter()
                    .filter_map(|f| f.3.as_ref())
                    .map(Vec::len)
                    .sum(),
            );
            let mut table = Vec::with_capacity(found.len());
            let mut numbers = 0u32..;
            for (rel, record, counts, grams, not_text) in found {
                let number = grams.map(|grams| {
                    let number = numbers.next().unwrap_or(u32::MAX);
                    pairs.extend(grams.into_iter().map(|g| (g, number)));
                    number
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
                    passages: std::sync::OnceLock::new(),
                };
                index.insert(rel.into_boxed_str(), slot);
            }
            postings::sort_by_gram(&mut pairs);
            let buckets = postings::encode_buckets(&pairs);
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
                return None;
            }
            directories.push(stored.directory);
            segments += 1;
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
        Some(SearchIndex {
            root_key: *root_key,
            head,
            files: index,
            directories,
        })
    }

    /// Learns the passage statistics of every indexed text not known yet, from its
    /// redacted content as `content` finds it for the slot's record (the indexed version
    /// itself, so no race with edits), with `stats` (retrieve's own passage cutting).
    /// Returns how many were learnt. Meant for a background thread after "ready".
    pub fn learn_all_passages(
        &self,
        content: &(dyn Fn(&str, &FileRecord) -> Option<Arc<ContentRecord>> + Sync),
        stats: &(dyn Fn(&str) -> PassageStats + Sync),
        pool: Option<&rayon::ThreadPool>,
    ) -> usize {
        let learn = |rel: &str, slot: &Slot| {
            if slot.number.is_none() || slot.passages.get().is_some() {
                return 0;
            }
            let Some(record) = content(rel, &slot.record) else {
                return 0;
            };
            usize::from(slot.passages.set(stats(&record.preserved.text)).is_ok())
        };
        match pool {
            Some(pool) => pool.install(|| self.files.par_iter().map(|(r, s)| learn(r, s)).sum()),
            None => self.files.iter().map(|(r, s)| learn(r, s)).sum(),
        }
    }

    /// Keeps the passage statistics `old` learnt for files this index holds at the same
    /// version (a rebuild then relearns only what changed).
    pub fn adopt_passages(&self, old: &SearchIndex) {
        for (rel, slot) in &self.files {
            if let Some(prev) = old.files.get(rel)
                && prev.record == slot.record
                && let Some(known) = prev.passages.get()
            {
                let _ = slot.passages.set(*known);
            }
        }
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
            .filter(|(rel, stat)| {
                stat.is_regular()
                    && self
                        .files
                        .get(rel.as_str())
                        .is_none_or(|slot| !slot.known_at(stat))
            })
            .count();
        too_stale(stale, files.len())
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
        let mut wanted: Vec<(u32, u32)> = Vec::new();
        for segment in 0..self.head.segments {
            for &gram in &grams {
                if let Some((offset, len)) = place(segment, gram).filter(|p| p.1 > 0) {
                    let (first, last) = (
                        offset / GRAM_CHUNK_BYTES,
                        (offset + len - 1) / GRAM_CHUNK_BYTES,
                    );
                    wanted.extend((first..=last).map(|c| (segment, c as u32)));
                }
            }
        }
        wanted.sort_unstable();
        wanted.dedup();
        let chunks = cache.gram_chunks(&self.root_key, &self.head, &wanted)?;
        // A bucket's bytes, joined from its chunks; `Some(None)` when no file holds a
        // gram of that bucket, `None` when a chunk is missing (damage: read every file).
        let bucket = |segment: u32, gram: Gram| -> Option<Option<Vec<u8>>> {
            let Some((offset, len)) = place(segment, gram) else {
                return Some(None);
            };
            let mut bytes = Vec::with_capacity(len);
            let mut at = offset;
            while at < offset + len {
                let chunk = (at / GRAM_CHUNK_BYTES) as u32;
                let k = wanted.binary_search(&(segment, chunk)).ok()?;
                let data = &chunks[k];
                let start = at - chunk as usize * GRAM_CHUNK_BYTES;
                let end = (start + (offset + len - at)).min(data.len());
                if start >= end {
                    return None;
                }
                bytes.extend_from_slice(&data[start..end]);
                at += end - start;
            }
            Some(Some(bytes))
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

/// A screen's verdict on one file for retrieve.
#[derive(Debug, PartialEq, Eq)]
pub enum PassageVerdict<'a> {
    /// Ruled out, with its content counts and passage statistics: not read.
    Known(&'a Counts, PassageStats),
    /// Ruled out, but its passage statistics are not known yet: read it, then
    /// [`Screen::learn_passages`].
    Learn,
    /// Read it.
    Read,
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

impl Screen {
    /// The verdict on `rel` for retrieve ([`Screen::verdict`] with passage statistics).
    pub fn passage_verdict(
        &self,
        stats: &StatBatch,
        rel: &str,
        walked: Option<StatKey>,
    ) -> PassageVerdict<'_> {
        match self.verdict(stats, rel, walked) {
            Verdict::RuledOut(counts) => {
                match self.index.files.get(rel).and_then(|s| s.passages.get()) {
                    Some(known) => PassageVerdict::Known(counts, *known),
                    None => PassageVerdict::Learn,
                }
            }
            _ => PassageVerdict::Read,
        }
    }

    /// Keeps the passage statistics of `rel`'s text, read after a [`PassageVerdict::Learn`],
    /// if the file is still at the stat it was indexed at (so the text read was that one).
    pub fn learn_passages(&self, stats: &StatBatch, rel: &str, learnt: PassageStats) {
        if let Some(slot) = self.index.files.get(rel)
            && slot.number.is_some()
            && stats.lstat(rel).is_some_and(|now| slot.known_at(&now))
        {
            let _ = slot.passages.set(learnt);
        }
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
