//! The block index returns exactly what a brute-force scan returns,
//! including at distance exactly k and k + 1.
#![allow(clippy::unwrap_used)]

mod common;

use proptest::prelude::*;
use simcrawl_dedup::store::DocRecord;
use simcrawl_dedup::{BlockLayout, DedupConfig, Deduper, Fingerprint, MemoryStore, RedbStore, Sketch, Store};

fn flip(fp: u64, bits: &[u32]) -> u64 {
    bits.iter().fold(fp, |acc, b| acc ^ (1u64 << b))
}

/// Stores `stored` (64-bit values with `Fingerprint::new`, 128-bit ones
/// with `Fingerprint::wide`) under ids 0, 1, ... and URLs u0, u1, ...
fn load<S: Store, T: Copy>(d: &Deduper<S>, m: u32, k: u32, stored: &[T], fp: fn(T) -> Fingerprint) {
    let layout = BlockLayout::new(m, k).unwrap();
    d.store()
        .write(|t| {
            for (i, &value) in stored.iter().enumerate() {
                let id = i as u64;
                let fp = fp(value);
                let rec = DocRecord {
                    fingerprint: fp,
                    inserted_at: 1,
                    title: None,
                    sketch: Sketch::from_bins([i as u16; 128], i as u128),
                    url: format!("u{i}"),
                    article: None,
                    extent: None,
                };
                t.put_doc(id, rec)?;
                for (table, key) in layout.keys(fp.low()) {
                    t.add_block(table, key, fp, id)?;
                }
            }
            Ok(())
        })
        .unwrap();
}

/// `near` of every query equals a scan of `stored` by distance.
fn check<S: Store, T: Copy>(d: &Deduper<S>, stored: &[T], queries: &[T], k: u32, fp: fn(T) -> Fingerprint) {
    for &q in queries {
        let q = fp(q);
        let mut got = d.near(q).unwrap();
        got.sort();
        let mut want: Vec<(u32, String)> = stored
            .iter()
            .enumerate()
            .filter_map(|(i, &s)| {
                let d = fp(s).distance(q);
                (d <= k).then(|| (d, format!("u{i}")))
            })
            .collect();
        want.sort();
        assert_eq!(got, want, "query {q}");
    }
}

/// Queries at distance exactly k and k + 1 from stored fingerprints, plus
/// random ones.
fn queries(stored: &[u64], flips: &[Vec<u32>], k: u32, random: &[u64]) -> Vec<u64> {
    let mut q = Vec::new();
    for (i, fp) in stored.iter().enumerate() {
        let bits = &flips[i % flips.len()];
        q.push(flip(*fp, &bits[..k as usize]));
        q.push(flip(*fp, &bits[..(k + 1) as usize]));
        q.push(flip(*fp, &bits[..1]));
    }
    q.extend_from_slice(random);
    q
}

fn distinct_bits(n: usize) -> impl Strategy<Value = Vec<u32>> {
    proptest::sample::subsequence((0u32..64).collect::<Vec<_>>(), n).prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn memory_index_matches_brute_force(
        layout in prop_oneof![Just((4u32, 3u32)), Just((6, 3)), Just((5, 2)), Just((3, 1))],
        base in proptest::collection::vec(any::<u64>(), 1..40),
        flips in proptest::collection::vec(distinct_bits(8), 1..8),
        random in proptest::collection::vec(any::<u64>(), 0..10),
    ) {
        let (m, k) = layout;
        // Clusters: stored fingerprints close to each other, so that many
        // pairs sit at distances around k.
        let mut stored = base.clone();
        for (i, fp) in base.iter().enumerate() {
            stored.push(flip(*fp, &flips[i % flips.len()][..(k as usize + 1)]));
            stored.push(flip(*fp, &flips[(i + 1) % flips.len()][..(k as usize)]));
        }
        let d = Deduper::new(MemoryStore::new(), DedupConfig { blocks: m, max_distance: k, ..Default::default() }).unwrap();
        load(&d, m, k, &stored, Fingerprint::new);
        check(&d, &stored, &queries(&stored, &flips, k, &random), k, Fingerprint::new);
    }
}

/// A disk store against brute force at m = 4 and m = 6: `base` random
/// fingerprints from `seed`, each with a neighbour at distance k + 1, queried
/// at distance 1, k and k + 1 from every stored one and at random.
fn disk_store_matches_brute_force<S: Store>(
    open: impl Fn(&std::path::Path) -> S,
    seed: u64,
    base: usize,
    (a, b): (usize, usize),
) {
    for (m, k) in [(4, 3), (6, 3)] {
        let dir = tempfile::tempdir().unwrap();
        let d = Deduper::new(
            open(dir.path()),
            DedupConfig {
                blocks: m,
                max_distance: k,
                ..Default::default()
            },
        )
        .unwrap();
        let mut x = seed;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let base: Vec<u64> = (0..base).map(|_| next()).collect();
        let flips: Vec<Vec<u32>> = (0..16)
            .map(|i| (0..8).map(|j| ((i * a + j * b) % 64) as u32).collect())
            .collect();
        let mut stored = base.clone();
        for (i, fp) in base.iter().enumerate() {
            stored.push(flip(*fp, &flips[i % 16][..(k as usize + 1)]));
        }
        load(&d, m, k, &stored, Fingerprint::new);
        let random: Vec<u64> = (0..50).map(|_| next()).collect();
        check(
            &d,
            &stored,
            &queries(&stored, &flips, k, &random),
            k,
            Fingerprint::new,
        );
    }
}

