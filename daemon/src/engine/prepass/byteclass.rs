//! Byte classes and the long runs of them in a text.
//!
//! What it is for: the question several gates ask of every text — "is there a run of at
//! least `n` bytes of this class, and where?" (digit runs for cards and phones, base64
//! runs for decoding, the character run a provider token needs). Answering it byte by
//! byte costs a branch per byte that the processor mispredicts at every word edge, which
//! made these gates a large share of the detector layer. Here the class is tested 32
//! bytes at a time (AVX2; a look-up table per byte on CPUs without it) into a 64-bit
//! mask, and runs are found with shifts on the mask.
//!
//! The same 32-bytes-at-a-time tests also make the byte masks of the PII patterns'
//! separator anchors ([`for_each_separator_block`]): five masks in one pass where a
//! `memchr` call per separator cost more.
//!
//! What it is not for: matching. A run is only where a pattern could match; the callers
//! still run their regexes inside it.
//!
//! Written here rather than taken from a crate: `memchr` finds one to three given bytes,
//! `aho-corasick` literals; neither finds runs of a class.

/// ASCII digits.
pub const DIGITS: &[u8] = b"0123456789";

/// ASCII letters and digits.
pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A set of bytes: a lookup table, and the same set as nibble tables for the
/// 32-bytes-at-a-time test (see [`ByteClass::nibbles`]).
pub struct ByteClass {
    table: [bool; 256],
    /// `lo[l]` has bit `h` set when byte `h << 4 | l` (ASCII, `h < 8`) is in the set.
    lo: [u8; 16],
    /// Every byte of 0x80 and above is in the set.
    all_non_ascii: bool,
    /// The set's non-ASCII part is all or nothing, so `lo` and `all_non_ascii` describe
    /// it exactly.
    nibbles_exact: bool,
}

impl ByteClass {
    /// The ASCII bytes of `ascii` plus, when `non_ascii`, every byte of 0x80 and above.
    pub const fn new(ascii: &[u8], non_ascii: bool) -> ByteClass {
        ByteClass::concat(ascii, b"", non_ascii)
    }

    /// The bytes of `a` and of `b`, plus every non-ASCII byte when `non_ascii`.
    pub const fn concat(a: &[u8], b: &[u8], non_ascii: bool) -> ByteClass {
        let mut table = [false; 256];
        let mut i = 0;
        while i < a.len() {
            table[a[i] as usize] = true;
            i += 1;
        }
        let mut i = 0;
        while i < b.len() {
            table[b[i] as usize] = true;
            i += 1;
        }
        if non_ascii {
            let mut c = 0x80;
            while c < 256 {
                table[c] = true;
                c += 1;
            }
        }
        ByteClass::from_table(table)
    }

    /// The bytes `member` accepts.
    pub fn from_fn(member: impl Fn(u8) -> bool) -> ByteClass {
        ByteClass::from_table(std::array::from_fn(|b| member(b as u8)))
    }

    const fn from_table(table: [bool; 256]) -> ByteClass {
        let mut lo = [0u8; 16];
        let mut c = 0;
        while c < 0x80 {
            if table[c] {
                lo[c & 15] |= 1 << (c >> 4);
            }
            c += 1;
        }
        let (mut any, mut all) = (false, true);
        while c < 256 {
            any |= table[c];
            all &= table[c];
            c += 1;
        }
        ByteClass {
            table,
            lo,
            all_non_ascii: all,
            nibbles_exact: all || !any,
        }
    }

    /// Whether `b` is in the set.
    pub fn has(&self, b: u8) -> bool {
        self.table[b as usize]
    }

    /// Whether `b` holds a run of at least `len` of the set's bytes, read a byte at a
    /// time: for short pieces, where the 64-byte masks of [`class_runs`] cost more to set
    /// up than the bytes do to read.
    pub fn has_run_in(&self, b: &[u8], len: usize) -> bool {
        let mut run = 0;
        b.iter().any(|&c| {
            run = if self.has(c) { run + 1 } else { 0 };
            run >= len
        })
    }

    /// Whether every byte of the set is in `other`.
    pub fn is_subset(&self, other: &ByteClass) -> bool {
        self.table.iter().zip(&other.table).all(|(&a, &b)| !a || b)
    }

    /// The set as nibble tables, when they describe it exactly: byte `c` is in the set
    /// when `lo[c & 15] & HIGH_NIBBLE_BIT[c >> 4] != 0`, or `c >= 0x80` and the flag is
    /// set.
    fn nibbles(&self) -> Option<(&[u8; 16], bool)> {
        self.nibbles_exact.then_some((&self.lo, self.all_non_ascii))
    }

