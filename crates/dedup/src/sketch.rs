//! Resemblance sketches: the proof behind every near-duplicate verdict.
//!
//! A SimHash distance or a shared title makes two documents *candidates*;
//! it is not evidence that one copies the other (pages sharing a template
//! and a UI vocabulary sit at small distances with different content).
//! Before a page is dropped its resemblance to the kept page (Broder 1997:
//! the Jaccard index of their sets of character 5-grams) is estimated from
//! a [`Sketch`] of each, and only a resemblance of at least
//! `min_similarity` makes a duplicate.
//!
//! The sketch is a one-permutation MinHash (Li, Owen and Zhang 2012) with
//! optimal densification (Shrivastava 2017), keeping 16 bits of each bin
//! (b-bit MinHash, Li and König 2010): 128 bins of 2 bytes, 256 bytes per
//! document (128 once narrowed to 8 bits, as new stores keep them), one
//! hash per shingle. Why this one:
//! - k-permutation MinHash needs k hashes per shingle: 128x the work; the
//!   one-permutation scheme hashes each shingle once, which keeps
//!   fingerprint + sketch above 20 MB/s of Chinese text per core.
//! - Densification fills the bins a short text leaves empty from other
//!   bins in a way both documents agree on, so short help pages still get
//!   an unbiased estimate (plain one-permutation hashing cannot compare
//!   empty bins).
//! - 16 bits per bin make an accidental match 1 in 65,536, negligible next
//!   to the sampling error (standard deviation sqrt(J(1-J)/128), 0.035 at
//!   J = 0.8), and the same bins serve the LSH band index
//!   ([`Sketch::band_keys`]): 4 bins of 16 bits make one 64-bit band key.
//! - A store may keep 8 bits of each bin instead ([`Sketch::narrow`], the
//!   `sketch_bits` setting): 128 bytes less per document, where the sketch
//!   was half of a record. An accidental match is then 1 in 256, which
//!   the estimate subtracts (Li and König's correction); its standard
//!   deviation grows by under 0.5% at J = 0.8, and a band of 4 bins keys
//!   on 32 bits, so a lookup meets an unrelated document with probability
//!   documents / 2^32 (one more candidate the verification rejects). The
//!   low 8 bits of a bin are the 8-bit bin, so sketches of both widths
//!   compare on the 8 they share.
//!
//! Shingles are taken over the text's letters and digits only, lower-cased:
//! whitespace, punctuation and case differ between copies of one text under
//! two templates and carry no content.

use std::cell::RefCell;
use std::fmt;

use crate::hash::fmix64;

/// Bins of a sketch.
pub const SKETCH_BINS: usize = 128;

/// Characters per shingle.
pub const SHINGLE_CHARS: usize = 5;

/// Distinct bin values ([`Sketch::distinct_bins`]) a sketch needs before
/// its resemblance is estimated rather than compared exactly: about 36
/// distinct shingles, a text of some 40 letters. Below it the bins are a
/// handful of minima copied around, and an estimate of 0.75 from them can
/// be chance (issue 36: 127 of 300 random five-letter texts were dropped
/// as copies of one another at 8 bits).
pub const MIN_DISTINCT_BINS: usize = 32;

/// The 16-bit sketch's name in a store's recorded parameters: a store
/// built with another sketch cannot be compared with.
pub const SKETCH_NAME: &str = "oph128x16-char5-alnum-v1";

/// The 8-bit sketch's name ([`Sketch::narrow`]).
pub const SKETCH_NAME_NARROW: &str = "oph128x8-char5-alnum-v1";

/// Bytes a 16-bit sketch's bins take in the store.
pub const SKETCH_BYTES: usize = SKETCH_BINS * 2;

/// Bits kept of each bin: the widths a sketch can have.
pub const SKETCH_WIDTHS: [u32; 2] = [16, 8];

/// The recorded name of the sketch of `bits` bits a bin (16 or 8), and
/// back ([`sketch_bits_of`]).
///
/// ```
/// use simcrawl_dedup::sketch::{sketch_bits_of, sketch_name};
/// assert_eq!(sketch_bits_of(sketch_name(8)), Some(8));
/// assert_eq!(sketch_bits_of(sketch_name(16)), Some(16));
/// ```
pub fn sketch_name(bits: u32) -> &'static str {
    if bits == 8 {
        SKETCH_NAME_NARROW
    } else {
        SKETCH_NAME
    }
}

/// The bits a bin of the sketch named `name` keeps, if it is one of ours.
pub fn sketch_bits_of(name: &str) -> Option<u32> {
    match name {
        SKETCH_NAME => Some(16),
        SKETCH_NAME_NARROW => Some(8),
        _ => None,
    }
}

const SEED_A: u64 = 0x9e37_79b9_7f4a_7c15;
const SEED_B: u64 = 0xc2b2_ae3d_27d4_eb4f;
const SEED_DENSIFY: u64 = 0x1656_67b1_9e37_79f9;
const VALUE_MASK: u64 = (1 << 57) - 1;

