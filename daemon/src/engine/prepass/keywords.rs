//! The shared keyword automaton: every detector's trigger words and every stage's gate
//! words found in one ASCII-case-insensitive pass over a text. What it is not: a search
//! for patterns; it only says which words occur where.

use std::collections::HashMap;

/// Lanes of one keyword scan (see [`KeywordScan::scan_lanes`]).
const LANES: usize = 4;

/// A keyword state id is its transition row's start shifted right by this much.
const ROW_SHIFT: usize = 3;

/// The trigger words of every family, found in one ASCII-case-insensitive pass over a
/// text. Each family used to run its own Aho-Corasick pass; one shared pass costs the
/// same as one of them. The automaton is a dense Aho-Corasick DFA over byte classes,
/// with the states that end a word numbered last, so the loop reads one byte, one class
/// and one transition per byte and compares once (the `aho-corasick` crate's overlapping
/// search took about 20 instructions a byte, this loop about 6).
pub struct KeywordScan {
    /// Byte to class; ASCII capitals share their lower-case letter's class, bytes that
    /// occur in no word are class 0.
    classes: [u8; 256],
    /// Transitions: `trans[(state << ROW_SHIFT) + class]`; a state is its row's start
    /// divided by `1 << ROW_SHIFT` (rows are padded to a multiple of that), so a state
    /// fits 16 bits and the table half the cache it would take with 32-bit states, while
    /// a step still costs one address computation (`lea` scales by 8). The length is a
    /// power of two (zeros after the last state) and a step indexes with `& (len - 1)`:
    /// every index is then in bounds once the table is not empty, a check the compiler
    /// makes once per run instead of once per byte.
    trans: Vec<u16>,
    /// States at or above this id end at least one word.
    first_match: usize,
    /// State ids per state: the row length over `1 << ROW_SHIFT`.
    stride: usize,
    /// For each word-ending state (in order from `first_match`), its range in `out_ids`.
    out_ranges: Vec<(u32, u32)>,
    /// The words ending in a state, its own and those of its suffixes.
    out_ids: Vec<u32>,
    /// Byte length of each word.
    lens: Vec<u32>,
    count: usize,
    /// Words with ids from here on are only reported as present, never located (see
    /// [`KeywordBuilder::add_presence`]).
    located: u32,
}

/// Collects the word lists of the families before the shared automaton is built.
#[derive(Default)]
pub struct KeywordBuilder {
    words: Vec<String>,
    /// Set by the first [`KeywordBuilder::add_presence`]: the ids below are located.
    located: Option<u32>,
}

/// The ids one family's words received in the shared scan: word `i` of the family's list
/// is id `base + i`.
#[derive(Clone, Copy, Debug, Default)]
pub struct WordIds {
    base: u32,
    len: u32,
}

impl WordIds {
    /// The ids of the family's words from index `from` on (a sub-list that is searched
    /// on its own).
    pub fn from(self, from: usize) -> WordIds {
        let from = (from as u32).min(self.len);
        WordIds {
            base: self.base + from,
            len: self.len - from,
        }
    }

    /// The family's word index of a shared id, if the id is one of the family's.
    fn local(self, id: u32) -> Option<usize> {
        id.checked_sub(self.base)
            .filter(|&i| i < self.len)
            .map(|i| i as usize)
    }
}

/// Located words of any families, for a query across them ([`KeywordBuilder::add_shared`]).
#[derive(Clone, Debug, Default)]
pub struct WordSet {
    ids: Vec<u32>,
    /// Bit `id` set for each of `ids`.
    bits: Vec<u64>,
}

impl WordSet {
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    fn contains(&self, id: u32) -> bool {
        self.bits
            .get(id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }
}

impl KeywordBuilder {
    /// Registers a family's words (matched ASCII-case-insensitively, as substrings).
    pub fn add<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordIds {
        assert!(
            self.located.is_none(),
            "located words are registered before presence-only ones"
        );
        self.push(words)
    }

