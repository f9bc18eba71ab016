//! The Rust half of `simcrawl.spark`: [`PySigner`] signs rows inside a
//! Spark task (what `crawl dedup` computes per document: the normalized
//! title and text, SimHash, sketch, band keys, title and URL digests) and
//! returns the keys the Spark job groups candidates by; [`PyJudge`] runs
//! the tiers over signed rows, fed one connected component after another
//! in input order, and says for each row what `crawl dedup` says.
//!
//! A signature travels between the two as bytes (the dedup crate's serde
//! form of [`Signature`] in JSON): signing is the costly part, and a row is
//! signed once.

use std::collections::HashMap;
use std::path::PathBuf;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use simcrawl_clean::Cleaner;
use simcrawl_dedup::{
    BlockLayout, DedupConfig, Deduper, DocId, Document, MemoryStore, RedbStore, Signature, UrlTier, Verdict,
};

use super::{STORE_FILE, Settings, SimcrawlError, Store, py_err};

/// Keys of different kinds are tagged before mixing, so that a band key
/// and a title digest with the same bits do not meet (a meeting would only
/// join two groups, never change a verdict).
const TAG_BLOCK: u64 = 0x426c_6f63_6b00_0000;
const TAG_TITLE: u64 = 0x5469_746c_6500_0000;
const TAG_URL: u64 = 0x5552_4c00_0000_0000;
const TAG_BAND: u64 = 0x4261_6e64_0000_0000;

/// A 64-bit finalizer (MurmurHash3's): one key of any kind as a Spark
/// `long`.
fn mix(mut h: u64) -> i64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^= h >> 33;
    h as i64
}

/// A 128-bit digest folded to a tagged key.
fn digest_key(tag: u64, d: u128) -> i64 {
    mix(tag ^ (d as u64) ^ ((d >> 64) as u64).rotate_left(17))
}

/// A title given in an input row, as written but on one line: what
/// `crawl dedup` writes as a kept line's `title`.
fn tidy_title(title: &str) -> String {
    title.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
}

/// One row signed, before it becomes a Python tuple.
struct Signed {
    sig: Vec<u8>,
    title: String,
    simhash: Option<String>,
    /// The low 64 bits of the SimHash: the block index keys by them.
    fp_low: Option<i64>,
    blocks: Vec<i64>,
    keys: Vec<i64>,
    features: u64,
    chars: u64,
}

/// What a signed row is, as a Python tuple: `(signature, title, simhash,
/// fp_low, blocks, keys, features, chars, error)`.
type SignedTuple<'py> = (
    Option<Bound<'py, PyBytes>>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Vec<i64>,
    Vec<i64>,
    u64,
    u64,
    Option<String>,
);

/// Signs rows in a Spark task: `Signer(config=None).sign([(url, title,
/// text), ...])`.
#[pyclass(frozen, name = "Signer", module = "simcrawl")]
pub(crate) struct PySigner {
    deduper: Deduper<MemoryStore>,
    cleaner: Cleaner,
    layout: BlockLayout,
    config: DedupConfig,
}

impl PySigner {
    fn sign_one(&self, url: &str, title: Option<&str>, text: Option<&str>) -> Result<Signed, String> {
        if url.trim().is_empty() {
            return Err("empty \"url\"".into());
        }
        let Some(text) = text else {
            return Err("neither \"text\" nor \"html\" is present".into());
        };
        let (raw_title, title) = title
            .map(|t| (tidy_title(t), self.cleaner.normalize_title(t)))
            .unwrap_or_default();
        let text = self.cleaner.normalize_text(text);
        let sig = self.deduper.sign(&Document::new(url, &title, &text));
        let mut keys = Vec::new();
        if let Some(sketch) = &sig.sketch
            && sig.fingerprint.is_some()
        {
            keys.extend(
                sketch
                    .band_keys(self.config.bands, self.config.band_rows)
                    .map(|k| mix(TAG_BAND ^ k)),
            );
        }
        if let Some(td) = sig.title_digest {
            keys.push(digest_key(TAG_TITLE, td));
        }
        if let Some(ud) = sig.url_digest {
            keys.push(digest_key(TAG_URL, ud));
        }
        let blocks = match (sig.fingerprint, &sig.sketch) {
            (Some(fp), Some(_)) => self
                .layout
                .keys(fp.low())
                .map(|(t, k)| mix(TAG_BLOCK ^ ((t as u64) << 48) ^ k.rotate_left(7)))
                .collect(),
            _ => Vec::new(),
        };
        let bytes = serde_json::to_vec(&sig).map_err(|e| e.to_string())?;
        Ok(Signed {
            title: raw_title,
            simhash: sig.fingerprint.map(|f| f.to_string()),
            // Only a document with a sketch is in the block index.
            fp_low: sig
                .fingerprint
                .filter(|_| sig.sketch.is_some())
                .map(|f| f.low() as i64),
            blocks,
            keys,
            features: sig.features as u64,
            chars: text.chars().filter(|c| !c.is_whitespace()).count() as u64,
            sig: bytes,
        })
    }
}

#[pymethods]
impl PySigner {
    #[new]
    #[pyo3(signature = (config=None))]
    fn new(py: Python<'_>, config: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Settings { dedup, clean, .. } = Settings::from_py(config)?;
        py.detach(|| -> Result<PySigner, String> {
            let cleaner = Cleaner::new(clean).map_err(|e| e.to_string())?;
            let layout = BlockLayout::new(dedup.blocks, dedup.max_distance).map_err(|e| e.to_string())?;
            let deduper = Deduper::new(MemoryStore::new(), dedup.clone()).map_err(|e| e.to_string())?;
            Ok(PySigner {
                deduper,
                cleaner,
                layout,
                config: dedup,
            })
        })
        .map_err(SimcrawlError::new_err)
    }

