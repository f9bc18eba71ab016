//! The LSH band index in memory: band key -> documents.
//!
//! Every new document looks up all its band keys (10 by default) and then
//! adds itself under each, so a check costs 20 random accesses into a table
//! of ten entries per stored document (10M entries at 1M documents). The
//! first version was a `FxHashMap<u64, enum { One, Many(Vec) }>`: 32-byte
//! buckets plus a control byte, 33 bytes per bucket, and a lookup reads the
//! control bytes and the bucket in two different cache lines. Measured,
//! that made memory-store checks 2x slower than without bands.
//!
//! This table is open addressing over 8-byte slots (key tag, ids) with
//! Robin Hood linear probing: a lookup, hit or miss, reads one or two
//! adjacent slots (usually one cache line), and the insert that follows a
//! check's lookup finds that line still cached. Almost every key lists one
//! document, stored inline in its slot; keys shared by several documents
//! point to a list kept aside.
//!
//! A slot keeps 32 bits of its key (the low ones; band keys are hashes)
//! and 32 bits of ids: the table is most of a long crawl's memory (ten
//! keys per kept page), and 16-byte slots made it 256 MB per million
//! documents (issue 28). Two keys that agree on their low 32 bits share a
//! slot: each one's documents become candidates of the other's. A lookup
//! of a key not in the table meets another key's tag with probability
//! keys / 2^32: one band lookup in 430 at 1M documents (10M keys), one in
//! 43 at 10M. Such a candidate costs one verification (its record read,
//! two sketches compared) and is rejected like any other false candidate
//! of LSH; the check's candidates are capped at 256, newest first, so a
//! real one is not crowded out. Ids of 2^31 and beyond (not handed out in
//! practice: ids count up from 0) are kept in a list of one.

use super::{DocId, push_capped};

/// `Slot::ids` of an empty slot.
const EMPTY: u32 = u32::MAX;

/// Set in `Slot::ids` when the rest is an index into [`BandIndex::lists`]
/// rather than a document id. A document id with this bit set or beyond
/// (never assigned in practice: ids count up from 0) is kept in a list of
/// one.
const LIST: u32 = 1 << 31;

/// Lists at most: an index must not make `Slot::ids` read as [`EMPTY`].
/// Reached only past two billion distinct keys shared by several
/// documents; a key that would need another list then keeps the documents
/// it has (a missed candidate, never a wrong one).
const MAX_LISTS: usize = (EMPTY & !LIST) as usize;

/// Multiplier spreading a key over the table (Fibonacci hashing: the top
/// bits of the product). Band keys are hashes already; this also spreads
/// keys that are not.
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;

/// Fewest slots a non-empty table has.
const MIN_SLOTS: usize = 16;

/// One table entry: a band key's tag (see [`tag`]) and its documents.
/// Empty when `ids` is [`EMPTY`]; otherwise `ids` is a document id, or
/// [`LIST`] | list index.
#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u32,
    ids: u32,
}

/// The part of a band key a slot keeps (see the module's notes).
fn tag(key: u64) -> u32 {
    key as u32
}

/// A document id as `Slot::ids` holds it inline, if it fits.
fn inline_id(id: DocId) -> Option<u32> {
    u32::try_from(id).ok().filter(|&i| i & LIST == 0)
}

impl Slot {
    const VACANT: Slot = Slot { key: 0, ids: EMPTY };

    fn is_empty(self) -> bool {
        self.ids == EMPTY
    }
}

/// Tables at least this large (bytes) get their own memory mapping,
/// advised to use transparent huge pages; smaller ones live on the heap.
const MAPPED_BYTES: usize = 4 << 20;

