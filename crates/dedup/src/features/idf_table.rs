//! jieba's IDF table, compiled in by build.rs and read in place: nothing is
//! parsed or hashed at start-up (it used to be 0.05 s of CPU, 270,132 lines
//! into a hash map, in every process that signs a document).

mod tables {
    include!(concat!(env!("OUT_DIR"), "/idf_table.rs"));
}

mod hash {
    include!("word_hash.rs");
}

/// The words' slots (build.rs says how a slot is laid out).
static SLOTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/idf_slots.bin"));
/// The words, end to end.
static WORDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/idf_words.bin"));
/// The distinct IDF values (f64 bits), by class.
static VALUES: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/idf_values.bin"));

const SLOT_MASK: usize = (1 << tables::IDF_SLOT_BITS) - 1;

/// The MD5 of the bundled table's file, as hex: stores record it.
pub(super) const DIGEST: &str = tables::IDF_DIGEST;

#[inline(always)]
fn u64_at(bytes: &[u8], i: usize) -> u64 {
    bytes
        .get(i * 8..i * 8 + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The slot where a word of hash `h` is looked for first.
#[inline(always)]
fn home(h: u64) -> usize {
    (h >> (64 - tables::IDF_SLOT_BITS)) as usize
}

/// The word a slot names, and its IDF (`None` for an empty slot).
#[inline(always)]
fn entry(slot: u64) -> Option<(&'static [u8], f64)> {
    let class = ((slot >> 28) & 0xFFF) as usize;
    let value = f64::from_bits(u64_at(VALUES, class.checked_sub(1)?));
    let offset = word_offset(slot);
    let len = ((slot >> 22) & 0x3F) as usize;
    Some((WORDS.get(offset..offset + len)?, value))
}

/// Where in [`WORDS`] the word a full slot names starts.
#[inline(always)]
fn word_offset(slot: u64) -> usize {
    (slot & 0x3F_FFFF) as usize
}

/// jieba's IDF table (`features::jieba_idf`).
#[derive(Debug)]
pub struct IdfTable {
    mean: f64,
}

/// The one table of the process.
pub(super) static TABLE: IdfTable = IdfTable {
    mean: f64::from_bits(tables::IDF_MEAN_BITS),
};

impl IdfTable {
    /// The IDF of `word`, or the mean IDF for words the table lacks (an
    /// unknown word is treated as averagely informative).
    ///
    /// ```
    /// let t = simcrawl_dedup::features::jieba_idf();
    /// assert!(t.idf("光化学") > t.idf("中国"));
    /// assert_eq!(t.idf("zzqxjv"), t.mean());
    /// ```
    pub fn idf(&self, word: &str) -> f64 {
        let h = hash::word_hash(word.as_bytes());
        self.idf_from(word, h, u64_at(SLOTS, home(h)))
    }

    /// Multiplies each word's weight by its IDF (`weight * idf`, as
    /// [`IdfTable::idf`] gives it), looking the words up together: their
    /// first slots are all read before any is examined. Those reads, in a
    /// 4 MB table, miss the cache; one after the other they were most of a
    /// lookup's time, and issued together the processor overlaps them.
    ///
    /// ```
    /// let t = simcrawl_dedup::features::jieba_idf();
    /// let mut words = [("光化学", 2.0), ("zzqxjv", 1.0)];
    /// t.weigh(&mut words);
    /// assert_eq!(words, [("光化学", 2.0 * t.idf("光化学")), ("zzqxjv", t.mean())]);
    /// ```
    pub fn weigh(&self, words: &mut [(&str, f64)]) {
        let hashes: Vec<u64> = words.iter().map(|(w, _)| hash::word_hash(w.as_bytes())).collect();
        self.weigh_hashed(words, &hashes);
    }

    /// The hash [`IdfTable::weigh_hashed`] takes for `word`, taken when a
    /// text's word is first seen. Its home slot was asked of the cache
    /// there too, but the prefetch stalled the word counter (its next
    /// instruction held 1.5% of `crawl dedup`'s samples) and
    /// [`IdfTable::weigh_hashed`] issues every slot's read together
    /// anyway: without it, 0.992 of the CPU and 0.984 of the wall on the
    /// labelled set, pair by pair over 21 rounds (issue 37).
    #[inline]
    pub(super) fn hash_of(&self, word: &str) -> u64 {
        hash::word_hash(word.as_bytes())
    }

    /// [`IdfTable::weigh`] of words whose hashes are `hashes` (as
    /// [`IdfTable::hash_of`] gave them, in the same order).
    pub(super) fn weigh_hashed(&self, words: &mut [(&str, f64)], hashes: &[u64]) {
        let firsts: Vec<u64> = hashes
            .iter()
            .map(|&h| {
                let first = u64_at(SLOTS, home(h));
                // The word the slot names is read next: asked for now.
                if first != 0 {
                    prefetch_index::prefetch_index(WORDS, word_offset(first));
                }
                first
            })
            .collect();
        for (((w, weight), &h), first) in words.iter_mut().zip(hashes).zip(firsts) {
            *weight *= self.idf_from(w, h, first);
        }
    }

    /// The IDF of `word`, whose hash is `h` and whose first slot holds
    /// `first`.
    #[inline(always)]
    fn idf_from(&self, word: &str, h: u64, first: u64) -> f64 {
        let tag = h & 0xFF_FFFF;
        let mut i = home(h);
        let mut slot = first;
        loop {
            if slot == 0 {
                return self.mean;
            }
            if slot >> 40 == tag
                && let Some((w, v)) = entry(slot)
                && crate::same::same(w, word.as_bytes())
            {
                return v;
            }
            i = (i + 1) & SLOT_MASK;
            slot = u64_at(SLOTS, i);
        }
    }

    /// The mean IDF of the table.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Every word of the table: a real vocabulary of about 270,000 words,
    /// in no particular order.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        (0..=SLOT_MASK)
            .filter_map(|i| entry(u64_at(SLOTS, i)))
            .filter_map(|(w, _)| std::str::from_utf8(w).ok())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Read;

    use rustc_hash::FxHashMap;

    use super::*;

    #[test]
    fn words_weighed_by_their_prefetched_hashes_weigh_as_alone() {
        // Words of the table, words one byte off, and words it lacks.
        let mut words: Vec<String> = TABLE.words().step_by(997).map(str::to_owned).collect();
        let off: Vec<String> = words.iter().map(|w| format!("{w}x")).collect();
        words.extend(off);
        words.extend(["", "zzqxjv", "中国", "光化学"].map(str::to_owned));
        let mut alone: Vec<(&str, f64)> = words.iter().map(|w| (w.as_str(), 1.5)).collect();
        let mut hashed = alone.clone();
        let hashes: Vec<u64> = words.iter().map(|w| TABLE.hash_of(w)).collect();
        TABLE.weigh(&mut alone);
        TABLE.weigh_hashed(&mut hashed, &hashes);
        assert!(alone.len() > 500);
        for ((w, a), (_, b)) in alone.iter().zip(&hashed) {
            assert_eq!(a.to_bits(), b.to_bits(), "{w}");
            assert_eq!(a.to_bits(), (1.5 * TABLE.idf(w)).to_bits(), "{w}");
        }
        assert!(alone.iter().any(|(_, v)| *v != 1.5 * TABLE.mean()));
    }

    /// [`hash::word_hash`] as it was written before its tail was read
    /// without a copy: the tail copied into a zeroed buffer.
    fn word_hash_by_copy(bytes: &[u8]) -> u64 {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut h: u64 = 0xCBF2_9CE4_8422_2325 ^ bytes.len() as u64;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            h = (h ^ u64::from_le_bytes(c.try_into().unwrap()))
                .wrapping_mul(K)
                .rotate_left(29);
        }
        let rest = chunks.remainder();
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
        h ^ (h >> 29)
    }

    #[test]
    fn a_words_tail_hashes_as_the_copied_tail_did() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(37);
        for len in 0..=40 {
            for _ in 0..200 {
                // Every byte value, 0 and 255 included, at every position
                // of every tail length.
                let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                assert_eq!(hash::word_hash(&bytes), word_hash_by_copy(&bytes), "{bytes:?}");
            }
        }
        for w in TABLE.words().step_by(101) {
            assert_eq!(
                hash::word_hash(w.as_bytes()),
                word_hash_by_copy(w.as_bytes()),
                "{w}"
            );
        }
    }

    #[test]
    fn the_compiled_table_is_the_one_start_up_used_to_build() {
        // Built as `jieba_idf` built it before it was compiled in.
        let gz: &[u8] = include_bytes!("../../data/jieba_idf.txt.gz");
        let mut text = String::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_string(&mut text)
            .unwrap();
        let mut idf: FxHashMap<&str, f64> = FxHashMap::default();
        idf.reserve(280_000);
        for line in text.lines() {
            let mut parts = line.split(' ');
            if let (Some(w), Some(v)) = (parts.next(), parts.next())
                && let Ok(v) = v.trim().parse::<f64>()
            {
                idf.insert(w, v);
            }
        }
        let mean = idf.values().sum::<f64>() / idf.len() as f64;
        assert_eq!(TABLE.mean().to_bits(), mean.to_bits());
        assert_eq!(idf.len(), tables::IDF_WORDS);
        for (w, v) in &idf {
            assert_eq!(TABLE.idf(w).to_bits(), v.to_bits(), "{w}");
            // A word one byte longer is (nearly always) not in the table.
            let longer = format!("{w}ж");
            if !idf.contains_key(longer.as_str()) {
                assert_eq!(TABLE.idf(&longer).to_bits(), mean.to_bits(), "{longer}");
            }
        }
        let mut words: Vec<&str> = TABLE.words().collect();
        let mut expected: Vec<&str> = idf.keys().copied().collect();
        words.sort_unstable();
        expected.sort_unstable();
        assert_eq!(words, expected);
        assert_eq!(DIGEST, crate::digest::hex(&crate::digest::md5_of_bytes(gz)));
        assert_eq!(TABLE.idf(""), mean);
    }
}
