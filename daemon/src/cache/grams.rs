//! Storage of the search index (`crate::search_index`) in the cache database: redacted
//! text's grams only, never text.
//!
//! Tables:
//! - `gram_heads`: (root key, policy fingerprint) → [`GramHead`]: which generation of the
//!   root's index under that policy is complete, and how many segments it has. A root
//!   served under two policies at once (two option sets) has two.
//! - `grams`: (root key, generation, segment, part) → one page-sized chunk of one of a
//!   segment's blobs ([`GramPart`]: gram postings, file table, and the passage index's
//!   postings and table, written later by a transaction of their own). Chunked
//!   like content, so that each fills one redb leaf: stored whole, the values of
//!   thousands of sorted keys cost three times their size in half-full leaves and
//!   power-of-two large-value pages.
//!
//! A build writes each segment in a transaction of its own and the head last, in the
//! transaction that also drops the heads of policies no longer served for the root and
//! every generation no head names, so `kill -9` at any moment leaves either the previous
//! complete index or the new one (plus segments of an unfinished build, which the next
//! publish drops). Reads of a generation that a newer
//! publish dropped find nothing and say so (`None`), and the caller scans instead.

use super::Cache;
use super::record;
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

pub(super) const GRAM_HEADS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("gram_heads");
pub(super) const GRAMS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("grams");

/// The blobs of a segment, each stored in chunks numbered from its own base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GramPart {
    /// Gram postings (`crate::search_index::postings`).
    Postings,
    /// The passage index's postings (`crate::search_index::passages`).
    PassagePostings,
    /// The file table.
    FileTable,
    /// The passage index's table; present only once the segment's passage index is
    /// complete (it is written with its postings, in one transaction).
    PassageTable,
}

impl GramPart {
    /// The part number of the blob's first chunk.
    pub fn base(self) -> u32 {
        match self {
            GramPart::Postings => 0,
            GramPart::PassagePostings => 1 << 30,
            GramPart::FileTable => 2 << 30,
            GramPart::PassageTable => 3 << 30,
        }
    }

    /// The last part number the blob may use.
    fn last(self) -> u32 {
        self.base() + ((1 << 30) - 1)
    }

    /// Whether the blob belongs to the passage index.
    fn is_passages(self) -> bool {
        matches!(self, GramPart::PassagePostings | GramPart::PassageTable)
    }

    /// The blob a part number belongs to (its top two bits).
    fn of(part: u32) -> GramPart {
        match part >> 30 {
            0 => GramPart::Postings,
            1 => GramPart::PassagePostings,
            2 => GramPart::FileTable,
            _ => GramPart::PassageTable,
        }
    }
}

/// Bytes of a root's index in the database ([`Cache::gram_bytes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexBytes {
    /// The trigram index: postings and file tables.
    pub grams: u64,
    /// The passage index: postings and tables.
    pub passages: u64,
}

impl IndexBytes {
    pub fn total(&self) -> u64 {
        self.grams + self.passages
    }
}

/// Bytes of a `grams` key.
const GRAM_DB_KEY: usize = 48;

/// Largest chunk: one chunk with its key fills a 4 KiB leaf page (as content chunks).
pub const GRAM_CHUNK_BYTES: usize = 4096 - 4 - 8 - GRAM_DB_KEY;

/// A complete index of one root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GramHead {
    /// Policy fingerprint the indexed text was redacted under.
    pub fingerprint: [u8; 32],
    /// Build generation (unique per build of this root).
    pub generation: u64,
    pub segments: u32,
    /// `crate::search_index::INDEX_FORMAT` of the build.
    pub format: u32,
}

fn head_key(root: &[u8; 32], fingerprint: &[u8; 32]) -> [u8; 64] {
    let mut key = [0u8; 64];
    key[..32].copy_from_slice(root);
    key[32..].copy_from_slice(fingerprint);
    key
}

/// The first and last head keys of a root.
fn head_range(root: &[u8; 32]) -> ([u8; 64], [u8; 64]) {
    (head_key(root, &[0; 32]), head_key(root, &[0xff; 32]))
}

fn data_key(root: &[u8; 32], generation: u64, segment: u32, part: u32) -> [u8; GRAM_DB_KEY] {
    let mut key = [0u8; GRAM_DB_KEY];
    key[..32].copy_from_slice(root);
    key[32..40].copy_from_slice(&generation.to_be_bytes());
    key[40..44].copy_from_slice(&segment.to_be_bytes());
    key[44..].copy_from_slice(&part.to_be_bytes());
    key
}

/// The part number of a [`data_key`].
fn part_of(key: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(
        key.get(44..GRAM_DB_KEY)?.try_into().ok()?,
    ))
}

impl Cache {
    /// The root's complete index under policy `fingerprint`, if any.
    pub fn gram_head(&self, root: &[u8; 32], fingerprint: &[u8; 32]) -> Option<GramHead> {
        let bytes = self.read_value(GRAM_HEADS, &head_key(root, fingerprint))?;
        record::decode(&bytes)
    }