    /// Bit `i` set when `chunk[i]` is in the set (`chunk` at most 64 bytes).
    fn mask_scalar(&self, chunk: &[u8]) -> u64 {
        debug_assert!(chunk.len() <= 64);
        chunk
            .iter()
            .enumerate()
            .fold(0, |m, (i, &c)| m | u64::from(self.has(c)) << i)
    }

    /// The first run at or after `from` of at least `probe` (1 to 64) bytes of the set,
    /// as `(start, end)`: maximal, but for a run crossing `from`, which counts from
    /// `from`.
    fn next_run(&self, b: &[u8], from: usize, probe: u32) -> Option<(usize, usize)> {
        #[cfg(target_arch = "x86_64")]
        if let Some((lo, non_ascii)) = self.nibbles()
            && std::is_x86_feature_detected!("avx2")
        {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { simd::next_run(b, from, probe, lo, non_ascii, self) };
        }
        next_run_with(b, from, probe, self, |chunk| self.mask_scalar(chunk))
    }
}

/// [`ByteClass::next_run`] with `mask64` giving the set's mask of 64 bytes; the tail of
/// `b` is read with the table. Inlined into each caller so that the SIMD one runs with
/// its target feature. The run's end is read from masks too: a byte loop to it costs
/// about ten times as much per byte.
#[inline(always)]
fn next_run_with(
    b: &[u8],
    from: usize,
    probe: u32,
    class: &ByteClass,
    mask64: impl Fn(&[u8; 64]) -> u64,
) -> Option<(usize, usize)> {
    let start = next_run_start_with(b, from, probe, class, &mask64)?;
    let mut end = start;
    while let Some(block) = b.get(end..end + 64) {
        let ones = mask64(block.try_into().expect("64 bytes")).trailing_ones();
        end += ones as usize;
        if ones < 64 {
            return Some((start, end));
        }
    }
    // Bits past the tail are clear.
    end += class.mask_scalar(&b[end..]).trailing_ones() as usize;
    Some((start, end))
}

/// The first offset at or after `from` where a run of at least `probe` bytes of the
/// set starts (see [`next_run_with`]).
#[inline(always)]
fn next_run_start_with(
    b: &[u8],
    from: usize,
    probe: u32,
    class: &ByteClass,
    mask64: impl Fn(&[u8; 64]) -> u64,
) -> Option<usize> {
    let rest = b.get(from..)?;
    let mut blocks = rest.chunks_exact(64);
    // Class bytes in a row just before the block (at most `probe`).
    let mut carry = 0u32;
    let mut base = from;
    let check = |mask: u64, base: usize, carry: &mut u32| {
        // A run that began in earlier blocks comes first, then runs inside this one.
        if *carry > 0 && *carry + mask.trailing_ones() >= probe {
            return Some(base - *carry as usize);
        }
        let inside = run_starts(mask, probe);
        if inside != 0 {
            return Some(base + inside.trailing_zeros() as usize);
        }
        *carry = if mask == u64::MAX {
            (*carry + 64).min(probe)
        } else {
            mask.leading_ones()
        };
        None
    };
    for block in blocks.by_ref() {
        let mask = mask64(block.try_into().expect("64 bytes"));
        if let Some(start) = check(mask, base, &mut carry) {
            return Some(start);
        }
        base += 64;
    }
    let tail = blocks.remainder();
    // Bytes past the end are outside the class: a run there ends with the text.
    check(class.mask_scalar(tail), base, &mut carry).filter(|&start| start < b.len())
}

