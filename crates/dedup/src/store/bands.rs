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
//! This table is open addressing with Robin Hood linear probing: a lookup,
//! hit or miss, reads one or two adjacent slots (usually one cache line),
//! and the insert that follows a check's lookup finds that line still
//! cached. Almost every key lists one document, stored inline in its slot;
//! keys shared by several documents point to a list kept aside.
//!
//! The table tells keys apart by 32 bits of them (the low ones; band keys
//! are hashes), mixed into a *slot hash* by a bijection. Two keys that
//! agree on those bits share a slot: each one's documents become
//! candidates of the other's. A lookup of a key not in the table meets
//! another key's hash with probability keys / 2^32: one band lookup in 430
//! at 1M documents (10M keys), one in 43 at 10M. Such a candidate costs one
//! verification (its record read, two sketches compared) and is rejected
//! like any other false candidate of LSH; the check's candidates are
//! capped at 256, newest first, so a real one is not crowded out.
//!
//! The table is most of a long crawl's memory (ten keys per kept page), so
//! a slot stores no more of its hash than its position does not already
//! say (quotienting): the top bits of the hash are its home slot, found
//! from the slot's position and its displacement, which the slot keeps.
//! A slot holds 28 bits of ids, the hash bits below its home slot's and
//! its displacement, in the narrowest of 8, 6 and 5 bytes that leaves the
//! displacement 6 bits or more: 8 bytes up to 2^17 slots, 6 from 2^18, 5
//! from 2^26 (53M keys, 5.4M kept pages with ten bands). With 16-byte
//! slots the table was 256 MB per million documents (issue 28); with 8-byte
//! ones a 10M-page crawl needed 1 GB for it, with 5-byte ones 640 MiB. The
//! rare key whose displacement would not fit waits in a small overflow
//! map, which a lookup that misses the table asks when it is not empty.
//! Ids of 2^27 and beyond (not
//! handed out in practice: ids count up from 0) are kept in a list of one.

use std::collections::BTreeMap;

use super::{DocId, push_capped};

/// Set in `Slot::ids` when the rest is an index into [`BandIndex::lists`]
/// rather than a document id.
const LIST: u32 = 1 << 31;

/// Bits of ids a slot keeps, the low ones of its word at every width: a
/// list flag ([`ID_FLAG`]) and 27 bits of id or list index, complemented
/// so that zeroed memory is all empty slots. Document ids from `1 << 27`
/// on are kept in a list of one.
const ID_BITS: u32 = 28;

/// The ids field of a slot's word.
const ID_MASK: u64 = (1 << ID_BITS) - 1;

/// The list flag within the ids field.
const ID_FLAG: u32 = 1 << (ID_BITS - 1);

/// Ids kept inline in a slot are below this.
const INLINE_IDS: u64 = ID_FLAG as u64;

/// Lists at most: an index must fit beside the list flag of a compact
/// slot and not read as an empty one. Reached only past 134M distinct keys
/// shared by several documents; a key that would need another list then
/// keeps the documents it has (a missed candidate, never a wrong one).
const MAX_LISTS: usize = (1 << (ID_BITS - 1)) - 1;

/// Bits of a band key the table tells keys apart by.
const HASH_BITS: u32 = 32;

/// Odd multiplier mixing a key's bits into its slot hash (Fibonacci
/// hashing: the top bits of the product, which depend on all of the key's
/// bits, pick the home slot). Band keys are hashes already; this also
/// spreads keys that are not. Odd, so the mix is a bijection and a slot's
/// hash gives its key back ([`UNMIX`]).
const MIX: u32 = 0x9e37_79b9;

/// The inverse of [`MIX`] modulo 2^32 (Newton's iteration: an odd number
/// is its own inverse to 3 bits, and each step doubles the bits that are
/// right, so five steps give all 32).
const UNMIX: u32 = {
    let mut x = MIX;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u32.wrapping_sub(MIX.wrapping_mul(x)));
        i += 1;
    }
    x
};