    /// The SimHash distance at or under which two rows are near (the
    /// deduper's `max_distance`, k).
    #[getter]
    fn max_distance(&self) -> u32 {
        self.config.max_distance
    }

    /// Signs `(url, title, text)` rows (title and text may be None); one
    /// tuple per row: `(signature, title, simhash, fp_low, blocks, keys,
    /// features, chars, error)`. A row that `crawl dedup` would skip (an
    /// empty URL, no text) has only `error`.
    fn sign<'py>(
        &self,
        py: Python<'py>,
        rows: Vec<(String, Option<String>, Option<String>)>,
    ) -> PyResult<Vec<SignedTuple<'py>>> {
        let signed: Vec<Result<Signed, String>> = py.detach(|| {
            rows.iter()
                .map(|(u, t, x)| self.sign_one(u, t.as_deref(), x.as_deref()))
                .collect()
        });
        Ok(signed
            .into_iter()
            .map(|r| match r {
                Ok(s) => (
                    Some(PyBytes::new(py, &s.sig)),
                    Some(s.title),
                    s.simhash,
                    s.fp_low,
                    s.blocks,
                    s.keys,
                    s.features,
                    s.chars,
                    None,
                ),
                Err(e) => (None, None, None, None, Vec::new(), Vec::new(), 0, 0, Some(e)),
            })
            .collect())
    }
}

/// A verdict as a Python tuple: `(kept, tier, duplicate_of,
/// duplicate_of_order, distance, similarity)`.
type JudgedTuple = (
    bool,
    Option<&'static str>,
    Option<String>,
    Option<i64>,
    Option<u32>,
    Option<f64>,
);

/// What a judge remembers of the rows it kept, to name a partner by its
/// order as well as its URL.
#[derive(Default)]
struct Orders {
    /// Kept rows: store id -> order.
    kept: HashMap<DocId, i64>,
    /// The first row of each canonical URL (a URL-tier duplicate's partner).
    first_url: HashMap<u128, i64>,
}

/// Runs the tiers over signed rows: `Judge(config=None, path=None)`;
/// `check([(signature, order), ...])` in order. `path`: a directory for an
/// on-disk store (a component too large to index in memory).
#[pyclass(frozen, name = "Judge", module = "simcrawl")]
pub(crate) struct PyJudge {
    store: Store,
    orders: Mutex<Orders>,
}

/// `crawl dedup`'s rounding of a similarity in its lines.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[pymethods]
impl PyJudge {
    #[new]
    #[pyo3(signature = (config=None, path=None))]
    fn new(py: Python<'_>, config: Option<&Bound<'_, PyAny>>, path: Option<PathBuf>) -> PyResult<Self> {
        let Settings { dedup, .. } = Settings::from_py(config)?;
        let store = py
            .detach(|| -> Result<Store, String> {
                Ok(match path {
                    None => {
                        Store::Memory(Deduper::new(MemoryStore::new(), dedup).map_err(|e| e.to_string())?)
                    }
                    Some(dir) => {
                        std::fs::create_dir_all(&dir)
                            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                        let db = RedbStore::open(dir.join(STORE_FILE)).map_err(|e| e.to_string())?;
                        Store::Redb(Deduper::new(db, dedup).map_err(|e| e.to_string())?)
                    }
                })
            })
            .map_err(SimcrawlError::new_err)?;
        Ok(PyJudge {
            store,
            orders: Mutex::new(Orders::default()),
        })
    }

    /// Judges signed rows in the order given, each against the rows judged
    /// before it by this judge: `(kept, tier, duplicate_of,
    /// duplicate_of_order, distance, similarity)` per row.
    fn check(&self, py: Python<'_>, rows: Vec<(Vec<u8>, i64)>) -> PyResult<Vec<JudgedTuple>> {
        py.detach(|| -> Result<Vec<JudgedTuple>, String> {
            let sigs = rows
                .iter()
                .map(|(b, _)| {
                    serde_json::from_slice::<Signature>(b).map_err(|e| format!("invalid signature: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let verdicts = on_store!(&self.store, d => d.check_batch(&sigs, UrlTier::Check))
                .map_err(|e| e.to_string())?;
            let mut orders = self.orders.lock();
            let mut out = Vec::with_capacity(rows.len());
            for ((sig, (_, order)), v) in sigs.iter().zip(&rows).zip(verdicts) {
                if let Some(u) = sig.url_digest {
                    orders.first_url.entry(u).or_insert(*order);
                }
                out.push(match v {
                    Verdict::Duplicate(d) => {
                        let partner = match d.of_id {
                            Some(id) => orders.kept.get(&id).copied(),
                            None => sig.url_digest.and_then(|u| orders.first_url.get(&u).copied()),
                        };
                        (
                            false,
                            Some(d.tier.as_str()),
                            Some(d.of),
                            partner,
                            d.distance,
                            d.similarity.map(round3),
                        )
                    }
                    other => {
                        if let Some(id) = other.id() {
                            orders.kept.insert(id, *order);
                        }
                        (true, None, None, None, None, None)
                    }
                });
            }
            Ok(out)
        })
        .map_err(py_err)
    }

    /// Documents kept so far (what the store holds).
    fn kept(&self) -> usize {
        self.orders.lock().kept.len()
    }
}