/// The same set of bytes: the nibble tables decide when they describe both sets, the
/// full tables otherwise.
impl PartialEq for ByteClass {
    fn eq(&self, other: &ByteClass) -> bool {
        match (self.nibbles(), other.nibbles()) {
            (Some(a), Some(b)) => a == b,
            _ => self.table == other.table,
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// `lo[c & 15] & HIGH_NIBBLE_BIT[c >> 4]`: bit `h` for the ASCII high nibbles, none
    /// for the non-ASCII ones.
    const HIGH_NIBBLE_BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 0, 0, 0, 0, 0, 0, 0, 0];

    /// [`super::ByteClass::next_run`] with the masks made 32 bytes at a time.
    #[target_feature(enable = "avx2")]
    pub(super) fn next_run(
        b: &[u8],
        from: usize,
        probe: u32,
        lo: &[u8; 16],
        non_ascii: bool,
        class: &super::ByteClass,
    ) -> Option<(usize, usize)> {
        super::next_run_with(b, from, probe, class, |chunk| mask64(chunk, lo, non_ascii))
    }

    /// The set's mask of 64 bytes, 32 at a time: two table look-ups by nibble
    /// (`vpshufb`, which looks up within each 16-byte lane, so both lanes get the
    /// tables) and one comparison per 32 bytes.
    #[target_feature(enable = "avx2")]
    pub(super) fn mask64(chunk: &[u8; 64], lo: &[u8; 16], non_ascii: bool) -> u64 {
        // SAFETY: both tables are 16 bytes; unaligned loads of them are allowed.
        let (lo, hi) = unsafe {
            (
                _mm256_broadcastsi128_si256(_mm_loadu_si128(lo.as_ptr().cast())),
                _mm256_broadcastsi128_si256(_mm_loadu_si128(HIGH_NIBBLE_BIT.as_ptr().cast())),
            )
        };
        let nibble = _mm256_set1_epi8(0x0f);
        let zero = _mm256_setzero_si256();
        let mut mask = 0u64;
        for (k, part) in chunk.chunks_exact(32).enumerate() {
            // SAFETY: `part` is 32 bytes.
            let v = unsafe { _mm256_loadu_si256(part.as_ptr().cast()) };
            let low = _mm256_shuffle_epi8(lo, _mm256_and_si256(v, nibble));
            let high = _mm256_shuffle_epi8(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
            let outside = _mm256_cmpeq_epi8(_mm256_and_si256(low, high), zero);
            let mut bits = !(_mm256_movemask_epi8(outside) as u32);
            if non_ascii {
                bits |= _mm256_movemask_epi8(v) as u32;
            }
            mask |= u64::from(bits) << (32 * k);
        }
        mask
    }

    /// [`super::for_each_separator_block`] with the masks made 32 bytes at a time.
    #[target_feature(enable = "avx2")]
    pub(super) fn for_each_separator_block(
        b: &[u8],
        mut f: impl FnMut(usize, super::SeparatorMasks),
    ) {
        super::separator_blocks_with(b, &mut f, |block| separator_masks(block));
    }

    /// One block's [`super::SeparatorMasks`]: byte comparisons, and unsigned range
    /// tests as `min(v - lo, n) == v - lo`.
    #[target_feature(enable = "avx2")]
    pub(super) fn separator_masks(block: &[u8; 64]) -> super::SeparatorMasks {
        let splat = |c: u8| _mm256_set1_epi8(c as i8);
        let within = |v: __m256i, lo: u8, n: u8| {
            let d = _mm256_sub_epi8(v, splat(lo));
            _mm256_cmpeq_epi8(_mm256_min_epu8(d, splat(n)), d)
        };
        let bits = |v: __m256i| u64::from(_mm256_movemask_epi8(v) as u32);
        let mut m = super::SeparatorMasks::default();
        for (k, part) in block.chunks_exact(32).enumerate() {
            // SAFETY: `part` is 32 bytes.
            let v = unsafe { _mm256_loadu_si256(part.as_ptr().cast()) };
            let shift = 32 * k;
            let colon = _mm256_cmpeq_epi8(v, splat(b':'));
            let digit = within(v, b'0', 9);
            let hex_letter = within(_mm256_or_si256(v, splat(0x20)), b'a', 5);
            m.dot |= bits(_mm256_cmpeq_epi8(v, splat(b'.'))) << shift;
            m.dash |= bits(_mm256_cmpeq_epi8(v, splat(b'-'))) << shift;
            m.colon |= bits(colon) << shift;
            m.digit |= bits(digit) << shift;
            // The sign bit of a byte is set from 0x80 on.
            m.digit_like |= (bits(digit) | bits(v)) << shift;
            let hex_or_colon = _mm256_or_si256(_mm256_or_si256(digit, hex_letter), colon);
            m.hex_or_colon |= bits(hex_or_colon) << shift;
        }
        m
    }
}

/// Bit `i` set when bits `i..i + len` of `mask` are all set (`1 <= len <= 64`; bits
/// past the top count as clear): each step doubles the length of the runs the bits
/// stand for.
fn run_starts(mask: u64, len: u32) -> u64 {
    let (mut y, mut have) = (mask, 1);
    while have < len {
        let step = (len - have).min(have);
        y &= y >> step;
        have += step;
    }
    y
}

/// The maximal runs of `class` bytes in `b` at or after `from` that are at least `min`
/// bytes long (a run that began before `from` counts from `from`), in order.
pub fn class_runs<'a>(
    b: &'a [u8],
    from: usize,
    min: usize,
    class: &'a ByteClass,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let min = min.max(1);
    // Runs of at least `probe` bytes are found in the masks; a longer `min` is then
    // checked on the run itself.
    let probe = min.min(64) as u32;
    let mut floor = from;
    std::iter::from_fn(move || {
        while let Some((start, end)) = class.next_run(b, floor, probe) {
            // `b[end]` is outside the class: the next run starts after it.
            floor = end;
            if end - start >= min {
                return Some((start, end));
            }
        }
        None
    })
}

/// The maximal run of `class` bytes around `b[at]` (itself in the class), not
/// reaching back before `floor`.
pub fn run_extent(b: &[u8], at: usize, floor: usize, class: impl Fn(u8) -> bool) -> (usize, usize) {
    let mut start = at;
    while start > floor && class(b[start - 1]) {
        start -= 1;
    }
    let mut end = at + 1;
    while end < b.len() && class(b[end]) {
        end += 1;
    }
    (start, end)
}

/// Where one 64-byte block holds the bytes the separator anchors of the PII patterns
/// test (SSNs, IPv4 and IPv6 addresses) and the digits the card and IBAN gates start
/// from, one bit per byte.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeparatorMasks {
    pub dot: u64,
    pub dash: u64,
    pub colon: u64,
    /// ASCII digits.
    pub digit: u64,
    /// ASCII digits and every byte of 0x80 and above (which may belong to a digit of
    /// another script, as `\d` reads them).
    pub digit_like: u64,
    /// ASCII hex digits of either case, and `:`.
    pub hex_or_colon: u64,
}

