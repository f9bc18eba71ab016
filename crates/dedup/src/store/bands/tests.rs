//! The band index against a plain map of lists, through growth, narrowing
//! slots and the overflow.

use super::*;
use crate::store::BAND_POSTINGS;
use proptest::prelude::*;
use std::collections::HashMap;

/// The reference: a plain map of lists, capped the same way, keyed by
/// what the index tells keys apart by (their low `bits` bits).
struct Model {
    bits: u32,
    map: HashMap<u64, Vec<DocId>>,
}

impl Default for Model {
    fn default() -> Self {
        Model::with_bits(HASH_BITS)
    }
}

impl Model {
    fn with_bits(bits: u32) -> Self {
        Model {
            bits,
            map: HashMap::new(),
        }
    }
    fn id(&self, key: u64) -> u64 {
        key & ((1u64 << self.bits) - 1)
    }
    fn add(&mut self, key: u64, id: DocId) {
        let k = self.id(key);
        push_capped(self.map.entry(k).or_default(), id);
    }
    fn remove(&mut self, key: u64, id: DocId) {
        let k = self.id(key);
        if let Some(v) = self.map.get_mut(&k) {
            v.retain(|&x| x != id);
            if v.is_empty() {
                self.map.remove(&k);
            }
        }
    }
    fn get(&self, key: u64) -> Vec<DocId> {
        self.map.get(&self.id(key)).cloned().unwrap_or_default()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add(u64, DocId),
    Remove(u64, DocId),
}

/// Keys from a small set (so keys fill up past the cap, collide and
/// probe runs wrap), some spread over all of u64, keys that differ
/// only above their low 32 bits (one slot for all), and ids that do not
/// fit a slot inline.
fn key() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..40,
        1 => any::<u64>(),
        1 => (0u64..8).prop_map(|k| k << 58),
        1 => (0u64..8).prop_map(|k| (k << 32) | 7),
    ]
}

fn id() -> impl Strategy<Value = DocId> {
    let list = u64::from(LIST);
    prop_oneof![
        8 => 0u64..200,
        1 => Just(u64::MAX),
        1 => Just(list),
        1 => Just(list - 1),
        1 => Just(INLINE_IDS - 1),
        1 => Just(INLINE_IDS),
        1 => Just(1 << 63),
        1 => Just(u64::from(u32::MAX))
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (key(), id()).prop_map(|(k, i)| Op::Add(k, i)),
        2 => (key(), id()).prop_map(|(k, i)| Op::Remove(k, i)),
    ]
}

