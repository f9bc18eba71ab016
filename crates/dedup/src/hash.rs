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
    }
}
