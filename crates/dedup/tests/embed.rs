//! The API a crawler embeds: `Deduper::open` / `in_memory`, the read-only
//! `url_seen`, the fetch-then-check flow, relative URLs, serialized
//! verdicts, `AnyStore`, typed errors.
#![cfg(feature = "redb")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::error::Error as _;

use simcrawl_dedup::{
    AnyStore, DedupConfig, Deduper, Document, Error, RedbStore, Store, Tier, TitlePolicy, UrlTier,
    UrlVerdict, Verdict,
};

const ARTICLE_A: &str = "国家统计局今天发布数据显示，十月份全国规模以上工业增加值同比增长百分之五点三，\
    环比增长零点四一。分行业看，四十一个大类行业中有三十五个行业增加值保持同比增长。\
    制造业采购经理指数回升至扩张区间，高技术制造业增长较快，新能源汽车、集成电路和工业机器人产量保持两位数增长。";
const ARTICLE_B: &str = "气象台发布寒潮蓝色预警，受强冷空气影响，北方大部地区气温将下降八到十度，\
    局地降温超过十二度并伴有大风天气。内蒙古东部、东北地区有小到中雪，部分地区有大雪，\
    公众应注意防寒保暖，农业设施需加固，交通运输部门要做好道路除冰准备。";
const ARTICLE_C: &str = "The city council approved a new budget on Tuesday that raises spending on public \
    transport by twelve percent, adds two hundred buses to the fleet and extends night service on the \
    three busiest lines, while property taxes stay at last year's level for the fourth year running.";

/// The URL tier's record of `url`, read as the issue's workaround did.
fn url_record<S: Store>(d: &Deduper<S>, url: &str) -> Option<simcrawl_dedup::store::UrlRecord> {
    let digest = u128::from_be_bytes(d.canonicalizer().parse(url).unwrap().digest());
    d.store().read(|t| t.url(digest)).unwrap()
}

/// Every store this test file runs on, chosen at run time.
fn stores(dir: &std::path::Path) -> Vec<AnyStore> {
    vec![
        AnyStore::open("memory").unwrap(),
        AnyStore::open(&format!("redb:{}", dir.join("any.redb").display())).unwrap(),
    ]
}

#[test]
fn url_seen_records_nothing() {
    let d = Deduper::in_memory().unwrap();
    let url = "http://news.example/a?id=1";
    for _ in 0..3 {
        assert!(!d.url_seen(url).unwrap());
    }
    assert!(url_record(&d, url).is_none(), "url_seen wrote a URL record");
    assert_eq!(d.stats().unwrap().documents, 0);
    // Still the URL's first check: kept, not a URL duplicate.
    let v = d.check(&Document::new(url, "", ARTICLE_A)).unwrap();
    assert!(v.is_unique(), "{v:?}");
    assert_eq!(d.stats().unwrap().documents, 1);
    // Now seen, in any spelling; still nothing written by asking.
    let before = url_record(&d, url);
    assert!(
        d.url_seen("HTTP://news.example:80/a?id=1&utm_source=x#top")
            .unwrap()
    );
    assert_eq!(url_record(&d, url), before);
    assert!(!d.url_seen("http://news.example/a?id=2").unwrap());
    assert!(url_record(&d, "http://news.example/a?id=2").is_none());
    // check_url on a URL url_seen asked about is New: asking did not record.
    assert!(!d.url_seen("http://news.example/b").unwrap());
    assert!(matches!(
        d.check_url("http://news.example/b").unwrap(),
        UrlVerdict::New(_)
    ));
    assert!(d.url_seen("http://news.example/b").unwrap());
}

