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
pub fn encode_buckets(pairs: &[(Gram, u32)]) -> Vec<(u16, Vec<u8>)> {
    let mut out: Vec<(u16, Vec<u8>)> = Vec::new();
    let mut i = 0;
    let mut files = Vec::new();
    let mut entry = Vec::new();
    while i < pairs.len() {
        let gram = pairs[i].0;
        files.clear();
        while i < pairs.len() && pairs[i].0 == gram {
            if files.last() != Some(&pairs[i].1) {
                files.push(pairs[i].1);
            }
            i += 1;
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

/// Sorts `(gram, file)` pairs by gram, keeping the order of files within a gram (pairs
/// are made file by file, so that is file order): a stable radix sort in two passes of
/// 12 bits, linear where a comparison sort of a segment's millions of pairs was most
/// of a build's time.
pub fn sort_by_gram(pairs: &mut Vec<(Gram, u32)>) {
    let mut other = vec![(0, 0); pairs.len()];
    for shift in [0u32, 12] {
        let digit = |g: Gram| ((g >> shift) & 0xfff) as usize;
        let mut starts = vec![0usize; 4097];
        for &(g, _) in pairs.iter() {
            starts[digit(g) + 1] += 1;
        }
        for d in 0..4096 {
            starts[d + 1] += starts[d];
        }
        for &pair in pairs.iter() {
            let d = digit(pair.0);
            other[starts[d]] = pair;
            starts[d] += 1;
        }
        std::mem::swap(pairs, &mut other);
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
        let mut pairs = vec![
            (g(b"abc"), 0),
            (g(b"abc"), 7),
            (g(b"abc"), 7),
            (g(b"abc"), 300),
            (g(b"abz"), 2),
            (g(b"xyz"), 100_000),
        ];
        pairs.sort_unstable();
        let buckets = encode_buckets(&pairs);
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
        let mut value = encode_buckets(&pairs).remove(0).1;
        value.truncate(value.len() - 1);
        assert!(files_with(Some(&value), 0x616263).is_none());
        assert!(files_with(Some(&[0x63, 0xff]), 0x616263).is_none());
    }

    #[test]
    fn radix_sort_orders_by_gram_and_keeps_file_order() {
        let mut pairs = vec![
            (0xfff_001, 1),
            (0x000_fff, 2),
            (0xfff_001, 0),
            (0x001_000, 3),
            (0x000_fff, 1),
        ];
        let mut expected = pairs.clone();
        expected.sort_by_key(|p| p.0); // stable
        sort_by_gram(&mut pairs);
        assert_eq!(pairs, expected);
    }

    #[test]
    fn intersection_of_sorted_lists() {
        assert_eq!(intersect(&[1, 3, 5, 9], &[0, 3, 4, 9, 10]), vec![3, 9]);
        assert_eq!(intersect(&[], &[1]), Vec::<u32>::new());
    }
}
