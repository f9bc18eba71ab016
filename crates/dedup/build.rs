//! Builds jieba's dictionary into the tables `features::han_dict` walks, so
//! that a process cuts Chinese text without loading a dictionary first
//! (jieba-rs builds its trie at start-up: about 0.14 s of CPU, the largest
//! part of `crawl dedup`'s start, issue 37).
//!
//! The input is jieba-rs 0.11.0's own `dict.txt` (data/jieba_dict.txt.gz,
//! byte for byte), so both cut the same way; `han_dict`'s tests compare
//! the two on random and real text.
//!
//! Outputs, in `OUT_DIR`, all little-endian:
//! - `han_slots.bin`: an open-addressing table of 2^SLOT_BITS u64 slots, one
//!   per trie node (a prefix of a dictionary word). A node's id is its slot.
//!   Bits 0..21: its last char; 21..42: its parent's slot + 1 (0: the
//!   root); 42: it has children; 43..56: its word's frequency class + 1
//!   (0: not a word); 56..64: a filter of its children's chars (one bit
//!   each, `child_filter`). 0 is an empty slot.
//! - `han_root.bin`: 65,536 u64, for each BMP char the slot + 1 of its
//!   node in bits 0..42 (0: no word starts with it) and that slot's bits
//!   from 42 up: a walk reads a root's children, class and filter in this
//!   512 KB table rather than in the 8 MB one.
//! - `han_freqs.bin`: the distinct frequencies, u32, by class.
//! - `han_dict.rs`: SLOT_BITS and TOTAL_FREQ.
//!
//! `letters_alphabetic.bin` and `letters_alphanumeric.bin` hold a bit per
//! BMP char (8 KB each, bit `u & 7` of byte `u >> 3`): the answers of
//! `char::is_alphabetic` and `char::is_alphanumeric` of the toolchain that
//! builds the crate, which `letters` reads in place rather than asking
//! the standard library 65,536 times at start-up (43% of the instructions
//! of a one-document `crawl dedup`, issue 37).
//!
//! It also compiles jieba's IDF table (data/jieba_idf.txt.gz) into
//! `idf_slots.bin`, `idf_words.bin`, `idf_values.bin` and `idf_table.rs`
//! ([`idf_table`] says how), which `features::jieba_idf` reads in place
//! instead of parsing 270,000 lines into a hash map at start-up (0.05 s).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

include!("src/features/word_hash.rs");
include!("src/features/stop_list.rs");

const SLOT_BITS: u32 = 20;
const CHAR_BITS: u32 = 21;
const KEY_MASK: u64 = (1 << 42) - 1;
const HAS_CHILDREN: u64 = 1 << 42;
const CLASS_SHIFT: u32 = 43;
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
const FILTER_MULTIPLIER: u64 = 0xC2B2_AE3D_27D4_EB4F;

