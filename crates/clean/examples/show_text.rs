//! Prints what the cleaner makes of HTML files: the title, the main text
//! and the own text (what a page is judged on, docs/EVAL.md), with their
//! sizes, to see why a page got the basis it got.
//!
//! Usage: `show_text FILE...` (`cargo run -p simcrawl-clean --example show_text`).

use simcrawl_clean::Cleaner;
use url::Url;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cleaner = Cleaner::shared_default()?;
    for path in std::env::args().skip(1) {
        let html = std::fs::read(&path)?;
        let url = Url::parse("http://example.test/page.html")?;
        let page = cleaner.parse(&html, Some("text/html"), &url)?;
        let count = |s: &str| s.chars().filter(|c| c.is_alphanumeric()).count();
        println!("== {path}\ntitle: {}", page.title);
        println!(
            "-- main ({} letters and digits)\n{}",
            count(&page.text),
            page.text
        );
        println!(
            "-- own ({} letters and digits, {} link chars)\n{}",
            count(&page.own_text),
            page.own_link_chars,
            page.own_text
        );
    }
    Ok(())
}
