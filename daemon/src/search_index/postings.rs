//! The on-disk shape of postings: for one segment, the files (by their number in the
//! segment) that hold each gram, grouped in buckets of the 256 grams that share their
//! first two bytes, so that a lookup reads one small value and a segment is a few
//! thousand keys, not millions.
//!
//! A bucket value is a run of entries sorted by the gram's last byte:
//! `[last byte][entry length: varint][file count: varint][first file: varint][gaps: varint…]`.
//! Anything that does not decode is treated as "unknown", which callers answer by
//! scanning: a damaged index can cost time, never a result.

use super::plan::Gram;

/// The bucket (key part) of a gram.
pub fn bucket_of(gram: Gram) -> u16 {
    (gram >> 8) as u16
}

pub(super) fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    for shift in (0..35).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u32::from(b & 0x7f).checked_shl(shift)?;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Encodes the postings of one segment from `(gram, file)` pairs sorted by gram then
/// file (duplicates allowed): one value per bucket, in bucket order.
pub fn encode_buckets(pairs: impl IntoIterator<Item = (Gram, u32)>) -> Vec<(u16, Vec<u8>)> {
    let mut out: Vec<(u16, Vec<u8>)> = Vec::new();
    let mut pairs = pairs.into_iter().peekable();
    let mut files = Vec::new();
    let mut entry = Vec::new();
    while let Some(&(gram, _)) = pairs.peek() {
        files.clear();
        while let Some((_, file)) = pairs.next_if(|p| p.0 == gram) {
            if files.last() != Some(&file) {
                files.push(file);
            }
        }
        entry.clear();
        push_varint(&mut entry, files.len() as u32);
        let mut previous = 0;
        for (k, &file) in files.iter().enumerate() {
            push_varint(&mut entry, if k == 0 { file } else { file - previous });
            previous = file;
        }
        let bucket = bucket_of(gram);
        if out.last().is_none_or(|(b, _)| *b != bucket) {
            out.push((bucket, Vec::new()));
        }
        let value = &mut out.last_mut().expect("pushed above").1;
        value.push(gram as u8);
        push_varint(value, entry.len() as u32);
        value.extend_from_slice(&entry);
    }
    out
}

/// The sorted files holding `gram`, from its bucket's value (`bucket: None`: no bucket
/// stored, so no file holds it). `None` when the value does not decode.
pub fn files_with(bucket: Option<&[u8]>, gram: Gram) -> Option<Vec<u32>> {
    let Some(value) = bucket else {
        return Some(Vec::new());
    };
    let last = gram as u8;
    let mut at = 0;
    while at < value.len() {
        let byte = value[at];
        at += 1;
        let len = read_varint(value, &mut at)? as usize;
        let end = at.checked_add(len).filter(|&e| e <= value.len())?;
        if byte < last {
            at = end;
            continue;
        }
        if byte > last {
            break;
        }
        let entry = &value[at..end];
        let mut pos = 0;
        let count = read_varint(entry, &mut pos)? as usize;
        let mut files = Vec::with_capacity(count.min(entry.len()));
        let mut file = 0u32;
        for k in 0..count {
            let step = read_varint(entry, &mut pos)?;
            file = if k == 0 {
                step
            } else {
                file.checked_add(step)?
            };
            files.push(file);
        }
        return (pos == entry.len()).then_some(files);
    }
    Some(Vec::new())
}

/// Files a segment numbers at most: a pair's file takes 16 bits of [`GramPairs`].
pub const MAX_SEGMENT_FILES: usize = 1 << 16;

/// A segment's (gram, file) pairs sorted by gram, then file: four bytes a pair where
/// a pair list and its sort buffer took sixteen (the largest buffers of a cold index).
/// A gram is 24 bits and a file number 16 ([`MAX_SEGMENT_FILES`]): pairs are kept in
/// runs by the gram's high 12 bits, each pair its low 12 bits and its file.
pub struct GramPairs {
    /// Where each run starts in `packed`, and the end of the last.
    starts: Vec<usize>,
    packed: Vec<u32>,
}