/// Fewest slots a non-empty table has.
const MIN_SLOTS: usize = 16;

/// Fewest displacement bits a slot keeps: a table's slots narrow only when
/// they keep room for them (to 6 bytes from 2^18 slots, to 5 bytes from
/// 2^26, with 32 hash bits). Robin Hood probing at 80% load displaces
/// almost no key more than a few dozen slots; the rare one beyond 63 goes
/// to the overflow.
const MIN_COMPACT_DISPLACEMENT_BITS: u32 = 6;

/// One table entry as the algorithms see it: the key's slot hash and its
/// documents, a document id or [`LIST`] | list index.
#[derive(Clone, Copy, Debug)]
struct Slot {
    hash: u32,
    ids: u32,
}

/// A document id as `Slot::ids` holds it inline, if it fits.
fn inline_id(id: DocId) -> Option<u32> {
    if id < INLINE_IDS {
        u32::try_from(id).ok()
    } else {
        None
    }
}

/// How slots of a table of `1 << order` slots are stored: `width` bytes,
/// little-endian, holding from the low end the ids ([`ID_BITS`]), the hash
/// bits below the home slot's (`rem_bits`), and the displacement from the
/// home slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    order: u32,
    width: usize,
    rem_bits: u32,
    dib_bits: u32,
    /// The masks of the hash bits and of a whole slot, computed once:
    /// lookups are a few instructions around a cache miss, and the fewer
    /// they are, the more lookups the processor overlaps.
    rem_mask: u64,
    word_mask: u64,
}

impl Layout {
    /// The layout of a table of `1 << order` slots telling keys apart by
    /// `hash_bits` bits: the narrowest slot with room for the ids, the
    /// hash bits the position does not say, and a displacement of at least
    /// [`MIN_COMPACT_DISPLACEMENT_BITS`].
    fn new(order: u32, hash_bits: u32) -> Layout {
        let rem_bits = hash_bits.saturating_sub(order);
        let width = [5, 6]
            .into_iter()
            .find(|&w| ID_BITS + rem_bits + MIN_COMPACT_DISPLACEMENT_BITS <= w * 8)
            .unwrap_or(8) as usize;
        let dib_bits = (width as u32 * 8 - ID_BITS - rem_bits).min(32);
        Layout {
            order,
            width,
            rem_bits,
            dib_bits,
            rem_mask: (1u64 << rem_bits) - 1,
            word_mask: if width == 8 {
                u64::MAX
            } else {
                (1u64 << (width * 8)) - 1
            },
        }
    }

    #[inline]
    fn slots(self) -> usize {
        1 << self.order
    }

    /// Bytes a table of this layout takes: its slots and 8 bytes more, so
    /// that every slot can be read as one unaligned 8-byte word.
    fn bytes(self) -> usize {
        self.slots().saturating_mul(self.width).saturating_add(8)
    }

    fn max_displacement(self) -> usize {
        ((1u64 << self.dib_bits) - 1) as usize
    }

    /// The slot at `at` from its word, `None` for an empty slot.
    #[inline]
    fn decode(self, word: u64, at: usize) -> Option<Slot> {
        let ids = ids(word)?;
        let upper = word >> ID_BITS;
        let home = (at as u64).wrapping_sub(upper >> self.rem_bits) & (self.slots() as u64 - 1);
        Some(Slot {
            hash: ((home << self.rem_bits) | (upper & self.rem_mask)) as u32,
            ids,
        })
    }

    /// The displacement a non-empty word says.
    #[inline]
    fn displacement(self, word: u64) -> usize {
        (word >> ID_BITS >> self.rem_bits) as usize
    }

    /// What a word holding `hash` at displacement `dist` has above its
    /// ids: a key matches without decoding the slot.
    #[inline]
    fn upper(self, hash: u32, dist: usize) -> u64 {
        (u64::from(hash) & self.rem_mask) | ((dist as u64) << self.rem_bits)
    }

