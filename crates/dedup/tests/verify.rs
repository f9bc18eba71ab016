//! Verified verdicts: every candidate (SimHash, band, title) is confirmed by
//! its sketch before a page is dropped, and the band index finds what a
//! brute-force comparison with every stored document finds, on every store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use proptest::prelude::*;
use simcrawl_dedup::sketch::SKETCH_BINS;
use simcrawl_dedup::store::DocRecord;
use simcrawl_dedup::{
    BlockLayout, DedupConfig, Deduper, Document, Error, Fingerprint, MemoryStore, RedbStore, Signature,
    Sketch, Store, Tier, TitlePolicy, Verdict,
};

/// A stored document of the brute-force tests: far-apart random
/// fingerprints unless a query is built near one.
#[derive(Clone, Debug)]
struct Stored {
    fp: u64,
    bins: [u16; SKETCH_BINS],
    digest: u128,
}

/// A stored document's sketch at the width the deduper keeps.
fn sketch_of(s: &Stored, bits: u32) -> Sketch {
    Sketch::from_bins(s.bins, s.digest).narrow(bits)
}

fn load<S: Store>(d: &Deduper<S>, stored: &[Stored]) {
    let cfg = d.config();
    let bits = d.sketch_bits();
    let layout = BlockLayout::new(cfg.blocks, cfg.max_distance).unwrap();
    d.store()
        .write(|t| {
            for (i, s) in stored.iter().enumerate() {
                let id = i as u64;
                let sketch = sketch_of(s, bits);
                for key in sketch.band_keys(cfg.bands, cfg.band_rows) {
                    t.add_band(key, id)?;
                }
                t.put_doc(
                    id,
                    DocRecord {
                        fingerprint: Fingerprint::new(s.fp),
                        inserted_at: 1,
                        title: None,
                        sketch,
                        url: format!("u{i}"),
                        article: None,
                        extent: None,
                    },
                )?;
                for (table, key) in layout.keys(s.fp) {
                    t.add_block(table, key, Fingerprint::new(s.fp), id)?;
                }
            }
            t.set_meta("next_id", &(stored.len() as u64).to_le_bytes())
        })
        .unwrap();
}

/// What `lookup` must answer, by comparing with every stored document: the
/// most similar verified SimHash candidate; else the most similar verified
/// band candidate. `None`: kept.
fn brute(cfg: &DedupConfig, bits: u32, stored: &[Stored], q: &Stored) -> Option<(String, f64)> {
    let qs = sketch_of(q, bits);
    let qbands: Vec<u64> = qs.band_keys(cfg.bands, cfg.band_rows).collect();
    let best = |pred: &dyn Fn(&Stored, &Sketch) -> bool| {
        stored
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let sk = sketch_of(s, bits);
                let sim = qs.resemblance(&sk);
                let dist = (s.fp ^ q.fp).count_ones();
                (pred(s, &sk) && sim >= cfg.min_similarity).then_some((sim, std::cmp::Reverse(dist), i))
            })
            .max_by(|a, b| a.partial_cmp(b).unwrap())
            .map(|(sim, _, i)| (format!("u{i}"), sim))
    };
    let k = cfg.max_distance;
    best(&|s, _| (s.fp ^ q.fp).count_ones() <= k).or_else(|| {
        best(&|_, sk| {
            sk.band_keys(cfg.bands, cfg.band_rows)
                .zip(&qbands)
                .any(|(a, b)| a == *b)
        })
    })
}

