//! Throughput of parse + extract + normalize, in bytes of HTML per second, on
//! generated Chinese news pages of 50 to 200 KB (part traditional, so t2s works).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use simcrawl_clean::{CleanConfig, Cleaner};
use url::Url;

const SIMP_A: &str = include_str!("../tests/fixtures/template_a_article1.html");
const SIMP_B: &str = include_str!("../tests/fixtures/template_a_article2.html");
const TRAD: &str = include_str!("../tests/fixtures/template_a_article1_trad.html");

/// The `<p>` paragraphs of a fixture's article body.
fn paragraphs(html: &str) -> Vec<&str> {
    let start = html.find("<div class=\"article-content\">").unwrap();
    let end = html[start..].find("</div>").unwrap() + start;
    html[start..end]
        .split("<p>")
        .filter_map(|p| p.split("</p>").next())
        .filter(|p| p.chars().count() > 20)
        .collect()
}

/// A news page of about `target` bytes: the fixture template (navigation, sidebars,
/// footer), a site script and style, and an article of mixed simplified and
/// traditional paragraphs, some with links, entities and full-width text.
fn page(target: usize) -> String {
    let mut pool = paragraphs(SIMP_A);
    pool.extend(paragraphs(SIMP_B));
    pool.extend(paragraphs(TRAD));
    let script = format!(
        "<script>{}</script><style>{}</style>",
        "var conf = { channel: 'news', ids: [1, 2, 3], track: function () { return 1; } };\n".repeat(40),
        ".article-content p { margin: 0 0 1em; text-indent: 2em; }\n".repeat(40),
    );
    let mut body = String::new();
    let base = SIMP_A.len() + script.len();
    let mut i = 0;
    while base + body.len() < target {
        let p = pool[i % pool.len()];
        match i % 5 {
            0 => body.push_str(&format!("<p>{p}</p>\n")),
            1 => body.push_str(&format!(
                "<p>　　{p}<a href=\"/news/{i}.html\">詳細</a>&nbsp;&mdash;</p>\n"
            )),
            2 => body.push_str(&format!("<p><strong>ＮＥＷＳ {i}</strong> {p}</p>\n")),
            3 => body.push_str(&format!("<div class=\"para\"><span>{p}</span><br>{p}</div>\n")),
            _ => body.push_str(&format!("<p>{p}<img src=\"/img/{i}.jpg\" alt=\"圖片\"></p>\n")),
        }
        i += 1;
    }
    SIMP_A
        .replacen("</head>", &format!("{script}</head>"), 1)
        .replacen(
            "</div>\n    <div class=\"share-bar\">",
            &format!("{body}</div>\n    <div class=\"share-bar\">"),
            1,
        )
}

fn bench(c: &mut Criterion) {
    let cleaner = Cleaner::new(CleanConfig::default()).unwrap();
    let url = Url::parse("https://news.example.com/2024/06/a.html").unwrap();
    let mut group = c.benchmark_group("clean");
    for kb in [50, 100, 200] {
        let html = page(kb * 1024);
        let bytes = html.as_bytes();
        // Sanity: the article is found and converted.
        let p = cleaner
            .parse(bytes, Some("text/html; charset=utf-8"), &url)
            .unwrap();
        assert!(
            p.text.len() > kb * 1024 / 4,
            "{kb} KB: text {} bytes",
            p.text.len()
        );
        assert!(!p.text.contains("記者"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("parse_{kb}kb"), |b| {
            b.iter(|| {
                cleaner
                    .parse(black_box(bytes), Some("text/html; charset=utf-8"), &url)
                    .unwrap()
            });
        });
    }
    // The same 100 KB page served as GBK with only a <meta> hint: adds decoding.
    let html = page(100 * 1024).replace("<meta charset=\"utf-8\">", "<meta charset=\"gbk\">");
    let (gbk, _, _) = encoding_rs::GBK.encode(&html);
    let gbk = gbk.into_owned();
    group.throughput(Throughput::Bytes(gbk.len() as u64));
    group.bench_function("parse_100kb_gbk", |b| {
        b.iter(|| cleaner.parse(black_box(&gbk), Some("text/html"), &url).unwrap());
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