    /// The word of `slot` at `at`, if its displacement fits.
    fn encode(self, slot: Slot, at: usize) -> Option<u64> {
        let dib = at.wrapping_sub(self.home(slot.hash)) & (self.slots() - 1);
        if dib > self.max_displacement() {
            return None;
        }
        let field = if slot.ids & LIST != 0 {
            ID_FLAG | (slot.ids & !LIST)
        } else {
            slot.ids
        };
        Some((u64::from(field) ^ ID_MASK) | (self.upper(slot.hash, dib) << ID_BITS))
    }

    #[inline]
    fn home(self, hash: u32) -> usize {
        (u64::from(hash) >> self.rem_bits) as usize
    }
}

/// The `Slot::ids` of a slot's word, `None` for an empty slot.
#[inline]
fn ids(word: u64) -> Option<u32> {
    let field = word & ID_MASK;
    if field == 0 {
        return None;
    }
    let field = (field ^ ID_MASK) as u32;
    Some(if field & ID_FLAG != 0 {
        LIST | (field & !ID_FLAG)
    } else {
        field
    })
}

/// Tables at least this large (bytes) get their own memory mapping,
/// advised to use transparent huge pages; smaller ones live on the heap.
const MAPPED_BYTES: usize = 4 << 20;

/// The slots' bytes ([`Layout`] says how to read them). Zeroed memory is
/// all empty slots: a new table needs no pass writing empty slots over it,
/// and its pages are touched only as keys arrive.
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
    Heap(Vec<u8>),
    /// The first `bytes` bytes of `map` are the table; the rest of the
    /// mapping is address space kept for doublings in place
    /// ([`SlotArray::grow`]), never touched until then, so it costs no
    /// memory.
    Mapped {
        map: memmap2::MmapMut,
        bytes: usize,
    },
}

/// A mapped table reserves address space for this many times its bytes,
/// so that it doubles in place ([`SlotArray::grow`]) up to that size. A
/// copy holds the old table and the new one at once (1.5x the new one):
/// in a long crawl the table's doublings to 512 MB and 1 GB were the
/// crawl's peak RSS. The first mapped table (2^20 slots of 6 bytes, 6 MB)
/// reserves 3 GB of address space, enough for 2^29 slots of 5 bytes: 430M
/// band keys (43M kept pages with ten bands) without a copy. Address space
/// costs no memory until touched.
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
    /// `bytes` zero bytes.
    fn new(bytes: usize) -> SlotArray {
        if bytes >= MAPPED_BYTES {
            // The reserve is address space only (`MAP_NORESERVE`: not
            // charged against swap); where even that is refused, the table
            // takes exactly its size.
            let reserve = if strict_overcommit() { 1 } else { RESERVE };
            // At most 64 GB of address space, at least the table. Computed
            // in u64: 1 << 36 overflows a 32-bit usize, where the reserve
            // then falls back to the table's own size.
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
                return SlotArray::Mapped { map, bytes };
            }
        }
        // Also the fallback when mapping fails: `vec!` reports a failed
        // allocation as ever.
        SlotArray::Heap(vec![0; bytes])
    }

    /// Makes the table `bytes` long, keeping its bytes, if that can be
    /// done without a copy: a heap table below [`MAPPED_BYTES`], a mapped
    /// one within its reserve. The new bytes are zero.
    fn grow(&mut self, bytes: usize) -> bool {
        match self {
            SlotArray::Heap(v) if bytes < MAPPED_BYTES => {
                v.resize(bytes, 0);
                true
            }
            SlotArray::Heap(_) => false,
            SlotArray::Mapped { map, bytes: have } => {
                // Past the old end the mapping was never written: zero.
                if bytes <= map.len() {
                    *have = bytes;
                    true
                } else {
                    false
                }
            }
        }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            SlotArray::Heap(v) => v,
            // `bytes` is within the mapping (checked when set).
            SlotArray::Mapped { map, bytes } => &map[..*bytes],
        }
    }

    #[inline]
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            SlotArray::Heap(v) => v,
            SlotArray::Mapped { map, bytes } => &mut map[..*bytes],
        }
    }

    fn is_empty(&self) -> bool {
        self.bytes().is_empty()
    }

    /// The word of slot `at` in `layout` (its bytes and the ones after,
    /// masked off).
    #[inline]
    fn word(&self, at: usize, layout: Layout) -> u64 {
        let start = at * layout.width;
        let mut word = [0u8; 8];
        if let Some(b) = self.bytes().get(start..start + 8) {
            word.copy_from_slice(b);
        }
        u64::from_le_bytes(word) & layout.word_mask
    }

    /// Writes slot `at`'s bytes, keeping the bytes after them that its
    /// 8-byte word covers: one fixed-size load and store, where copying
    /// `width` bytes would be a call to `memcpy`.
    #[inline]
    fn set_word(&mut self, at: usize, layout: Layout, word: u64) {
        let start = at * layout.width;
        if let Some(b) = self.bytes_mut().get_mut(start..start + 8) {
            let mut have = [0u8; 8];
            have.copy_from_slice(b);
            let merged = (u64::from_le_bytes(have) & !layout.word_mask) | (word & layout.word_mask);
            b.copy_from_slice(&merged.to_le_bytes());
        }
    }
}

