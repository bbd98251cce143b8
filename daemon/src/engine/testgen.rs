//! Generated texts for the tests that compare a fast matcher with its plain pattern:
//! deterministic (a fixed linear congruential sequence), so a failure always repeats.

/// A picker of indexes below `n` from the fixed sequence started at `seed`.
pub fn picker(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize % n
    }
}

/// `count` texts, each one to `max_pieces` pieces drawn from `pieces`.
pub fn texts(pieces: &[&str], count: usize, max_pieces: usize, seed: u64) -> Vec<String> {
    let mut next = picker(seed);
    (0..count)
        .map(|_| {
            (0..1 + next(max_pieces))
                .map(|_| pieces[next(pieces.len())])
                .collect()
        })
        .collect()
}