#[test]
fn fetch_then_check_is_never_a_self_duplicate_on_any_store() {
    let dir = tempfile::tempdir().unwrap();
    for store in stores(dir.path()) {
        let kind = store.kind();
        let d = Deduper::new(store, DedupConfig::default()).unwrap();
        // Frontier: the URL is new; fetch it.
        let url = "http://news.example/a?b=2&a=1";
        assert!(matches!(d.check_url(url).unwrap(), UrlVerdict::New(_)), "{kind}");
        // A second frontier check (another link to it) is Seen, reported as
        // first given (no trace of how it was recorded).
        match d.check_url("http://NEWS.example/a?a=1&b=2").unwrap() {
            UrlVerdict::Seen { first, .. } => assert_eq!(first, url, "{kind}"),
            other => panic!("{kind}: {other:?}"),
        }
        // The fetched page, checked with all tiers: its own first document.
        let v = d
            .check(&Document::new("http://news.example/a?a=1&b=2", "工业", ARTICLE_A))
            .unwrap();
        assert!(
            v.is_unique(),
            "{kind}: a page reported as a copy of itself: {v:?}"
        );
        assert!(!v.url_skipped());
        // In a batch too.
        d.check_url("http://news.example/c").unwrap();
        let sigs = [d.sign(&Document::new("http://news.example/c", "", ARTICLE_B))];
        let v = d.check_batch(&sigs, UrlTier::Check).unwrap();
        assert!(v[0].is_unique(), "{kind}: {v:?}");
        // A second page under a URL a document was checked under is a URL
        // duplicate, of the URL as first given.
        let again = d.check(&Document::new(url, "", ARTICLE_C)).unwrap();
        assert_eq!(again.tier(), Some(Tier::Url), "{kind}: {again:?}");
        assert_eq!(again.partner(), Some(url));
        assert_eq!(again.partner_id(), None, "the URL tier knows no documents");
        let again = d
            .check(&Document::new("http://news.example/c", "", ARTICLE_C))
            .unwrap();
        assert_eq!(again.tier(), Some(Tier::Url), "{kind}");
        // The record kept its first-seen time and reads as given.
        let rec = url_record(&d, url).unwrap();
        assert_eq!(rec.url, url, "{kind}");
        match d.check_url(url).unwrap() {
            UrlVerdict::Seen { first, .. } => assert_eq!(first, url),
            other => panic!("{kind}: {other:?}"),
        }
        // A URL ending in NULs (trailing controls are not part of a URL)
        // cannot pass for a frontier record.
        let odd = "http://news.example/odd\0";
        d.check(&Document::new(odd, "", "")).unwrap();
        let v = d.check(&Document::new(odd, "", "")).unwrap();
        assert_eq!(v.tier(), Some(Tier::Url), "{kind}: {v:?}");
        assert_eq!(v.partner(), Some("http://news.example/odd"));
    }
}

#[test]
fn a_url_that_cannot_take_part_is_flagged_not_skipped_silently() {
    let d = Deduper::in_memory().unwrap();
    let v = d.check(&Document::new("/a.html", "", ARTICLE_A)).unwrap();
    assert!(v.is_unique() && v.url_skipped(), "{v:?}");
    // Not recorded: the same relative URL again is no URL duplicate (the
    // content tier still finds a copy).
    let v = d.check(&Document::new("/a.html", "", ARTICLE_B)).unwrap();
    assert!(v.is_unique() && v.url_skipped(), "{v:?}");
    let v = d.check(&Document::new("/b.html", "", ARTICLE_A)).unwrap();
    assert_eq!(v.tier(), Some(Tier::Content));
    assert!(v.url_skipped(), "{v:?}");
    // Through a batch, and for other unusable URLs.
    let sigs: Vec<_> = ["mailto:x@example.com", "http://ok.example/1"]
        .iter()
        .map(|u| d.sign(&Document::new(u, "", ARTICLE_C)))
        .collect();
    let v = d.check_batch(&sigs, UrlTier::Check).unwrap();
    assert!(v[0].url_skipped() && !v[1].url_skipped(), "{v:?}");
    // Not asked for the URL tier: nothing to flag.
    let v = d
        .check_content(&Document::new(
            "/c.html",
            "",
            "完全不同的一段文字内容，用来测试。",
        ))
        .unwrap();
    assert!(!v.url_skipped());
    // The URL tier's own calls say why.
    assert!(matches!(d.url_seen("/a.html"), Err(Error::Url(_))));
    assert!(matches!(d.check_url("/a.html"), Err(Error::Url(_))));
}