/// Band key -> documents, oldest first, capped at [`BAND_POSTINGS`](super::BAND_POSTINGS) (the
/// oldest dropped). The memory store keeps its bands here; the redb store
/// keeps them here too, derived from its documents (see
/// [`super::Store::rebuild_bands`]), so a check adds no B-tree writes for
/// them.
#[derive(Debug)]
pub(crate) struct BandIndex {
    /// Power-of-two many slots (or none), Robin Hood ordered: along a probe
    /// run, slots are sorted by their distance from their home slot, so a
    /// lookup stops as soon as it passes where its key would be.
    slots: SlotArray,
    /// How `slots` is laid out (meaningless while it is empty).
    layout: Layout,
    /// Keys indexed, in the table or in `overflow`.
    len: usize,
    /// Bits of a key told apart: [`HASH_BITS`]; fewer in tests, so that
    /// small tables reach the compact layout.
    hash_bits: u32,
    /// The low `hash_bits` bits set.
    hash_mask: u32,
    /// Keys whose displacement did not fit their slot: hash -> ids.
    overflow: BTreeMap<u32, u32>,
    /// Ids of keys listing more than one document, oldest first.
    lists: Vec<Vec<DocId>>,
    /// Indices of `lists` entries no key uses, for reuse.
    free_lists: Vec<usize>,
}

impl Default for BandIndex {
    fn default() -> Self {
        BandIndex::with_hash_bits(HASH_BITS)
    }
}

impl BandIndex {
    fn with_hash_bits(hash_bits: u32) -> BandIndex {
        BandIndex {
            slots: SlotArray::default(),
            layout: Layout::new(0, hash_bits),
            len: 0,
            hash_bits,
            hash_mask: if hash_bits >= 32 {
                u32::MAX
            } else {
                (1 << hash_bits) - 1
            },
            overflow: BTreeMap::new(),
            lists: Vec::new(),
            free_lists: Vec::new(),
        }
    }