    /// Registers words some of which other families may have registered already: those
    /// keep their ids, so the scan records each occurrence once, and the others are
    /// registered anew. For queries across families ([`KeywordHits::starts_of_set`]).
    /// Repeated words get one id.
    pub fn add_shared<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordSet {
        // Configured terms can number thousands: one map, not a search per word.
        let mut known: HashMap<String, u32> = HashMap::new();
        for (id, w) in self.words.iter().enumerate().rev() {
            known.insert(w.to_ascii_lowercase(), id as u32);
        }
        let (mut ids, mut new) = (Vec::new(), Vec::new());
        for w in words {
            let w = w.as_ref().to_ascii_lowercase();
            if let Some(&id) = known.get(&w) {
                ids.push(id);
            } else {
                known.insert(w.clone(), (self.words.len() + new.len()) as u32);
                new.push(w);
            }
        }
        let added = self.add(new);
        ids.extend(added.base..added.base + added.len);
        ids.sort_unstable();
        ids.dedup();
        let mut bits = vec![0u64; (self.words.len()).div_ceil(64)];
        for &id in &ids {
            bits[id as usize / 64] |= 1 << (id % 64);
        }
        WordSet { ids, bits }
    }

    /// Registers words of which only presence matters (no offsets are recorded, which
    /// keeps frequent words from growing the match list): [`KeywordHits::has`] and
    /// [`KeywordHits::present_words`] answer for them, the offset queries never list them.
    pub fn add_presence<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordIds {
        self.located.get_or_insert(self.words.len() as u32);
        self.push(words)
    }

    fn push<S: AsRef<str>>(&mut self, words: impl IntoIterator<Item = S>) -> WordIds {
        let base = self.words.len();
        self.words
            .extend(words.into_iter().map(|w| w.as_ref().to_owned()));
        WordIds {
            base: base as u32,
            len: (self.words.len() - base) as u32,
        }
    }

    /// Builds the shared automaton; `None` when its states do not fit 16-bit ids (about
    /// 6,500 states with the built-in families' byte classes, which take 1,900 of them).
    pub fn build(self) -> Option<KeywordScan> {
        let words: Vec<Vec<u8>> = self
            .words
            .iter()
            .map(|w| w.as_bytes().to_ascii_lowercase())
            .collect();
        assert!(
            words.iter().all(|w| !w.is_empty()),
            "keywords are not empty"
        );
        let mut classes = [0u8; 256];
        let mut class_count: u32 = 1;
        for w in &words {
            for &b in w {
                if classes[b as usize] == 0 {
                    classes[b as usize] =
                        u8::try_from(class_count).expect("fewer than 256 classes");
                    class_count += 1;
                }
            }
        }
        for b in b'A'..=b'Z' {
            classes[b as usize] = classes[b.to_ascii_lowercase() as usize];
        }
        let width = (class_count as usize).next_multiple_of(1 << ROW_SHIFT);
        let stride = width >> ROW_SHIFT;
        // The trie: `goto[node * width + class]`, 0 for no child (the root is no child).
        let mut goto: Vec<u32> = vec![0; width];
        let mut outputs: Vec<Vec<u32>> = vec![Vec::new()];
        for (id, w) in words.iter().enumerate() {
            let mut node = 0usize;
            for &b in w {
                let slot = node * width + classes[b as usize] as usize;
                if goto[slot] == 0 {
                    goto[slot] = outputs.len() as u32;
                    outputs.push(Vec::new());
                    goto.extend(std::iter::repeat_n(0, width));
                }
                node = goto[slot] as usize;
            }
            outputs[node].push(id as u32);
        }
        // Breadth first: failure links, full transitions, and each state's outputs joined
        // with those of its failure state (already complete, being shallower).
        let states = outputs.len();
        let mut trans = vec![0u32; states * width];
        let mut fail = vec![0usize; states];
        let mut queue = std::collections::VecDeque::new();
        for c in 0..width {
            let child = goto[c] as usize;
            trans[c] = child as u32;
            if child != 0 {
                queue.push_back(child);
            }
        }
        while let Some(u) = queue.pop_front() {
            for c in 0..width {
                let child = goto[u * width + c] as usize;
                let via_fail = trans[fail[u] * width + c];
                if child == 0 {
                    trans[u * width + c] = via_fail;
                } else {
                    fail[child] = via_fail as usize;
                    let inherited = outputs[via_fail as usize].clone();
                    outputs[child].extend(inherited);
                    trans[u * width + c] = child as u32;
                    queue.push_back(child);
                }
            }
        }
        // Renumber: states without output first (the root stays 0), word-ending ones last.
        let mut order: Vec<usize> = (0..states).filter(|&s| outputs[s].is_empty()).collect();
        let first_match_index = order.len();
        order.extend((0..states).filter(|&s| !outputs[s].is_empty()));
        let mut new_id = vec![0u16; states];
        for (n, &old) in order.iter().enumerate() {
            new_id[old] = u16::try_from((n * width) >> ROW_SHIFT).ok()?;
        }
        let mut dense = vec![0u16; states * width];
        let mut out_ranges = Vec::new();
        let mut out_ids = Vec::new();
        for (n, &old) in order.iter().enumerate() {
            for c in 0..width {
                dense[n * width + c] = new_id[trans[old * width + c] as usize];
            }
            if n >= first_match_index {
                let start = out_ids.len() as u32;
                out_ids.extend(&outputs[old]);
                out_ranges.push((start, out_ids.len() as u32));
            }
        }
        dense.resize(dense.len().next_power_of_two(), 0);
        Some(KeywordScan {
            classes,
            trans: dense,
            first_match: (first_match_index * width) >> ROW_SHIFT,
            stride,
            out_ranges,
            out_ids,
            lens: words.iter().map(|w| w.len() as u32).collect(),
            count: words.len(),
            located: self.located.unwrap_or(words.len() as u32),
        })
    }
}

impl KeywordScan {
    /// One step of the automaton: the state after reading byte `b` in `state`. A closure
    /// over the table, its mask and the classes, made once per loop so they stay in
    /// registers.
    #[inline(always)]
    fn stepper(&self) -> impl Fn(usize, u8) -> usize + '_ {
        let (trans, classes) = (&self.trans[..], &self.classes);
        let mask = trans.len() - 1;
        move |state, b| {
            usize::from(trans[((state << ROW_SHIFT) + usize::from(classes[usize::from(b)])) & mask])
        }
    }

