/// The hash the compiled IDF table is laid out by (build.rs places every
/// word with it, `features::idf_table` finds them with it): one function
/// shared as source by both, so that the two cannot drift apart.
#[inline]
pub fn word_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(word)).wrapping_mul(K).rotate_left(29);
    }
    h = (h ^ tail_le(chunks.remainder())).wrapping_mul(K);
    h ^ (h >> 29)
}

/// The last 0 to 7 bytes of a word as a little-endian `u64`, zero above
/// them: what copying them into a zeroed eight-byte buffer reads, without
/// the copy. Nearly every word ends in such a tail (most are three to nine
/// bytes), and the variable-length copy was a call to `memcpy` whose
/// byte stores the eight-byte load then waited on: a quarter of the word
/// counter's samples in `crawl dedup` (issue 37). Two overlapping loads
/// (four bytes and more) or three single bytes (one to three) set the same
/// bits, since an overlapped byte is the same byte twice.
#[inline]
fn tail_le(rest: &[u8]) -> u64 {
    let n = rest.len();
    let u32_at = |at: usize| {
        rest.get(at..at + 4)
            .and_then(|s| <[u8; 4]>::try_from(s).ok())
            .map_or(0, |b| u64::from(u32::from_le_bytes(b)))
    };
    let byte_at = |at: usize| rest.get(at).map_or(0, |&b| u64::from(b));
    match n {
        0 => 0,
        1..=3 => byte_at(0) | byte_at(n / 2) << (8 * (n / 2)) | byte_at(n - 1) << (8 * (n - 1)),
        _ => u32_at(0) | u32_at(n - 4) << (8 * (n - 4)),
    }
}