/// The slots' memory: one word per slot, the complement of the key's tag
/// (high half) and `ids` (low half), so that zeroed memory is all empty
/// slots: a new table needs no pass writing [`EMPTY`] over it, and its
/// pages are touched only as keys arrive.
///
/// Large tables are an anonymous mapping advised to use transparent huge
/// pages, because every lookup lands on a random slot of a table of
/// hundreds of megabytes: with 4 KB pages each one is also a TLB miss and
/// a page walk (under virtualization a two-level one). Measured on the
/// project's VM, 10M keys: 350-400 ns per lookup on 4 KB pages, 140-180 ns
/// on huge pages. Where the advice is not available (or not granted) the
/// mapping still works, on ordinary pages.
#[derive(Debug)]
enum SlotArray {
    Heap(Vec<u64>),
    /// The first `slots` words of `map` are the table; the rest of the
    /// mapping is address space kept for doublings in place
    /// ([`SlotArray::grow`]), never touched until then, so it costs no
    /// memory.
    Mapped {
        map: memmap2::MmapMut,
        slots: usize,
    },
}

/// A mapped table reserves address space for this many times its slots,
/// so that it doubles in place ([`SlotArray::grow`]) up to that size. A
/// copy holds the old table and the new one at once (1.5x the new one):
/// in a long crawl the table's doublings to 512 MB and 1 GB were the
/// crawl's peak RSS. The first mapped table (4 MB) reserves 2 GB of
/// address space, enough for 270M band keys (27M kept pages with ten
/// bands) without a copy. Address space costs no memory until touched.
const RESERVE: usize = 512;

/// Whether the kernel charges every mapping against a commit limit
/// (`vm.overcommit_memory = 2`): there a reserve would take real
/// commitment away from other allocations, so tables take their size.
fn strict_overcommit() -> bool {
    static STRICT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STRICT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|s| s.trim() == "2")
    })
}

impl Default for SlotArray {
    fn default() -> Self {
        SlotArray::Heap(Vec::new())
    }
}

impl SlotArray {
    /// `slots` empty slots.
    fn new(slots: usize) -> SlotArray {
        let bytes = slots.saturating_mul(8);
        if bytes >= MAPPED_BYTES {
            // The reserve is address space only (`MAP_NORESERVE`: not
            // charged against swap); where even that is refused, the table
            // takes exactly its size.
            let reserve = if strict_overcommit() { 1 } else { RESERVE };
            // At most 64 GB of address space (8G keys), at least the table.
            // Computed in u64: 1 << 36 overflows a 32-bit usize, where the
            // reserve then falls back to the table's own size.
            let len = (bytes as u64)
                .saturating_mul(reserve as u64)
                .min(1 << 36)
                .max(bytes as u64);
            let len = usize::try_from(len).unwrap_or(bytes);
            let reserved = memmap2::MmapOptions::new()
                .len(len)
                .no_reserve_swap()
                .map_anon()
                .or_else(|_| memmap2::MmapOptions::new().len(bytes).map_anon());
            if let Ok(map) = reserved {
                #[cfg(target_os = "linux")]
                {
                    // Advice only: without it the table is merely slower.
                    let _ = map.advise(memmap2::Advice::HugePage);
                }
                return SlotArray::Mapped { map, slots };
            }
        }
        // Also the fallback when mapping fails: `vec!` reports a failed
        // allocation as ever.
        SlotArray::Heap(vec![0; slots])
    }

    /// Makes the table `slots` long, keeping its words, if that can be
    /// done without a copy: a heap table below [`MAPPED_BYTES`], a mapped
    /// one within its reserve. The new words are zero (empty slots).
    fn grow(&mut self, slots: usize) -> bool {
        match self {
            SlotArray::Heap(v) if slots.saturating_mul(8) < MAPPED_BYTES => {
                v.resize(slots, 0);
                true
            }
            SlotArray::Heap(_) => false,
            SlotArray::Mapped { map, slots: have } => {
                // Past the old end the mapping was never written: zero.
                if slots.saturating_mul(8) <= map.len() {
                    *have = slots;
                    true
                } else {
                    false
                }
            }
        }
    }

    fn words(&self) -> &[u64] {
        match self {
            SlotArray::Heap(v) => v,
            // A mapping is page aligned and a multiple of 8 bytes long, so
            // the cast cannot fail; `slots` is within it (checked when set).
            SlotArray::Mapped { map, slots } => {
                let words: &[u64] = bytemuck::cast_slice(map);
                &words[..*slots]
            }
        }
    }