    /// Stores one segment of a build: its file table and its postings, each in chunks.
    /// False when the database refused (the build is then abandoned).
    pub fn put_gram_segment(
        &self,
        root: &[u8; 32],
        generation: u64,
        segment: u32,
        file_table: &[u8],
        postings: &[u8],
    ) -> bool {
        let Some(db) = self.reader() else {
            return false;
        };
        let written = (|| -> Result<(), redb::Error> {
            let mut w = db.begin_write()?;
            // Unreachable until `publish_grams`, whose durable commit persists it: a
            // crash before that loses only parts no head names.
            w.set_durability(redb::Durability::None)?;
            {
                let mut t = w.open_table(GRAMS)?;
                for (part, blob) in [
                    (GramPart::Postings, postings),
                    (GramPart::FileTable, file_table),
                ] {
                    put_chunks(&mut t, root, generation, segment, part, blob)?;
                }
            }
            w.commit()?;
            Ok(())
        })();
        self.wrote(written)
    }

    /// Stores one segment's passage index, if `head` is still the root's index under its
    /// policy (checked in the writing transaction, so a newer publish cannot be raced
    /// into keeping a dead generation's parts). False when it is not, or the database
    /// refused.
    pub fn put_passage_segment(
        &self,
        root: &[u8; 32],
        head: &GramHead,
        segment: u32,
        postings: &[u8],
        table: &[u8],
    ) -> bool {
        let Some(db) = self.reader() else {
            return false;
        };
        let mut current = false;
        let written = (|| -> Result<(), redb::Error> {
            let w = db.begin_write()?;
            {
                let heads = w.open_table(GRAM_HEADS)?;
                let now = heads
                    .get(head_key(root, &head.fingerprint).as_slice())?
                    .and_then(|g| record::decode::<GramHead>(g.value()));
                current = now.is_some_and(|h| h.generation == head.generation);
            }
            if current {
                let mut t = w.open_table(GRAMS)?;
                for (part, blob) in [
                    (GramPart::PassagePostings, postings),
                    (GramPart::PassageTable, table),
                ] {
                    // Parts of an earlier attempt (another format) must not trail the new ones.
                    let (first, last) = (
                        data_key(root, head.generation, segment, part.base()),
                        data_key(root, head.generation, segment, part.last()),
                    );
                    t.retain_in::<&[u8], _>(first.as_slice()..=last.as_slice(), |_, _| false)?;
                    put_chunks(&mut t, root, head.generation, segment, part, blob)?;
                }
            }
            w.commit()?;
            Ok(())
        })();
        self.wrote(written) && current
    }

    /// Makes `head` the root's index under its policy, drops the heads of the root's
    /// other policies that are not served any more, and every generation of the root no
    /// remaining head names (older builds, unfinished ones), in one transaction.
    pub fn publish_grams(&self, root: &[u8; 32], head: &GramHead) -> bool {
        let Some(db) = self.reader() else {
            return false;
        };
        let written = (|| -> Result<(), redb::Error> {
            let w = db.begin_write()?;
            {
                let mut heads = w.open_table(GRAM_HEADS)?;
                heads.insert(
                    head_key(root, &head.fingerprint).as_slice(),
                    record::encode(head).as_slice(),
                )?;
                let (first, last) = head_range(root);
                let mut live = Vec::new();
                heads.retain_in::<&[u8], _>(first.as_slice()..=last.as_slice(), |k, v| {
                    let fingerprint: [u8; 32] = k[32..].try_into().unwrap_or([0; 32]);
                    let keep =
                        fingerprint == head.fingerprint || self.is_served(root, &fingerprint);
                    if let (true, Some(kept)) = (keep, record::decode::<GramHead>(v)) {
                        live.push(kept.generation);
                    }
                    keep
                })?;
                let mut t = w.open_table(GRAMS)?;
                let (first, last) = (
                    data_key(root, 0, 0, 0),
                    data_key(root, u64::MAX, u32::MAX, u32::MAX),
                );
                t.retain_in::<&[u8], _>(first.as_slice()..=last.as_slice(), |k, _| {
                    let generation = u64::from_be_bytes(k[32..40].try_into().unwrap_or([0; 8]));
                    live.contains(&generation)
                })?;
            }
            w.commit()?;
            Ok(())
        })();
        self.wrote(written)
    }

    /// Drops the root's index (a forgotten root).
    pub(super) fn drop_grams(&self, root: &[u8; 32]) {
        let Some(db) = self.reader() else { return };
        let written = (|| -> Result<(), redb::Error> {
            let w = db.begin_write()?;
            {
                let (first, last) = head_range(root);
                w.open_table(GRAM_HEADS)?
                    .retain_in::<&[u8], _>(first.as_slice()..=last.as_slice(), |_, _| false)?;
                let (first, last) = (
                    data_key(root, 0, 0, 0),
                    data_key(root, u64::MAX, u32::MAX, u32::MAX),
                );
                w.open_table(GRAMS)?
                    .retain_in::<&[u8], _>(first.as_slice()..=last.as_slice(), |_, _| false)?;
            }
            w.commit()?;
            Ok(())
        })();
        self.wrote(written);
    }