fn check_same(index: &BandIndex, model: &Model, keys: impl Iterator<Item = u64>) {
    let mut out = Vec::new();
    for k in keys {
        out.clear();
        index.get(k, &mut out);
        assert_eq!(out, model.get(k), "key {k}");
    }
    assert_eq!(index.len(), model.map.len());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn matches_a_map_of_capped_lists(ops in prop::collection::vec(op(), 0..600), presized in any::<bool>()) {
        let mut index = if presized { BandIndex::with_capacity(50) } else { BandIndex::default() };
        let mut model = Model::default();
        let mut seen = Vec::new();
        for op in ops {
            match op {
                Op::Add(k, i) => {
                    index.add(k, i);
                    model.add(k, i);
                    seen.push(k);
                }
                Op::Remove(k, i) => {
                    index.remove(k, i);
                    model.remove(k, i);
                    seen.push(k);
                }
            }
            // Spot check the key just touched plus one never used.
            if let Some(&k) = seen.last() {
                check_same(&index, &model, [k, 1 << 40].into_iter());
            }
        }
        check_same(&index, &model, seen.iter().copied());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// Tables telling 12 bits apart: 5-byte slots from 64 slots, a
    /// table that stops growing at 4,096 (one slot per hash) and fills
    /// up, runs longer than a slot can say, in the overflow.
    #[test]
    fn narrow_and_full_tables_match_the_map(
        ops in prop::collection::vec((0u64..6_000, 0u64..50, prop::bool::weighted(0.8)), 0..8_000)
    ) {
        let mut index = BandIndex::with_hash_bits(12);
        let mut model = Model::with_bits(12);
        for &(k, i, add) in &ops {
            let key = crate::hash::fmix64(k);
            if add {
                index.add(key, i);
                model.add(key, i);
            } else {
                index.remove(key, i);
                model.remove(key, i);
            }
        }
        prop_assert!(index.layout.order <= 12);
        check_same(&index, &model, (0u64..6_000).map(crate::hash::fmix64));
        check_for_each(&index, &model);
    }
}

/// A table with a slot for every hash stops growing and fills up.
#[test]
fn a_table_of_every_hash_fills_up() {
    let mut index = BandIndex::with_hash_bits(8);
    let mut model = Model::with_bits(8);
    let keys: Vec<u64> = (0u32..256).map(|h| u64::from(index.unhash(h))).collect();
    for (i, &k) in keys.iter().enumerate() {
        index.add(k, i as u64);
        model.add(k, i as u64);
    }
    assert_eq!((index.layout.order, index.len()), (8, 256));
    check_same(&index, &model, keys.iter().copied());
    for (i, &k) in keys.iter().enumerate().step_by(2) {
        index.add(k, 1_000 + i as u64);
        model.add(k, 1_000 + i as u64);
        index.remove(k, i as u64);
        model.remove(k, i as u64);
    }
    for (i, &k) in keys.iter().enumerate().skip(1).step_by(4) {
        index.remove(k, i as u64);
        model.remove(k, i as u64);
    }
    check_same(&index, &model, keys.iter().copied());
    check_for_each(&index, &model);
}

#[test]
fn a_mapped_table_works_as_a_heap_one() {
    let mut index = BandIndex::with_capacity(800_000);
    assert!(matches!(index.slots, SlotArray::Mapped { .. }));
    let mut model = Model::default();
    // Small keys collide on purpose: lists and probe runs on the map.
    let key = |i: u64| {
        if i.is_multiple_of(5) {
            i % 7
        } else {
            crate::hash::fmix64(i)
        }
    };
    for i in 0..30_000u64 {
        index.add(key(i), i);
        model.add(key(i), i);
    }
    for i in (0..30_000u64).step_by(4) {
        index.remove(key(i), i);
        model.remove(key(i), i);
    }
    check_same(&index, &model, (0..30_100u64).map(key));
}

/// Doublings in place, on the heap and within a mapping's reserve,
/// with probe runs that wrap around the table's end: the same answers
/// as a map, and a mapped table keeps its mapping.
#[test]
fn tables_doubled_in_place_answer_as_before() {
    // Keys whose home is the last slot of a 16-slot table: twelve make
    // one probe run wrapping around the end, the thirteenth doubles it.
    let mut index = BandIndex::default();
    let mut model = Model::default();
    let last: Vec<u64> = (0u64..)
        .filter(|&k| (k as u32).wrapping_mul(MIX) >> 28 == 15)
        .take(13)
        .collect();
    for (i, &k) in last.iter().enumerate() {
        index.add(k, i as u64);
        model.add(k, i as u64);
        if i == 11 {
            assert_eq!(
                (index.layout.slots(), index.slot(0).is_none()),
                (16, false),
                "wrapped"
            );
        }
    }
    assert_eq!(index.layout.slots(), 32);
    check_same(&index, &model, last.iter().copied());
    let mut index = BandIndex::with_capacity(800_000);
    let SlotArray::Mapped { map, .. } = &index.slots else {
        panic!("not mapped")
    };
    let reserved = map.as_ptr();
    let key = |i: u64| {
        if i.is_multiple_of(5) {
            i % 7
        } else {
            crate::hash::fmix64(i)
        }
    };
    let mut model = Model::default();
    for i in 0..1_500_000u64 {
        index.add(key(i), i);
        model.add(key(i), i);
    }
    assert_eq!(index.layout.slots(), 1 << 21, "a doubling");
    // (A kernel with strict overcommit gives no reserve: copies.)
    let SlotArray::Mapped { map, .. } = &index.slots else {
        panic!("not mapped")
    };
    if !strict_overcommit() {
        assert_eq!(map.as_ptr(), reserved, "doubled in place");
    }
    for i in (0..1_500_000u64).step_by(3) {
        index.remove(key(i), i);
        model.remove(key(i), i);
    }
    check_same(&index, &model, (0..1_500_100u64).map(key));
}

/// Keys spread over all bits, and some that differ only above the
/// bits a table of `bits` bits tells apart.
fn spread_key(i: u64) -> u64 {
    if i.is_multiple_of(7) {
        i % 11
    } else {
        crate::hash::fmix64(i)
    }
}

/// Every key of the index reported once by `for_each`, with its ids.
fn check_for_each(index: &BandIndex, model: &Model) {
    let mut seen = HashMap::new();
    index.for_each(|key, ids| {
        assert!(
            seen.insert(model.id(key), ids.to_vec()).is_none(),
            "key {key} twice"
        );
    });
    assert_eq!(seen, model.map);
}

/// A table that tells keys apart by 20 bits narrows its slots from 8
/// bytes to 6 at 64 slots and to 5 at 16,384: it answers as the map
/// through the changes, its doublings and its removals, and gives its
/// keys back whole.
#[test]
fn narrowing_tables_answer_as_the_map() {
    let mut index = BandIndex::with_hash_bits(20);
    let mut model = Model::with_bits(20);
    let ids = |i: u64| if i.is_multiple_of(13) { INLINE_IDS + i } else { i };
    let mut widths = Vec::new();
    for i in 0..8_000u64 {
        index.add(spread_key(i), ids(i));
        model.add(spread_key(i), ids(i));
        if widths.last() != Some(&index.layout.width) {
            widths.push(index.layout.width);
        }
    }
    assert_eq!(widths, [8, 6, 5]);
    assert_eq!(index.layout.order, 14);
    check_same(&index, &model, (0..8_100u64).map(spread_key));
    check_for_each(&index, &model);
    for i in (0..8_000u64).step_by(3) {
        index.remove(spread_key(i), ids(i));
        model.remove(spread_key(i), ids(i));
    }
    check_same(&index, &model, (0..8_100u64).map(spread_key));
    check_for_each(&index, &model);
}

/// Keys displaced further than a compact slot can say wait in the
/// overflow: found, updated and removed there, and placed in the
/// table again when it doubles.
#[test]
fn keys_displaced_too_far_wait_in_the_overflow() {
    let mut index = BandIndex::with_hash_bits(16);
    let mut model = Model::with_bits(16);
    for i in 0..500u64 {
        index.add(crate::hash::fmix64(i), i);
        model.add(crate::hash::fmix64(i), i);
    }
    assert_eq!(
        (index.layout.order, index.layout.width, index.layout.dib_bits),
        (10, 5, 6)
    );
    // Every hash of two neighbouring home slots (64 each): a probe run
    // of 128 and more, whose tail cannot say its displacement in 6 bits.
    let crowd: Vec<u64> = (0u32..128)
        .map(|r| u64::from(index.unhash((300 << 6) + r)))
        .collect();
    for (i, &k) in crowd.iter().enumerate() {
        index.add(k, 10_000 + i as u64);
        model.add(k, 10_000 + i as u64);
    }
    assert_eq!(index.layout.order, 10, "no doubling yet");
    assert!(!index.overflow.is_empty(), "some keys overflowed");
    let every = || (0..500u64).map(crate::hash::fmix64).chain(crowd.iter().copied());
    check_same(&index, &model, every());
    check_for_each(&index, &model);
    // A second id and a removal, on overflowed keys among others.
    for (i, &k) in crowd.iter().enumerate().step_by(2) {
        index.add(k, 20_000 + i as u64);
        model.add(k, 20_000 + i as u64);
    }
    for (i, &k) in crowd.iter().enumerate().step_by(3) {
        index.remove(k, 10_000 + i as u64);
        model.remove(k, 10_000 + i as u64);
    }
    check_same(&index, &model, every());
    // Doubling gives the crowd two more home bits' room.
    for i in 500..900u64 {
        index.add(crate::hash::fmix64(i), i);
        model.add(crate::hash::fmix64(i), i);
    }
    assert_eq!(index.layout.order, 11);
    check_same(
        &index,
        &model,
        (0..900u64).map(crate::hash::fmix64).chain(crowd.iter().copied()),
    );
    check_for_each(&index, &model);
}

/// An overflowed key is found when its home slot has emptied.
#[test]
fn overflowed_keys_outlive_their_probe_run() {
    let mut index = BandIndex::with_hash_bits(16);
    for i in 0..500u64 {
        index.add(crate::hash::fmix64(i), i);
    }
    let crowd: Vec<u64> = (0u32..128)
        .map(|r| u64::from(index.unhash((300 << 6) + r)))
        .collect();
    for (i, &k) in crowd.iter().enumerate() {
        index.add(k, 10_000 + i as u64);
    }
    let waiting: Vec<(u32, u32)> = index.overflow.iter().map(|(&h, &ids)| (h, ids)).collect();
    assert!(!waiting.is_empty());
    for (i, &k) in crowd.iter().enumerate() {
        if !index.overflow.contains_key(&index.hash(k)) {
            index.remove(k, 10_000 + i as u64);
        }
    }
    for i in 0..500u64 {
        index.remove(crate::hash::fmix64(i), i);
    }
    assert_eq!(index.len(), waiting.len());
    let mut out = Vec::new();
    for &(hash, ids) in &waiting {
        let key = u64::from(index.unhash(hash));
        assert!(index.slot(index.layout.home(hash)).is_none(), "home emptied");
        out.clear();
        index.get(key, &mut out);
        assert_eq!(out, [DocId::from(ids)]);
    }
}

/// A mapped table of 6-byte slots doubles in place into 5-byte ones
/// (here at 2^22 slots, telling 28 bits apart).
#[test]
fn a_mapped_table_narrows_in_place() {
    let mut index = BandIndex::with_hash_bits(28);
    index.resize(21);
    assert_eq!(index.layout.width, 6);
    let SlotArray::Mapped { map, .. } = &index.slots else {
        panic!("not mapped")
    };
    let reserved = map.as_ptr();
    let mut model = Model::with_bits(28);
    for i in 0..2_000_000u64 {
        index.add(spread_key(i), i);
        model.add(spread_key(i), i);
    }
    assert_eq!((index.layout.order, index.layout.width), (22, 5));
    let SlotArray::Mapped { map, .. } = &index.slots else {
        panic!("not mapped")
    };
    if !strict_overcommit() {
        assert_eq!(map.as_ptr(), reserved, "doubled in place");
    }
    for i in (0..2_000_000u64).step_by(5) {
        index.remove(spread_key(i), i);
        model.remove(spread_key(i), i);
    }
    check_same(&index, &model, (0..2_000_100u64).map(spread_key));
}

#[test]
fn the_mix_is_undone() {
    assert_eq!(MIX.wrapping_mul(UNMIX), 1);
    let index = BandIndex::with_hash_bits(16);
    for key in [0u32, 1, 77, 0xffff] {
        assert_eq!(index.unhash(index.hash(u64::from(key))), key);
    }
}

#[test]
fn cap_drops_the_oldest() {
    let mut index = BandIndex::default();
    for id in 0..(BAND_POSTINGS as u64 + 5) {
        index.add(9, id);
    }
    let mut out = Vec::new();
    index.get(9, &mut out);
    let want: Vec<DocId> = (5..BAND_POSTINGS as u64 + 5).collect();
    assert_eq!(out, want);
}

#[test]
fn many_keys_grow_shrink_and_stay_findable() {
    let mut index = BandIndex::default();
    let mut model = Model::default();
    let key = |i: u64| crate::hash::fmix64(i);
    for i in 0..20_000u64 {
        index.add(key(i), i);
        model.add(key(i), i);
    }
    for i in (0..20_000u64).step_by(3) {
        index.remove(key(i), i);
        model.remove(key(i), i);
    }
    check_same(&index, &model, (0..20_100u64).map(key));
    // Removing what is not there changes nothing.
    index.remove(key(1), 999_999);
    index.remove(key(30_000), 1);
    check_same(&index, &model, (0..20_100u64).map(key));
}
