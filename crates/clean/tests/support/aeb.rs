//! The article-extraction benchmark (ScrapingHub/Zyte, 181 news pages with ground
//! truth): loading its pages and scoring extracted text the way its `evaluate.py`
//! does (4-token shingles of `\w+` tokens, per-page precision/recall normalised by the
//! page's shingle count, averaged, F1 of the averages). Shared by the
//! `extract_bench` example and the `extract_bench` floor test, so both measure the
//! same thing as the published rows.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use simcrawl_clean::{ChineseVariant, CleanConfig};

/// One benchmark page.
pub struct BenchPage {
    pub id: String,
    pub url: String,
    pub html: Vec<u8>,
    pub truth: String,
}

/// The default cleaning pipeline with the normalizers that change words (case,
/// script, width, compatibility forms, symbols) off, because the scorer compares
/// tokens case-sensitively with the original text: extraction is what is measured.
pub fn bench_config() -> CleanConfig {
    CleanConfig {
        convert_chinese: ChineseVariant::Off,
        lowercase: false,
        strip_symbols: false,
        nfkc: false,
        fold_width: false,
        ..CleanConfig::default()
    }
}

/// Loads every page of the benchmark folder `dir` (html/*.html.gz + ground-truth.json).
pub fn load(dir: &Path) -> Result<Vec<BenchPage>, String> {
    let gt_path = dir.join("ground-truth.json");
    let gt_text = std::fs::read_to_string(&gt_path).map_err(|e| format!("{}: {e}", gt_path.display()))?;
    let gt: serde_json::Value =
        serde_json::from_str(&gt_text).map_err(|e| format!("{}: {e}", gt_path.display()))?;
    let obj = gt
        .as_object()
        .ok_or_else(|| format!("{}: not an object", gt_path.display()))?;
    let mut pages = Vec::with_capacity(obj.len());
    for (id, v) in obj {
        let path: PathBuf = dir.join("html").join(format!("{id}.html.gz"));
        let gz = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut html = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut html)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        pages.push(BenchPage {
            id: id.clone(),
            url: v
                .get("url")
                .and_then(|u| u.as_str())
                .unwrap_or("http://example.com/")
                .to_owned(),
            html,
            truth: v
                .get("articleBody")
                .and_then(|t| t.as_str())
                .unwrap_or("")
                .to_owned(),
        });
    }
    pages.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(pages)
}

/// `\w+` tokens, like Python's `re.findall(r'\w+')` (letters, digits, marks, `_`).
fn tokens(s: &str) -> Vec<&str> {
    let is_w = |c: char| c.is_alphanumeric() || c == '_' || unicode_mark(c);
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        if is_w(c) {
            start.get_or_insert(i);
        } else if let Some(st) = start.take() {
            out.push(&s[st..i]);
        }
    }
    if let Some(st) = start {
        out.push(&s[st..]);
    }
    out
}

/// Combining marks count as word chars in Python's `\w` (approximation: the main
/// combining blocks).
fn unicode_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x0483..=0x0489 | 0x0591..=0x05BD | 0x0610..=0x061A
        | 0x064B..=0x065F | 0x0900..=0x0903 | 0x093A..=0x094F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF
        | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

fn shingles(s: &str) -> HashMap<Vec<&str>, u32> {
    let t = tokens(s);
    let mut m = HashMap::new();
    let n = 4;
    let count = t.len().saturating_sub(n - 1).max(1);
    for i in 0..count {
        let end = (i + n).min(t.len());
        let sh = t[i..end].to_vec();
        if !sh.is_empty() {
            *m.entry(sh).or_insert(0) += 1;
        }
    }
    m
}

/// Normalised (tp, fp, fn) of one page.
pub fn tp_fp_fn(truth: &str, pred: &str) -> (f64, f64, f64) {
    let ts = shingles(truth);
    let ps = shingles(pred);
    let (mut tp, mut fp, mut fnn) = (0.0, 0.0, 0.0);
    for (k, &tc) in &ts {
        let pc = ps.get(k).copied().unwrap_or(0);
        tp += f64::from(tc.min(pc));
        fnn += f64::from(tc.saturating_sub(pc));
    }
    for (k, &pc) in &ps {
        let tc = ts.get(k).copied().unwrap_or(0);
        fp += f64::from(pc.saturating_sub(tc));
    }
    let s = tp + fp + fnn;
    if s > 0.0 {
        (tp / s, fp / s, fnn / s)
    } else {
        (0.0, 0.0, 0.0)
    }
}

/// (F1, precision, recall) over all pages, as `evaluate.py` computes them.
pub fn score(per_page: &[(f64, f64, f64)]) -> (f64, f64, f64) {
    let mut ps = Vec::new();
    let mut rs = Vec::new();
    for &(tp, fp, fnn) in per_page {
        if tp + fp > 0.0 {
            ps.push(if fp == 0.0 && fnn == 0.0 {
                1.0
            } else {
                tp / (tp + fp)
            });
        }
        if tp + fnn > 0.0 {
            rs.push(if fp == 0.0 && fnn == 0.0 {
                1.0
            } else {
                tp / (tp + fnn)
            });
        }
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let (p, r) = (mean(&ps), mean(&rs));
    let f1 = if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 };
    (f1, p, r)
}