/// A document's resemblance sketch and exact-text digest.
///
/// ```
/// use simcrawl_dedup::Sketch;
/// let a = Sketch::of("长江流域今年夏季降雨偏多，防汛形势严峻，各地加强了巡查。").unwrap();
/// let same = Sketch::of("长江流域今年夏季降雨偏多 防汛形势严峻 各地加强了巡查").unwrap();
/// assert_eq!(a.resemblance(&same), 1.0);
/// assert!(a.same_text(&same)); // punctuation and spacing do not count
/// let other = Sketch::of("国家统计局发布十月份工业增加值数据，同比增长百分之五。").unwrap();
/// assert!(a.resemblance(&other) < 0.1);
/// assert!(Sketch::of("，。！ ").is_none()); // nothing to compare
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Sketch {
    bins: [u16; SKETCH_BINS],
    digest: u128,
    /// Bits kept of each bin: 16, or 8 after [`Sketch::narrow`] (the bins
    /// above them are zero).
    bits: u8,
}

impl fmt::Debug for Sketch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sketch {{ digest: {:032x}, bins: ", self.digest)?;
        for b in &self.bins[..4] {
            write!(f, "{b:04x}")?;
        }
        write!(f, ".. }}")
    }
}

/// A streaming 128-bit digest of the normalized characters: two
/// independently seeded multiply-xor chains, finalized. Not cryptographic;
/// a collision needs two texts that agree on 128 well-mixed bits.
struct TextDigest {
    a: u64,
    b: u64,
    n: u64,
}

impl TextDigest {
    /// The digest before any char ([`Sketch::of`] keeps the same sums in
    /// locals; the reference sketch in the tests uses these).
    #[cfg(test)]
    fn new() -> Self {
        TextDigest {
            a: SEED_A,
            b: SEED_B,
            n: 0,
        }
    }

    #[cfg(test)]
    fn push(&mut self, c: u32) {
        self.a = (self.a ^ u64::from(c))
            .wrapping_mul(0x0000_0100_0000_01b3)
            .rotate_left(29);
        self.b = (self.b ^ u64::from(c).wrapping_mul(0xff51_afd7_ed55_8ccd)).rotate_left(31);
        self.n += 1;
    }

    fn finish(&self) -> u128 {
        let hi = fmix64(self.a ^ self.n);
        let lo = fmix64(self.b ^ fmix64(self.n ^ SEED_DENSIFY));
        (u128::from(hi) << 64) | u128::from(lo)
    }
}

/// What [`kept_chars`] keeps of an ASCII byte: its lower case when it is a
/// letter or digit, else 0.
const ASCII_KEPT: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() {
            t[b] = c.to_ascii_lowercase();
        }
        b += 1;
    }
    t
};

/// The letters and digits of `text`, lower-cased, as code points (the
/// chars sketches and outlines are made of, [`kept_chars`]), handed to `f`
/// as one slice. They are written first into a buffer of the thread's,
/// then the sketch and the outline hash the slice in a loop with no branch
/// but the window's fill: read char by char through a callback, with a
/// branch on every letter and every space, `Sketch::of` took 21% more
/// time on the labelled set's texts (issue 37); reading them in runs of
/// 256 into a buffer on the stack saved only half of that.
#[inline(always)]
fn with_kept_chars<R>(text: &str, f: impl FnOnce(&[u32]) -> R) -> R {
    thread_local! {
        static CHARS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    }
    CHARS.with(|chars| match chars.try_borrow_mut() {
        Ok(mut chars) => {
            let n = kept_chars(text, &mut chars);
            let r = f(chars.get(..n).unwrap_or_default());
            // A very long text's buffer is not kept for the thread's life.
            if chars.len() > KEPT_CHARS_KEPT {
                *chars = Vec::new();
            }
            r
        }
        // Only if `f` signs another text: that one gets its own buffer.
        Err(_) => {
            let mut own = Vec::new();
            let n = kept_chars(text, &mut own);
            f(own.get(..n).unwrap_or_default())
        }
    })
}

/// Chars (4 bytes each) of buffer [`with_kept_chars`] keeps for the next
/// text: 1 MiB a thread, enough for a text of 256 KiB (nearly all pages);
/// a longer text's is freed after use, so that 64 signing threads do not
/// each hold 4 MiB after one text at the cleaner's cap.
const KEPT_CHARS_KEPT: usize = 1 << 18;

