//! The token hash behind every SimHash bit.
//!
//! The index persists fingerprints on disk, so the hash must never change
//! between versions, platforms or runs: that rules out `std`'s randomly
//! seeded `DefaultHasher`. FNV-1a 64 is the seeds' choice and is stable, but
//! on short CJK tokens (two or three UTF-8 encoded characters, six to nine
//! bytes sharing their lead bytes) its high bits are poorly mixed. A final
//! `fmix64` (MurmurHash3's finalizer, a bijection) spreads every input bit
//! over the whole word, so each of the 64 bits is set for about half of a real
//! vocabulary; `tests/hash_balance.rs` checks it on jieba's dictionary.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The name recorded in a store's parameters; change it if the hash changes.
pub const TOKEN_HASH_NAME: &str = "fnv1a64+fmix64";

/// [`TOKEN_HASH_NAME`] of 128-bit fingerprints: the low half as at 64 bits,
/// the upper half from [`token_hash_high`].
pub const TOKEN_HASH_WIDE_NAME: &str = "fnv1a64+fmix64,high=fmix64(fnv1a64^golden)";

/// XORed into FNV-1a before the finalizer for the upper half of a 128-bit
/// fingerprint: the golden ratio's bits, so the two halves are two
/// different bijections of the same FNV state.
const HIGH_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// Plain FNV-1a 64 over `bytes`.
///
/// ```
/// assert_eq!(simcrawl_dedup::hash::fnv1a64(b""), 0xcbf29ce484222325);
/// assert_eq!(simcrawl_dedup::hash::fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
/// ```
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// MurmurHash3's 64-bit finalizer: a bijection that makes every output bit
/// depend on every input bit.
///
/// ```
/// assert_eq!(simcrawl_dedup::hash::fmix64(0), 0);
/// assert_ne!(simcrawl_dedup::hash::fmix64(1), 1);
/// ```
pub fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The hash of one feature (a word or a shingle): FNV-1a 64, then `fmix64`.
///
/// ```
/// use simcrawl_dedup::hash::token_hash;
/// // Stable: this value is part of the on-disk format.
/// assert_eq!(token_hash("中国"), token_hash("中国"));
/// assert_ne!(token_hash("中国"), token_hash("中文"));
/// ```
pub fn token_hash(token: &str) -> u64 {
    fmix64(fnv1a64(token.as_bytes()))
}

/// The second 64 bits of a feature's hash, which the upper half of a
/// 128-bit fingerprint votes on. It must be independent of
/// [`token_hash`] bit by bit, or the upper half would repeat the lower
/// one's votes: the finalizer's avalanche makes `fmix64(x ^ c)` and
/// `fmix64(x)` disagree on about half of their bits whatever `x`, and
/// `tests/hash_balance.rs` checks the two halves' bits are uncorrelated on
/// jieba's dictionary.
///
/// ```
/// use simcrawl_dedup::hash::{token_hash, token_hash_high};
/// assert_ne!(token_hash_high("中国"), token_hash("中国"));
/// assert_eq!(token_hash_high("中国"), token_hash_high("中国"));
/// ```
pub fn token_hash_high(token: &str) -> u64 {
    fmix64(fnv1a64(token.as_bytes()) ^ HIGH_SEED)
}

/// Both halves of a feature's 128-bit hash, computing FNV once: the low
/// half is [`token_hash`], the upper [`token_hash_high`].
///
/// ```
/// use simcrawl_dedup::hash::{token_hash, token_hash_high, token_hash_wide};
/// let h = token_hash_wide("新闻");
/// assert_eq!(h, u128::from(token_hash_high("新闻")) << 64 | u128::from(token_hash("新闻")));
/// ```
pub fn token_hash_wide(token: &str) -> u128 {
    let fnv = fnv1a64(token.as_bytes());
    u128::from(fmix64(fnv ^ HIGH_SEED)) << 64 | u128::from(fmix64(fnv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_known_vectors() {
        // Reference values from the FNV specification's test suite.
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn token_hash_is_pinned() {
        // Pinned so that an accidental change of the hash (which would make
        // every persisted index silently wrong) fails loudly.
        assert_eq!(token_hash("a"), fmix64(0xaf63dc4c8601ec8c));
        assert_eq!(
            format!("{:016x}", token_hash("foobar")),
            format!("{:016x}", fmix64(0x85944171f73967e8))
        );
        assert_eq!(
            token_hash_high("a"),
            fmix64(0xaf63dc4c8601ec8c ^ 0x9e37_79b9_7f4a_7c15)
        );
    }
}
