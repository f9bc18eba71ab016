//! The three tiers through the public API, on every store: the store
//! contracts run through [`store_suite!`] (see `common`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use simcrawl_dedup::{
    CANONICAL_VERSION, CanonicalUrl, DedupConfig, Deduper, Document, Error, Extractor, FeatureConfig,
    MemoryStore, RedbStore, Store, Tier, TitlePolicy, UrlConfig, UrlError, UrlVerdict, Verdict,
};

const ARTICLE_A: &str = "国家统计局今天发布数据显示，十月份全国规模以上工业增加值同比增长百分之五点三，\
    环比增长零点四一。分行业看，四十一个大类行业中有三十五个行业增加值保持同比增长。\
    制造业采购经理指数回升至扩张区间，高技术制造业增长较快，新能源汽车、集成电路和工业机器人产量保持两位数增长。";
const ARTICLE_B: &str = "气象台发布寒潮蓝色预警，受强冷空气影响，北方大部地区气温将下降八到十度，\
    局地降温超过十二度并伴有大风天气。内蒙古东部、东北地区有小到中雪，部分地区有大雪，\
    公众应注意防寒保暖，农业设施需加固，交通运输部门要做好道路除冰准备。";

fn mem(cfg: DedupConfig) -> Deduper<MemoryStore> {
    Deduper::new(MemoryStore::new(), cfg).unwrap()
}

fn dup(v: &Verdict) -> &simcrawl_dedup::Duplicate {
    match v {
        Verdict::Duplicate(d) => d,
        other => panic!("expected a duplicate, got {other:?}"),
    }
}

#[test]
fn url_tier_collapses_variants_and_reports_the_first() {
    let d = mem(DedupConfig::default());
    assert!(matches!(
        d.check_url("http://a.example/x?b=2&a=1").unwrap(),
        UrlVerdict::New(_)
    ));
    match d
        .check_url("HTTP://A.example:80/x?a=1&b=2&utm_campaign=z#frag")
        .unwrap()
    {
        UrlVerdict::Seen { first, .. } => assert_eq!(first, "http://a.example/x?b=2&a=1"),
        other => panic!("{other:?}"),
    }
    assert!(d.check_url("mailto:x@example.com").is_err());
    // check() applies the URL tier before the others. A URL check_url
    // recorded (the frontier) has no document yet: the fetched page is its
    // first, not a URL duplicate of itself; the next page there is one.
    let v = d
        .check(&Document::new("http://a.example/x?a=1&b=2", "t", ARTICLE_B))
        .unwrap();
    assert!(!v.is_duplicate(), "{v:?}");
    let v = d
        .check(&Document::new("http://a.example/x?b=2&a=1#c", "t", ARTICLE_A))
        .unwrap();
    assert_eq!(dup(&v).tier, Tier::Url);
    // Reported as first given, by check_url.
    assert_eq!(dup(&v).of, "http://a.example/x?b=2&a=1");
}

#[test]
fn content_tier_finds_near_copies_and_keeps_different_texts() {
    let d = mem(DedupConfig::default());
    assert!(
        !d.check_content(&Document::new("http://a/1", "", ARTICLE_A))
            .unwrap()
            .is_duplicate()
    );
    assert!(
        !d.check_content(&Document::new("http://a/2", "", ARTICLE_B))
            .unwrap()
            .is_duplicate()
    );
    let edited = ARTICLE_A.replace("较快", "很快");
    let v = d
        .check_content(&Document::new("http://b/1", "", &edited))
        .unwrap();
    let got = dup(&v);
    assert_eq!(got.tier, Tier::Content);
    assert_eq!(got.of, "http://a/1");
    assert!(got.distance.unwrap() <= 3);
    assert_eq!(d.stats().unwrap().documents, 2);
}

#[test]
fn title_confirm_never_drops_different_pages_sharing_a_title() {
    let d = mem(DedupConfig::default());
    assert!(
        !d.check_content(&Document::new("http://a/1", "插入", ARTICLE_A))
            .unwrap()
            .is_duplicate()
    );
    // Same title, different content: kept.
    assert!(
        !d.check_content(&Document::new("http://a/2", " 插入 ", ARTICLE_B))
            .unwrap()
            .is_duplicate()
    );
    // Same title, content a bit further than k but within 10: title tier.
    let mut edited = ARTICLE_A.to_string();
    edited.push_str("记者从工业和信息化部获悉，相关部门将继续推进制造业数字化转型和绿色低碳发展。");
    let v = d
        .check_content(&Document::new("http://b/1", "插入", &edited))
        .unwrap();
    let fp_a = d.fingerprint(ARTICLE_A).unwrap();
    let fp_e = d.fingerprint(&edited).unwrap();
    let dist = fp_a.distance(fp_e);
    if dist > 3 && dist <= 10 {
        assert_eq!(dup(&v).tier, Tier::Title);
        assert_eq!(dup(&v).distance, Some(dist));
    } else {
        assert!(dist <= 3, "test text too far apart: {dist}");
        assert!(v.is_duplicate());
    }
}

