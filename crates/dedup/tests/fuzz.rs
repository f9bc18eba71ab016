//! Fuzz harnesses on stable Rust for what crawled input reaches in this
//! crate: URL canonicalization (grammar-built URLs with every kind of
//! escape, host and port, plus arbitrary strings) and signing arbitrary
//! text. Properties: no panic; a canonical URL is a fixed point
//! (canonicalizing it again changes nothing, so two spellings never get two
//! digests by the order they were seen in); sketches and fingerprints are
//! deterministic.
//!
//! Long run: `SIMCRAWL_FUZZ_CASES=200000 cargo test --release -p simcrawl-dedup --test fuzz`.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use simcrawl_dedup::{CanonicalUrl, DedupConfig, Deduper, Document, MemoryStore};

fn cases() -> u32 {
    std::env::var("SIMCRAWL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn pick(items: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(items).prop_map(str::to_string)
}

fn url_text() -> impl Strategy<Value = String> {
    let scheme = pick(&[
        "http://",
        "https://",
        "HTTP://",
        "HtTpS://",
        "ftp://",
        "javascript:",
        "",
        "http:/",
        "http:///",
    ]);
    let user = pick(&["", "", "user@", "u:p@", "@", "%40@"]);
    let host = pick(&[
        "a.test",
        "EXAMPLE.com",
        "www.a.test.",
        "xn--fiqs8s.cn",
        "中国.cn",
        "ＡＢＣ.test",
        "127.0.0.1",
        "[::1]",
        "[fe80::1%25eth0]",
        "0x7f.1",
        "",
        "a..b",
        "-a.test",
        "a_b.test",
        "%41.test",
        "a.test%2f",
    ]);
    let port = pick(&["", "", ":80", ":443", ":0", ":65535", ":99999", ":", ":08"]);
    let segment = pick(&[
        "",
        ".",
        "..",
        "%2e",
        "%2E%2e",
        "a",
        "A",
        "%41",
        "%7e",
        "~",
        "%zz",
        "%",
        "a b",
        "中文",
        "%B0%A1",
        "%e4%b8%ad",
        "index.html",
        ";jsessionid=1",
        "%2F",
        "+",
        "%20",
    ]);
    let path = prop::collection::vec(segment, 0..6).prop_map(|s| s.join("/"));
    let pair = pick(&[
        "a=1",
        "b=2",
        "A=1",
        "utm_source=x",
        "fbclid=y",
        "gclid=",
        "q=%B0%A1",
        "q=%b0%a1",
        "q=中文",
        "q=a+b",
        "q=a%20b",
        "=",
        "&",
        "a",
        "a=",
        "=b",
        "kw=%E4%B8%AD",
        "x=%",
        "%26=%3D",
    ]);
    let query = prop_oneof![
        Just(String::new()),
        prop::collection::vec(pair, 0..5).prop_map(|p| format!("?{}", p.join("&"))),
    ];
    let fragment = pick(&["", "", "#", "#top", "#!/ajax", "#中"]);
    (scheme, user, host, port, path, query, fragment)
        .prop_map(|(s, u, h, p, path, q, f)| format!("{s}{u}{h}{p}/{path}{q}{f}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn canonical_urls_are_fixed_points(text in prop_oneof![4 => url_text(), 1 => "\\PC{0,60}"]) {
        if let Ok(c) = CanonicalUrl::parse(&text) {
            let again = CanonicalUrl::parse(c.as_str());
            prop_assert!(again.is_ok(), "{} -> {} no longer parses: {:?}", text, c.as_str(), again.err());
            let again = again.unwrap();
            prop_assert_eq!(again.as_str(), c.as_str(), "from {}", text);
            prop_assert_eq!(again.digest(), c.digest());
            prop_assert!(c.as_str().len() <= text.len() * 9 + 64);
        }
    }

    #[test]
    fn signing_arbitrary_text_is_deterministic(title in "\\PC{0,40}", text in "\\PC{0,400}") {
        let d = Deduper::new(MemoryStore::new(), DedupConfig::default()).unwrap();
        let doc = Document::new("http://a.test/", &title, &text);
        let (a, b) = (d.sign(&doc), d.sign(&doc));
        prop_assert_eq!(&a, &b);
        // A text with SimHash features is indexed: checked twice, the second
        // is a duplicate. (A text without features, "A", is not indexed.)
        let first = d.check_content(&doc).unwrap();
        let second = d.check_content(&doc).unwrap();
        if a.fingerprint.is_some() && a.sketch.is_some() {
            prop_assert!(!first.is_duplicate());
            prop_assert!(second.is_duplicate(), "{:?} then {:?}", first, second);
        }
    }
}