    /// Runs the automaton from `state` over `bytes[pos..]` up to and including the next
    /// byte that ends a word: `(position after it, state)`, or `(bytes.len(), a state
    /// that ends no word)`. Kept out of line so the loop holds everything in registers.
    #[inline(never)]
    fn run(&self, bytes: &[u8], mut pos: usize, mut state: usize) -> (usize, usize) {
        let (step, first_match) = (self.stepper(), self.first_match);
        while let Some(&[b0, b1, b2, b3]) = bytes.get(pos..pos + 4) {
            state = step(state, b0);
            if state >= first_match {
                return (pos + 1, state);
            }
            state = step(state, b1);
            if state >= first_match {
                return (pos + 2, state);
            }
            state = step(state, b2);
            if state >= first_match {
                return (pos + 3, state);
            }
            state = step(state, b3);
            pos += 4;
            if state >= first_match {
                return (pos, state);
            }
        }
        while pos < bytes.len() {
            state = step(state, bytes[pos]);
            pos += 1;
            if state >= first_match {
                return (pos, state);
            }
        }
        (pos, state)
    }

    /// [`KeywordScan::run`] for four lanes in lock step until any lane ends a word or the
    /// shortest lane runs out: the lanes' positions and states after the last step.
    #[inline(never)]
    fn run_lanes(
        &self,
        lanes: [&[u8]; LANES],
        pos: [usize; LANES],
        [mut s0, mut s1, mut s2, mut s3]: [usize; LANES],
    ) -> ([usize; LANES], [usize; LANES]) {
        let (step, first_match) = (self.stepper(), self.first_match);
        let steps = (0..LANES)
            .map(|i| lanes[i].len() - pos[i])
            .min()
            .unwrap_or(0);
        let [a, b, c, d] = std::array::from_fn(|i| &lanes[i][pos[i]..pos[i] + steps]);
        let mut done = steps;
        let bytes = a.iter().zip(b).zip(c).zip(d);
        for (k, (((&x0, &x1), &x2), &x3)) in bytes.enumerate() {
            s0 = step(s0, x0);
            s1 = step(s1, x1);
            s2 = step(s2, x2);
            s3 = step(s3, x3);
            if (s0 >= first_match) | (s1 >= first_match) | (s2 >= first_match) | (s3 >= first_match)
            {
                done = k + 1;
                break;
            }
        }
        (pos.map(|p| p + done), [s0, s1, s2, s3])
    }