fn check<S: Store>(d: &Deduper<S>, stored: &[Stored], queries: &[Stored]) {
    for q in queries {
        let sig = Signature {
            url: "q".into(),
            url_digest: None,
            title_digest: None,
            fingerprint: Some(Fingerprint::new(q.fp)),
            sketch: Some(sketch_of(q, d.sketch_bits())),
            features: 64,
            min_similarity: None,
            article: simcrawl_dedup::Article::None,
            extent: None,
        };
        let got = d
            .lookup(&sig)
            .unwrap()
            .map(|dup| (dup.of, dup.similarity.unwrap()));
        let want = brute(d.config(), d.sketch_bits(), stored, q);
        match (&got, &want) {
            // Ties in similarity and distance may pick either document.
            (Some((_, gs)), Some((_, ws))) => assert!((gs - ws).abs() < 1e-12, "{got:?} vs {want:?}"),
            _ => assert_eq!(got, want, "query {q:?}"),
        }
    }
}

/// Stored documents in clusters that share bins (so bands collide and
/// resemblance sits around every threshold), and queries derived from them:
/// a share of bins kept, fingerprint near or far.
fn scenario(seed: u64, n: usize) -> (Vec<Stored>, Vec<Stored>) {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut stored: Vec<Stored> = Vec::new();
    for i in 0..n {
        let mut bins = [0u16; SKETCH_BINS];
        for b in &mut bins {
            *b = next() as u16;
        }
        if i > 0 && i % 3 != 0 {
            // Share a random share of bins with an earlier document.
            let base = stored[(next() as usize) % stored.len()].bins;
            let keep = (next() % 129) as usize;
            bins[..keep].copy_from_slice(&base[..keep]);
        }
        stored.push(Stored {
            fp: next(),
            bins,
            digest: u128::from(next()),
        });
    }
    let mut queries = Vec::new();
    for (i, s) in stored.iter().enumerate() {
        let mut q = s.clone();
        q.digest = u128::from(next()) << 1 | 1;
        // Replace a varying share of bins: resemblance from 1 down to ~0.
        let replace = (i * 7) % 129;
        for b in q.bins.iter_mut().rev().take(replace) {
            *b = next() as u16;
        }
        // Fingerprint: within k, just past it, or far away.
        q.fp = match i % 3 {
            0 => s.fp ^ 0b101,
            1 => s.fp ^ 0b1111,
            _ => next(),
        };
        queries.push(q);
    }
    // An exact copy under a far fingerprint (found by the bands), and
    // unrelated documents.
    if let Some(s) = stored.first() {
        queries.push(Stored {
            fp: !s.fp,
            bins: s.bins,
            digest: s.digest,
        });
    }
    for _ in 0..10 {
        let mut bins = [0u16; SKETCH_BINS];
        for b in &mut bins {
            *b = next() as u16;
        }
        queries.push(Stored {
            fp: next(),
            bins,
            digest: u128::from(next()),
        });
    }
    (stored, queries)
}

fn configs() -> Vec<DedupConfig> {
    vec![
        DedupConfig::default(),
        DedupConfig {
            min_similarity: 0.5,
            bands: 16,
            band_rows: 3,
            sketch_bits: Some(16),
            ..Default::default()
        },
        DedupConfig {
            blocks: 6,
            min_similarity: 0.9,
            bands: 0,
            ..Default::default()
        },
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, .. ProptestConfig::default() })]

    #[test]
    fn memory_verified_lookup_matches_brute_force(seed in any::<u64>(), n in 1usize..50, which in 0usize..3) {
        let cfg = configs()[which].clone();
        let d = Deduper::new(MemoryStore::new(), cfg).unwrap();
        let (stored, queries) = scenario(seed, n);
        load(&d, &stored);
        check(&d, &stored, &queries);
    }
}

store_suite! {
    all: [verified_lookup_matches_brute_force],
    durable: [band_index_survives_reopen_and_failed_transactions_leave_no_bands],
}

/// Each configuration on a store of its own.
fn verified_lookup_matches_brute_force<S: Store>(open: impl Fn(&str) -> S) {
    for (i, cfg) in configs().into_iter().enumerate() {
        let d = Deduper::new(open(&format!("config{i}")), cfg).unwrap();
        let (stored, queries) = scenario(0x5eed + i as u64, 60);
        load(&d, &stored);
        check(&d, &stored, &queries);
    }
}