    fn words_mut(&mut self) -> &mut [u64] {
        match self {
            SlotArray::Heap(v) => v,
            SlotArray::Mapped { map, slots } => {
                let words: &mut [u64] = bytemuck::cast_slice_mut(map);
                &mut words[..*slots]
            }
        }
    }

    fn len(&self) -> usize {
        self.words().len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, at: usize) -> Slot {
        let w = !self.words()[at];
        Slot {
            key: (w >> 32) as u32,
            ids: w as u32,
        }
    }

    fn set(&mut self, at: usize, slot: Slot) {
        self.words_mut()[at] = !((u64::from(slot.key) << 32) | u64::from(slot.ids));
    }

    fn set_ids(&mut self, at: usize, ids: u32) {
        let key = self.get(at).key;
        self.set(at, Slot { key, ids });
    }
}

/// Band key -> documents, oldest first, capped at [`BAND_POSTINGS`](super::BAND_POSTINGS) (the
/// oldest dropped). The memory store keeps its bands here; the redb store
/// keeps them here too, derived from its documents (see
/// [`super::Store::rebuild_bands`]), so a check adds no B-tree writes for
/// them.
#[derive(Debug, Default)]
pub(crate) struct BandIndex {
    /// Power-of-two many slots (or none), Robin Hood ordered: along a probe
    /// run, slots are sorted by their distance from their home slot, so a
    /// lookup stops as soon as it passes where its key would be.
    slots: SlotArray,
    /// Occupied slots.
    len: usize,
    /// `64 - log2(slots.len())`: a key's home slot is the top bits of
    /// `key * SPREAD`.
    shift: u32,
    /// Ids of keys listing more than one document, oldest first.
    lists: Vec<Vec<DocId>>,
    /// Indices of `lists` entries no key uses, for reuse.
    free_lists: Vec<usize>,
}

impl BandIndex {
    /// An index with room for `keys` band keys before it grows: rebuilding
    /// one from stored documents knows how many there will be.
    #[cfg_attr(not(any(test, feature = "redb")), allow(dead_code))] // the redb store only
    pub(crate) fn with_capacity(keys: usize) -> BandIndex {
        let mut index = BandIndex::default();
        if keys > 0 {
            index.resize(slots_for(keys));
        }
        index
    }

    /// Appends the documents under `key`, oldest first.
    pub(crate) fn get(&self, key: u64, out: &mut Vec<DocId>) {
        self.each_of(&[key], |_, ids| out.extend_from_slice(ids));
    }

    /// Calls `f(key, documents under it, oldest first)` for each of `keys`
    /// in order (an empty slice for a key not indexed).
    ///
    /// A check looks up all its band keys at once through this: in a large
    /// index each lookup is a cache miss (the keys are hashes, spread over
    /// the whole table), so the home slots of a chunk of keys are read
    /// first, with no dependence between the reads, letting the processor
    /// wait for their misses together rather than one after the other.
    pub(crate) fn each_of(&self, keys: &[u64], mut f: impl FnMut(u64, &[DocId])) {
        const CHUNK: usize = 16;
        if self.slots.is_empty() {
            for &key in keys {
                f(key, &[]);
            }
            return;
        }
        for chunk in keys.chunks(CHUNK) {
            let mut first = [Slot::VACANT; CHUNK];
            for (slot, &key) in first.iter_mut().zip(chunk) {
                *slot = self.slots.get(self.home(tag(key)));
            }
            for (&slot, &key) in first.iter().zip(chunk) {
                // Most lookups end at the home slot: empty, or the key.
                let ids = if slot.is_empty() {
                    None
                } else if slot.key == tag(key) {
                    Some(slot.ids)
                } else {
                    self.find(tag(key)).map(|at| self.slots.get(at).ids)
                };
                match ids {
                    None => f(key, &[]),
                    Some(ids) if ids & LIST == 0 => f(key, &[DocId::from(ids)]),
                    Some(ids) => f(key, self.lists.get(list_index(ids)).map_or(&[], Vec::as_slice)),
                }
            }
        }
    }