/// Writes the letters and digits of `text`, lower-cased, as code points
/// to the start of `chars` (grown to the text's length in bytes when
/// shorter, a char at most a byte: never zeroed again), and returns how
/// many. Read on the bytes: an ASCII byte through [`ASCII_KEPT`] without
/// a branch (written, and the end moved on only when it was kept); a char
/// of U+4000 to U+4DBF or U+4E00 to U+9FFF ([`crate::letters::starts_han`]:
/// letters, without case) from its three bytes as it is; any other char decoded
/// and judged by [`kept`]. The same chars as the filter over every char
/// it replaced (`tests::normalized_keeps_what_the_char_filter_kept`), with
/// fewer instructions for the bulk of English and Chinese text (issue 37).
fn kept_chars(text: &str, chars: &mut Vec<u32>) -> usize {
    let bytes = text.as_bytes();
    if chars.len() < bytes.len() {
        chars.resize(bytes.len(), 0);
    }
    let mut n = 0usize;
    let mut at = 0usize;
    while let Some(&lead) = bytes.get(at) {
        if lead < 0x80 {
            // Eight bytes of ASCII at a time while they last: each byte's
            // kept char written at `n`, the end moved on by whether it was
            // kept, with one bounds check for the eight (`chars` holds a
            // slot for every byte, so `n + 8 <= at + 8` slots are there).
            while let (Some(Ok(word)), Some(out)) = (
                bytes.get(at..at + 8).map(<[u8; 8]>::try_from),
                chars.get_mut(n..n + 8),
            ) {
                if u64::from_le_bytes(word) & 0x8080_8080_8080_8080 != 0 {
                    break;
                }
                let mut m = 0usize;
                for b in word {
                    let k = ASCII_KEPT[usize::from(b & 0x7F)];
                    if let Some(slot) = out.get_mut(m) {
                        *slot = u32::from(k);
                    }
                    m += usize::from(k != 0);
                }
                n += m;
                at += 8;
            }
            // The rest of the run, a byte at a time, up to the next byte
            // beyond ASCII.
            for &b in bytes.get(at..).unwrap_or_default() {
                if b >= 0x80 {
                    break;
                }
                let k = ASCII_KEPT[usize::from(b & 0x7F)];
                if let Some(slot) = chars.get_mut(n) {
                    *slot = u32::from(k);
                }
                n += usize::from(k != 0);
                at += 1;
            }
            continue;
        }
        let c = if crate::letters::starts_han(bytes, at)
            && let (Some(&b1), Some(&b2)) = (bytes.get(at + 1), bytes.get(at + 2))
        {
            at += 3;
            Some((u32::from(lead & 0x0F) << 12) | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F))
        } else {
            let (kept, len) = other_char(text, at);
            if len == 0 {
                break;
            }
            at += len;
            kept.map(|c| c as u32)
        };
        if let Some(c) = c
            && let Some(slot) = chars.get_mut(n)
        {
            *slot = c;
            n += 1;
        }
    }
    n
}

/// The char of `text` at byte `at` (neither ASCII nor led by 0xE5 to
/// 0xE9) as [`kept`] judges it, and its length in bytes (0 at the end of
/// the text). Not inlined, so that the loops over the common chars stay
/// small.
#[inline(never)]
fn other_char(text: &str, at: usize) -> (Option<char>, usize) {
    match text.get(at..).and_then(|s| s.chars().next()) {
        Some(c) => (kept(c), c.len_utf8()),
        None => (None, 0),
    }
}

/// What [`kept_chars`] makes of `c`: `None` for a char that is not a letter
/// or digit, else `c` lower-cased (its first lower-case char).
/// CJK ideographs are most of a Chinese page: letters, never upper case, so
/// they skip both Unicode table look-ups.
#[inline]
fn kept(c: char) -> Option<char> {
    if ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c) {
        return Some(c);
    }
    let keep = if c.is_ascii() {
        c.is_ascii_alphanumeric()
    } else {
        crate::letters::is_alphanumeric(c)
    };
    if !keep {
        None
    } else if c.is_ascii() || !c.is_uppercase() {
        Some(c.to_ascii_lowercase())
    } else {
        c.to_lowercase().next()
    }
}

/// Bits of the bitmap [`shingle_count`] counts with: 2 KiB, within about
/// 1% of the truth up to some 40,000 distinct shingles (a long manual
/// chapter), saturated near 150,000.
const COUNT_BITS: usize = 16_384;

/// The number of distinct 5-grams of a text's letters and digits (lower
/// case, the shingles its [`Sketch`] is made of), by linear counting
/// (Whang, Vander-Zanden and Taylor 1990): each shingle sets one bit of
/// 16,384, and `-m ln(zero bits / m)` estimates how many set them.
/// A page's size as resemblance counts it, which its length is not: a list
/// that repeats `std::chrono` a hundred times has few distinct shingles.
/// One cheap pass: a multiply-shift of the packed window picks the bit.
///
/// ```
/// use simcrawl_dedup::sketch::shingle_count;
/// assert_eq!(shingle_count("abcdefg"), 3); // abcde, bcdef, cdefg
/// assert_eq!(shingle_count("Ab, c!"), 1); // one shingle: abc, too short
/// assert_eq!(shingle_count("，。"), 0);
/// let list = "operator<() : std::chrono\n".repeat(100);
/// let once = shingle_count("operator<() : std::chrono");
/// // A hundred lines, hardly more 5-grams than one and its wrap-arounds.
/// assert!(shingle_count(&list) <= once + 4);
/// ```
#[must_use]
pub fn shingle_count(text: &str) -> u32 {
    count_and_outline(text).0
}