    /// Every occurrence of every registered word in `text`.
    #[inline(never)] // one frame per family in profiles
    pub fn scan(&self, text: &str) -> KeywordHits {
        // Below this many bytes per lane, the lanes' set-up costs more than they hide.
        const LANE_BYTES: usize = 64;
        let len = text.len();
        if len < LANES * LANE_BYTES {
            let mut hits = KeywordHits::empty(self.count);
            self.finish(text.as_bytes(), 0, 0, 0, |_| true, &mut hits);
            hits.sort_found_order();
            hits
        } else {
            self.scan_lanes(text, std::array::from_fn(|i| len / LANES * i))
        }
    }

    /// [`KeywordScan::scan`] in lanes that start at `starts` (ascending, the first 0).
    /// Each step depends on the transition loaded by the step before, so one lane waits
    /// on memory most of the time; independent lanes overlap those waits. A lane keeps
    /// the words that start before the next lane's start, running on past it just far
    /// enough to finish them; a lane starts from the root, so it finds exactly the words
    /// that start at or after its start.
    fn scan_lanes(&self, text: &str, starts: [usize; LANES]) -> KeywordHits {
        let bytes = text.as_bytes();
        // One list per lane: each holds starts below the next lane's, so the lists joined
        // in lane order are sorted but for words ending in each other's span.
        let mut lane_hits: [KeywordHits; LANES] = std::array::from_fn(|_| {
            let mut hits = KeywordHits::empty(self.count);
            // About one word in 90 bytes of code; reserving for one in 64 saves regrowing.
            hits.matches.reserve(text.len() / LANES / 64);
            hits
        });
        let longest = self.lens.iter().copied().max().unwrap_or(1) as usize;
        let keep_below: [usize; LANES] =
            std::array::from_fn(|i| starts.get(i + 1).copied().unwrap_or(usize::MAX));
        let lanes: [&[u8]; LANES] = std::array::from_fn(|i| {
            let end = keep_below[i].saturating_add(longest - 1).min(bytes.len());
            &bytes[starts[i]..end.max(starts[i])]
        });
        let (mut pos, mut state) = ([0; LANES], [0; LANES]);
        while (0..LANES).all(|i| pos[i] < lanes[i].len()) {
            (pos, state) = self.run_lanes(lanes, pos, state);
            for i in 0..LANES {
                if state[i] >= self.first_match {
                    self.record(
                        state[i],
                        pos[i],
                        starts[i],
                        |s| s < keep_below[i],
                        &mut lane_hits[i],
                    );
                }
            }
        }
        for i in 0..LANES {
            let keep = |s| s < keep_below[i];
            self.finish(
                lanes[i],
                pos[i],
                state[i],
                starts[i],
                keep,
                &mut lane_hits[i],
            );
        }
        let mut hits = KeywordHits::empty(self.count);
        hits.matches
            .reserve_exact(lane_hits.iter().map(|h| h.matches.len()).sum());
        for lane in lane_hits {
            for (all, found) in hits.present.iter_mut().zip(&lane.present) {
                *all |= found;
            }
            hits.matches.extend(lane.matches);
        }
        hits.sort_found_order();
        hits
    }

    /// Runs one lane from `(pos, state)` to the end of `bytes`, recording every word.
    fn finish(
        &self,
        bytes: &[u8],
        mut pos: usize,
        mut state: usize,
        offset: usize,
        keep: impl Fn(usize) -> bool,
        hits: &mut KeywordHits,
    ) {
        while pos < bytes.len() {
            (pos, state) = self.run(bytes, pos, state);
            if state < self.first_match {
                break;
            }
            self.record(state, pos, offset, &keep, hits);
        }
    }

