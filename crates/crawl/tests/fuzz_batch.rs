//! Fuzz harness (stable Rust) for the JSONL batch reader: `crawl dedup` over
//! files of random lines (valid documents, broken JSON, wrong types, raw
//! bytes and invalid UTF-8, CRLF, huge numbers, HTML with tag soup). It must
//! exit 0 and account for every non-blank line exactly once, in kept,
//! duplicates or errors, with an error naming the line.
//!
//! Long run: `SIMCRAWL_FUZZ_CASES=20000 cargo test --release -p simcrawl --test fuzz_batch`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[allow(dead_code)]
mod support;

use std::collections::BTreeSet;
use std::process::Command;

use proptest::prelude::*;
use support::{CRAWL, read_jsonl};

fn runs() -> u32 {
    let cases: u32 = std::env::var("SIMCRAWL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    (cases / 64).max(3)
}

fn line() -> impl Strategy<Value = Vec<u8>> {
    let word = "[a-z\u{4e00}-\u{4e40}]{1,8}";
    let text = prop::collection::vec(word, 0..40).prop_map(|w| w.join(" "));
    let url = prop_oneof![
        "http://a\\.test/[a-z0-9]{1,6}".prop_map(|s| s),
        Just("http://a.test/same".to_string()),
        Just("not a url".to_string()),
        Just(String::new()),
        "\\PC{0,20}",
    ];
    let doc = (url, prop::option::of("\\PC{0,20}"), text.clone()).prop_map(|(u, t, x)| {
        serde_json::json!({"url": u, "title": t, "text": x})
            .to_string()
            .into_bytes()
    });
    let html = (text, prop::sample::select(&["<p>", "</div>", "<script>", "&#0;", "<a href='?q=%B0'>", "<!--"][..]))
        .prop_map(|(x, tag)| {
            serde_json::json!({"url": "http://h.test/p", "html": format!("<html><body>{tag}{x}</body></html>")})
                .to_string()
                .into_bytes()
        });
    let broken = prop_oneof![
        Just(b"{\"url\": \"http://a.test/x\", \"text\": ".to_vec()),
        Just(b"{\"url\": 5, \"text\": \"x\"}".to_vec()),
        Just(b"{\"url\": \"http://a.test/y\", \"text\": [1,2]}".to_vec()),
        Just(b"{\"url\": \"http://a.test/z\"}".to_vec()),
        Just(b"[]".to_vec()),
        Just(b"null".to_vec()),
        Just(b"{\"url\": \"http://a.test/n\", \"text\": \"x\", \"line\": 1e999}".to_vec()),
        Just(b"{\"url\": \"http://a.test/\xff\xfe\", \"text\": \"\xb0\xa1\"}".to_vec()),
        Just(b"\xef\xbb\xbf{\"url\": \"http://a.test/bom\", \"text\": \"bom\"}".to_vec()),
        prop::collection::vec(any::<u8>(), 1..40).prop_map(|mut v| {
            v.retain(|b| *b != b'\n');
            if v.iter().all(|b| b.is_ascii_whitespace()) {
                v.push(b'x');
            }
            v
        }),
    ];
    prop_oneof![4 => doc, 1 => html, 2 => broken]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: runs(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_line_is_accounted_for(lines in prop::collection::vec(line(), 1..60), crlf in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("docs.jsonl");
        let mut body = Vec::new();
        for l in &lines {
            body.extend_from_slice(l);
            body.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        }
        std::fs::write(&input, &body).unwrap();
        let out = dir.path().join("out");
        let o = Command::new(CRAWL)
            .args(["dedup", "--input"])
            .arg(&input)
            .arg("--out")
            .arg(&out)
            .env("CRAWL_LOG", "warn")
            .output()
            .unwrap();
        prop_assert!(o.status.success(), "exit {:?}: {}", o.status, String::from_utf8_lossy(&o.stderr));
        let mut seen = BTreeSet::new();
        for name in ["kept.jsonl", "duplicates.jsonl", "errors.jsonl"] {
            for v in read_jsonl(&out.join(name)) {
                let n = v["line"].as_u64().unwrap();
                prop_assert!(seen.insert(n), "line {} written twice", n);
            }
        }
        let expected: BTreeSet<u64> = (1..=lines.len() as u64).collect();
        prop_assert_eq!(seen, expected);
    }
}