#[test]
fn partner_ids_and_helpers() {
    let d = Deduper::new(
        simcrawl_dedup::MemoryStore::new(),
        DedupConfig {
            title_policy: TitlePolicy::Strict,
            ..Default::default()
        },
    )
    .unwrap();
    let a = d
        .check(&Document::new("http://a.example/1", "Budget passes", ARTICLE_C))
        .unwrap();
    let b = d
        .check(&Document::new("http://a.example/2", "", ARTICLE_A))
        .unwrap();
    let (ida, idb) = (a.id().unwrap(), b.id().unwrap());
    assert_ne!(ida, idb);
    assert!(a.partner().is_none() && a.similarity().is_none() && a.tier().is_none());
    // Content tier: the partner's id.
    let copy = d
        .check(&Document::new("http://mirror.example/x", "", ARTICLE_A))
        .unwrap();
    assert_eq!(copy.tier(), Some(Tier::Content));
    assert_eq!(copy.partner_id(), Some(idb));
    assert_eq!(copy.partner(), Some("http://a.example/2"));
    assert_eq!(copy.similarity(), Some(1.0));
    assert_eq!(copy.duplicate().unwrap().similarity(), Some(1.0));
    assert!(copy.fingerprint().is_some() && copy.id().is_none());
    // Title tier (strict: the title is enough): the partner's id too.
    let t = d
        .check(&Document::new("http://c.example/9", "Budget passes", ARTICLE_B))
        .unwrap();
    assert_eq!(
        (t.tier(), t.partner_id()),
        (Some(Tier::Title), Some(ida)),
        "{t:?}"
    );
    // lookup names it as well.
    let sig = d.sign(&Document::new("http://z.example/", "", ARTICLE_A));
    assert_eq!(d.lookup(&sig).unwrap().unwrap().of_id, Some(idb));
}