/// A help site: every page carries the same navigation and notice, many
/// share a title, and each documents a different command.
fn help_page(cmd: &str, body: &str) -> String {
    format!(
        "首页 | 用户手册 | 命令参考 | 常见问题 | 下载\n\
         本帮助页面尚未完成，欢迎您帮助我们完善翻译与内容。\n\
         命令：{cmd}\n{body}\n\
         上一页 下一页 返回顶部 版权所有 文档遵循知识共享许可协议发布"
    )
}

const BODIES: [(&str, &str); 4] = [
    (
        "插入行",
        "在当前行的上方插入一个空行，光标移到新行的行首，原有内容依次下移。",
    ),
    (
        "删除行",
        "删除光标所在的整行内容，下面各行依次上移，被删除的内容放入剪贴板。",
    ),
    (
        "合并行",
        "把下一行接到当前行的末尾，中间加一个空格，并去掉下一行开头的缩进。",
    ),
    (
        "复制行",
        "把当前行复制一份放在它的下方，光标停在副本上，剪贴板内容保持不变。",
    ),
];

#[test]
fn pages_sharing_title_and_template_but_not_content_are_kept() {
    let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
    for (i, (cmd, body)) in BODIES.iter().enumerate() {
        let v = d
            .check_content(&Document::new(
                &format!("http://help/{i}"),
                "编辑命令",
                &help_page(cmd, body),
            ))
            .unwrap();
        assert!(!v.is_duplicate(), "page {i} dropped: {v:?}");
    }
    // The seeds' recipe drops them all but the first.
    let strict = Deduper::new(
        MemoryStore::new(),
        DedupConfig {
            title_policy: TitlePolicy::Strict,
            ..Default::default()
        },
    )
    .unwrap();
    let dropped = BODIES
        .iter()
        .enumerate()
        .filter(|(i, (cmd, body))| {
            strict
                .check_content(&Document::new(
                    &format!("http://help/{i}"),
                    "编辑命令",
                    &help_page(cmd, body),
                ))
                .unwrap()
                .is_duplicate()
        })
        .count();
    assert_eq!(dropped, BODIES.len() - 1);
}

const MANUAL: &str = "安装系统之前，请先备份重要数据，并确认硬件满足最低要求。安装程序会引导您完成分区、\
    选择软件包和设置网络等步骤。分区时可以选择整个磁盘使用向导，也可以手动划分根分区、交换分区和家目录分区。\
    软件包选择界面列出了桌面环境、网页服务器、打印服务器和标准系统工具等任务，按空格键选择需要的任务。\
    网络设置会尝试自动获取地址，如果失败，可以手动填写地址、网关和域名服务器。安装完成后重新启动，\
    系统会进入登录界面，使用安装时创建的用户名和密码登录即可开始使用。";

#[test]
fn a_retemplated_copy_beyond_simhash_reach_is_found_and_verified() {
    let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
    let original = format!("手册首页 上一章 下一章\n{MANUAL}\n本文档按自由软件许可协议发布");
    let copy = format!("镜像站点 | 站内搜索\n{MANUAL}\n另外，安装前建议阅读发行说明。\n本站为非官方镜像");
    assert!(
        !d.check_content(&Document::new("http://a/1", "安装", &original))
            .unwrap()
            .is_duplicate()
    );
    let c = d.compare(
        &Document::new("http://a/1", "安装", &original),
        &Document::new("http://m/1", "安装指南", &copy),
    );
    assert!(c.exact_similarity >= 0.75, "test texts not near enough: {c:?}");
    assert!(c.distance.unwrap() > 3, "test texts within SimHash reach: {c:?}");
    let v = d
        .check_content(&Document::new("http://m/1", "安装指南", &copy))
        .unwrap();
    match v {
        Verdict::Duplicate(dup) => {
            assert_eq!((dup.tier, dup.of.as_str()), (Tier::Content, "http://a/1"));
            assert!(dup.similarity.unwrap() >= 0.7, "{dup:?}");
        }
        other => panic!("copy kept (distance {:?}, {c:?}): {other:?}", c.distance),
    }
    // Without the band index the same copy is found only if SimHash is
    // close enough; with SimHash alone never verified.
    let simhash_only = Deduper::new(
        MemoryStore::new(),
        DedupConfig {
            bands: 0,
            ..Default::default()
        },
    )
    .unwrap();
    simhash_only
        .check_content(&Document::new("http://a/1", "安装", &original))
        .unwrap();
    let v = simhash_only
        .check_content(&Document::new("http://m/1", "安装指南", &copy))
        .unwrap();
    assert_eq!(v.is_duplicate(), c.distance.unwrap() <= 3);
}