impl SeparatorMasks {
    /// The masks of `block` a byte at a time (CPUs without AVX2, and the tests).
    fn of_scalar(block: &[u8; 64]) -> SeparatorMasks {
        let mut m = SeparatorMasks::default();
        for (i, &c) in block.iter().enumerate() {
            let bit = 1u64 << i;
            let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
            set(&mut m.dot, c == b'.');
            set(&mut m.dash, c == b'-');
            set(&mut m.colon, c == b':');
            set(&mut m.digit, c.is_ascii_digit());
            set(&mut m.digit_like, c.is_ascii_digit() || c >= 0x80);
            set(&mut m.hex_or_colon, c.is_ascii_hexdigit() || c == b':');
        }
        m
    }
}

/// Calls `f(start, masks)` for each 64-byte block of `b` in order, `start` being the
/// block's offset; the last block is padded with zero bytes, which are in no class. One
/// pass answers the three anchor searches that took a `memchr` call per separator
/// (a `.` every few dozen bytes of code).
pub fn for_each_separator_block(b: &[u8], mut f: impl FnMut(usize, SeparatorMasks)) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { simd::for_each_separator_block(b, f) };
    }
    separator_blocks_with(b, &mut f, SeparatorMasks::of_scalar);
}

/// [`for_each_separator_block`] with `masks` making a block's masks; inlined into each
/// caller so that the SIMD one runs with its target feature.
#[inline(always)]
fn separator_blocks_with(
    b: &[u8],
    f: &mut impl FnMut(usize, SeparatorMasks),
    masks: impl Fn(&[u8; 64]) -> SeparatorMasks,
) {
    let mut blocks = b.chunks_exact(64);
    let mut start = 0;
    for block in blocks.by_ref() {
        f(start, masks(block.try_into().expect("64 bytes")));
        start += 64;
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut padded = [0u8; 64];
        padded[..tail.len()].copy_from_slice(tail);
        f(start, masks(&padded));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runs by the definition, one byte at a time.
    fn runs_plainly(b: &[u8], from: usize, min: usize, class: &ByteClass) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut i = from;
        while i < b.len() {
            if !class.has(b[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && class.has(b[i]) {
                i += 1;
            }
            if i - start >= min.max(1) {
                out.push((start, i));
            }
        }
        out
    }

    /// Texts with runs of every length around the block size, at every offset, and
    /// non-ASCII bytes in and between them.
    fn texts() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut seed = 0x9e37_79b9_u32;
        let mut rand = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let alphabet = b"a1Z_-+/ .=\n\xc3\xa9\xe2\x82";
        for len in [0usize, 1, 15, 63, 64, 65, 127, 128, 129, 300, 1000] {
            for _ in 0..20 {
                let mut t = Vec::with_capacity(len);
                while t.len() < len {
                    // Runs of one byte, so long runs of a class occur often.
                    let c = alphabet[rand() as usize % alphabet.len()];
                    let n = 1 + rand() as usize % 90;
                    t.extend(std::iter::repeat_n(c, n.min(len - t.len())));
                    if rand() % 3 == 0 && t.len() < len {
                        t.push(b'x');
                    }
                }
                out.push(t);
            }
        }
        out
    }

    #[test]
    fn runs_equal_the_plain_definition() {
        let classes = [
            ByteClass::concat(ALNUM, b"+/_-", false),
            ByteClass::new(b"0123456789 -", true),
            ByteClass::new(b"a", false),
            ByteClass::from_fn(|c| c == b'x' || c == 0xc3), // part of the non-ASCII bytes
        ];
        for class in &classes {
            for t in texts() {
                for min in [1, 2, 5, 13, 20, 63, 64, 65, 100] {
                    for from in [0, 1, 17, 64, 70] {
                        let from = from.min(t.len());
                        let got: Vec<_> = class_runs(&t, from, min, class).collect();
                        assert_eq!(
                            got,
                            runs_plainly(&t, from, min, class),
                            "min {min} from {from} text {:?}",
                            String::from_utf8_lossy(&t)
                        );
                        // The table path, which CPUs without AVX2 take, finds the same
                        // first run.
                        let probe = min.clamp(1, 64) as u32;
                        let scalar =
                            next_run_with(&t, from, probe, class, |chunk| class.mask_scalar(chunk));
                        assert_eq!(scalar, class.next_run(&t, from, probe));
                    }
                }
            }
        }
    }

    #[test]
    fn classes_are_equal_when_their_sets_are() {
        let hex = ByteClass::new(b"0123456789abcdef", false);
        assert!(hex == ByteClass::from_fn(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert!(hex != ByteClass::new(b"0123456789abcdef", true));
        assert!(hex != ByteClass::new(b"0123456789abcde", false));
        let partial = ByteClass::from_fn(|c| c == b'a' || c == 0xc3);
        assert!(partial == ByteClass::from_fn(|c| c == b'a' || c == 0xc3));
        assert!(partial != ByteClass::from_fn(|c| c == b'a' || c == 0xc4));
        assert!(partial != ByteClass::new(b"a", false));
    }

    #[test]
    fn separator_masks_mark_their_bytes_in_every_block() {
        // Every byte value at every offset of a block, and a padded tail.
        let bytes: Vec<u8> = (0..=255u8).cycle().skip(7).take(64 * 9 + 23).collect();
        let mut blocks = 0;
        for_each_separator_block(&bytes, |start, m| {
            blocks += 1;
            for i in 0..64 {
                let c = bytes.get(start + i).copied().unwrap_or(0);
                let bit = |mask: u64| mask >> i & 1 == 1;
                assert_eq!(bit(m.dot), c == b'.', "{c:#x}");
                assert_eq!(bit(m.dash), c == b'-', "{c:#x}");
                assert_eq!(bit(m.colon), c == b':', "{c:#x}");
                assert_eq!(bit(m.digit_like), c.is_ascii_digit() || c >= 0x80, "{c:#x}");
                assert_eq!(
                    bit(m.hex_or_colon),
                    c.is_ascii_hexdigit() || c == b':',
                    "{c:#x}"
                );
            }
        });
        assert_eq!(blocks, 10);
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            for block in bytes.chunks_exact(64) {
                let block = block.try_into().unwrap();
                // SAFETY: the CPU supports AVX2 (checked just above).
                let simd = unsafe { simd::separator_masks(block) };
                assert_eq!(simd, SeparatorMasks::of_scalar(block));
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn block_masks_equal_the_table() {
        let class = ByteClass::new(b"0123456789.", true);
        let bytes: Vec<u8> = (0..=255u8).cycle().skip(40).take(64 * 4).collect();
        for chunk in bytes.chunks(64) {
            let (lo, non_ascii) = class.nibbles().expect("ASCII class");
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU supports AVX2 (checked just above).
                let simd = unsafe { simd::mask64(chunk.try_into().unwrap(), lo, non_ascii) };
                assert_eq!(simd, class.mask_scalar(chunk));
            }
        }
        assert!(class.nibbles().is_some());
        assert!(ByteClass::from_fn(|c| c == 0xc3).nibbles().is_none());
    }
}