/// The resemblance `same` bins of `bins` that agree estimate, each bin
/// keeping `bits` bits of a minimum: two different minima agree on b
/// bits by chance 1 time in 2^b, which is taken out (Li and König).
/// Sketches and outlines both read their bins so.
pub(crate) fn matching_bins_resemblance(same: usize, bins: usize, bits: u32) -> f64 {
    let p = same as f64 / bins as f64;
    let chance = 1.0 / f64::from(1u32 << bits);
    ((p - chance) / (1.0 - chance)).clamp(0.0, 1.0)
}

/// Bins of an outline ([`count_and_outline`]), one bit each.
pub(crate) const OUTLINE_BINS: usize = 512;

/// [`shingle_count`] of a text, and in the same pass its outline: a
/// one-permutation MinHash of the same shingles in [`OUTLINE_BINS`] bins
/// of one bit (densified as [`Sketch`]'s are, packed eight to a byte), or
/// `None` without a letter or digit. The bin and the order come from the
/// counting hash (its top 9 bits pick the bin, the next 55 order the
/// shingles), so the outline costs a compare per shingle; each bin's
/// minimum is mixed before its low bit is kept, as the counting hash's low
/// bits are weak. One bit a bin (Li and König's b-bit MinHash) halves what
/// a bin tells, and eight times the bins in the same 64 bytes more than
/// make up for it: the estimate's standard error at 0.65 is 0.034, against
/// 0.060 for the 64 bins of 8 bits outlines had before 2026-12-03.
pub(crate) fn count_and_outline(text: &str) -> (u32, Option<[u8; OUTLINE_BINS / 8]>) {
    const BIN_BITS: u32 = OUTLINE_BINS.trailing_zeros();
    let mut bits = [0u64; COUNT_BITS / 64];
    let mut mins = [u64::MAX; OUTLINE_BINS];
    let mut set = |h: u64| {
        let bit = (h >> (64 - COUNT_BITS.trailing_zeros())) as usize;
        bits[bit / 64] |= 1 << (bit % 64);
        let slot = &mut mins[(h >> (64 - BIN_BITS)) as usize];
        *slot = (*slot).min(h & ((1 << (64 - BIN_BITS)) - 1));
    };
    // The shingles are hashed a block at a time ([`count_windows`],
    // vector code), then set in the bitmap and the bins: one loop shifting
    // each char into the window and hashing it there took twice the
    // instructions (issue 37).
    let seen = with_kept_chars(text, |chars| {
        match chars.len() {
            0 => {}
            n if n < SHINGLE_CHARS => {
                let mut w = [0u32; SHINGLE_CHARS];
                for (slot, &c) in w.iter_mut().skip(SHINGLE_CHARS - n).zip(chars) {
                    *slot = c;
                }
                set(count_hash(&w));
            }
            n => {
                let mut block = [0u64; HASH_BLOCK];
                let windows = n - (SHINGLE_CHARS - 1);
                for start in (0..windows).step_by(HASH_BLOCK) {
                    let len = HASH_BLOCK.min(windows - start);
                    let hashes = &mut block[..len];
                    count_windows(&chars[start..start + len + SHINGLE_CHARS - 1], hashes);
                    for &h in hashes.iter() {
                        set(h);
                    }
                }
            }
        }
        chars.len()
    });
    if seen == 0 {
        return (0, None);
    }
    densify(&mut mins);
    let mut outline = [0u8; OUTLINE_BINS / 8];
    for (i, m) in mins.into_iter().enumerate() {
        outline[i / 8] |= ((fmix64(m ^ SEED_A) & 1) as u8) << (i % 8);
    }
    (linear_count(&bits), Some(outline))
}