#[test]
fn redb_index_matches_brute_force_at_k_and_k_plus_one() {
    disk_store_matches_brute_force(
        |dir| RedbStore::open(dir.join("i.redb")).unwrap(),
        0x9e37_79b9_7f4a_7c15,
        300,
        (7, 13),
    );
}

#[cfg(feature = "redis")]
#[test]
fn redis_index_matches_brute_force_at_k_and_k_plus_one() {
    if common::redis_url("redis_index_matches_brute_force_at_k_and_k_plus_one").is_none() {
        return;
    }
    disk_store_matches_brute_force(
        |_| common::redis_store("bruteforce").unwrap(),
        0x1234_5678_9abc_def1,
        200,
        (3, 17),
    );
}

#[cfg(feature = "redis")]
#[test]
fn replicated_index_matches_brute_force_at_k_and_k_plus_one() {
    if common::redis_url("replicated_index_matches_brute_force_at_k_and_k_plus_one").is_none() {
        return;
    }
    disk_store_matches_brute_force(
        |_| common::replicated_store("bruteforce-replicated").unwrap(),
        0x2345_6789_abcd_ef12,
        200,
        (3, 17),
    );
}

#[cfg(feature = "sled")]
#[test]
fn sled_index_matches_brute_force_at_k_and_k_plus_one() {
    disk_store_matches_brute_force(
        |dir| simcrawl_dedup::SledStore::open(dir.join("i.sled")).unwrap(),
        0x2545_f491_4f6c_dd1d,
        200,
        (5, 11),
    );
}

// 128-bit fingerprints: the index keys by the low half, so every stored
// fingerprint within k over all 128 bits must come back, and none beyond k,
// whichever half the differing bits fall in.

fn flip128(fp: u128, bits: &[u32]) -> u128 {
    bits.iter().fold(fp, |acc, b| acc ^ (1u128 << b))
}

fn distinct_bits128(n: usize) -> impl Strategy<Value = Vec<u32>> {
    proptest::sample::subsequence((0u32..128).collect::<Vec<_>>(), n).prop_shuffle()
}

/// Stored fingerprints in clusters around `base`, and queries at distance
/// 1, k and k + 1 from each, plus `random`.
fn clusters128(base: &[u128], flips: &[Vec<u32>], k: u32, random: &[u128]) -> (Vec<u128>, Vec<u128>) {
    let k = k as usize;
    let mut stored = base.to_vec();
    for (i, fp) in base.iter().enumerate() {
        stored.push(flip128(*fp, &flips[i % flips.len()][..k + 1]));
        stored.push(flip128(*fp, &flips[(i + 1) % flips.len()][..k]));
    }
    let mut queries = random.to_vec();
    for (i, fp) in stored.iter().enumerate() {
        let bits = &flips[i % flips.len()];
        for n in [1, k, k + 1] {
            queries.push(flip128(*fp, &bits[..n]));
        }
    }
    (stored, queries)
}

fn config128(m: u32, k: u32) -> DedupConfig {
    DedupConfig {
        bits: 128,
        blocks: m,
        max_distance: k,
        ..Default::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn wide_fingerprints_match_brute_force(
        layout in prop_oneof![Just((4u32, 3u32)), Just((6, 3)), Just((7, 6))],
        base in proptest::collection::vec(any::<u128>(), 1..30),
        flips in proptest::collection::vec(distinct_bits128(8), 1..8),
        random in proptest::collection::vec(any::<u128>(), 0..10),
    ) {
        let (m, k) = layout;
        let (stored, queries) = clusters128(&base, &flips, k, &random);
        let d = Deduper::new(MemoryStore::new(), config128(m, k)).unwrap();
        load(&d, m, k, &stored, Fingerprint::wide);
        check(&d, &stored, &queries, k, Fingerprint::wide);
    }
}

/// A disk or networked store against brute force at 128 bits.
fn wide_store_matches_brute_force<S: Store>(store: S, seed: u64) {
    let mut x = seed;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let base: Vec<u128> = (0..200)
        .map(|_| u128::from(next()) << 64 | u128::from(next()))
        .collect();
    // Flips that straddle the halves: some bits below 64, some above.
    let flips: Vec<Vec<u32>> = (0..16)
        .map(|i| (0..8).map(|j| ((i * 37 + j * 53) % 128) as u32).collect())
        .collect();
    assert!(
        flips
            .iter()
            .any(|f| f[..4].iter().any(|&b| b < 64) && f[..4].iter().any(|&b| b >= 64))
    );
    let random: Vec<u128> = (0..50)
        .map(|_| u128::from(next()) << 64 | u128::from(next()))
        .collect();
    let (stored, queries) = clusters128(&base, &flips, 3, &random);
    let d = Deduper::new(store, config128(4, 3)).unwrap();
    load(&d, 4, 3, &stored, Fingerprint::wide);
    check(&d, &stored, &queries, 3, Fingerprint::wide);
}

#[test]
fn wide_fingerprints_on_redb_match_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    wide_store_matches_brute_force(
        RedbStore::open(dir.path().join("w.redb")).unwrap(),
        0x8f3a_11c2_94d0_7e65,
    );
}

#[cfg(feature = "redis")]
#[test]
fn wide_fingerprints_on_redis_match_brute_force() {
    if common::redis_url("wide_fingerprints_on_redis_match_brute_force").is_none() {
        return;
    }
    wide_store_matches_brute_force(
        common::redis_store("bruteforce-wide").unwrap(),
        0x51a3_77c0_e2d4_9b18,
    );
    wide_store_matches_brute_force(
        common::replicated_store("bruteforce-wide-replicated").unwrap(),
        0x6b2e_0f91_c3a5_d847,
    );
}
