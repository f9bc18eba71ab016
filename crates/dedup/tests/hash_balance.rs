//! The token hash must be well mixed: every bit set for about half of a real
//! vocabulary, or SimHash bits would be biased and distances meaningless.
#![allow(clippy::unwrap_used)]

use simcrawl_dedup::hash::{fnv1a64, token_hash, token_hash_high};

fn vocabulary() -> Vec<&'static str> {
    let mut words: Vec<&str> = simcrawl_dedup::features::jieba_idf().words().collect();
    words.sort_unstable();
    // Every 2nd word of the sorted dictionary: 100k+ real words spread over
    // all of it (sorted neighbours share prefixes: the hard case for FNV).
    words.into_iter().step_by(2).take(100_000).collect()
}

fn bit_rates(words: &[&str], hash: impl Fn(&str) -> u64) -> Vec<f64> {
    let mut ones = [0u64; 64];
    for w in words {
        let h = hash(w);
        for (bit, n) in ones.iter_mut().enumerate() {
            *n += (h >> bit) & 1;
        }
    }
    ones.iter().map(|&n| n as f64 / words.len() as f64).collect()
}

#[test]
fn every_bit_is_set_for_half_of_the_vocabulary() {
    let words = vocabulary();
    assert_eq!(words.len(), 100_000);
    let rates = bit_rates(&words, token_hash);
    for (bit, r) in rates.iter().enumerate() {
        assert!(
            (0.48..=0.52).contains(r),
            "bit {bit} is set for {:.3} of the vocabulary",
            r
        );
    }
}

#[test]
fn plain_fnv_is_what_the_finalizer_fixes() {
    // Documents why the finalizer exists: raw FNV-1a leaves some bit of a
    // CJK vocabulary clearly unbalanced. If this ever stops holding, the
    // finalizer is still harmless; the test above is the contract.
    let words = vocabulary();
    let rates = bit_rates(&words, |w| fnv1a64(w.as_bytes()));
    let worst = rates.iter().map(|r| (r - 0.5).abs()).fold(0.0, f64::max);
    let mixed = bit_rates(&words, token_hash)
        .iter()
        .map(|r| (r - 0.5).abs())
        .fold(0.0, f64::max);
    assert!(
        mixed < worst,
        "finalizer did not improve balance: {mixed} vs {worst}"
    );
}

#[test]
fn the_upper_half_is_balanced_and_independent_of_the_lower() {
    // A 128-bit fingerprint's upper half votes on `token_hash_high`. Its
    // bits must be balanced like the lower half's, and no bit of it may
    // follow a bit of the lower half: then the upper 64 bits would repeat
    // the lower 64's votes and add no information.
    let words = vocabulary();
    for (bit, r) in bit_rates(&words, token_hash_high).iter().enumerate() {
        assert!(
            (0.48..=0.52).contains(r),
            "upper bit {bit} is set for {r:.3} of the vocabulary"
        );
    }
    let mut agree = vec![[0u64; 64]; 64];
    for w in &words {
        let (lo, hi) = (token_hash(w), token_hash_high(w));
        for (i, row) in agree.iter_mut().enumerate() {
            let x = (lo >> i) & 1;
            for (j, n) in row.iter_mut().enumerate() {
                *n += u64::from(x == (hi >> j) & 1);
            }
        }
    }
    let n = words.len() as f64;
    for (i, row) in agree.iter().enumerate() {
        for (j, &a) in row.iter().enumerate() {
            let rate = a as f64 / n;
            assert!(
                (0.48..=0.52).contains(&rate),
                "lower bit {i} and upper bit {j} agree on {rate:.3} of the vocabulary"
            );
        }
    }
}