#[test]
fn title_strict_and_off() {
    let strict = mem(DedupConfig {
        title_policy: TitlePolicy::Strict,
        ..Default::default()
    });
    strict
        .check_content(&Document::new("http://a/1", "Index", ARTICLE_A))
        .unwrap();
    let v = strict
        .check_content(&Document::new("http://a/2", "index", ARTICLE_B))
        .unwrap();
    assert_eq!(dup(&v).tier, Tier::Title);
    assert!(dup(&v).distance.unwrap() > 10);

    let off = mem(DedupConfig {
        title_policy: TitlePolicy::Off,
        ..Default::default()
    });
    off.check_content(&Document::new("http://a/1", "Index", ARTICLE_A))
        .unwrap();
    assert!(
        !off.check_content(&Document::new("http://a/2", "Index", ARTICLE_B))
            .unwrap()
            .is_duplicate()
    );
}

#[test]
fn batch_sees_its_own_earlier_documents() {
    let d = mem(DedupConfig::default());
    let docs = [
        Document::new("http://a/1", "", ARTICLE_A),
        Document::new("http://a/2", "", ARTICLE_A),
        Document::new("http://a/1", "", ARTICLE_B),
        Document::new("http://a/3", "", ARTICLE_B),
    ];
    let sigs: Vec<_> = docs.iter().map(|x| d.sign(x)).collect();
    let v = d.check_batch(&sigs, simcrawl_dedup::UrlTier::Check).unwrap();
    assert!(!v[0].is_duplicate());
    assert_eq!(dup(&v[1]).tier, Tier::Content);
    assert_eq!(dup(&v[2]).tier, Tier::Url);
    assert!(!v[3].is_duplicate());
}

#[test]
fn texts_without_words_are_still_checked_by_content() {
    // Stop words, a date and a number: no word, but letters and digits, so
    // the text is fingerprinted from its trigrams and checked (issue 42:
    // "no features" must never mean "not checked").
    let d = mem(DedupConfig::default());
    let first = d
        .check_content(&Document::new("http://a/1", "", "的 了 2024年 12"))
        .unwrap();
    assert!(
        matches!(
            first,
            Verdict::Unique {
                id: Some(_),
                fingerprint: Some(_),
                ..
            }
        ),
        "{first:?}"
    );
    let second = d
        .check_content(&Document::new("http://a/2", "", "的了 2024年12"))
        .unwrap();
    assert_eq!(dup(&second).of, "http://a/1");
    // Another such text is kept: it is compared exactly, being short.
    let other = d
        .check_content(&Document::new("http://a/3", "", "的 了 2025年 12"))
        .unwrap();
    assert!(!other.is_duplicate(), "{other:?}");
    assert_eq!(d.stats().unwrap().documents, 2);
    // Punctuation alone has nothing to compare and is not indexed.
    let none = d
        .check_content(&Document::new("http://a/4", "", "，。！"))
        .unwrap();
    assert_eq!(
        none,
        Verdict::Unique {
            id: None,
            fingerprint: None,
            url_skipped: false,
        }
    );
}

store_suite! {
    all: [
        window_expires_and_purges_old_entries,
        concurrent_inserts_of_the_same_documents_keep_exactly_one_copy,
        title_tier_compares_with_the_newest_same_title_pages,
        concurrent_batches_keep_exactly_one_copy,
    ],
    durable: [
        a_failed_write_leaves_no_trace,
        persists_and_refuses_other_parameters,
    ],
}

fn window_expires_and_purges_old_entries<S: Store>(open: impl Fn(&str) -> S) {
    let now = Arc::new(AtomicU64::new(1_000_000));
    let clock = now.clone();
    let d = Deduper::new(
        open("index"),
        DedupConfig {
            window: Some(Duration::from_secs(7 * 86_400)),
            ..Default::default()
        },
    )
    .unwrap()
    .with_clock(move || clock.load(Ordering::SeqCst));
    d.check(&Document::new("http://a/1", "t", ARTICLE_A)).unwrap();
    d.check(&Document::new("http://a/2", "u", ARTICLE_B)).unwrap();
    now.fetch_add(6 * 86_400, Ordering::SeqCst);
    assert!(
        d.check(&Document::new("http://b/1", "", ARTICLE_A))
            .unwrap()
            .is_duplicate()
    );
    now.fetch_add(2 * 86_400, Ordering::SeqCst);
    // Eight days later the originals no longer count...
    assert!(
        !d.check(&Document::new("http://c/1", "", ARTICLE_A))
            .unwrap()
            .is_duplicate()
    );
    assert!(matches!(d.check_url("http://a/1").unwrap(), UrlVerdict::New(_)));
    // ... and a purge (also run automatically) leaves only the new copy,
    // with the old entries gone from every tier and table.
    now.fetch_add(3600, Ordering::SeqCst);
    d.purge_expired().unwrap();
    assert_eq!(d.stats().unwrap().documents, 1);
    let fp_b = d.fingerprint(ARTICLE_B).unwrap();
    assert!(
        d.near(fp_b).unwrap().is_empty(),
        "purged fingerprint still in the block index"
    );
    let fp_a = d.fingerprint(ARTICLE_A).unwrap();
    assert_eq!(d.near(fp_a).unwrap(), vec![(0, "http://c/1".to_string())]);
}