/// The bit of a slot's child filter (bits 56..64) that a child by char
/// `c` sets: a walk tests it before it looks for that child.
fn child_filter(c: u64) -> u64 {
    1 << (56 + (c.wrapping_mul(FILTER_MULTIPLIER) >> 61))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo::rerun-if-changed=data/jieba_dict.txt.gz");
    println!("cargo::rerun-if-changed=data/jieba_idf.txt.gz");
    println!("cargo::rerun-if-changed=src/features/word_hash.rs");
    println!("cargo::rerun-if-changed=src/features/stop_list.rs");
    println!("cargo::rerun-if-changed=data/stopwords.txt");
    println!("cargo::rerun-if-changed=data/stopwords-multi.txt");
    println!("cargo::rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    idf_table(&out)?;
    stop_words(&out)?;
    letters(&out)?;
    han_dict(&out)
}

/// The bundled stop words as `features` reads them (`stop_word_list`),
/// joined by newlines: `stop_words_bundled.txt` (the list alone) and
/// `stop_words_unicode.txt` (with the list of other scripts, as the words
/// extractor reads them for every script).
fn stop_words(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let bundled = std::fs::read_to_string("data/stopwords.txt")?;
    let multi = std::fs::read_to_string("data/stopwords-multi.txt")?;
    let unicode = format!("{bundled}\n{multi}");
    for (name, list) in [
        ("stop_words_bundled.txt", &bundled),
        ("stop_words_unicode.txt", &unicode),
    ] {
        std::fs::write(out.join(name), stop_word_list(list).join("\n"))?;
    }
    Ok(())
}

/// The letter and letter-or-digit bits of the BMP (the comment at the top
/// of this file says how they are laid out).
fn letters(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    for (name, property) in [
        ("letters_alphabetic.bin", char::is_alphabetic as fn(char) -> bool),
        ("letters_alphanumeric.bin", char::is_alphanumeric),
    ] {
        let mut bits = vec![0u8; 0x1_0000 / 8];
        for c in (0..=0xFFFFu32).filter_map(char::from_u32) {
            if property(c) {
                let u = c as usize;
                bits[u >> 3] |= 1 << (u & 7);
            }
        }
        std::fs::write(out.join(name), bits)?;
    }
    Ok(())
}

/// jieba's dictionary as `features::han_dict` reads it (the module's
/// comment at the top of this file says how).
fn han_dict(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let mut text = String::new();
    let gz = std::fs::read("data/jieba_dict.txt.gz")?;
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text)?;
    // Words in dictionary order, with their frequency.
    let mut words: Vec<(Vec<char>, u64)> = Vec::new();
    let mut seen: BTreeSet<Vec<char>> = BTreeSet::new();
    let mut total: u64 = 0;
    for line in text.lines() {
        let mut parts = line.split_ascii_whitespace();
        let Some(word) = parts.next() else { continue };
        let freq: u64 = match parts.next() {
            Some(f) => f.parse()?,
            None => 0,
        };
        let chars: Vec<char> = word.chars().collect();
        // jieba-rs keeps both records of a repeated word (its total counts
        // both): the bundled dictionary has none, and this table could not
        // say so.
        assert!(seen.insert(chars.clone()), "{word} is listed twice");
        words.push((chars, freq));
    }
    for (_, f) in &words {
        total += f;
    }
    let mut classes: Vec<u64> = words.iter().map(|w| w.1).collect();
    classes.sort_unstable();
    classes.dedup();
    assert!(classes.len() < (1 << 13), "too many distinct frequencies");
    // Every node (prefix), shortest first, so that a parent has its slot
    // before its children are placed.
    let mut nodes: BTreeMap<(usize, Vec<char>), Option<u64>> = BTreeMap::new();
    for (chars, freq) in &words {
        for len in 1..=chars.len() {
            let e = nodes.entry((len, chars[..len].to_vec())).or_insert(None);
            if len == chars.len() {
                *e = Some(*freq);
            }
        }
    }
    let size = 1usize << SLOT_BITS;
    assert!(nodes.len() * 2 < size, "the table would be over half full");
    let mut slots = vec![0u64; size];
    let mut slot_of: BTreeMap<Vec<char>, usize> = BTreeMap::new();
    let mut root = vec![0u32; 0x1_0000];
    for ((len, chars), freq) in &nodes {
        let c = *chars.last().ok_or("a node without a char")? as u64;
        let parent = if *len == 1 {
            0
        } else {
            slot_of[&chars[..len - 1]] as u64 + 1
        };
        let key = (parent << CHAR_BITS) | c;
        let mut i = (key.wrapping_mul(MULTIPLIER) >> (64 - SLOT_BITS)) as usize;
        while slots[i] != 0 {
            i = (i + 1) & (size - 1);
        }
        let class = match freq {
            Some(f) => {
                classes
                    .binary_search(f)
                    .map_err(|_| "a frequency without a class")? as u64
                    + 1
            }
            None => 0,
        };
        slots[i] = key | (class << CLASS_SHIFT);
        if parent > 0 {
            slots[parent as usize - 1] |= HAS_CHILDREN | child_filter(c);
        }
        slot_of.insert(chars.clone(), i);
        if *len == 1 {
            let c = c as usize;
            assert!(c < root.len(), "a word starts outside the BMP");
            root[c] = i as u32 + 1;
        }
        debug_assert_eq!(slots[i] & KEY_MASK, key);
    }
    let bytes = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(out.join("han_slots.bin"), bytes(&slots))?;
    // Each root's slot + 1 beside its slot's bits from 42 up (children,
    // class, child filter), read only once every child is in.
    let root: Vec<u64> = root
        .iter()
        .map(|&r| match (r as usize).checked_sub(1) {
            Some(i) => (slots[i] & !KEY_MASK) | u64::from(r),
            None => 0,
        })
        .collect();
    std::fs::write(out.join("han_root.bin"), bytes(&root))?;
    let mut freqs = Vec::with_capacity(classes.len() * 4);
    for &f in &classes {
        freqs.extend(u32::try_from(f)?.to_le_bytes());
    }
    std::fs::write(out.join("han_freqs.bin"), freqs)?;
    std::fs::write(
        out.join("han_dict.rs"),
        format!(
            "/// Slots of the table: 2^SLOT_BITS.\npub(super) const SLOT_BITS: u32 = {SLOT_BITS};\n\
             /// The sum of the dictionary's frequencies (jieba's `total`).\npub(super) const TOTAL_FREQ: u64 = {total};\n\
             /// Words in the dictionary.\n#[allow(dead_code)]\npub(super) const WORDS: usize = {};\n",
            words.len()
        ),
    )?;
    Ok(())
}