    /// Adds `id` under `key`, dropping the oldest beyond [`BAND_POSTINGS`](super::BAND_POSTINGS).
    pub(crate) fn add(&mut self, key: u64, id: DocId) {
        let key = tag(key);
        if let Some(at) = self.find(key) {
            let ids = self.slots.get(at).ids;
            if ids & LIST == 0 {
                let mut list = Vec::with_capacity(2);
                list.push(DocId::from(ids));
                push_capped(&mut list, id);
                if let Some(ids) = self.new_list(list) {
                    self.slots.set_ids(at, ids);
                }
            } else if let Some(list) = self.lists.get_mut(list_index(ids)) {
                push_capped(list, id);
            }
            return;
        }
        let Some(ids) = inline_id(id).or_else(|| self.new_list(vec![id])) else {
            return;
        };
        if (self.len + 1) * 5 > self.slots.len() * 4 {
            let grown = (self.slots.len() * 2).max(MIN_SLOTS);
            if self.slots.is_empty() || !self.slots.grow(grown) {
                self.resize(grown);
            } else {
                self.spread_doubled();
            }
        }
        self.place(Slot { key, ids });
        self.len += 1;
    }

    /// Removes `id` from `key` (nothing if it is not there).
    pub(crate) fn remove(&mut self, key: u64, id: DocId) {
        let Some(at) = self.find(tag(key)) else { return };
        let ids = self.slots.get(at).ids;
        if ids & LIST == 0 {
            if DocId::from(ids) == id {
                self.delete(at);
            }
            return;
        }
        let index = list_index(ids);
        let Some(list) = self.lists.get_mut(index) else {
            return;
        };
        list.retain(|&x| x != id);
        match list.as_slice() {
            [] => {
                self.free_list(index);
                self.delete(at);
            }
            // Back to the common case: inline, and the list is reused (an
            // id too large to sit inline stays in its list of one).
            &[only] => {
                if let Some(only) = inline_id(only) {
                    self.free_list(index);
                    self.slots.set_ids(at, only);
                }
            }
            _ => {}
        }
    }