#[cfg(feature = "serde")]
#[test]
fn verdicts_serialize_with_stable_field_names_and_round_trip() {
    use serde_json::json;
    let d = Deduper::in_memory().unwrap();
    let kept = d
        .check(&Document::new("http://a.example/1", "", ARTICLE_A))
        .unwrap();
    let fp = kept.fingerprint().unwrap().to_string();
    assert_eq!(
        serde_json::to_value(&kept).unwrap(),
        json!({"verdict": "unique", "id": 0, "fingerprint": fp, "url_skipped": false})
    );
    let copy = d
        .check(&Document::new("http://b.example/2", "", ARTICLE_A))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&copy).unwrap(),
        json!({
            "verdict": "duplicate", "tier": "content", "of": "http://a.example/1", "of_id": 0,
            "distance": 0, "similarity": 1.0, "fingerprint": fp, "url_skipped": false
        })
    );
    let url_dup = d
        .check(&Document::new("http://a.example/1", "", ARTICLE_B))
        .unwrap();
    let rel = d.check(&Document::new("/x", "", ARTICLE_C)).unwrap();
    for v in [&kept, &copy, &url_dup, &rel] {
        let text = serde_json::to_string(v).unwrap();
        assert_eq!(&serde_json::from_str::<Verdict>(&text).unwrap(), v, "{text}");
    }
    assert_eq!(serde_json::to_value(&url_dup).unwrap()["tier"], "url");
    assert_eq!(serde_json::to_value(&rel).unwrap()["url_skipped"], true);
    // URL verdicts.
    let new = d.check_url("http://c.example/p?b=1&a=2").unwrap();
    assert_eq!(
        serde_json::to_value(&new).unwrap(),
        json!({"verdict": "new", "canonical": "http://c.example/p?a=2&b=1"})
    );
    let seen = d.check_url("http://c.example/p?a=2&b=1").unwrap();
    assert_eq!(
        serde_json::to_value(&seen).unwrap(),
        json!({"verdict": "seen", "canonical": "http://c.example/p?a=2&b=1", "first": "http://c.example/p?b=1&a=2"})
    );
    // Signatures: signed in one process, checked in another.
    let sig = d.sign(&Document::new("http://d.example/", "寒潮", ARTICLE_A));
    let text = serde_json::to_string(&sig).unwrap();
    let back: simcrawl_dedup::Signature = serde_json::from_str(&text).unwrap();
    assert_eq!(back, sig);
    let v = d.check_batch(&[back], UrlTier::Check).unwrap();
    assert_eq!(v[0].tier(), Some(Tier::Content), "{v:?}");
    assert!(
        serde_json::from_str::<simcrawl_dedup::Signature>(&text.replace("\"sketch\":\"", "\"sketch\":\"zz"))
            .is_err()
    );
    // A page's extent and outline travel with its signature; a signature
    // written before outlines (no `outline` field) still reads.
    let mut page = d.sign(&Document::new("http://e.example/", "", ARTICLE_B));
    page.extent = Some(simcrawl_dedup::Extent::of(ARTICLE_B));
    let text = serde_json::to_string(&page).unwrap();
    let back: simcrawl_dedup::Signature = serde_json::from_str(&text).unwrap();
    assert_eq!(back, page);
    let outline = serde_json::to_value(page.extent.unwrap().outline.unwrap()).unwrap();
    let hex = outline.as_str().and_then(|o| o.strip_prefix("b1:")).unwrap();
    assert_eq!(hex.len(), 128, "{outline}");
    // An outline serialized before one-bit bins (its hex alone) reads back
    // in its own layout, which compares only with its own.
    let old: simcrawl_dedup::Outline = serde_json::from_value(serde_json::json!(hex)).unwrap();
    assert!(old.is_before_bits());
    assert_eq!(old.to_bytes(), page.extent.unwrap().outline.unwrap().to_bytes());
    assert_eq!(old.resemblance(&page.extent.unwrap().outline.unwrap()), None);
    assert_eq!(serde_json::to_value(old).unwrap().as_str(), Some(hex));
    let old: simcrawl_dedup::Extent = serde_json::from_str(r#"{"shingles": 12}"#).unwrap();
    assert_eq!(
        old,
        simcrawl_dedup::Extent {
            shingles: 12,
            outline: None
        }
    );
    assert!(serde_json::from_str::<simcrawl_dedup::Outline>(r#""00ff""#).is_err());
}

#[test]
fn any_store_is_chosen_at_run_time_and_persists_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/index.redb");
    let specs = [
        "memory".to_string(),
        format!("redb:{}", path.display()),
        path.display().to_string(),
    ];
    let kinds: Vec<_> = specs
        .iter()
        .take(2)
        .map(|s| AnyStore::open(s).unwrap().kind())
        .collect();
    assert_eq!(kinds, ["memory", "redb"]);
    {
        let d = Deduper::new(AnyStore::open(&specs[1]).unwrap(), DedupConfig::default()).unwrap();
        assert!(d.store().location().is_some());
        assert!(
            d.check(&Document::new("http://a.example/1", "", ARTICLE_A))
                .unwrap()
                .is_unique()
        );
        d.check_url("http://a.example/frontier").unwrap();
        d.flush().unwrap();
    }
    // Reopened through a bare path: the same file, the same state.
    let d = Deduper::new(AnyStore::open(&specs[2]).unwrap(), DedupConfig::default()).unwrap();
    assert_eq!(d.stats().unwrap().documents, 1);
    assert!(d.url_seen("http://a.example/frontier").unwrap());
    assert_eq!(
        d.check(&Document::new("http://b.example/", "", ARTICLE_A))
            .unwrap()
            .tier(),
        Some(Tier::Content)
    );
    // A memory store forgets.
    let m = Deduper::new(AnyStore::open("memory").unwrap(), DedupConfig::default()).unwrap();
    assert!(m.store().location().is_none());
    assert!(!m.url_seen("http://a.example/frontier").unwrap());
    // Kinds this build lacks, and nonsense, are refused by name.
    #[cfg(not(feature = "sled"))]
    assert!(
        AnyStore::open("sled:/tmp/x")
            .unwrap_err()
            .to_string()
            .contains("\"sled\"")
    );
    assert!(matches!(AnyStore::open("redb:"), Err(Error::Config(_))));
    fn shared<T: Send + Sync>() {}
    shared::<Deduper<AnyStore>>();
    shared::<Deduper<RedbStore>>();
}

#[test]
fn open_errors_keep_their_io_cause() {
    fn io_in_chain(e: &Error) -> Option<&std::io::Error> {
        let mut cause = e.source();
        while let Some(c) = cause {
            if let Some(io) = c.downcast_ref::<std::io::Error>() {
                return Some(io);
            }
            cause = c.source();
        }
        None
    }
    let dir = tempfile::tempdir().unwrap();
    // The store's file is a directory.
    let e = RedbStore::open(dir.path()).unwrap_err();
    assert!(matches!(e, Error::Storage(_)), "{e:?}");
    assert!(io_in_chain(&e).is_some(), "{e:?}");
    assert!(e.to_string().contains(&dir.path().display().to_string()), "{e}");
    // Its directory is a file.
    let file = dir.path().join("plain");
    std::fs::write(&file, b"x").unwrap();
    let e = Deduper::open(&file).unwrap_err();
    assert!(io_in_chain(&e).is_some(), "{e:?}");
    let e = RedbStore::open(file.join("index.redb")).unwrap_err();
    assert!(io_in_chain(&e).is_some(), "{e:?}");
    // Opened twice in one process: said so, not "another process".
    let d = Deduper::open(dir.path().join("db")).unwrap();
    let e = Deduper::open(dir.path().join("db")).unwrap_err();
    assert!(matches!(e, Error::Locked { .. }), "{e:?}");
    assert!(e.to_string().contains("in this one"), "{e}");
    drop(d);
    assert!(Deduper::open(dir.path().join("db")).is_ok());
}

#[test]
fn deduper_open_shares_between_threads_and_keeps_one_of_each_copy() {
    let dir = tempfile::tempdir().unwrap();
    let texts = [ARTICLE_A, ARTICLE_B, ARTICLE_C];
    {
        let d = Deduper::open(dir.path()).unwrap();
        let kept: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let d = &d;
                    s.spawn(move || {
                        texts
                            .iter()
                            .enumerate()
                            .filter(|(i, text)| {
                                let url = format!("http://t{t}.example/{i}");
                                d.check(&Document::new(&url, "", text)).unwrap().is_unique()
                            })
                            .count()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(
            kept,
            texts.len(),
            "exactly one copy of each text kept across 4 threads"
        );
        d.flush().unwrap();
    }
    let d = Deduper::open(dir.path()).unwrap();
    assert_eq!(d.stats().unwrap().documents, texts.len() as u64);
    assert!(dir.path().join(simcrawl_dedup::STORE_FILE).is_file());
}

/// A read-only open leaves the file's bytes as they were, refuses writes,
/// a file a writer has open, and a missing file, each with its own error.
#[test]
fn a_read_only_store_changes_nothing_and_says_why_it_cannot() {
    use simcrawl_dedup::RedbReadOnlyStore;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index.redb");
    let text = "长江流域今年夏季降雨偏多，防汛形势严峻，各地加强巡查";
    let d = Deduper::new(RedbStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
    d.check(&Document::new("http://a.example/1", "", text)).unwrap();
    // A writer holds it.
    let e = RedbReadOnlyStore::open(&path).unwrap_err();
    assert!(matches!(e, Error::Locked { .. }), "{e:?}");
    d.flush().unwrap();
    drop(d);
    let before = std::fs::read(&path).unwrap();
    let d = Deduper::new(RedbReadOnlyStore::open(&path).unwrap(), DedupConfig::default()).unwrap();
    assert!(d.url_seen("http://a.example/1").unwrap());
    let e = d
        .check(&Document::new("http://b.example/1", "", text))
        .unwrap_err();
    assert!(matches!(e, Error::ReadOnly { .. }), "{e:?}");
    assert!(
        d.explain(&d.sign(&Document::new("http://b.example/1", "", text)))
            .unwrap()
            .verdict
            .is_some()
    );
    drop(d);
    assert!(
        std::fs::read(&path).unwrap() == before,
        "a read-only open changed the file"
    );
    // Read-only readers share the file.
    let a = RedbReadOnlyStore::open(&path).unwrap();
    let b = RedbReadOnlyStore::open(&path).unwrap();
    drop((a, b));
    let e = RedbReadOnlyStore::open(dir.path().join("missing.redb")).unwrap_err();
    assert!(e.to_string().contains("missing.redb"), "{e}");
    let mut cause = e.source();
    while let Some(c) = cause {
        if c.downcast_ref::<std::io::Error>().is_some() {
            break;
        }
        cause = c.source();
    }
    assert!(cause.is_some(), "no io::Error in {e:?}");
}
