//! Debug aid: prints a page's element outline with text sizes, to see why extraction
//! picks a block. Usage: `outline FILE.html[.gz] [MIN_CHARS]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;

use scraper::{ElementRef, Html};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: outline FILE [MIN_CHARS]");
    let min: usize = args.next().map_or(200, |m| m.parse().unwrap());
    let raw = std::fs::read(&path).unwrap();
    let mut html = Vec::new();
    if path.ends_with(".gz") {
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut html)
            .unwrap();
    } else {
        html = raw;
    }
    let doc = Html::parse_document(&String::from_utf8_lossy(&html));
    let mut stack = vec![(doc.root_element(), 0usize)];
    while let Some((el, depth)) = stack.pop() {
        let name = el.value().name();
        if matches!(name, "script" | "style" | "noscript" | "svg" | "template") {
            continue;
        }
        let text: String = el.text().collect();
        let chars = text.chars().filter(|c| !c.is_whitespace()).count();
        if chars < min {
            continue;
        }
        let link: usize = el
            .select(&scraper::Selector::parse("a").unwrap())
            .map(|a| {
                a.text()
                    .collect::<String>()
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .count()
            })
            .sum();
        let attrs: String = el
            .value()
            .attrs()
            .filter(|(k, _)| {
                matches!(
                    *k,
                    "class" | "id" | "itemprop" | "role" | "hidden" | "style" | "aria-hidden"
                )
            })
            .map(|(k, v)| format!(" {k}=\"{}\"", v.chars().take(60).collect::<String>()))
            .collect();
        let snippet: String = text
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(70)
            .collect();
        println!(
            "{}<{name}{attrs}> {chars} link={link} | {snippet}",
            "  ".repeat(depth)
        );
        let kids: Vec<ElementRef<'_>> = el.children().filter_map(ElementRef::wrap).collect();
        for k in kids.into_iter().rev() {
            stack.push((k, depth + 1));
        }
    }
}