#[test]
fn shingles_extractor_works_end_to_end() {
    let d = mem(DedupConfig {
        features: FeatureConfig {
            extractor: Extractor::Shingles,
            shingle_size: 3,
            ..Default::default()
        },
        ..Default::default()
    });
    d.check_content(&Document::new("http://a/1", "", ARTICLE_A))
        .unwrap();
    assert!(
        d.check_content(&Document::new("http://a/2", "", &format!("{ARTICLE_A}。")))
            .unwrap()
            .is_duplicate()
    );
    assert!(
        !d.check_content(&Document::new("http://a/3", "", ARTICLE_B))
            .unwrap()
            .is_duplicate()
    );
}

/// A store reopened keeps everything, and refuses other parameters,
/// naming where it lives.
fn persists_and_refuses_other_parameters<S: Store>(open: impl Fn(&str) -> S) {
    {
        let d = Deduper::new(open("index"), DedupConfig::default()).unwrap();
        d.check(&Document::new("http://a/1", "t", ARTICLE_A)).unwrap();
        d.flush().unwrap();
    }
    let store = open("index");
    let location = store.location().unwrap().display().to_string();
    let e = Deduper::new(
        store,
        DedupConfig {
            blocks: 6,
            ..Default::default()
        },
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("blocks: stored 4, requested 6"), "{msg}");
    assert!(msg.contains(&location), "{msg}");
    let e = Deduper::new(
        open("index"),
        DedupConfig {
            features: FeatureConfig {
                top_n: 50,
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("features: stored words(top_n=0"), "{e}");
    let e = Deduper::new(
        open("index"),
        DedupConfig {
            bits: 128,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("bits: stored 64, requested 128"), "{e}");
    // Reopened with its own parameters (by another process, for a shared
    // store), nothing was lost.
    let d = Deduper::new(open("index"), DedupConfig::default()).unwrap();
    assert_eq!(d.stats().unwrap().documents, 1);
    let v = d.check(&Document::new("http://b/1", "", ARTICLE_A)).unwrap();
    assert_eq!(dup(&v).tier, Tier::Content);
    assert!(matches!(
        d.check_url("http://a/1").unwrap(),
        UrlVerdict::Seen { .. }
    ));
    let v = d.check(&Document::new("http://a/1", "", ARTICLE_B)).unwrap();
    assert_eq!(dup(&v).tier, Tier::Url);
}

#[test]
fn redb_creates_its_directory_and_refuses_a_second_open_while_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/index.redb");
    let d = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
    d.check(&Document::new("http://a/1", "t", ARTICLE_A)).unwrap();
    d.flush().unwrap();
    // A second open of the same file while it is in use is refused.
    let e = RedbStore::open(&path).unwrap_err();
    assert!(matches!(e, Error::Locked { .. }), "{e}");
}

/// A store whose recorded value of `name` is replaced by `value`, as if it
/// had been built with another IDF table, segmenter or tracking list.
fn store_recording(name: &str, value: &str) -> MemoryStore {
    let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
    let params = d.params();
    let store = d.into_store();
    assert!(
        params.lines().any(|l| l.starts_with(&format!("{name}="))),
        "{params}"
    );
    let changed: String = params
        .lines()
        .map(|l| match l.split_once('=') {
            Some((k, _)) if k == name => format!("{k}={value}\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    store.write(|t| t.set_meta("params", changed.as_bytes())).unwrap();
    store
}

#[test]
fn stores_refuse_another_idf_table_segmenter_or_tracking_list() {
    for name in ["idf", "segmenter", "tracking"] {
        let e = Deduper::new(store_recording(name, "other"), DedupConfig::default()).unwrap_err();
        assert!(matches!(e, Error::ParamsMismatch { .. }), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("{name}: stored other, requested ")),
            "{e}"
        );
    }
}

fn tracking(list: &[&str]) -> DedupConfig {
    DedupConfig {
        url: UrlConfig {
            tracking_params: list.iter().map(|s| s.to_string()).collect(),
        },
        ..DedupConfig::default()
    }
}

/// Issue item 9: the tracking list is configurable, and the URL tier uses
/// the configured one, not the built-in one.
#[test]
fn the_url_tier_removes_the_configured_tracking_parameters() {
    let d = mem(tracking(&["sid", "ref_*"]));
    assert!(matches!(
        d.check_url("http://a.test/p?id=1&sid=7").unwrap(),
        UrlVerdict::New(_)
    ));
    let v = d.check_url("http://a.test/p?sid=8&id=1&REF_from=x").unwrap();
    assert!(matches!(v, UrlVerdict::Seen { .. }), "{v:?}");
    // A key of the built-in list is not on this one: another URL.
    let v = d.check_url("http://a.test/p?id=1&utm_source=x").unwrap();
    assert!(matches!(v, UrlVerdict::New(_)), "{v:?}");
    // Signatures (the batch tool's URL tier) use the same list.
    let sig = d.sign(&Document::new("http://a.test/p?id=1&sid=9", "", ""));
    let c = d.canonicalizer().parse("http://a.test/p?id=1").unwrap();
    assert_eq!(sig.url_digest, Some(u128::from_be_bytes(c.digest())));
    // An empty list removes nothing.
    let d = mem(tracking(&[]));
    assert!(matches!(
        d.check_url("http://a.test/p?utm_source=x").unwrap(),
        UrlVerdict::New(_)
    ));
    assert!(matches!(
        d.check_url("http://a.test/p").unwrap(),
        UrlVerdict::New(_)
    ));
}

/// The digest a store records covers the configured list (not the
/// built-in one): reopening with another list is refused, with the same
/// list in another order or case it is not.
#[test]
fn stores_record_the_configured_tracking_list() {
    let store = Deduper::new(MemoryStore::new(), tracking(&["sid", "utm_*"]))
        .unwrap()
        .into_store();
    let store = Deduper::new(store, tracking(&["UTM_*", "sid", "sid"]))
        .unwrap()
        .into_store();
    let e = Deduper::new(store, tracking(&["sid"])).unwrap_err();
    assert!(matches!(e, Error::ParamsMismatch { .. }), "{e}");
    assert!(e.to_string().contains("tracking: stored "), "{e}");
    let store = Deduper::new(MemoryStore::new(), tracking(&["sid"]))
        .unwrap()
        .into_store();
    let e = Deduper::new(store, DedupConfig::default()).unwrap_err();
    assert!(e.to_string().contains("tracking: stored "), "{e}");
}

/// A canonical form made under another list has another key: handing one
/// to `check_url_in` is an error, not a silent miss.
#[test]
fn check_url_in_refuses_canonical_forms_of_other_settings() {
    let d = mem(tracking(&["sid"]));
    let other = CanonicalUrl::parse("http://a.test/p?sid=1").unwrap();
    let e = d
        .store()
        .write(|t| d.check_url_in(t, "http://a.test/p?sid=1", other.clone()))
        .unwrap_err();
    assert!(matches!(e, Error::Url(UrlError::OtherSettings { .. })), "{e}");
    let own = d.canonicalizer().parse("http://a.test/p?sid=1").unwrap();
    let v = d
        .store()
        .write(|t| d.check_url_in(t, "http://a.test/p?sid=1", own.clone()))
        .unwrap();
    assert!(matches!(v, UrlVerdict::New(_)), "{v:?}");
}

#[test]
fn unusable_tracking_entries_are_refused() {
    for bad in ["", "*", "a b", "中", "utm_*x", "a=b"] {
        let e = Deduper::new(MemoryStore::new(), tracking(&["gclid", bad])).unwrap_err();
        assert!(
            matches!(&e, Error::Url(UrlError::TrackingParam { entry, .. }) if entry == bad),
            "{bad:?}: {e}"
        );
    }
}

/// Stores whose URL keys came from older canonical forms (version 1 recorded
/// no version) are refused with an error saying so, not mixed.
#[test]
fn stores_keyed_by_older_canonical_forms_are_refused() {
    let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
    let params = d.params();
    assert!(
        params.contains(&format!("url_canon={CANONICAL_VERSION}\n")),
        "{params}"
    );
    let store = d.into_store();
    let old: String = params
        .lines()
        .filter(|l| !l.starts_with("url_canon="))
        .map(|l| format!("{l}\n"))
        .collect();
    store.write(|t| t.set_meta("params", old.as_bytes())).unwrap();
    let e = Deduper::new(store, DedupConfig::default()).unwrap_err();
    assert!(
        matches!(e, Error::OldUrlKeys { ref stored, .. } if stored == "1"),
        "{e}"
    );
    assert!(e.to_string().contains("new data directory"), "{e}");
    let e = Deduper::new(store_recording("url_canon", "7"), DedupConfig::default()).unwrap_err();
    assert!(
        matches!(e, Error::OldUrlKeys { ref stored, .. } if stored == "7"),
        "{e}"
    );
}

#[test]
fn embedders_record_their_own_parameters() {
    let open = |store, value| Deduper::with_params(store, DedupConfig::default(), &[("clean", value)]);
    let store = open(MemoryStore::new(), "aaaa").unwrap().into_store();
    let store = open(store, "aaaa").unwrap().into_store();
    let e = open(store, "bbbb").unwrap_err();
    assert!(
        e.to_string().contains("clean: stored aaaa, requested bbbb"),
        "{e}"
    );
    // Opening without it is a difference too: the embedder's inputs are unknown.
    let store = open(MemoryStore::new(), "aaaa").unwrap().into_store();
    let e = Deduper::new(store, DedupConfig::default()).unwrap_err();
    assert!(e.to_string().contains("clean: stored aaaa, not requested"), "{e}");
    // An extra parameter cannot shadow one of the crate's own.
    let e = Deduper::with_params(MemoryStore::new(), DedupConfig::default(), &[("blocks", "9")]).unwrap_err();
    assert!(matches!(e, Error::Config(_)), "{e}");
}

fn concurrent_inserts_of_the_same_documents_keep_exactly_one_copy<S: Store + 'static>(
    open: impl Fn(&str) -> S,
) {
    let d = Arc::new(Deduper::new(open("index"), DedupConfig::default()).unwrap());
    let texts: Vec<String> = (0..20)
        .map(|i| {
            format!(
                "{ARTICLE_B} 第{i}号文件：{}",
                ARTICLE_A.chars().skip(i * 5).take(40).collect::<String>()
            )
        })
        .collect();
    let texts = Arc::new(texts);
    // (text index, URL) of every document kept.
    let kept: Arc<parking_lot::Mutex<Vec<(usize, String)>>> = Arc::default();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (d, texts, kept) = (d.clone(), texts.clone(), kept.clone());
            std::thread::spawn(move || {
                for (i, text) in texts.iter().enumerate() {
                    let url = format!("http://t{t}.example/{i}");
                    if !d
                        .check_content(&Document::new(&url, "", text))
                        .unwrap()
                        .is_duplicate()
                    {
                        kept.lock().push((i, url));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    // Every thread inserted the same 20 texts: each is kept at most once,
    // however the threads interleaved. Which of the near-duplicate texts
    // survive depends on the order they were seen in (A ~ B and B ~ C while
    // A !~ C), so the rest is checked as invariants: no kept text is a copy
    // of another kept one, every other text has a kept copy, and the store
    // holds exactly the kept documents.
    let kept = kept.lock().clone();
    let mut indices: Vec<usize> = kept.iter().map(|(i, _)| *i).collect();
    indices.sort_unstable();
    let n = indices.len();
    indices.dedup();
    assert_eq!(indices.len(), n, "a text was kept twice: {kept:?}");
    assert_eq!(d.stats().unwrap().documents, n as u64);
    let serial = mem(DedupConfig::default());
    for &i in &indices {
        let v = serial
            .check_content(&Document::new(&format!("http://s/{i}"), "", &texts[i]))
            .unwrap();
        assert!(
            !v.is_duplicate(),
            "kept text {i} is a copy of another kept one: {v:?}"
        );
    }
    for (i, t) in texts.iter().enumerate().filter(|(i, _)| !indices.contains(i)) {
        let sig = serial.sign(&Document::new(&format!("http://u/{i}"), "", t));
        assert!(
            serial.lookup(&sig).unwrap().is_some(),
            "text {i} dropped without a kept copy"
        );
    }
}

fn title_tier_compares_with_the_newest_same_title_pages<S: Store>(open: impl Fn(&str) -> S) {
    // More same-title pages than the title tier compares with: the newest
    // copy is still caught, and a page with different content still kept.
    let d = Deduper::new(open("index"), DedupConfig::default()).unwrap();
    let mut words: Vec<&str> = simcrawl_dedup::features::jieba_idf()
        .words()
        .filter(|w| w.chars().count() >= 2)
        .collect();
    words.sort_unstable();
    for i in 0..(simcrawl_dedup::TITLE_CANDIDATES + 10) {
        // Distinct articles: 40 dictionary words each, from disjoint slices.
        let text = words[i * 40..(i + 1) * 40].join("，");
        let v = d
            .check_content(&Document::new(&format!("http://s/{i}"), "Index", &text))
            .unwrap();
        assert!(!v.is_duplicate(), "page {i}: {v:?}");
    }
    assert!(
        !d.check_content(&Document::new("http://s/new", "Index", ARTICLE_A))
            .unwrap()
            .is_duplicate()
    );
    let mut edited = ARTICLE_A.to_string();
    edited.push_str("记者从工业和信息化部获悉，相关部门将继续推进制造业数字化转型和绿色低碳发展。");
    let v = d
        .check_content(&Document::new("http://s/copy", "Index", &edited))
        .unwrap();
    // Only the newest same-title pages are compared: had the oldest been
    // taken instead, the title tier would have missed the copy.
    assert_eq!(dup(&v).tier, Tier::Title, "{v:?}");
    assert_eq!(dup(&v).of, "http://s/new");
}

/// Batches of near-duplicates from 6 threads at once on one store: no
/// kept document is a copy of another kept one, every dropped one is a
/// copy of a kept one, and the store holds exactly the kept ones.
fn concurrent_batches_keep_exactly_one_copy<S: Store + 'static>(open: impl Fn(&str) -> S) {
    let d = Arc::new(Deduper::new(open("index"), DedupConfig::default()).unwrap());
    let texts: Vec<String> = (0..24)
        .map(|i| {
            format!(
                "{ARTICLE_A} 第{i}号：{}",
                ARTICLE_B.chars().skip(i * 3).take(50).collect::<String>()
            )
        })
        .collect();
    let sigs: Arc<Vec<_>> = Arc::new(
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| d.sign(&Document::new(&format!("http://x/{i}"), "", t)))
            .collect(),
    );
    // Which of these near-duplicates survive depends on the order they
    // are seen in (A ~ B and B ~ C while A !~ C), so the check is on the
    // invariants, not on one serial order's count: no kept document is
    // a copy of another kept one, every dropped one is a copy of a kept
    // one, and the store holds exactly the kept ones.
    let kept: Arc<parking_lot::Mutex<Vec<simcrawl_dedup::Signature>>> = Arc::default();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let (d, sigs, kept) = (d.clone(), sigs.clone(), kept.clone());
            std::thread::spawn(move || {
                // Each thread in its own order, in batches of 5.
                let mut order: Vec<_> = sigs.iter().cloned().collect();
                order.rotate_left(t * 4);
                for chunk in order.chunks(5) {
                    let v = d.check_batch(chunk, simcrawl_dedup::UrlTier::Skip).unwrap();
                    for (sig, verdict) in chunk.iter().zip(&v) {
                        if !verdict.is_duplicate() {
                            kept.lock().push(sig.clone());
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let kept = kept.lock().clone();
    let kept_urls: std::collections::BTreeSet<&str> = kept.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(kept_urls.len(), kept.len(), "a document was kept twice");
    assert_eq!(d.stats().unwrap().documents, kept.len() as u64);
    let serial = mem(DedupConfig::default());
    for v in serial.check_batch(&kept, simcrawl_dedup::UrlTier::Skip).unwrap() {
        assert!(!v.is_duplicate(), "two kept documents are copies: {v:?}");
    }
    for sig in sigs.iter().filter(|s| !kept_urls.contains(s.url.as_str())) {
        assert!(
            serial.lookup(sig).unwrap().is_some(),
            "{} dropped but no kept copy",
            sig.url
        );
    }
}

/// A write whose closure fails leaves nothing behind; the next one commits
/// (on Redis, the connection goes back to the pool without its watches).
fn a_failed_write_leaves_no_trace<S: Store>(open: impl Fn(&str) -> S) {
    failed_write_leaves_no_trace(&open("index"));
}

fn failed_write_leaves_no_trace<S: Store>(store: &S) {
    let r: simcrawl_dedup::Result<()> = store.write(|t| {
        t.set_meta("x", b"1")?;
        t.add_band(42, 7)?;
        Err(Error::Config("boom".into()))
    });
    assert!(r.is_err());
    store
        .read(|t| {
            assert_eq!(t.meta("x")?, None);
            let mut ids = Vec::new();
            t.band_docs(42, &mut ids)?;
            assert!(ids.is_empty());
            Ok(())
        })
        .unwrap();
    store.write(|t| t.set_meta("x", b"2")).unwrap();
    assert_eq!(store.read(|t| t.meta("x")).unwrap(), Some(b"2".to_vec()));
}

#[cfg(feature = "redis")]
mod redis_store {
    use super::*;

    /// Another namespace on the same server sees nothing of a store's.
    #[test]
    fn redis_namespaces_do_not_see_each_other() {
        let Some(store) = common::redis_store("redis_namespaces_do_not_see_each_other") else {
            return;
        };
        let d = Deduper::new(store, DedupConfig::default()).unwrap();
        d.check(&Document::new("http://a/1", "t", ARTICLE_A)).unwrap();
        assert_eq!(d.stats().unwrap().documents, 1);
        let other = Deduper::new(common::redis_store("other").unwrap(), DedupConfig::default()).unwrap();
        assert_eq!(other.stats().unwrap().documents, 0);
        d.store().clear().unwrap();
    }
}

#[cfg(feature = "redis")]
mod replicated_store {
    use super::*;
    use simcrawl_dedup::ReplicatedStore;

    fn store(test: &str) -> Option<ReplicatedStore> {
        common::replicated_store(test)
    }

    /// Two stores on one namespace are two processes: each sees what the
    /// other committed, and a third opened later loads it all.
    #[test]
    fn replicas_see_each_others_writes_and_refuse_other_parameters() {
        let Some(url) = common::redis_url("replicas_see_each_others_writes") else {
            return;
        };
        let ns = common::unique_namespace("replicas");
        let open = || ReplicatedStore::open_with(&url, common::redis_options(&ns)).unwrap();
        open().clear().unwrap();
        let a = Deduper::new(open(), DedupConfig::default()).unwrap();
        let b = Deduper::new(open(), DedupConfig::default()).unwrap();
        assert!(
            !a.check(&Document::new("http://a/1", "t", ARTICLE_A))
                .unwrap()
                .is_duplicate()
        );
        let v = b.check(&Document::new("http://b/1", "", ARTICLE_A)).unwrap();
        assert_eq!(dup(&v).tier, Tier::Content);
        assert!(
            !b.check(&Document::new("http://b/2", "", ARTICLE_B))
                .unwrap()
                .is_duplicate()
        );
        // `a` learns of b/2 when its own write conflicts, or on a read.
        assert_eq!(a.stats().unwrap().documents, 2);
        assert!(
            a.check(&Document::new("http://a/2", "", ARTICLE_B))
                .unwrap()
                .is_duplicate()
        );
        let e = Deduper::new(
            open(),
            DedupConfig {
                blocks: 6,
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("blocks: stored 4, requested 6"), "{e}");
        let c = Deduper::new(open(), DedupConfig::default()).unwrap();
        assert_eq!(c.stats().unwrap().documents, 2);
        assert!(matches!(
            c.check_url("http://a/1").unwrap(),
            UrlVerdict::Seen { .. }
        ));
        // The two layouts refuse each other's namespaces, naming the layout.
        let e = simcrawl_dedup::RedisStore::open_with(&url, common::redis_options(&ns)).unwrap_err();
        assert!(e.to_string().contains("replicated-2"), "{e}");
        let other = common::redis_store("layout3").unwrap();
        let e = ReplicatedStore::open_with(&url, common::redis_options(&other_ns(&other))).unwrap_err();
        assert!(e.to_string().contains("layout 3"), "{e}");
        open().clear().unwrap();
        other.clear().unwrap();
    }

    fn other_ns(s: &simcrawl_dedup::RedisStore) -> String {
        let loc = s.location().unwrap().to_string_lossy().into_owned();
        let at = loc.find("(namespace ").unwrap() + "(namespace ".len();
        loc[at..].trim_end_matches(')').to_string()
    }

    #[test]
    fn replicated_failed_write_leaves_no_trace() {
        let Some(store) = store("replicated_failed_write_leaves_no_trace") else {
            return;
        };
        let pos = store.position();
        failed_write_leaves_no_trace(&store);
        // Only the write that succeeded was appended to the log.
        assert_eq!(store.position(), pos + 1);
        store.clear().unwrap();
    }
}

/// `bits = 128` through the tiers on redb: near copies found, records that
/// keep both halves across a reopen, 32-digit fingerprints, and a store of
/// one width refused at the other.
#[test]
fn wide_fingerprints_find_near_copies_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.redb");
    let wide = DedupConfig {
        bits: 128,
        ..Default::default()
    };
    let near_a = ARTICLE_A.replacen("百分之五点三", "百分之五点四", 1);
    let fp_a;
    {
        let d = Deduper::new(RedbStore::open(&path).unwrap(), wide.clone()).unwrap();
        let v = d.check(&Document::new("http://a/1", "", ARTICLE_A)).unwrap();
        let Verdict::Unique {
            fingerprint: Some(fp),
            ..
        } = v
        else {
            panic!("{v:?}")
        };
        assert_eq!((fp.bits(), fp.to_string().len()), (128, 32));
        // The low half is the 64-bit fingerprint of the same text.
        let narrow = mem(DedupConfig::default()).fingerprint(ARTICLE_A).unwrap();
        assert_eq!(fp.low(), narrow.low());
        fp_a = fp;
        assert!(
            !d.check(&Document::new("http://b/1", "", ARTICLE_B))
                .unwrap()
                .is_duplicate()
        );
        d.flush().unwrap();
    }
    let d = Deduper::new(RedbStore::open(&path).unwrap(), wide.clone()).unwrap();
    let v = d.check(&Document::new("http://c/1", "", &near_a)).unwrap();
    let found = dup(&v);
    assert_eq!((found.tier, found.of.as_str()), (Tier::Content, "http://a/1"));
    let fp_near = found.fingerprint.unwrap();
    assert_eq!(found.distance, Some(fp_near.distance(fp_a)));
    // The record kept the upper half: near() measures all 128 bits.
    let near = d.near(fp_a).unwrap();
    assert_eq!(near, vec![(0, "http://a/1".to_string())]);
    // A 64-bit value asked of it counts with an upper half of 0: far away.
    assert!(
        d.near(simcrawl_dedup::Fingerprint::new(fp_a.low()))
            .unwrap()
            .is_empty()
    );
    drop(d);
    let e = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap_err();
    assert!(e.to_string().contains("bits: stored 128, requested 64"), "{e}");
    let e = Deduper::new(
        MemoryStore::new(),
        DedupConfig {
            bits: 100,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("bits 100 is not 64 or 128"), "{e}");
    // A 128-bit fingerprint asked of a 64-bit store is refused, not cut.
    let e = mem(DedupConfig::default()).near(fp_a).unwrap_err();
    assert!(e.to_string().contains("has 128 bits"), "{e}");
}

/// The sketch's width is the store's: a new store keeps 8 bits a bin, a
/// store made with 16 reopens at 16 under the default settings (existing
/// indexes keep working) and refuses an explicit 8; both widths find the
/// same near copy with about the same resemblance.
#[test]
fn sketch_width_follows_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let near_a = ARTICLE_A.replacen("百分之五点三", "百分之五点四", 1);
    let stored_bits =
        |d: &Deduper<RedbStore>| d.store().read(|t| t.doc(0)).unwrap().map(|rec| rec.sketch.bits());
    let mut similarity = Vec::new();
    for (name, bits) in [("wide", Some(16)), ("default", None)] {
        let path = dir.path().join(format!("{name}.redb"));
        {
            let cfg = DedupConfig {
                sketch_bits: bits,
                ..Default::default()
            };
            let d = Deduper::new(RedbStore::open(&path).unwrap(), cfg).unwrap();
            assert!(
                !d.check(&Document::new("http://a/1", "", ARTICLE_A))
                    .unwrap()
                    .is_duplicate()
            );
            assert_eq!(stored_bits(&d), Some(bits.unwrap_or(8)));
            d.flush().unwrap();
        }
        // Reopened with the defaults: the store's width.
        let d = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
        assert_eq!(d.sketch_bits(), bits.unwrap_or(8));
        let v = d.check(&Document::new("http://c/1", "", &near_a)).unwrap();
        let found = dup(&v);
        assert_eq!((found.tier, found.of.as_str()), (Tier::Content, "http://a/1"));
        similarity.push(found.similarity.unwrap());
        drop(d);
        let other = if bits == Some(16) { 8 } else { 16 };
        let e = Deduper::new(
            RedbStore::open(&path).unwrap(),
            DedupConfig {
                sketch_bits: Some(other),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("sketch: stored oph128x{}", bits.unwrap_or(8))),
            "{e}"
        );
    }
    assert!((similarity[0] - similarity[1]).abs() < 0.05, "{similarity:?}");
    let e = Deduper::new(
        MemoryStore::new(),
        DedupConfig {
            sketch_bits: Some(12),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("sketch_bits 12 is not 8 or 16"), "{e}");
}

/// Words `from..to`, each distinct: texts made of overlapping ranges
/// resemble each other as much as the ranges overlap.
fn words(from: usize, to: usize) -> String {
    (from..to)
        .map(|i| format!("w{}x{}q", i * 7919 % 100_003, i))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A title that two kept pages of a host already carry is that host's
/// template: it no longer lowers the resemblance a copy must show on that
/// host (issue 35: generated reference pages sharing "Namespace Members"
/// were dropped as copies of each other). Across hosts, and for the second
/// page of a host with that title, it still does.
#[test]
fn a_title_many_pages_of_a_host_share_does_not_lower_the_threshold() {
    let d = mem(DedupConfig {
        title_min_similarity: 0.5,
        min_similarity: 0.95,
        ..Default::default()
    });
    let title = "Namespace Members";
    let check = |url: &str, text: &str| d.check_content(&Document::new(url, title, text)).unwrap();
    // Pages of h sharing the title: 0..200 and 1000..1200 kept.
    assert!(check("http://h.test/a", &words(0, 200)).is_unique());
    // The second page with it on h: resembles a by about 0.6, a title-tier
    // copy (the title is not yet the host's).
    let v = check("http://h.test/b", &words(50, 250));
    assert_eq!(v.tier(), Some(Tier::Title), "{v:?}");
    assert!(check("http://h.test/c", &words(1000, 1200)).is_unique());
    // Two kept pages of h carry it now: a third resembling a as b did is
    // no copy on h...
    let v = check("http://h.test/d", &words(50, 250));
    assert!(v.is_unique(), "{v:?}");
    // ... but the same text on another host still is one.
    let v = check("http://g.test/d", &words(40, 240));
    assert_eq!(v.tier(), Some(Tier::Title), "{v:?}");
    assert!(
        v.partner().is_some_and(|p| p.starts_with("http://h.test/")),
        "{v:?}"
    );
}