    /// Calls `f(key, documents under it, oldest first)` for every key, in
    /// no particular order: a snapshot of the index replays these lists.
    ///
    /// Not in slot order: keys added in the order of their home slots
    /// pile up in a table that is still growing (each lands behind the
    /// run of the ones before it; a 1M-document replay took minutes), so
    /// the slots are visited along an odd stride, which spreads them.
    // Used by the memory store's snapshot, which only the `redis` feature
    // builds.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, &[DocId])) {
        let n = self.slots.len();
        for i in 0..n {
            // An odd multiplier permutes 0..n when n is a power of two.
            let at = i.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) & n.wrapping_sub(1);
            let slot = self.slots.get(at);
            if slot.is_empty() {
                continue;
            }
            // The tag stands for the key: added back, it lands where the
            // key did.
            let key = u64::from(slot.key);
            if slot.ids & LIST == 0 {
                f(key, &[DocId::from(slot.ids)]);
            } else if let Some(list) = self.lists.get(list_index(slot.ids)) {
                f(key, list);
            }
        }
    }

    /// Number of keys indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn home(&self, key: u32) -> usize {
        (u64::from(key).wrapping_mul(SPREAD) >> self.shift) as usize
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// How far slot `at`, holding `key`, is from that key's home slot.
    fn displacement(&self, key: u32, at: usize) -> usize {
        at.wrapping_sub(self.home(key)) & self.mask()
    }

    /// The slot holding `key`.
    fn find(&self, key: u32) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.mask();
        let mut at = self.home(key);
        let mut dist = 0usize;
        loop {
            let slot = self.slots.get(at);
            if slot.is_empty() {
                return None;
            }
            if slot.key == key {
                return Some(at);
            }
            // Robin Hood order: a key is never further from home than the
            // key sitting where it would be.
            if self.displacement(slot.key, at) < dist {
                return None;
            }
            at = (at + 1) & mask;
            dist += 1;
        }
    }

    /// Inserts a slot whose key is not in the table (which has room):
    /// Robin Hood, each slot passed that is nearer its home than the one
    /// being placed gives way and is placed further on.
    fn place(&mut self, moving: Slot) {
        // With wrapping, a table with room always takes it.
        let _ = self.place_run(moving, true);
    }

    /// [`BandIndex::place`]; with `wrap` false it stops at the table's
    /// end and returns the slot still carried there (the one placed, or
    /// one it displaced), to be placed once the table's start is in order.
    fn place_run(&mut self, mut moving: Slot, wrap: bool) -> Option<Slot> {
        let mask = self.mask();
        let mut at = self.home(moving.key);
        let mut dist = 0usize;
        loop {
            let here = self.slots.get(at);
            if here.is_empty() {
                self.slots.set(at, moving);
                return None;
            }
            let theirs = self.displacement(here.key, at);
            if theirs < dist {
                self.slots.set(at, moving);
                moving = here;
                dist = theirs;
            }
            if !wrap && at == mask {
                return Some(moving);
            }
            at = (at + 1) & mask;
            dist += 1;
        }
    }

    /// Empties slot `at`, shifting the rest of its probe run back one slot
    /// (no tombstones: lookups stay as short as right after inserting).
    fn delete(&mut self, mut at: usize) {
        let mask = self.mask();
        loop {
            let next = (at + 1) & mask;
            let slot = self.slots.get(next);
            if slot.is_empty() || self.displacement(slot.key, next) == 0 {
                self.slots.set(at, Slot::VACANT);
                break;
            }
            self.slots.set(at, slot);
            at = next;
        }
        self.len -= 1;
    }

    /// Rebuilds the table with `slots` slots (a power of two holding `len`).
    fn resize(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, SlotArray::new(slots));
        self.shift = 64 - slots.trailing_zeros();
        for at in 0..old.len() {
            let slot = old.get(at);
            if !slot.is_empty() {
                self.place(slot);
            }
        }
    }

    /// Moves every key to its place in a table just doubled in place
    /// ([`SlotArray::grow`]; the old slots are the first half).
    ///
    /// A key's home in the doubled table is 2h or 2h + 1 for its old home
    /// h (the top bits of one product, one bit more), and a slot is never
    /// before its home. So walking the old half from its end, a key at
    /// old slot p = h + d (d: its displacement) moves to 2h or beyond,
    /// which is at or after p whenever d <= h: it lands on slots already
    /// moved or never used, and the keys not yet moved, all before p, are
    /// not disturbed. The few keys that break that (d > h near the start,
    /// and probe runs that wrapped around the old end), and keys whose
    /// new run would wrap around the new end, wait aside and are placed
    /// last, when the whole table is in the new layout.
    fn spread_doubled(&mut self) {
        let half = self.slots.len() / 2;
        let old_shift = self.shift;
        self.shift -= 1;
        let old_home = |key: u32| (u64::from(key).wrapping_mul(SPREAD) >> old_shift) as usize;
        let mut aside = Vec::new();
        for p in (0..half).rev() {
            let slot = self.slots.get(p);
            if slot.is_empty() {
                continue;
            }
            self.slots.set(p, Slot::VACANT);
            let h = old_home(slot.key);
            if h > p || p - h > h {
                aside.push(slot);
            } else if let Some(carried) = self.place_run(slot, false) {
                aside.push(carried);
            }
        }
        for slot in aside {
            self.place(slot);
        }
    }

    /// Stores a list of ids; returns the `Slot::ids` value pointing to it
    /// (none past [`MAX_LISTS`]).
    fn new_list(&mut self, list: Vec<DocId>) -> Option<u32> {
        let index = match self.free_lists.pop() {
            Some(i) => {
                self.lists[i] = list;
                i
            }
            None if self.lists.len() < MAX_LISTS => {
                self.lists.push(list);
                self.lists.len() - 1
            }
            None => return None,
        };
        // Below MAX_LISTS, so it fits beside the LIST bit.
        u32::try_from(index).ok().map(|i| LIST | i)
    }

    fn free_list(&mut self, index: usize) {
        if let Some(list) = self.lists.get_mut(index) {
            *list = Vec::new();
            self.free_lists.push(index);
        }
    }
}

/// The `lists` index in a `Slot::ids` value with [`LIST`] set.
fn list_index(ids: u32) -> usize {
    (ids & !LIST) as usize
}

