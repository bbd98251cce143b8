//! Applying plugged detectors' nominations (spec 5.12) after every other stage: covers
//! in original-text offsets (each span, each occurrence of each alternation value),
//! resolved longest first, and redacted only where the stages left the original
//! characters; what a partly redacted cover leaves is a trimmed remnant.

use super::*;
use crate::engine::plugged::Nominations;
use markers::Segment;

/// The reference's rank of a match no nomination's normal forms name.
const FALLBACK_RANK: usize = 1 << 62;

/// One cover: byte range, category, rank, and the byte length of its longest
/// occurrence (`end - start` unless occurrences merged).
#[derive(Clone, Copy, Debug)]
struct Cover {
    start: usize,
    end: usize,
    category: Category,
    rank: usize,
    longest: usize,
    /// Length in characters of the longest occurrence: the order of spec 5.12.
    chars: usize,
}

/// Category and rank of a matched value: by its `lower()` form, then casefolded.
fn lookup(n: &Nominations, matched: &str) -> (Category, usize) {
    let value = collapse_space(matched);
    n.by_lower
        .get(&value.to_lowercase())
        .or_else(|| n.categories.get(&placeholder::casefold(&value)))
        .copied()
        .unwrap_or((Category::SENSITIVE, FALLBACK_RANK))
}

/// Every occurrence of every alternation value in `hay`, a search restarting one
/// character after each match's start; overlapping or adjacent occurrences of one
/// value merge.
fn occurrences(n: &Nominations, hay: &str) -> Vec<Cover> {
    if n.values.is_empty() {
        return Vec::new();
    }
    let pattern = nominated_pattern(&n.values);
    let mut covers: Vec<Cover> = Vec::new();
    let mut latest: HashMap<(Category, usize), usize> = HashMap::new();
    let mut at = 0;
    while let Some((start, end)) = pattern.find_at(hay, at) {
        at = start + hay[start..].chars().next().map_or(1, char::len_utf8);
        let (category, rank) = lookup(n, &hay[start..end]);
        let chars = hay[start..end].chars().count();
        if let Some(&i) = latest.get(&(category, rank))
            && start <= covers[i].end
        {
            let c = &mut covers[i];
            c.end = c.end.max(end);
            if end - start > c.longest {
                (c.longest, c.chars) = (end - start, chars);
            }
            continue;
        }
        latest.insert((category, rank), covers.len());
        covers.push(Cover {
            start,
            end,
            category,
            rank,
            longest: end - start,
            chars,
        });
        if at > hay.len() {
            break;
        }
    }
    covers
}

/// Each cover in order (longest, then rank, then start) claims what no earlier one
/// claimed: `(cover, its claimed ranges)` for every cover that claimed something.
fn claim(mut covers: Vec<Cover>) -> Vec<(Cover, Vec<(usize, usize)>)> {
    let mut points: Vec<usize> = covers.iter().flat_map(|c| [c.start, c.end]).collect();
    points.sort_unstable();
    points.dedup();
    // parent[k] == k while the interval from points[k] to points[k+1] is unclaimed.
    let mut parent: Vec<usize> = (0..points.len()).collect();
    fn find(parent: &mut [usize], mut i: usize) -> usize {
        let mut root = i;
        while parent[root] != root {
            root = parent[root];
        }
        while parent[i] != root {
            (parent[i], i) = (root, parent[i]);
        }
        root
    }
    covers.sort_by_key(|c| (std::cmp::Reverse(c.chars), c.rank, c.start));
    let mut out = Vec::new();
    for c in covers {
        let last = points.binary_search(&c.end).expect("an end point");
        let mut i = points.binary_search(&c.start).expect("a start point");
        let mut gaps = Vec::new();
        while i < last {
            if parent[i] != i {
                i = find(&mut parent, i);
                continue;
            }
            let gap_start = points[i];
            while i < last && parent[i] == i {
                parent[i] = i + 1;
                i += 1;
            }
            gaps.push((gap_start, points[i]));
        }
        if !gaps.is_empty() {
            out.push((c, gaps));
        }
    }
    out
}

/// Whether a remnant's edge character is trimmed: ASCII whitespace or punctuation.
fn trimmed(c: char) -> bool {
    c.is_ascii_whitespace() || c.is_ascii_punctuation() || c == '\x0b'
}

/// The pieces of the working text to redact: `(start, end, category, remnant)`.
pub(super) fn pieces(
    n: &Nominations,
    original: &str,
    segments: &[Segment],
) -> Vec<(usize, usize, Category, bool)> {
    let mut covers: Vec<Cover> = n
        .spans
        .iter()
        .map(|&(start, end, category, rank)| Cover {
            start,
            end,
            category,
            rank,
            longest: end - start,
            chars: original[start..end].chars().count(),
        })
        .collect();
    covers.extend(occurrences(n, original));
    let seg_at = |at: usize| {
        segments
            .partition_point(|s| s.original.0 <= at)
            .saturating_sub(1)
    };
    let mut out = Vec::new();
    for (c, gaps) in claim(covers) {
        let seg = &segments[seg_at(c.start)];
        if c.longest == c.end - c.start
            && seg.raw
            && gaps == [(c.start, c.end)]
            && seg.original.0 <= c.start
            && c.end <= seg.original.1
        {
            let shift = |x: usize| x - seg.original.0 + seg.text.0;
            out.push((shift(c.start), shift(c.end), c.category, false));
            continue;
        }
        for (gap_start, gap_end) in gaps {
            let mut i = seg_at(gap_start);
            while let Some(seg) = segments.get(i).filter(|s| s.original.0 < gap_end) {
                i += 1;
                let (from, to) = (gap_start.max(seg.original.0), gap_end.min(seg.original.1));
                if seg.raw && from < to {
                    let shift = |x: usize| x - seg.original.0 + seg.text.0;
                    out.push((shift(from), shift(to), c.category, true));
                }
            }
        }
    }
    out
}

/// Replaces `pieces` of `text` with placeholders; remnants lose ASCII whitespace and
/// punctuation at their edges first, and one with nothing left stays as it is.
pub(super) fn substitute(
    text: &str,
    mut pieces: Vec<(usize, usize, Category, bool)>,
    mut redact: impl FnMut(Category, &str) -> String,
) -> Option<String> {
    if pieces.is_empty() {
        return None;
    }
    pieces.sort_by_key(|p| (p.0, p.1));
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for (start, end, category, remnant) in pieces {
        let mut piece = &text[start.max(pos).min(end)..end];
        if remnant {
            piece = piece.trim_matches(trimmed);
        }
        if piece.is_empty() {
            continue;
        }
        // `piece` is a sub-slice of `text`: its offset there.
        let at = piece.as_ptr() as usize - text.as_ptr() as usize;
        out.push_str(&text[pos..at]);
        out.push_str(&redact(category, piece));
        pos = at + piece.len();
    }
    out.push_str(&text[pos..]);
    Some(out)
}