    /// Records the words that end in word-ending `state` at `end` (lane-relative; the
    /// lane starts at `offset` in the text) and start where `keep` allows.
    fn record(
        &self,
        state: usize,
        end: usize,
        offset: usize,
        keep: impl Fn(usize) -> bool,
        hits: &mut KeywordHits,
    ) {
        let end = offset + end;
        let (from, to) = self.out_ranges[(state - self.first_match) / self.stride];
        for &id in &self.out_ids[from as usize..to as usize] {
            let start = end - self.lens[id as usize] as usize;
            if keep(start) {
                hits.present[id as usize / 64] |= 1 << (id % 64);
                if id < self.located {
                    hits.matches.push((start, end, id));
                }
            }
        }
    }
}

/// Index of `word` in a family's word list; a word missing from its own list is a bug.
pub fn word_index(list: &[&str], word: &str) -> usize {
    list.iter()
        .position(|w| *w == word)
        .expect("a word of the family's list")
}

/// What [`KeywordScan::scan`] found in one text.
pub struct KeywordHits {
    present: Vec<u64>,
    /// (start, end, id), sorted.
    matches: Vec<(usize, usize, u32)>,
}

impl KeywordHits {
    /// No occurrences of any of `count` words.
    fn empty(count: usize) -> KeywordHits {
        KeywordHits {
            present: vec![0u64; count.div_ceil(64)],
            matches: Vec::new(),
        }
    }

    /// Sorts the matches as recorded: by end, so a match is out of place only before
    /// the few that end inside it (every word is short). An insertion sort moves each
    /// just those few places; a general sort cost more than a tenth of the scan.
    fn sort_found_order(&mut self) {
        let m = &mut self.matches;
        for i in 1..m.len() {
            let mut j = i;
            while j > 0 && m[j - 1] > m[j] {
                m.swap(j - 1, j);
                j -= 1;
            }
        }
    }

    /// True when word `i` of the family `ids` occurs.
    pub fn has(&self, ids: WordIds, i: usize) -> bool {
        debug_assert!(i < ids.len as usize);
        let id = ids.base as usize + i;
        self.present[id / 64] & (1 << (id % 64)) != 0
    }