/// Slots for `keys` keys: a power of two at most 80% full.
#[cfg_attr(not(any(test, feature = "redb")), allow(dead_code))] // the redb store only
fn slots_for(keys: usize) -> usize {
    (keys.saturating_mul(5) / 4 + 1)
        .next_power_of_two()
        .max(MIN_SLOTS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::BAND_POSTINGS;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// The reference: a plain map of lists, capped the same way, keyed by
    /// what the index tells keys apart by (their low 32 bits).
    #[derive(Default)]
    struct Model(HashMap<u32, Vec<DocId>>);

    impl Model {
        fn add(&mut self, key: u64, id: DocId) {
            push_capped(self.0.entry(key as u32).or_default(), id);
        }
        fn remove(&mut self, key: u64, id: DocId) {
            if let Some(v) = self.0.get_mut(&(key as u32)) {
                v.retain(|&x| x != id);
                if v.is_empty() {
                    self.0.remove(&(key as u32));
                }
            }
        }
        fn get(&self, key: u64) -> Vec<DocId> {
            self.0.get(&(key as u32)).cloned().unwrap_or_default()
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
        assert_eq!(index.len(), model.0.len());
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

    #[test]
    fn a_mapped_table_works_as_a_heap_one() {
        let mut index = BandIndex::with_capacity(400_000);
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
            .filter(|&k| (k as u32 as u64).wrapping_mul(SPREAD) >> 60 == 15)
            .take(13)
            .collect();
        for (i, &k) in last.iter().enumerate() {
            index.add(k, i as u64);
            model.add(k, i as u64);
            if i == 11 {
                assert_eq!(
                    (index.slots.len(), index.slots.get(0).is_empty()),
                    (16, false),
                    "wrapped"
                );
            }
        }
        assert_eq!(index.slots.len(), 32);
        check_same(&index, &model, last.iter().copied());
        let mut index = BandIndex::with_capacity(400_000);
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
        assert_eq!(index.slots.len(), 1 << 21, "two doublings");
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
}

#[cfg(test)]
mod timing {
    use super::*;

    /// Not a test: ns per lookup in a 10M-key index, one key at a time vs
    /// ten together (`cargo test --release -p simcrawl-dedup --lib
    /// bands::timing -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn lookup_ns() {
        let key = |i: u64| crate::hash::fmix64(i ^ 0x5555);
        let mut index = BandIndex::default();
        for i in 0..10_000_000u64 {
            index.add(key(i), i);
        }
        let queries: Vec<u64> = (0..2_000_000u64).map(|i| key(i + 20_000_000)).collect();
        let mut out = Vec::new();
        for round in 0..3 {
            let t = std::time::Instant::now();
            for &q in &queries {
                index.get(q, &mut out);
            }
            let one = t.elapsed().as_nanos() as f64 / queries.len() as f64;
            let t = std::time::Instant::now();
            for ten in queries.chunks(10) {
                index.each_of(ten, |_, ids| out.extend_from_slice(ids));
            }
            let together = t.elapsed().as_nanos() as f64 / queries.len() as f64;
            let t = std::time::Instant::now();
            for (i, &q) in queries.iter().enumerate() {
                index.add(q, i as u64);
            }
            let add = t.elapsed().as_nanos() as f64 / queries.len() as f64;
            for (i, &q) in queries.iter().enumerate() {
                index.remove(q, i as u64);
            }
            let t = std::time::Instant::now();
            for (doc, ten) in queries.chunks(10).enumerate() {
                index.each_of(ten, |_, ids| out.extend_from_slice(ids));
                for &q in ten {
                    index.add(q, doc as u64);
                }
            }
            let check = t.elapsed().as_nanos() as f64 / queries.len() as f64;
            for (doc, ten) in queries.chunks(10).enumerate() {
                for &q in ten {
                    index.remove(q, doc as u64);
                }
            }
            println!("round {round}: each_of(10) then add {check:.0} ns per key");
            println!(
                "round {round}: get {one:.0} ns, each_of(10) {together:.0} ns per key, add {add:.0} ns; {}",
                out.len()
            );
        }
    }
}