    /// An index with room for `keys` band keys before it grows: rebuilding
    /// one from stored documents knows how many there will be.
    #[cfg_attr(not(any(test, feature = "redb")), allow(dead_code))] // the redb store only
    pub(crate) fn with_capacity(keys: usize) -> BandIndex {
        let mut index = BandIndex::default();
        if keys > 0 {
            index.resize(index.order_for(keys));
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
        if self.len == 0 {
            for &key in keys {
                f(key, &[]);
            }
            return;
        }
        for chunk in keys.chunks(CHUNK) {
            let layout = self.layout;
            let mut first = [0u64; CHUNK];
            for (word, &key) in first.iter_mut().zip(chunk) {
                *word = self.slots.word(layout.home(self.hash(key)), layout);
            }
            for (&word, &key) in first.iter().zip(chunk) {
                let hash = self.hash(key);
                // Most lookups end at the home slot: empty, or the key.
                let ids = if word & ID_MASK == 0 {
                    self.overflowed(hash)
                } else if word >> ID_BITS == layout.upper(hash, 0) {
                    ids(word)
                } else {
                    self.ids_of(hash)
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
        let hash = self.hash(key);
        if let Some((at, ids)) = self.locate(hash) {
            if ids & LIST == 0 {
                let mut list = Vec::with_capacity(2);
                list.push(DocId::from(ids));
                push_capped(&mut list, id);
                if let Some(ids) = self.new_list(list) {
                    self.set_ids(at, hash, ids);
                }
            } else if let Some(list) = self.lists.get_mut(list_index(ids)) {
                push_capped(list, id);
            }
            return;
        }
        let Some(ids) = inline_id(id).or_else(|| self.new_list(vec![id])) else {
            return;
        };
        let slots = if self.slots.is_empty() {
            0
        } else {
            self.layout.slots()
        };
        // A table as large as its hashes are many never grows: it has a
        // slot for each of them.
        if (self.len + 1) * 5 > slots * 4 && (slots == 0 || self.layout.order < self.hash_bits) {
            let order = if slots == 0 {
                MIN_SLOTS.trailing_zeros()
            } else {
                self.layout.order + 1
            };
            let old = self.layout;
            let new = Layout::new(order, self.hash_bits);
            if slots == 0 || !self.slots.grow(new.bytes()) {
                self.resize(order);
            } else {
                self.layout = new;
                self.spread_doubled(old);
            }
        }
        self.place(Slot { hash, ids });
        self.len += 1;
    }

    /// Removes `id` from `key` (nothing if it is not there).
    pub(crate) fn remove(&mut self, key: u64, id: DocId) {
        let hash = self.hash(key);
        let Some((at, ids)) = self.locate(hash) else {
            return;
        };
        if ids & LIST == 0 {
            if DocId::from(ids) == id {
                self.delete(at, hash);
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
                self.delete(at, hash);
            }
            // Back to the common case: inline, and the list is reused (an
            // id too large to sit inline stays in its list of one).
            &[only] => {
                if let Some(only) = inline_id(only) {
                    self.free_list(index);
                    self.set_ids(at, hash, only);
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
        let mut each = |hash: u32, ids: u32| {
            // The key's bits the table keeps stand for the key: added back,
            // it lands where the key did.
            let key = u64::from(self.unhash(hash));
            if ids & LIST == 0 {
                f(key, &[DocId::from(ids)]);
            } else if let Some(list) = self.lists.get(list_index(ids)) {
                f(key, list);
            }
        };
        if !self.slots.is_empty() {
            let n = self.layout.slots();
            for i in 0..n {
                // An odd multiplier permutes 0..n when n is a power of two.
                let at = i.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) & n.wrapping_sub(1);
                if let Some(slot) = self.slot(at) {
                    each(slot.hash, slot.ids);
                }
            }
        }
        for (&hash, &ids) in &self.overflow {
            each(hash, ids);
        }
    }

    /// Number of keys indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The slot hash of `key`: its low `hash_bits` bits, mixed.
    #[inline]
    fn hash(&self, key: u64) -> u32 {
        ((key as u32) & self.hash_mask).wrapping_mul(MIX) & self.hash_mask
    }

    /// The key bits `hash` stands for.
    fn unhash(&self, hash: u32) -> u32 {
        hash.wrapping_mul(UNMIX) & self.hash_mask
    }

    /// Smallest table order holding `keys` keys at most 80% full.
    fn order_for(&self, keys: usize) -> u32 {
        let slots = (keys.saturating_mul(5) / 4 + 1)
            .next_power_of_two()
            .max(MIN_SLOTS);
        slots
            .trailing_zeros()
            .min(self.hash_bits.max(MIN_SLOTS.trailing_zeros()))
    }

    fn slot(&self, at: usize) -> Option<Slot> {
        self.slot_in(at, self.layout)
    }

    fn slot_in(&self, at: usize, layout: Layout) -> Option<Slot> {
        layout.decode(self.slots.word(at, layout), at)
    }

    /// Writes `slot` at `at`; false (and nothing written) when its
    /// displacement does not fit the layout.
    fn set(&mut self, at: usize, slot: Slot) -> bool {
        let layout = self.layout;
        match layout.encode(slot, at) {
            Some(word) => {
                self.slots.set_word(at, layout, word);
                true
            }
            None => false,
        }
    }

    fn mask(&self) -> usize {
        self.layout.slots() - 1
    }

    /// The slot holding `hash` (not one in the overflow), and its word.
    #[inline]
    fn find(&self, hash: u32) -> Option<(usize, u64)> {
        if self.slots.is_empty() {
            return None;
        }
        let layout = self.layout;
        let mask = self.mask();
        let mut at = layout.home(hash);
        let mut dist = 0usize;
        loop {
            let word = self.slots.word(at, layout);
            if word & ID_MASK == 0 {
                return None;
            }
            if word >> ID_BITS == layout.upper(hash, dist) {
                return Some((at, word));
            }
            // Robin Hood order: a key is never further from home than the
            // key sitting where it would be.
            if layout.displacement(word) < dist {
                return None;
            }
            at = (at + 1) & mask;
            dist += 1;
        }
    }

    /// The ids of `hash`, in the table or the overflow.
    fn ids_of(&self, hash: u32) -> Option<u32> {
        self.locate(hash).map(|(_, ids)| ids)
    }

    /// Where `hash` is (its slot, or `None` for the overflow) and its ids.
    fn locate(&self, hash: u32) -> Option<(Option<usize>, u32)> {
        match self.find(hash) {
            Some((at, word)) => ids(word).map(|ids| (Some(at), ids)),
            None => self.overflowed(hash).map(|ids| (None, ids)),
        }
    }

    /// The ids of `hash` in the overflow. Asked after every miss of the
    /// table, so an empty overflow (almost always) answers before any
    /// search (asking the map itself made an insert ~10 ns slower in
    /// `bands::timing`).
    #[inline]
    fn overflowed(&self, hash: u32) -> Option<u32> {
        if self.overflow.is_empty() {
            None
        } else {
            self.overflow.get(&hash).copied()
        }
    }

    /// Replaces the ids of `hash`, found at `at` by [`BandIndex::locate`].
    fn set_ids(&mut self, at: Option<usize>, hash: u32, ids: u32) {
        match at {
            // Same slot, same displacement: it fits.
            Some(at) => {
                let _ = self.set(at, Slot { hash, ids });
            }
            None => {
                if let Some(have) = self.overflow.get_mut(&hash) {
                    *have = ids;
                }
            }
        }
    }

    /// Inserts a slot whose hash is not in the table (which has room):
    /// Robin Hood, each slot passed that is nearer its home than the one
    /// being placed gives way and is placed further on.
    fn place(&mut self, moving: Slot) {
        // With wrapping, a table with room always takes it.
        let _ = self.place_run(moving, true);
    }

    /// [`BandIndex::place`]; with `wrap` false it stops at the table's
    /// end and returns the slot still carried there (the one placed, or
    /// one it displaced), to be placed once the table's start is in order.
    /// A slot carried further than its layout can say goes to the
    /// overflow: the table without it is in Robin Hood order.
    fn place_run(&mut self, mut moving: Slot, wrap: bool) -> Option<Slot> {
        let layout = self.layout;
        let mask = self.mask();
        let mut at = layout.home(moving.hash);
        let mut dist = 0usize;
        loop {
            let word = self.slots.word(at, layout);
            if word & ID_MASK == 0 || layout.displacement(word) < dist {
                if !self.set(at, moving) {
                    self.overflow.insert(moving.hash, moving.ids);
                    return None;
                }
                // Decoded only when it gives way.
                match layout.decode(word, at) {
                    // It took an empty slot: placed.
                    None => return None,
                    Some(here) => {
                        moving = here;
                        dist = layout.displacement(word);
                    }
                }
            }
            if !wrap && at == mask {
                return Some(moving);
            }
            at = (at + 1) & mask;
            dist += 1;
        }
    }

    /// Removes `hash`, found at `at` by [`BandIndex::locate`], from the
    /// index. In the table, the rest of its probe run shifts back one slot
    /// (no tombstones: lookups stay as short as right after inserting);
    /// a slot one nearer its home says a displacement one less.
    fn delete(&mut self, at: Option<usize>, hash: u32) {
        let Some(mut at) = at else {
            if self.overflow.remove(&hash).is_some() {
                self.len -= 1;
            }
            return;
        };
        let layout = self.layout;
        let mask = self.mask();
        let one_nearer = 1u64 << (ID_BITS + layout.rem_bits);
        loop {
            let next = (at + 1) & mask;
            let word = self.slots.word(next, layout);
            if word & ID_MASK == 0 || layout.displacement(word) == 0 {
                self.slots.set_word(at, layout, 0);
                break;
            }
            self.slots.set_word(at, layout, word - one_nearer);
            at = next;
        }
        self.len -= 1;
    }

    /// Rebuilds the table with `1 << order` slots (holding `len`).
    fn resize(&mut self, order: u32) {
        let new = Layout::new(order, self.hash_bits);
        let old_layout = self.layout;
        let old = std::mem::replace(&mut self.slots, SlotArray::new(new.bytes()));
        self.layout = new;
        if !old.is_empty() {
            for at in 0..old_layout.slots() {
                if let Some(slot) = old_layout.decode(old.word(at, old_layout), at) {
                    self.place(slot);
                }
            }
        }
        self.replace_overflow();
    }

    /// Places the overflow's keys again, in a table that just grew.
    fn replace_overflow(&mut self) {
        for (hash, ids) in std::mem::take(&mut self.overflow) {
            self.place(Slot { hash, ids });
        }
    }

    /// Moves every key to its place in a table just doubled in place
    /// ([`SlotArray::grow`]; the old slots, laid out as `old`, are the
    /// first bytes).
    ///
    /// A key's home in the doubled table is 2h or 2h + 1 for its old home
    /// h (one hash bit more), and a slot is never before its home. So
    /// walking the old slots from the last, a key at old slot p = h + d
    /// (d: its displacement) moves to 2h or beyond, whose bytes are at or
    /// after p's whenever 2h * new width >= p * old width (d <= h for
    /// slots of one size, 2d <= h from 8 bytes to 6, 3d <= 2h from 6 to
    /// 5): it lands on slots already moved or never used, and the keys
    /// not yet moved, all before p, are not disturbed. The few keys that
    /// break that (large displacements near the start, and probe runs
    /// that wrapped around the old end), and keys whose new run would
    /// wrap around the new end, wait aside and are placed last, when the
    /// whole table is in the new layout.
    fn spread_doubled(&mut self, old: Layout) {
        let mut aside = Vec::new();
        for p in (0..old.slots()).rev() {
            let Some(slot) = self.slot_in(p, old) else {
                continue;
            };
            self.slots.set_word(p, old, 0);
            let h = old.home(slot.hash);
            let fits = h <= p && 2 * h * self.layout.width >= p * old.width;
            if !fits {
                aside.push(slot);
            } else if let Some(carried) = self.place_run(slot, false) {
                aside.push(carried);
            }
        }
        for slot in aside {
            self.place(slot);
        }
        self.replace_overflow();
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod timing;
