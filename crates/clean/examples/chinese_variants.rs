//! Which traditional-to-simplified profile should be the default? Measures `t2s`,
//! `tw2sp` and `hk2s` (through the whole default text pipeline, as the crawler runs
//! it) on mainland/Taiwan and mainland/Hong Kong pairs, and how much each one changes
//! text that is already mainland simplified (it should change nothing).
//!
//! Pairs: every mainland simplified word of jieba's dictionary (266k words, weighted
//! by frequency from its IDF) and 2,000 generated documents of its 50k most frequent
//! words; the Taiwan form of each is OpenCC `s2twp` (Taiwan script and vocabulary:
//! 软件 -> 軟體, 网络 -> 網路), the Hong Kong form `s2hk`. No parallel corpus of real
//! Taiwan pages is available offline, and `tw2sp` inverts `s2twp`'s dictionaries, so
//! the Taiwan numbers favour it by construction: read them as "how much of the
//! vocabulary difference each profile can fold at best". Script-only copies (OpenCC
//! `s2t`, what many sites publish for traditional readers) are measured too: a
//! profile that folds vocabulary also rewrites them.
//!
//! Usage: `chinese_variants [PATH/TO/jieba_idf.txt.gz]` (default: the dedup crate's).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::Read;

use ferrous_opencc::OpenCC;
use ferrous_opencc::config::BuiltinConfig;
use simcrawl_clean::{ChineseVariant, CleanConfig, Cleaner};

fn bigrams(s: &str) -> HashSet<(char, char)> {
    let c: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
    c.windows(2).map(|w| (w[0], w[1])).collect()
}

fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (bigrams(a), bigrams(b));
    let inter = a.intersection(&b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    }
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../dedup/data/jieba_idf.txt.gz").to_owned());
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut words: Vec<(String, f64)> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            Some((it.next()?.to_owned(), it.next()?.parse().ok()?))
        })
        .collect();
    words.sort_by(|a, b| a.1.total_cmp(&b.1));
    // jieba's dictionary holds some traditional entries too; mainland text is what
    // OpenCC's own t2s leaves as it is.
    let t2s = OpenCC::from_config(BuiltinConfig::T2s).unwrap();
    let before = words.len();
    words.retain(|(w, _)| t2s.convert(w) == *w);
    println!("{} mainland simplified words of {before} in {path}", words.len());
    let s2twp = OpenCC::from_config(BuiltinConfig::S2twp).unwrap();
    let s2hk = OpenCC::from_config(BuiltinConfig::S2hk).unwrap();
    let s2t = OpenCC::from_config(BuiltinConfig::S2t).unwrap();

    // Generated documents: 200 of the 50k most frequent words each, with punctuation.
    let top: Vec<&str> = words.iter().take(50_000).map(|(w, _)| w.as_str()).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut docs = Vec::new();
    for _ in 0..2000 {
        let mut d = String::new();
        for j in 0..200 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            d.push_str(top[(seed % top.len() as u64) as usize]);
            d.push_str(if j % 12 == 11 {
                "。"
            } else if j % 4 == 3 {
                "，"
            } else {
                ""
            });
        }
        docs.push(d);
    }

    println!(
        "| profile | TW words folded (weighted) | TW words folded (all) | HK words folded (weighted) | TW docs equal | TW docs bigram Jaccard | HK docs equal | script-only docs equal | mainland words changed (weighted) | mainland words changed (all) | mainland docs changed |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for variant in [
        ChineseVariant::T2s,
        ChineseVariant::Tw2sp,
        ChineseVariant::Hk2s,
        ChineseVariant::T2sTw,
        ChineseVariant::Off,
    ] {
        let cleaner = Cleaner::new(CleanConfig {
            convert_chinese: variant,
            ..CleanConfig::default()
        })
        .unwrap();
        let (mut tw_w, mut hk_w, mut dmg_w, mut total_w) = (0.0, 0.0, 0.0, 0.0);
        let (mut tw_n, mut dmg_n) = (0usize, 0usize);
        for (w, idf) in &words {
            let weight = (-idf).exp();
            let m = cleaner.normalize_text(w);
            let t = cleaner.normalize_text(&s2twp.convert(w));
            let h = cleaner.normalize_text(&s2hk.convert(w));
            total_w += weight;
            if t == m {
                tw_w += weight;
                tw_n += 1;
            }
            if h == m {
                hk_w += weight;
            }
            if m != w.to_lowercase() {
                if std::env::var_os("SHOW_CHANGED").is_some() && dmg_n < 40 {
                    eprintln!("{}: {w} -> {m}", variant.name());
                }
                dmg_w += weight;
                dmg_n += 1;
            }
        }
        let (mut tw_eq, mut hk_eq, mut jac, mut dmg_docs) = (0usize, 0usize, 0.0, 0usize);
        let mut st_eq = 0usize;
        let off = Cleaner::new(CleanConfig {
            convert_chinese: ChineseVariant::Off,
            ..CleanConfig::default()
        })
        .unwrap();
        for d in &docs {
            let m = cleaner.normalize_text(d);
            let t = cleaner.normalize_text(&s2twp.convert(d));
            let h = cleaner.normalize_text(&s2hk.convert(d));
            tw_eq += usize::from(t == m);
            hk_eq += usize::from(h == m);
            st_eq += usize::from(cleaner.normalize_text(&s2t.convert(d)) == m);
            jac += jaccard(&t, &m);
            dmg_docs += usize::from(m != off.normalize_text(d));
        }
        let n = words.len() as f64;
        let nd = docs.len() as f64;
        println!(
            "| {} | {:.2}% | {:.2}% | {:.2}% | {:.1}% | {:.4} | {:.1}% | {:.1}% | {:.3}% | {:.3}% ({dmg_n}) | {:.1}% |",
            variant.name(),
            100.0 * tw_w / total_w,
            100.0 * tw_n as f64 / n,
            100.0 * hk_w / total_w,
            100.0 * tw_eq as f64 / nd,
            jac / nd,
            100.0 * hk_eq as f64 / nd,
            100.0 * st_eq as f64 / nd,
            100.0 * dmg_w / total_w,
            100.0 * dmg_n as f64 / n,
            100.0 * dmg_docs as f64 / nd,
        );
    }
}