    /// The family's word indices that occur, ascending.
    pub fn present_words(&self, ids: WordIds) -> impl Iterator<Item = usize> + '_ {
        let (base, end) = (ids.base as usize, (ids.base + ids.len) as usize);
        (base / 64..end.div_ceil(64)).flat_map(move |w| {
            let mut bits = self.present[w];
            std::iter::from_fn(move || {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits.wrapping_sub(1);
                (bit < 64).then_some(w * 64 + bit)
            })
            .filter(move |&id| (base..end).contains(&id))
            .map(move |id| id - base)
        })
    }

    /// True when `word`, one of the family's `list` (registered as `ids`), occurs.
    pub fn has_word(&self, ids: WordIds, list: &[&str], word: &str) -> bool {
        self.has(ids, word_index(list, word))
    }

    /// Start offsets of every occurrence of word `i` of the family `ids`, ascending.
    pub fn starts_of(&self, ids: WordIds, i: usize) -> impl Iterator<Item = usize> + '_ {
        let id = ids.base + i as u32;
        // A word that does not occur needs no pass over the matches.
        let matches = if self.has(ids, i) {
            &self.matches[..]
        } else {
            &[]
        };
        matches.iter().filter(move |m| m.2 == id).map(|m| m.0)
    }

    /// Start offsets of every occurrence of the family's `words` (entries of its `list`,
    /// registered as `ids`), ascending, without repeats.
    pub fn starts_of_words(&self, ids: WordIds, list: &[&str], words: &[&str]) -> Vec<usize> {
        // Callers name a handful of words: their indices fit on the stack.
        let mut indices = [0usize; 16];
        if words.len() > indices.len() {
            let indices: Vec<usize> = words.iter().map(|w| word_index(list, w)).collect();
            return self.starts_of_any(ids, &indices);
        }
        for (i, w) in indices.iter_mut().zip(words) {
            *i = word_index(list, w);
        }
        self.starts_of_any(ids, &indices[..words.len()])
    }

    /// Start offsets of every occurrence of the family's words `indices`, ascending,
    /// without repeats.
    pub fn starts_of_any(&self, ids: WordIds, indices: &[usize]) -> Vec<usize> {
        let mut present = indices.iter().copied().filter(|&i| self.has(ids, i));
        let (Some(first), second) = (present.next(), present.next()) else {
            return Vec::new();
        };
        if second.is_none() {
            // One word: its matches, which never share a start.
            return self.starts_of(ids, first).collect();
        }
        // One pass over the matches, which are sorted: repeats are neighbours. The
        // indices are few: a look through them costs less than a table of the family.
        let mut starts: Vec<usize> = Vec::new();
        for &(start, _, id) in &self.matches {
            if ids.local(id).is_some_and(|w| indices.contains(&w)) && starts.last() != Some(&start)
            {
                starts.push(start);
            }
        }
        starts
    }

    /// Start offsets of every occurrence of any of the `set`'s words, ascending, without
    /// repeats.
    pub fn starts_of_set(&self, set: &WordSet) -> Vec<usize> {
        let present = |id: u32| self.present[id as usize / 64] & (1 << (id % 64)) != 0;
        if !set.ids.iter().any(|&id| present(id)) {
            return Vec::new();
        }
        let mut starts: Vec<usize> = Vec::with_capacity(64);
        for &(start, _, id) in &self.matches {
            if set.contains(id) && starts.last() != Some(&start) {
                starts.push(start);
            }
        }
        starts
    }

    /// The family's matches as a leftmost-first, non-overlapping Aho-Corasick search over
    /// its list alone would report them: (start, end, word index), ascending.
    pub fn leftmost_first(&self, ids: WordIds) -> Vec<(usize, usize, usize)> {
        let mut out: Vec<(usize, usize, usize)> = Vec::new();
        if self.present_words(ids).next().is_none() {
            return out; // none of the family's words occurs
        }
        // The family's matches in order, others skipped; at one start, the word listed
        // first wins (the matches are sorted by start, so one start's are adjacent).
        let mut resume = 0;
        let mut pending: Option<(usize, usize, usize)> = None; // (start, end, word index)
        let mut take = |(start, end, w): (usize, usize, usize)| {
            if start >= resume {
                out.push((start, end, w));
                resume = end;
            }
        };
        for &(start, end, id) in &self.matches {
            let Some(w) = ids.local(id) else {
                continue;
            };
            match pending {
                Some((s, _, bw)) if s == start => {
                    if w < bw {
                        pending = Some((start, end, w));
                    }
                }
                _ => {
                    if let Some(p) = pending.replace((start, end, w)) {
                        take(p);
                    }
                }
            }
        }
        if let Some(p) = pending {
            take(p);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared scan reports, per family, what a leftmost-first Aho-Corasick search over
    /// that family's words alone reports, on generated text where words of two families
    /// overlap, nest and repeat.
    #[test]
    fn leftmost_first_per_family_equals_a_family_automaton() {
        let fam_a = ["key", "keys", "ey", "sk", "pass", "password", "s."];
        let fam_b = ["token", "ke", "word", "sess", "session", "k"];
        let pieces = [
            "key", "KEYS", "pass", "word", "tok", "en", "s", ".", " ", "se", "ssion", "x",
        ];
        let mut words = KeywordBuilder::default();
        let a = words.add(fam_a);
        let b = words.add(fam_b);
        let scan = words.build().expect("few words");
        let own = |list: &[&str]| {
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(aho_corasick::MatchKind::LeftmostFirst)
                .build(list)
                .unwrap()
        };
        let (own_a, own_b) = (own(&fam_a), own(&fam_b));
        let mut state = 7u64;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..12 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let hits = scan.scan(&text);
            for (ids, ac, list) in [(a, &own_a, &fam_a[..]), (b, &own_b, &fam_b[..])] {
                let want: Vec<(usize, usize, usize)> = ac
                    .find_iter(&text)
                    .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
                    .collect();
                assert_eq!(hits.leftmost_first(ids), want, "{text:?}");
                for (i, w) in list.iter().enumerate() {
                    let lower = text.to_ascii_lowercase();
                    assert_eq!(hits.has(ids, i), lower.contains(w), "{w} in {text:?}");
                }
            }
        }
    }

    /// The shared automaton reports every occurrence of every word, as the
    /// `aho-corasick` crate's overlapping search does, on generated text with capitals,
    /// non-ASCII words, repeated words and words that are suffixes of others.
    #[test]
    fn keyword_scan_reports_what_aho_corasick_reports() {
        let words = [
            "key",
            "KEYS",
            "ey",
            "pass",
            "password",
            "word",
            "пароль",
            "密码",
            "-by:",
            "ab",
            "b",
            "key",
            "contraseña",
            "aab",
        ];
        let pieces = [
            "key",
            "Key",
            "KEYS",
            "pass",
            "WORD",
            "пароль",
            "密",
            "码",
            "-by:",
            "-BY:",
            "a",
            "b",
            "x",
            " ",
            "ñ",
            "contraseÑa",
            "contraseña",
            "aa",
        ];
        let mut builder = KeywordBuilder::default();
        builder.add(words);
        let scan = builder.build().expect("few words");
        let ac = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(words)
            .unwrap();
        let mut state = 3u64;
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..10 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            let mut want: Vec<(usize, usize, u32)> = ac
                .find_overlapping_iter(&text)
                .map(|m| (m.start(), m.end(), m.pattern().as_u32()))
                .collect();
            want.sort_unstable();
            assert_eq!(scan.scan(&text).matches, want, "{text:?}");
            // Lanes that start anywhere (also inside a word and inside a character).
            for split in 0..=text.len() {
                let two = scan.scan_lanes(&text, [0, split, split, split]);
                assert_eq!(two.matches, want, "{text:?} split at {split}");
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (x, y) = ((state >> 20) as usize % (split + 1), (state >> 40) as usize);
                let y = split + y % (text.len() - split + 1);
                let four = scan.scan_lanes(&text, [0, x, split, y]);
                assert_eq!(four.matches, want, "{text:?} lanes at {x} {split} {y}");
            }
        }
    }

    /// `present_words` lists what `has` says, for families whose ids straddle the 64-bit
    /// words of the presence set; `starts_of_words` merges what `starts_of` says of each
    /// word (words here start where others do: `<0.1` and `<0.12`).
    #[test]
    fn present_words_and_starts_of_words_agree_with_per_word_lookups() {
        let lists: Vec<Vec<String>> = [70, 60, 5, 1]
            .iter()
            .enumerate()
            .map(|(f, &n)| (0..n).map(|i| format!("<{f}.{i}")).collect())
            .collect();
        let mut builder = KeywordBuilder::default();
        let families: Vec<WordIds> = lists.iter().map(|l| builder.add(l)).collect();
        let scan = builder.build().expect("few words");
        let all: Vec<&String> = lists.iter().flatten().collect();
        let mut state = 7u64;
        for round in 0..300 {
            let mut text = String::new();
            for _ in 0..round % 40 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                text.push_str(all[(state >> 33) as usize % all.len()]);
            }
            let hits = scan.scan(&text);
            for (ids, list) in families.iter().zip(&lists) {
                let want: Vec<usize> = (0..list.len()).filter(|&i| hits.has(*ids, i)).collect();
                let got: Vec<usize> = hits.present_words(*ids).collect();
                assert_eq!(got, want, "{text:?}");
                // Starts of a few of the family's words: each word's, merged.
                let names: Vec<&str> = list.iter().map(String::as_str).collect();
                let some: Vec<&str> = names.iter().step_by(3).copied().collect();
                let mut want: Vec<usize> = some
                    .iter()
                    .flat_map(|w| hits.starts_of(*ids, word_index(&names, w)))
                    .collect();
                want.sort_unstable();
                want.dedup();
                assert_eq!(hits.starts_of_words(*ids, &names, &some), want, "{text:?}");
            }
        }
    }
}
