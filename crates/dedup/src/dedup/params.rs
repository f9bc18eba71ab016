//! The parameters a store records, and the check that a store was built
//! with this deduper's.

use super::{Deduper, FORMAT_VERSION};
use crate::canonical::CANONICAL_VERSION;
use crate::error::{Error, Result};
use crate::hash::{TOKEN_HASH_NAME, TOKEN_HASH_WIDE_NAME};
use crate::store::Store;

const META_PARAMS: &str = "params";

impl<S: Store> Deduper<S> {
    /// The value of parameter `name` that `store` recorded when an index
    /// was first opened on it (one of [`Deduper::params`], or an extra
    /// parameter of the embedder), without opening it; `None` for a store
    /// that holds no index yet or did not record `name`. An embedder whose
    /// own defaults changed reads it to keep an existing index on the
    /// settings it was built with instead of having it refused.
    ///
    /// ```
    /// use simcrawl_dedup::{Deduper, DedupConfig, MemoryStore};
    /// let store = MemoryStore::new();
    /// assert_eq!(Deduper::recorded_param(&store, "clean")?, None);
    /// let d = Deduper::with_params(store, DedupConfig::default(), &[("clean", "3f2a")])?;
    /// assert_eq!(Deduper::recorded_param(d.store(), "clean")?.as_deref(), Some("3f2a"));
    /// # Ok::<(), simcrawl_dedup::Error>(())
    /// ```
    pub fn recorded_param(store: &S, name: &str) -> Result<Option<String>> {
        let params = stored_params(store)?;
        Ok(params
            .as_deref()
            .and_then(|p| recorded(p, name))
            .map(str::to_owned))
    }

    /// The parameters a store records, one `name=value` per line: every
    /// input that changes a digest, a fingerprint or a sketch, then those
    /// the embedding program added ([`Deduper::with_params`]).
    pub fn params(&self) -> String {
        let (idf, segmenter) = match self.features.config().extractor {
            crate::Extractor::Words => (crate::features::idf_digest(), crate::features::segmenter_id()),
            crate::Extractor::Shingles => ("none", "none"),
        };
        let mut p = format!(
            "format={FORMAT_VERSION}\nbits={}\nblocks={}\nmax_distance={}\nhash={}\nfeatures={}\nidf={idf}\nsegmenter={segmenter}\nurl_canon={CANONICAL_VERSION}\ntracking={}\nsketch={}\nbands={}x{}\n",
            self.config.bits,
            self.config.blocks,
            self.config.max_distance,
            if self.config.bits == 128 {
                TOKEN_HASH_WIDE_NAME
            } else {
                TOKEN_HASH_NAME
            },
            self.features.describe(),
            self.canon.tracking_digest(),
            crate::sketch::sketch_name(self.sketch_bits),
            self.config.bands,
            self.config.band_rows,
        );
        if let Some(layout) = self.store.layout() {
            p.push_str("layout=");
            p.push_str(layout);
            p.push('\n');
        }
        for (name, value) in &self.extra {
            p.push_str(name);
            p.push('=');
            p.push_str(value);
            p.push('\n');
        }
        p
    }

    /// Records the parameters in a new store, or refuses a store that
    /// recorded others. A store that recorded them already is only read:
    /// opening an index changes nothing in it (a read-only store opens,
    /// and a reopened file keeps its bytes).
    pub(super) fn check_params(&self) -> Result<()> {
        let wanted = self.params();
        let stored = match self.store.read(|t| t.meta(META_PARAMS))? {
            Some(stored) => Some(stored),
            // New (or so it looked): record them, unless another opener
            // did in between.
            None => self.store.write(|t| {
                let stored = t.meta(META_PARAMS)?;
                if stored.is_none() {
                    t.set_meta(META_PARAMS, wanted.as_bytes())?;
                }
                Ok(stored)
            })?,
        };
        let Some(stored) = stored else {
            return self.store.flush();
        };
        let stored = String::from_utf8_lossy(&stored).into_owned();
        if stored == wanted {
            return Ok(());
        }
        let parse = |s: &str| -> Vec<(String, String)> {
            s.lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let (old, new) = (parse(&stored), parse(&wanted));
        let path = || {
            self.store
                .location()
                .map(|p| p.to_path_buf())
                .unwrap_or_else(|| "memory".into())
        };
        let stored_format = old
            .iter()
            .find(|(k, _)| k == "format")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        if stored_format != FORMAT_VERSION.to_string() {
            return Err(Error::OldFormat {
                path: path(),
                stored: stored_format,
                current: FORMAT_VERSION,
            });
        }
        // Stores from before the canonical forms had a version record none:
        // version 1. Their URL keys would not match, whatever else agrees.
        let stored_canon = old
            .iter()
            .find(|(k, _)| k == "url_canon")
            .map_or_else(|| "1".to_string(), |(_, v)| v.clone());
        if stored_canon != CANONICAL_VERSION.to_string() {
            return Err(Error::OldUrlKeys {
                path: path(),
                stored: stored_canon,
                current: CANONICAL_VERSION,
            });
        }
        let mut diffs = Vec::new();
        for (k, v) in &new {
            match old.iter().find(|(ok, _)| ok == k) {
                Some((_, ov)) if ov == v => {}
                Some((_, ov)) => diffs.push(format!("{k}: stored {ov}, requested {v}")),
                None => diffs.push(format!("{k}: not stored, requested {v}")),
            }
        }
        for (k, ov) in &old {
            if !new.iter().any(|(nk, _)| nk == k) {
                diffs.push(format!("{k}: stored {ov}, not requested"));
            }
        }
        Err(Error::ParamsMismatch {
            path: path(),
            differences: diffs.join("; "),
        })
    }
}

/// The parameters a store recorded, one `name=value` per line; `None` for
/// a new store. Read once on open, for the settings a store decides when
/// they are left unset ([`recorded_sketch_bits`], [`recorded_scripts`]).
pub(super) fn stored_params<S: Store>(store: &S) -> Result<Option<String>> {
    let stored = store.read(|t| t.meta(META_PARAMS))?;
    Ok(stored.map(|p| String::from_utf8_lossy(&p).into_owned()))
}

/// The value of `name` in recorded parameters.
fn recorded<'p>(params: &'p str, name: &str) -> Option<&'p str> {
    params
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix('=')))
}

/// The sketch width recorded parameters name (`sketch=`), if it is a
/// sketch this crate knows. A store of another format or sketch is
/// refused by `check_params`, naming what differs.
pub(super) fn recorded_sketch_bits(params: &str) -> Option<u32> {
    recorded(params, "sketch").and_then(crate::sketch::sketch_bits_of)
}

/// Where the `words` extractor of a store finds words outside Han text:
/// [`Scripts::Legacy`](crate::Scripts::Legacy) for recorded `words(...)`
/// features from before there was a choice (no `scripts=` in them), so
/// that the store keeps opening with the fingerprints it holds; `None`
/// for another extractor.
pub(super) fn recorded_scripts(params: &str) -> Option<crate::Scripts> {
    let features = recorded(params, "features")?;
    if !features.starts_with("words(") {
        return None;
    }
    Some(if features.contains("scripts=") {
        crate::Scripts::Unicode
    } else {
        crate::Scripts::Legacy
    })
}