#[test]
fn a_format_1_store_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        store
            .write(|t| t.set_meta("params", b"format=1\nbits=64\nblocks=4\nmax_distance=3\n"))
            .unwrap();
        store.flush().unwrap();
    }
    let e = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap_err();
    assert!(matches!(e, Error::OldFormat { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("store format \"1\"") && msg.contains("reads format 2"),
        "{msg}"
    );
    assert!(
        msg.contains("new data directory") && msg.contains("index.redb"),
        "{msg}"
    );
}

#[test]
fn settings_out_of_range_are_named() {
    for (cfg, want) in [
        (
            DedupConfig {
                min_similarity: 1.5,
                ..Default::default()
            },
            "min_similarity 1.5",
        ),
        (
            DedupConfig {
                bands: 40,
                band_rows: 4,
                ..Default::default()
            },
            "bands 40 x band_rows 4",
        ),
    ] {
        let e = Deduper::new(MemoryStore::new(), cfg).unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
    }
}

fn band_index_survives_reopen_and_failed_transactions_leave_no_bands<S: Store>(open: impl Fn(&str) -> S) {
    let original = format!("手册首页 上一章 下一章\n{MANUAL}\n本文档按自由软件许可协议发布");
    let copy = format!("镜像站点 | 站内搜索\n{MANUAL}\n另外，安装前建议阅读发行说明。\n本站为非官方镜像");
    {
        let d = Deduper::new(open("index"), DedupConfig::default()).unwrap();
        assert!(
            !d.check_content(&Document::new("http://a/1", "", &original))
                .unwrap()
                .is_duplicate()
        );
        // A failed transaction's band entries never reach the index.
        let sketch = Sketch::of(&original).unwrap().narrow(d.sketch_bits());
        let key = sketch.band_keys(10, 4).next().unwrap();
        // Another band key, in the bits every store keeps (the Redis store
        // tells band keys apart by their top 48 bits, the in-memory band
        // index by their low 32).
        let other = key ^ (1 << 40) ^ 1;
        let failed: Result<(), Error> = d.store().write(|t| {
            t.add_band(other, 77)?;
            Err(Error::Config("abort".into()))
        });
        assert!(failed.is_err());
        d.store()
            .read(|t| {
                let mut ids = Vec::new();
                t.band_docs(other, &mut ids)?;
                assert!(ids.is_empty(), "{ids:?}");
                t.band_docs(key, &mut ids)?;
                assert_eq!(ids, [0]);
                Ok(())
            })
            .unwrap();
        d.flush().unwrap();
    }
    // Reopened: the band index is rebuilt from the stored documents, so the
    // copy beyond SimHash's reach is still found.
    let d = Deduper::new(open("index"), DedupConfig::default()).unwrap();
    let v = d.check_content(&Document::new("http://m/1", "", &copy)).unwrap();
    match v {
        Verdict::Duplicate(dup) => {
            assert_eq!(dup.of, "http://a/1");
            assert!(dup.distance.unwrap() > 3, "{dup:?}");
        }
        other => panic!("copy kept after reopening: {other:?}"),
    }
}
