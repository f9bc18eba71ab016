//! Fuzz harnesses on stable Rust: structure-aware random inputs (tag soup
//! with broken markup, stray bytes, legacy charsets, deep nesting) for
//! charset decoding and HTML cleaning. The properties: no panic, outputs
//! bounded by the configured caps, UTF-8 input decoded unchanged.
//!
//! CI runs a short pass; a long run is
//! `SIMCRAWL_FUZZ_CASES=200000 cargo test --release -p simcrawl-clean --test fuzz`
//! (or `bash scripts/fuzz.sh`). A failure prints the minimal input.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use simcrawl_clean::{CleanConfig, Cleaner};

fn cases() -> u32 {
    std::env::var("SIMCRAWL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

const TOKENS: &[&str] = &[
    "<html>",
    "</html>",
    "<head>",
    "</head>",
    "<body>",
    "</body>",
    "<div>",
    "</div>",
    "<p>",
    "</p>",
    "<span class='nav'>",
    "</span>",
    "<article>",
    "</article>",
    "<nav>",
    "</nav>",
    "<footer>",
    "<h1>",
    "</h1>",
    "<ul><li>",
    "</li></ul>",
    "<table><tr><td>",
    "</td></tr></table>",
    "<pre>",
    "<script>",
    "</script>",
    "<style>",
    "</style>",
    "<noscript>",
    "<template>",
    "<svg><text>",
    "<math>",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<!DOCTYPE html>",
    "<?xml version='1.0'?>",
    "<title>",
    "</title>",
    "<meta charset=gbk>",
    "<meta charset='big5'>",
    "<meta charset=utf-16>",
    "<meta http-equiv=Content-Type content='text/html; charset=shift_jis'>",
    "<meta name=robots content='noindex,nofollow'>",
    "<base href='http://b.test/dir/'>",
    "<base href='javascript:x'>",
    "<a href='/x?q=%B0%A1'>",
    "<a href=\"javascript:alert(1)\">",
    "<a href='//other.test/a b'>",
    "<a href='http://[::1'>",
    "<a href=\"?\u{4e2d}\u{6587}=1\">",
    "<a rel=nofollow href=/n>",
    "</a>",
    "<img src=x alt='\u{56fe}'>",
    "<br>",
    "<hr/>",
    "<input value='",
    "'>",
    "\"",
    "<",
    ">",
    "&",
    "&amp;",
    "&lt;",
    "&#x1F600;",
    "&#0;",
    "&#xD800;",
    "&#99999999;",
    "&nbsp;",
    "&notanentity;",
    "\u{feff}",
    "\0",
    "\r\n",
    "\t",
    "\u{3000}",
    "\u{ff21}\u{ff22}",
    "\u{9019}\u{662f}\u{7e41}\u{9ad4}",
    "\u{200b}",
    "\u{202e}",
    "e\u{301}",
    "\u{1f600}",
];

/// Tag soup: markup tokens, words (ASCII, CJK, full-width) and raw bytes
/// (GBK pairs, invalid UTF-8).
fn html_bytes() -> impl Strategy<Value = Vec<u8>> {
    let token = prop_oneof![
        8 => prop::sample::select(TOKENS).prop_map(|t| t.as_bytes().to_vec()),
        4 => "[a-z0-9 .,\u{4e00}-\u{4e80}\u{ff01}-\u{ff5e}]{0,30}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..12),
        1 => Just(vec![0xb0, 0xa1, 0xb0, 0xa2]),
    ];
    prop::collection::vec(token, 0..160).prop_map(|v| v.concat())
}

fn content_type() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("text/html".to_string())),
        Just(Some("text/html; charset=utf-8".to_string())),
        Just(Some("text/html; charset=gb2312".to_string())),
        Just(Some("text/html; charset=\"big5\"".to_string())),
        Just(Some("text/html; charset=x-unknown".to_string())),
        Just(Some("text/html; charset=utf-16le".to_string())),
        "[ -~]{0,40}".prop_map(Some),
    ]
}

/// One cleaner for every case: building the OpenCC converter is the slow
/// part, not what is under test.
fn cleaner() -> &'static Cleaner {
    static CLEANER: std::sync::OnceLock<Cleaner> = std::sync::OnceLock::new();
    CLEANER.get_or_init(|| {
        Cleaner::new(CleanConfig {
            max_text_bytes: 4096,
            max_links: 16,
            ..CleanConfig::default()
        })
        .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn decoding_never_panics_and_keeps_utf8(bytes in prop::collection::vec(any::<u8>(), 0..2048), ct in content_type()) {
        let d = simcrawl_clean::decode::decode(&bytes, ct.as_deref(), None);
        // No encoding turns one input byte into more than 3 bytes of UTF-8.
        prop_assert!(d.text.len() <= bytes.len() * 3 + 3);
        if d.encoding == encoding_rs::UTF_8 && !d.had_errors {
            let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
            prop_assert_eq!(d.text.as_bytes(), body);
        }
    }

    #[test]
    fn cleaning_tag_soup_never_panics_and_stays_within_caps(html in html_bytes(), ct in content_type()) {
        let cleaner = cleaner();
        let url = url::Url::parse("http://a.test/dir/page.html").unwrap();
        if let Ok(page) = cleaner.parse(&html, ct.as_deref(), &url) {
            prop_assert!(page.text.len() <= 4096, "text of {} bytes", page.text.len());
            prop_assert!(page.links.len() <= 16, "{} links", page.links.len());
            for l in &page.links {
                prop_assert!(matches!(l.url.scheme(), "http" | "https"), "link {}", l.url);
            }
        }
    }

}

proptest! {
    // Each case parses thousands of nested elements (the parser's scope
    // checks make it quadratic in depth): a few cases per run.
    #![proptest_config(ProptestConfig { cases: (cases() / 32).max(4), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn deep_nesting_is_handled_without_recursion(depth in 1usize..8_000, tag in prop::sample::select(&["div", "span", "b", "table", "ul", "p"][..])) {
        let mut html = String::with_capacity(depth * 12);
        for _ in 0..depth {
            html.push_str(&format!("<{tag}>"));
        }
        html.push_str("deep text 深处");
        let cleaner = cleaner();
        let url = url::Url::parse("http://a.test/").unwrap();
        let page = cleaner.parse(html.as_bytes(), Some("text/html; charset=utf-8"), &url);
        let page = page.unwrap();
        // Markup nested deeper than 512 open elements is flattened before
        // parsing (the parser is quadratic in depth): the text stays.
        prop_assert!(page.text.contains("deep text 深处"), "depth {}: {:?}", depth, page.text);
    }
}
