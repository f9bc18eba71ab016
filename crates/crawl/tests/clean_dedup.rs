//! The clean and dedup crates together: what the content tier sees of real
//! page templates.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use simcrawl_dedup::{FeatureConfig, Features, Fingerprint};
use url::Url;

fn fingerprint(name: &str) -> Fingerprint {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clean/tests/fixtures")
        .join(name);
    let bytes = std::fs::read(&path).unwrap();
    let page =
        simcrawl_clean::Page::parse(&bytes, None, &Url::parse("http://fixture.example/a").unwrap()).unwrap();
    assert!(
        page.text.chars().count() > 300,
        "{name}: too little text extracted: {:?}",
        page.text
    );
    Features::new(FeatureConfig::default())
        .unwrap()
        .fingerprint(&page.text)
        .unwrap()
}

#[test]
fn one_template_two_articles_are_far_apart() {
    let d = fingerprint("template_a_article1.html").distance(fingerprint("template_a_article2.html"));
    assert!(d > 12, "same template, different articles: distance {d}");
}

#[test]
fn one_article_in_two_templates_is_a_near_duplicate() {
    let d = fingerprint("template_a_article1.html").distance(fingerprint("template_b_article1.html"));
    assert!(d <= 3, "same article, different templates: distance {d}");
}

#[test]
fn traditional_copy_is_a_near_duplicate() {
    let d = fingerprint("template_a_article1.html").distance(fingerprint("template_a_article1_trad.html"));
    assert!(d <= 3, "traditional copy: distance {d}");
}
