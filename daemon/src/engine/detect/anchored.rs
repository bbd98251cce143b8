//! Running a regex only where it can match: near anchors found cheaply, or anchored at
//! known starts, with the same captures as a search of the whole text.

use super::lexical::{ceil_boundary, floor_boundary};

/// Calls `found` with the captures of every match of `re` in `text`, as iterating
/// `re.captures_iter(text)` would, while running the regex only on the regions within
/// `before` bytes ahead of and `after` bytes behind an anchor (offsets ascending).
///
/// Exact when every match of `re` lies in such a region of one of its anchors: the regions
/// are then searched in order, each from where the previous match ended, and a search
/// limited to a range still sees the whole text for `^`, `$`, `\b` and the like. The PII
/// patterns without a literal (IPs, SSNs) read every byte of a text in the lazy DFA; their
/// anchors (a `.`, `:` or `-` between the right kinds of bytes) are found with memchr.
pub fn captures_near(
    re: &regex_automata::meta::Regex,
    text: &str,
    anchors: impl Iterator<Item = usize>,
    (before, after): (usize, usize),
    mut found: impl FnMut(&regex_automata::util::captures::Captures),
) {
    let mut caps = re.create_captures();
    let mut resume = 0; // end of the last match
    let mut search = |from: usize, to: usize| {
        let mut at = floor_boundary(text, from.max(resume));
        let to = ceil_boundary(text, to);
        while at < to {
            re.search_captures(&regex_automata::Input::new(text).range(at..to), &mut caps);
            let Some(m) = caps.get_match() else { break };
            found(&caps);
            resume = m.end();
            // The anchored patterns never match empty; step past one anyway.
            at = if m.is_empty() {
                ceil_boundary(text, m.end() + 1)
            } else {
                m.end()
            };
        }
    };
    let mut region: Option<(usize, usize)> = None;
    for p in anchors {
        let (a, b) = (p.saturating_sub(before), (p + after).min(text.len()));
        match region {
            Some((ra, rb)) if a <= rb => region = Some((ra, rb.max(b))),
            _ => {
                if let Some((ra, rb)) = region {
                    search(ra, rb);
                }
                region = Some((a, b));
            }
        }
    }
    if let Some((ra, rb)) = region {
        search(ra, rb);
    }
}

/// Calls `found` with the captures of every match of `re` in `text`, as iterating
/// `re.captures_iter(text)` would, while searching only anchored at the offsets `starts`
/// (ascending; offsets inside an earlier match are skipped).
///
/// Exact when every match of `re` starts at one of `starts`: from any point, the leftmost
/// match then starts at the first remaining offset where an anchored search matches, and
/// an anchored search prefers among the matches there as the unanchored one does.
pub fn captures_at_starts(
    re: &regex_automata::meta::Regex,
    text: &str,
    starts: impl IntoIterator<Item = usize>,
    mut found: impl FnMut(&regex_automata::util::captures::Captures),
) {
    let mut caps = re.create_captures();
    let mut resume = 0; // end of the last match
    for at in starts {
        if at < resume || !text.is_char_boundary(at) {
            continue;
        }
        let input = regex_automata::Input::new(text)
            .range(at..)
            .anchored(regex_automata::Anchored::Yes);
        re.search_captures(&input, &mut caps);
        if let Some(m) = caps.get_match() {
            found(&caps);
            resume = m.end().max(at + 1);
        }
    }
}