/// Slots of the IDF table: 2^19, for 270,132 words (about half full).
const IDF_SLOT_BITS: u32 = 19;

/// The IDF table: `idf_words.bin` holds the words end to end;
/// `idf_values.bin` the distinct IDF values (f64 bits, u64), by class;
/// `idf_slots.bin` 2^IDF_SLOT_BITS u64 slots, placed by [`word_hash`] with
/// linear probing, each a word's offset in the words (bits 0..22), its
/// length (22..28), its value's class + 1 (28..40; 0 is an empty slot) and
/// bits 40..64 of its hash (a tag that rules out most other words before
/// their bytes are compared). `idf_table.rs` holds the mean IDF, summed as
/// the table was when it was a hash map filled at start-up (so that words
/// it lacks weigh what they weighed), and the digest stores record.
fn idf_table(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use md5::Digest;
    let gz = std::fs::read("data/jieba_idf.txt.gz")?;
    let digest: String = md5::Md5::digest(&gz).iter().map(|b| format!("{b:02x}")).collect();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text)?;
    // Parsed as `features::jieba_idf` parsed it, into the map it filled,
    // whose order of iteration the mean was summed in.
    let mut map: HashMap<&str, f64, rustc_hash::FxBuildHasher> = HashMap::default();
    map.reserve(280_000);
    let mut order: Vec<(&str, f64)> = Vec::new();
    for line in text.lines() {
        let mut parts = line.split(' ');
        if let (Some(w), Some(v)) = (parts.next(), parts.next())
            && let Ok(v) = v.trim().parse::<f64>()
        {
            if map.insert(w, v).is_some() {
                return Err(format!("{w} is listed twice in the IDF table").into());
            }
            order.push((w, v));
        }
    }
    let mean = if map.is_empty() {
        1.0
    } else {
        map.values().sum::<f64>() / map.len() as f64
    };
    let mut values: Vec<u64> = order.iter().map(|&(_, v)| v.to_bits()).collect();
    values.sort_unstable();
    values.dedup();
    if values.len() >= (1 << 12) - 1 {
        return Err("too many distinct IDF values for 12 bits".into());
    }
    let size = 1usize << IDF_SLOT_BITS;
    if order.len() * 2 > size + size / 8 {
        return Err("the IDF table would be too full".into());
    }
    let mut slots = vec![0u64; size];
    let mut words: Vec<u8> = Vec::new();
    for (w, v) in order {
        let offset = words.len() as u64;
        let len = w.len() as u64;
        if offset >= 1 << 22 || len >= 1 << 6 {
            return Err(format!("{w}: the IDF table's words outgrow its slots").into());
        }
        words.extend_from_slice(w.as_bytes());
        let class = values
            .binary_search(&v.to_bits())
            .map_err(|_| "an IDF value without a class")? as u64
            + 1;
        let h = word_hash(w.as_bytes());
        let mut i = (h >> (64 - IDF_SLOT_BITS)) as usize;
        while slots[i] != 0 {
            i = (i + 1) & (size - 1);
        }
        slots[i] = offset | (len << 22) | (class << 28) | ((h & 0xFF_FFFF) << 40);
    }
    let le = |v: &[u64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    std::fs::write(out.join("idf_slots.bin"), le(&slots))?;
    std::fs::write(out.join("idf_values.bin"), le(&values))?;
    std::fs::write(out.join("idf_words.bin"), words)?;
    std::fs::write(
        out.join("idf_table.rs"),
        format!(
            "/// Slots of the IDF table: 2^IDF_SLOT_BITS.\npub(super) const IDF_SLOT_BITS: u32 = {IDF_SLOT_BITS};\n\
             /// The mean IDF (its f64 bits).\npub(super) const IDF_MEAN_BITS: u64 = {};\n\
             /// Words in the table.\n#[allow(dead_code)]\npub(super) const IDF_WORDS: usize = {};\n\
             /// MD5 of data/jieba_idf.txt.gz, which stores record.\npub(super) const IDF_DIGEST: &str = \"{digest}\";\n",
            mean.to_bits(),
            map.len()
        ),
    )?;
    Ok(())
}