/// The counting hash of a shingle (the [`SHINGLE_CHARS`] chars of `w`,
/// 21 bits each, packed as [`shingle_hash`] packs them): a multiply-xor
/// of the two halves, multiplied again. Weak in its low bits, which
/// [`count_and_outline`] mixes before it keeps one. A slice, so that
/// [`count_windows`] hashes `windows` in place (their length is known
/// there, and the bounds checks go).
#[inline(always)]
fn count_hash(w: &[u32]) -> u64 {
    let hi = (u64::from(w[0]) << 42) | (u64::from(w[1]) << 21) | u64::from(w[2]);
    let lo = (u64::from(w[3]) << 21) | u64::from(w[4]);
    (hi.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ lo.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
        .wrapping_mul(0xFF51_AFD7_ED55_8CCD)
}

/// The [`count_hash`] of every window of [`SHINGLE_CHARS`] chars of
/// `chars` into `out`, in a loop apart from the bitmap's and the bins'
/// updates so that it vectorizes ([`hash_windows`] says why).
#[multiversion::multiversion(targets("x86_64+avx512f+avx512dq+avx512vl", "x86_64+avx2"))]
fn count_windows(chars: &[u32], out: &mut [u64]) {
    for (h, w) in out.iter_mut().zip(chars.windows(SHINGLE_CHARS)) {
        *h = count_hash(w);
    }
}

/// [`count_and_outline`] as it was written first, a char at a time: the
/// reference it is tested against.
#[cfg(test)]
pub(crate) fn count_and_outline_by_chars(text: &str) -> (u32, Option<[u8; OUTLINE_BINS / 8]>) {
    const BIN_BITS: u32 = OUTLINE_BINS.trailing_zeros();
    let mut bits = [0u64; COUNT_BITS / 64];
    let mut mins = [u64::MAX; OUTLINE_BINS];
    let (mut hi, mut lo) = (0u64, 0u64);
    let mut seen = 0usize;
    let mut set = |hi: u64, lo: u64| {
        let h = (hi.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ lo.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
            .wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        let bit = (h >> (64 - COUNT_BITS.trailing_zeros())) as usize;
        bits[bit / 64] |= 1 << (bit % 64);
        let slot = &mut mins[(h >> (64 - BIN_BITS)) as usize];
        *slot = (*slot).min(h & ((1 << (64 - BIN_BITS)) - 1));
    };
    with_kept_chars(text, |chars| {
        for &c in chars {
            (hi, lo) = shifted_in((hi, lo), c);
            seen += 1;
            if seen >= SHINGLE_CHARS {
                set(hi, lo);
            }
        }
    });
    match seen {
        0 => return (0, None),
        n if n < SHINGLE_CHARS => set(hi, lo),
        _ => {}
    }
    densify(&mut mins);
    let mut outline = [0u8; OUTLINE_BINS / 8];
    for (i, m) in mins.into_iter().enumerate() {
        outline[i / 8] |= ((fmix64(m ^ SEED_A) & 1) as u8) << (i % 8);
    }
    (linear_count(&bits), Some(outline))
}

/// The linear-counting estimate of how many shingles set `bits`.
fn linear_count(bits: &[u64; COUNT_BITS / 64]) -> u32 {
    let m = COUNT_BITS as f64;
    let zeros = bits.iter().map(|w| w.count_zeros()).sum::<u32>();
    // Every bit set: more shingles than the bitmap can tell apart.
    let zeros = f64::from(zeros.max(1));
    (-m * (zeros / m).ln()).round() as u32
}

/// The hash of a shingle (five chars `w`, 21 bits each).
#[inline]
fn shingle_hash(w: &[u32; SHINGLE_CHARS]) -> u64 {
    let hi = (u64::from(w[0]) << 42) | (u64::from(w[1]) << 21) | u64::from(w[2]);
    let lo = (u64::from(w[3]) << 21) | u64::from(w[4]);
    packed_hash(hi, lo)
}

/// The one shingle of a text of 1 to 4 kept chars: the whole text, after
/// as many chars 0 as it lacks (a sketch's packed window starts as chars 0).
fn lone_shingle_hash(chars: &[u32]) -> u64 {
    let mut w = [0u32; SHINGLE_CHARS];
    let lacks = SHINGLE_CHARS.saturating_sub(chars.len());
    for (slot, &c) in w.iter_mut().skip(lacks).zip(chars) {
        *slot = c;
    }
    shingle_hash(&w)
}

/// Shingles [`Sketch::of`] hashes at a time before it updates their bins'
/// minima: 2 KiB of hashes on the stack.
const HASH_BLOCK: usize = 256;

/// The [`shingle_hash`] of every window of [`SHINGLE_CHARS`] chars of
/// `chars` into `out` (`out[j]` that of `chars[j..j + 5]`). A loop apart
/// from the minima's updates so that it vectorizes: each hash depends only
/// on its own five chars, and AVX-512's 64-bit multiplies mix eight at
/// once. The same hashes as one at a time, faster: over the labelled
/// set's 17.2M kept chars, hashes and minima took 23 ms with AVX-512 and
/// 40 ms with AVX2, against 54 ms one shingle at a time (issue 37); a CPU
/// without either takes the loop as compiled for its baseline.
#[multiversion::multiversion(targets("x86_64+avx512f+avx512dq+avx512vl", "x86_64+avx2"))]
fn hash_windows(chars: &[u32], out: &mut [u64]) {
    for (h, w) in out.iter_mut().zip(chars.windows(SHINGLE_CHARS)) {
        let hi = (u64::from(w[0]) << 42) | (u64::from(w[1]) << 21) | u64::from(w[2]);
        let lo = (u64::from(w[3]) << 21) | u64::from(w[4]);
        *h = packed_hash(hi, lo);
    }
}

/// Bits of the first three chars of a window, and of the last two.
#[cfg(test)]
const HI_MASK: u64 = (1 << 63) - 1;
#[cfg(test)]
const LO_MASK: u64 = (1 << 42) - 1;

/// [`TextDigest`]'s two sums `(a, b)` after the char `c`.
#[inline(always)]
fn digested((a, b): (u64, u64), c: u32) -> (u64, u64) {
    (
        (a ^ u64::from(c))
            .wrapping_mul(0x0000_0100_0000_01b3)
            .rotate_left(29),
        (b ^ u64::from(c).wrapping_mul(0xff51_afd7_ed55_8ccd)).rotate_left(31),
    )
}

/// A window packed as `(hi, lo)` ([`packed_hash`]) with `c` shifted in at
/// its end and its first char out.
#[cfg(test)]
#[inline(always)]
fn shifted_in((hi, lo): (u64, u64), c: u32) -> (u64, u64) {
    (
        ((hi << 21) | (lo >> 21)) & HI_MASK,
        ((lo << 21) | u64::from(c)) & LO_MASK,
    )
}

/// [`shingle_hash`] of a window packed into `hi` (chars 0 to 2) and `lo`
/// (chars 3 and 4).
#[inline]
fn packed_hash(hi: u64, lo: u64) -> u64 {
    fmix64(hi ^ fmix64(lo ^ SEED_A))
}

impl Sketch {
    /// The sketch of a text, or `None` when it has no letters or digits.
    pub fn of(text: &str) -> Option<Sketch> {
        // The shingles are hashed a block at a time ([`hash_windows`],
        // vector code) and the bins' minima updated after; the digest's
        // two chains advance a char at a time beside those updates, where
        // neither waits on the other. Every piece of state is a local: as
        // an iterator and a digest behind references they were loaded and
        // stored for every char (issue 37). The chars, sums and shingles
        // are the first loop's (`tests::the_packed_window_signs_as_the_array_did`).
        let mut mins = [u64::MAX; SKETCH_BINS];
        let (mut a, mut b) = (SEED_A, SEED_B);
        let n = with_kept_chars(text, |chars| {
            let tails = match chars.get(SHINGLE_CHARS - 1..) {
                Some(tails) if !tails.is_empty() => tails,
                _ => {
                    for &c in chars {
                        (a, b) = digested((a, b), c);
                    }
                    if !chars.is_empty() {
                        add(&mut mins, lone_shingle_hash(chars));
                    }
                    return chars.len();
                }
            };
            for &c in chars.iter().take(SHINGLE_CHARS - 1) {
                (a, b) = digested((a, b), c);
            }
            let mut block = [0u64; HASH_BLOCK];
            // Block `i` holds the shingles that end on `tails`' chunk `i`:
            // those that start at `i * HASH_BLOCK`.
            for (i, ends) in tails.chunks(HASH_BLOCK).enumerate() {
                let hashes = &mut block[..ends.len()];
                let start = i * HASH_BLOCK;
                hash_windows(&chars[start..start + ends.len() + SHINGLE_CHARS - 1], hashes);
                for (&h, &c) in hashes.iter().zip(ends) {
                    (a, b) = digested((a, b), c);
                    add(&mut mins, h);
                }
            }
            chars.len()
        });
        if n == 0 {
            return None;
        }
        Some(Sketch::from_mins(mins, TextDigest { a, b, n: n as u64 }))
    }

    /// The sketch of a text whose bins' minimum hashes are `mins` (empty
    /// bins densified here) and whose text digest is `digest`.
    fn from_mins(mut mins: [u64; SKETCH_BINS], digest: TextDigest) -> Sketch {
        densify(&mut mins);
        let mut bins = [0u16; SKETCH_BINS];
        for (b, m) in bins.iter_mut().zip(mins) {
            *b = (m & 0xffff) as u16;
        }
        Sketch {
            bins,
            digest: digest.finish(),
            bits: 16,
        }
    }

    /// This sketch keeping `bits` bits of each bin: 16 (itself) or 8 (the
    /// low byte, as a store with `sketch_bits = 8` keeps it); other
    /// widths are taken as 16.
    ///
    /// ```
    /// use simcrawl_dedup::Sketch;
    /// let text = "长江流域今年夏季降雨偏多，防汛形势严峻，各地加强了巡查。";
    /// let wide = Sketch::of(text).unwrap();
    /// let narrow = wide.narrow(8);
    /// assert_eq!((wide.bits(), narrow.bits()), (16, 8));
    /// assert_eq!(narrow.encoded_len() + 128, wide.encoded_len());
    /// assert!(narrow.same_text(&wide));
    /// let edited = Sketch::of("长江流域今年夏季降雨偏多，防汛形势严峻，各地加强了巡查和值守。").unwrap();
    /// // Both widths estimate the same resemblance, up to chance matches.
    /// assert!((narrow.resemblance(&edited.narrow(8)) - wide.resemblance(&edited)).abs() < 0.05);
    /// ```
    pub fn narrow(&self, bits: u32) -> Sketch {
        if bits != 8 || self.bits == 8 {
            return self.clone();
        }
        let mut bins = self.bins;
        for b in &mut bins {
            *b &= 0xff;
        }
        Sketch {
            bins,
            digest: self.digest,
            bits: 8,
        }
    }

    /// Bits kept of each bin (16 or 8).
    pub fn bits(&self) -> u32 {
        u32::from(self.bits)
    }

    /// A sketch from raw bins and digest, for benchmarks and tests that need
    /// many distinct sketches without texts behind them.
    ///
    /// ```
    /// use simcrawl_dedup::Sketch;
    /// let bins: [u16; 128] = std::array::from_fn(|i| i as u16 * 7);
    /// let a = Sketch::from_bins(bins, 1);
    /// let b = Sketch::from_bins(bins, 2);
    /// assert_eq!(a.resemblance(&b), 1.0);
    /// assert!(!a.same_text(&b));
    /// ```
    pub fn from_bins(bins: [u16; SKETCH_BINS], digest: u128) -> Sketch {
        Sketch {
            bins,
            digest,
            bits: 16,
        }
    }

    /// Estimated resemblance (Jaccard index of the two shingle sets), in
    /// [0, 1]; exactly 1 for the same normalized text.
    ///
    /// A sketch of few shingles estimates nothing: densification copies
    /// each of its minima into many bins, so its bins are not independent
    /// samples, and two texts of one shingle each agree on every bin
    /// whenever their minima's low bits do (1 time in 256 at 8 bits). A
    /// sketch with fewer than [`MIN_DISTINCT_BINS`] distinct bin values
    /// therefore compares exactly: 1 for the same text, else 0 (issue 36).
    ///
    /// ```
    /// use simcrawl_dedup::Sketch;
    /// // Short texts: the same text or nothing, at any width.
    /// let (a, b) = (Sketch::of("abcde").unwrap(), Sketch::of("vwxyz").unwrap());
    /// assert_eq!(a.narrow(8).resemblance(&b.narrow(8)), 0.0);
    /// assert_eq!(a.resemblance(&Sketch::of("ABCDE!").unwrap()), 1.0);
    /// ```
    pub fn resemblance(&self, other: &Sketch) -> f64 {
        if self.digest == other.digest {
            return 1.0;
        }
        if self.distinct_bins() < MIN_DISTINCT_BINS || other.distinct_bins() < MIN_DISTINCT_BINS {
            return 0.0;
        }
        // Both widths keep the low bits of the same minima: compare on
        // the bits both have.
        let bits = self.bits.min(other.bits);
        let mask = if bits >= 16 { u16::MAX } else { (1u16 << bits) - 1 };
        let same = self
            .bins
            .iter()
            .zip(&other.bins)
            .filter(|&(a, b)| (a ^ b) & mask == 0)
            .count();
        matching_bins_resemblance(same, SKETCH_BINS, u32::from(bits))
    }

    /// How many distinct values the bins hold, counted on their low byte
    /// (the bits every width keeps): a lower bound of how many distinct
    /// shingles stand behind the sketch, up to the 128 bins. A one-shingle
    /// text has 1.
    ///
    /// ```
    /// use simcrawl_dedup::Sketch;
    /// assert_eq!(Sketch::of("abc").unwrap().distinct_bins(), 1);
    /// let long = Sketch::of("Pack my box with five dozen liquor jugs; the quick brown fox jumps over the lazy dog.").unwrap();
    /// assert!(long.distinct_bins() >= 30, "{}", long.distinct_bins());
    /// ```
    pub fn distinct_bins(&self) -> usize {
        let mut seen = [0u64; 4];
        for b in &self.bins {
            let v = usize::from(b & 0xff);
            seen[v >> 6] |= 1 << (v & 63);
        }
        seen.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether both come from the same text (letters and digits, case
    /// folded), by the 128-bit digest.
    pub fn same_text(&self, other: &Sketch) -> bool {
        self.digest == other.digest
    }

    /// The 128-bit digest of the normalized text.
    pub fn text_digest(&self) -> u128 {
        self.digest
    }

    /// LSH band keys: band `i` hashes bins `i*rows .. (i+1)*rows` (and `i`,
    /// so equal bins in two bands do not collide). Two documents share a
    /// band key with probability about `J^rows` per band.
    pub fn band_keys(&self, bands: usize, rows: usize) -> impl Iterator<Item = u64> + '_ {
        (0..bands).map(move |i| {
            let mut h = fmix64(SEED_B ^ i as u64);
            for b in &self.bins[i * rows..(i + 1) * rows] {
                h = fmix64(h ^ u64::from(*b)).wrapping_add(SEED_A);
            }
            h
        })
    }

    /// The store encoding: 16 digest bytes, then the bins little-endian,
    /// two bytes each, or one each for an 8-bit sketch.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.digest.to_le_bytes());
        if self.bits == 8 {
            let mut bins = [0u8; SKETCH_BINS];
            for (byte, b) in bins.iter_mut().zip(&self.bins) {
                *byte = (b & 0xff) as u8;
            }
            out.extend_from_slice(&bins);
            return;
        }
        // Into an array first: one copy into `out` (a push per bin cost a
        // capacity check each, and every stored document is encoded).
        let mut bins = [0u8; SKETCH_BYTES];
        for (pair, b) in bins.chunks_exact_mut(2).zip(&self.bins) {
            pair.copy_from_slice(&b.to_le_bytes());
        }
        out.extend_from_slice(&bins);
    }

    /// Bytes of [`Sketch::encode_into`] for a 16-bit sketch.
    pub const ENCODED_LEN: usize = 16 + SKETCH_BYTES;

    /// Bytes of [`Sketch::encode_into`] for an 8-bit sketch.
    pub const ENCODED_LEN_NARROW: usize = 16 + SKETCH_BINS;

    /// Bytes of [`Sketch::encode_into`] for this sketch.
    pub fn encoded_len(&self) -> usize {
        if self.bits == 8 {
            Self::ENCODED_LEN_NARROW
        } else {
            Self::ENCODED_LEN
        }
    }

    /// Inverse of [`Sketch::encode_into`]; the length tells the width.
    /// `None` if `bytes` is neither [`Sketch::ENCODED_LEN`] nor
    /// [`Sketch::ENCODED_LEN_NARROW`] long.
    pub fn decode(bytes: &[u8]) -> Option<Sketch> {
        let digest = u128::from_le_bytes(bytes.get(..16)?.try_into().ok()?);
        let mut bins = [0u16; SKETCH_BINS];
        match bytes.len() {
            Self::ENCODED_LEN => {
                for (b, pair) in bins.iter_mut().zip(bytes[16..].chunks_exact(2)) {
                    *b = u16::from_le_bytes([pair[0], pair[1]]);
                }
                Some(Sketch {
                    bins,
                    digest,
                    bits: 16,
                })
            }
            Self::ENCODED_LEN_NARROW => {
                for (b, byte) in bins.iter_mut().zip(&bytes[16..]) {
                    *b = u16::from(*byte);
                }
                Some(Sketch {
                    bins,
                    digest,
                    bits: 8,
                })
            }
            _ => None,
        }
    }
}

/// The exact resemblance (Jaccard index of the sets of character 5-grams,
/// normalized as for [`Sketch::of`]): what a sketch estimates. Costs a set
/// of every shingle of both texts, so it is for explaining verdicts and
/// evaluating, not for the index.
///
/// ```
/// let j = simcrawl_dedup::sketch::exact_resemblance("abcdefg", "abcdefh");
/// assert!((j - 2.0 / 4.0).abs() < 1e-9); // {abcde, bcdef} shared of 4
/// ```
pub fn exact_resemblance(a: &str, b: &str) -> f64 {
    let set = |text: &str| -> rustc_hash::FxHashSet<u64> {
        with_kept_chars(text, |chars| {
            if chars.is_empty() {
                return Default::default();
            }
            if chars.len() < SHINGLE_CHARS {
                return std::iter::once(lone_shingle_hash(chars)).collect();
            }
            let mut hashes = vec![0u64; chars.len() + 1 - SHINGLE_CHARS];
            hash_windows(chars, &mut hashes);
            hashes.into_iter().collect()
        })
    };
    let (sa, sb) = (set(a), set(b));
    let union = sa.union(&sb).count();
    if union == 0 {
        return 0.0;
    }
    sa.intersection(&sb).count() as f64 / union as f64
}

#[inline]
fn add(mins: &mut [u64; SKETCH_BINS], h: u64) {
    let slot = &mut mins[(h >> 57) as usize];
    *slot = (*slot).min(h & VALUE_MASK);
}

/// Optimal densification: an empty bin takes the value of the first
/// non-empty bin in its own pseudo-random probe sequence. Both documents
/// probe the same sequence, so two documents agree on a filled bin with
/// probability J, as they do on an original one.
fn densify<const N: usize>(mins: &mut [u64; N]) {
    let original = *mins;
    if original.iter().all(|&m| m != u64::MAX) {
        return;
    }
    for (i, slot) in mins.iter_mut().enumerate() {
        if *slot != u64::MAX {
            continue;
        }
        let mut attempt = 0u64;
        loop {
            let probe = fmix64(SEED_DENSIFY ^ ((i as u64) << 32) ^ attempt);
            // N is a power of two: the probe's top bits pick a bin.
            let j = (probe >> (64 - N.trailing_zeros())) as usize;
            if original[j] != u64::MAX {
                *slot = original[j];
                break;
            }
            attempt += 1;
            // At least one bin is full, so each probe succeeds with
            // probability >= 1/N; this bound is only reached by a broken
            // hash, and then the nearest full bin keeps the result defined.
            if attempt > 100_000 {
                *slot = original
                    .iter()
                    .cycle()
                    .skip(i)
                    .copied()
                    .find(|&m| m != u64::MAX)
                    .unwrap_or(0);
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests;