impl GramPairs {
    /// Sorts the pairs of `files`: each file's distinct grams, by file number (the
    /// number is the place in the list). A file's grams are freed once placed.
    pub fn sort(files: Vec<Vec<Gram>>) -> GramPairs {
        assert!(
            files.len() <= MAX_SEGMENT_FILES,
            "a segment numbers at most 2^16 files"
        );
        let run = |g: Gram| (g >> 12) as usize & 0xfff;
        let mut starts = vec![0usize; 4097];
        for &g in files.iter().flatten() {
            starts[run(g) + 1] += 1;
        }
        for r in 0..4096 {
            starts[r + 1] += starts[r];
        }
        let mut packed = vec![0u32; starts[4096]];
        let mut next = starts.clone();
        for (file, grams) in files.into_iter().enumerate() {
            for g in grams {
                let r = run(g);
                packed[next[r]] = ((g & 0xfff) << 16) | file as u32;
                next[r] += 1;
            }
        }
        // Within a run: by the gram's low 12 bits, files staying in order (they were
        // placed in file order). Two stable 6-bit counting passes through one buffer.
        let mut scratch = Vec::new();
        for r in 0..4096 {
            let run = &mut packed[starts[r]..starts[r + 1]];
            if run.len() < 64 {
                // Pairs are distinct, so any sort of the whole value is this order.
                run.sort_unstable();
                continue;
            }
            scratch.resize(run.len(), 0);
            for shift in [16u32, 22] {
                let digit = |v: u32| ((v >> shift) & 0x3f) as usize;
                let mut at = [0usize; 65];
                for &v in run.iter() {
                    at[digit(v) + 1] += 1;
                }
                for d in 0..64 {
                    at[d + 1] += at[d];
                }
                for &v in run.iter() {
                    let d = digit(v);
                    scratch[at[d]] = v;
                    at[d] += 1;
                }
                run.copy_from_slice(&scratch[..run.len()]);
            }
        }
        GramPairs { starts, packed }
    }

    /// Pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (Gram, u32)> + '_ {
        (0..4096).flat_map(move |r| {
            self.packed[self.starts[r]..self.starts[r + 1]]
                .iter()
                .map(move |&v| (((r as u32) << 12) | (v >> 16), v & 0xffff))
        })
    }

    pub fn len(&self) -> usize {
        self.packed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }
}

/// Intersection of two sorted lists.
pub fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip() {
        let g = |s: &[u8; 3]| (u32::from(s[0]) << 16) | (u32::from(s[1]) << 8) | u32::from(s[2]);
        let mut pairs = [
            (g(b"abc"), 0),
            (g(b"abc"), 7),
            (g(b"abc"), 7),
            (g(b"abc"), 300),
            (g(b"abz"), 2),
            (g(b"xyz"), 100_000),
        ];
        pairs.sort_unstable();
        let buckets = encode_buckets(pairs);
        assert_eq!(buckets.len(), 2);
        let find = |gram| {
            let value = buckets
                .iter()
                .find(|(b, _)| *b == bucket_of(gram))
                .map(|(_, v)| v.as_slice());
            files_with(value, gram).unwrap()
        };
        assert_eq!(find(g(b"abc")), vec![0, 7, 300]);
        assert_eq!(find(g(b"abz")), vec![2]);
        assert_eq!(find(g(b"aby")), Vec::<u32>::new());
        assert_eq!(find(g(b"xyz")), vec![100_000]);
        assert_eq!(find(g(b"qqq")), Vec::<u32>::new());
    }

    #[test]
    fn damaged_values_are_errors_not_answers() {
        let pairs = vec![(0x616263, 5), (0x616263, 9)];
        let mut value = encode_buckets(pairs).remove(0).1;
        value.truncate(value.len() - 1);
        assert!(files_with(Some(&value), 0x616263).is_none());
        assert!(files_with(Some(&[0x63, 0xff]), 0x616263).is_none());
    }

    #[test]
    fn sorted_pairs_are_by_gram_then_file() {
        // Grams at both ends of the 24 bits, a run long enough for the counting passes
        // (and one below it), files up to the last number a segment has.
        let mut files: Vec<Vec<Gram>> = vec![Vec::new(); MAX_SEGMENT_FILES];
        files[0] = vec![0xfff_001, 0x000_fff, 0x001_000];
        files[1] = vec![0x000_fff, 0xfff_001];
        files[2] = vec![0xabc_000];
        for file in (3..MAX_SEGMENT_FILES).step_by(997) {
            files[file] = (0..300)
                .map(|k| 0x123_000 | ((k * 37 + file as u32) & 0xfff))
                .collect();
            files[file].sort_unstable();
            files[file].dedup();
        }
        files[MAX_SEGMENT_FILES - 1] = vec![0xffffff, 0x000000, 0x123_456];
        let mut expected: Vec<(Gram, u32)> = files
            .iter()
            .enumerate()
            .flat_map(|(file, grams)| grams.iter().map(move |&g| (g, file as u32)))
            .collect();
        expected.sort_unstable();
        let sorted = GramPairs::sort(files);
        assert_eq!(sorted.len(), expected.len());
        assert_eq!(sorted.iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn intersection_of_sorted_lists() {
        assert_eq!(intersect(&[1, 3, 5, 9], &[0, 3, 4, 9, 10]), vec![3, 9]);
        assert_eq!(intersect(&[], &[1]), Vec::<u32>::new());
    }
}