    /// One blob of one segment, read whole (its chunks joined): the file table or the
    /// passage table. `None` when absent.
    pub fn gram_part(
        &self,
        root: &[u8; 32],
        generation: u64,
        segment: u32,
        part: GramPart,
    ) -> Option<Vec<u8>> {
        let db = self.reader()?;
        let found = (|| -> Result<Option<Vec<u8>>, redb::Error> {
            let r = db.begin_read()?;
            let t = r.open_table(GRAMS)?;
            let first = data_key(root, generation, segment, part.base());
            let last = data_key(root, generation, segment, part.last());
            let mut table = Vec::new();
            for (n, item) in t
                .range::<&[u8]>(first.as_slice()..=last.as_slice())?
                .enumerate()
            {
                let (k, v) = item?;
                if part_of(k.value()) != Some(part.base() + n as u32) {
                    return Ok(None);
                }
                table.extend_from_slice(v.value());
            }
            Ok((!table.is_empty()).then_some(table))
        })();
        self.settle(found)
    }

    /// The postings chunks `wanted` (segment, chunk) of the index `head` names, read in
    /// one transaction. `None` when that generation is gone (a newer build was
    /// published), a chunk is missing, or the database failed.
    pub fn gram_chunks(
        &self,
        root: &[u8; 32],
        head: &GramHead,
        wanted: &[(u32, u32)],
    ) -> Option<Vec<Vec<u8>>> {
        let db = self.reader()?;
        let found = (|| -> Result<Option<Vec<Vec<u8>>>, redb::Error> {
            let r = db.begin_read()?;
            // The head first: a generation dropped by a newer publish must not read as
            // "no file holds these grams".
            let heads = r.open_table(GRAM_HEADS)?;
            let current = heads
                .get(head_key(root, &head.fingerprint).as_slice())?
                .and_then(|g| record::decode::<GramHead>(g.value()));
            if current.is_none_or(|h| h.generation != head.generation) {
                return Ok(None);
            }
            let t = r.open_table(GRAMS)?;
            let mut out = Vec::with_capacity(wanted.len());
            for &(segment, chunk) in wanted {
                let key = data_key(root, head.generation, segment, chunk);
                match t.get(key.as_slice())? {
                    Some(value) => out.push(value.value().to_vec()),
                    None => return Ok(None),
                }
            }
            Ok(Some(out))
        })();
        self.settle(found)
    }

    /// Bytes the root's index takes (keys and values of its current generation), for
    /// benches and `status`: the trigram index (postings and file tables) and the passage
    /// index (postings and tables; it grows as the background build completes segments).
    pub fn gram_bytes(&self, root: &[u8; 32], fingerprint: &[u8; 32]) -> Option<IndexBytes> {
        let head = self.gram_head(root, fingerprint)?;
        let db = self.reader()?;
        let counted = (|| -> Result<IndexBytes, redb::Error> {
            let r = db.begin_read()?;
            let t = r.open_table(GRAMS)?;
            let (first, last) = (
                data_key(root, head.generation, 0, 0),
                data_key(root, head.generation, u32::MAX, u32::MAX),
            );
            let mut n = IndexBytes::default();
            for item in t.range::<&[u8]>(first.as_slice()..=last.as_slice())? {
                let (k, v) = item?;
                let bytes = (k.value().len() + v.value().len()) as u64;
                let passage = part_of(k.value()).is_some_and(|p| GramPart::of(p).is_passages());
                *if passage {
                    &mut n.passages
                } else {
                    &mut n.grams
                } += bytes;
            }
            Ok(n)
        })();
        counted.ok()
    }

    fn wrote(&self, written: Result<(), redb::Error>) -> bool {
        match written {
            Ok(()) => true,
            Err(err) => {
                tracing::warn!(error = %err, "search index write failed; searches scan instead");
                false
            }
        }
    }
}

/// Inserts `blob` as the chunks of one part of a segment.
fn put_chunks(
    t: &mut redb::Table<&[u8], &[u8]>,
    root: &[u8; 32],
    generation: u64,
    segment: u32,
    part: GramPart,
    blob: &[u8],
) -> Result<(), redb::Error> {
    for (n, chunk) in blob.chunks(GRAM_CHUNK_BYTES).enumerate() {
        let key = data_key(root, generation, segment, part.base() + n as u32);
        t.insert(key.as_slice(), chunk)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keys_part_number_names_its_blob() {
        let parts = [
            GramPart::Postings,
            GramPart::PassagePostings,
            GramPart::FileTable,
            GramPart::PassageTable,
        ];
        for part in parts {
            for number in [part.base(), part.base() + 7, part.last()] {
                let key = data_key(&[9; 32], 3, 5, number);
                assert_eq!(part_of(&key), Some(number));
                assert_eq!(GramPart::of(number), part);
            }
        }
        assert_eq!(part_of(&[0; 40]), None);
        let passages: Vec<bool> = parts.iter().map(|p| p.is_passages()).collect();
        assert_eq!(passages, [false, true, false, true]);
    }
}
