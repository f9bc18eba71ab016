//! Cleans every `.html` file under a folder on one thread and prints one
//! digest of everything the cleaner returned (title, texts, links, hints)
//! and the time it took: two builds that print the same digest made the
//! same pages, and under `valgrind --tool=cachegrind` the instruction
//! counts compare builds on a shared machine (issue 37, target 2).
//!
//! Usage: `clean_dir DIR [PASSES]` (`cargo run --release -p simcrawl-clean
//! --example clean_dir -- target/mixed-docs`). With `RUST_LOG=debug` the
//! cleaner's debug lines go to stderr: among them the pages left to
//! html5ever's tokenizer or tree builder.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::Instant;

use simcrawl_clean::{Cleaner, Page};
use url::Url;

fn html_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for e in entries {
        let path = e.path();
        if e.file_type()?.is_dir() {
            html_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "html" || x == "htm") {
            out.push(path);
        }
    }
    Ok(())
}

/// Everything a crawl takes from a page, in one hash.
fn digest(page: &Page, h: &mut impl Hasher) {
    page.title.hash(h);
    page.raw_title.hash(h);
    page.text.hash(h);
    page.raw_text.hash(h);
    page.own_text.hash(h);
    page.own_link_chars.hash(h);
    page.framed.hash(h);
    page.visible_chars.hash(h);
    for l in &page.links {
        l.url.as_str().hash(h);
        l.nofollow.hash(h);
        l.text.hash(h);
    }
    page.canonical.as_ref().map(Url::as_str).hash(h);
    for f in &page.feeds {
        f.as_str().hash(h);
    }
    page.lang_hint.hash(h);
    page.meta_nofollow.hash(h);
    page.meta_noindex.hash(h);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: clean_dir DIR [PASSES]")?);
    let passes: usize = args.next().map(|p| p.parse()).transpose()?.unwrap_or(1);
    let mut files = Vec::new();
    html_files(&dir, &mut files)?;
    let pages: Vec<(Url, Vec<u8>)> = files
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(&dir).unwrap_or(p).to_string_lossy().into_owned();
            let url = Url::parse("http://docs.test/")?.join(&rel)?;
            Ok((url, std::fs::read(p)?))
        })
        .collect::<Result<_, Box<dyn std::error::Error>>>()?;
    let bytes: usize = pages.iter().map(|(_, b)| b.len()).sum();
    let cleaner = Cleaner::shared_default()?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let started = Instant::now();
    for _ in 0..passes {
        for (url, html) in &pages {
            match cleaner.parse(html, Some("text/html"), url) {
                Ok(page) => digest(&page, &mut hasher),
                Err(e) => e.to_string().hash(&mut hasher),
            }
        }
    }
    let took = started.elapsed().as_secs_f64();
    println!(
        "{} pages, {:.1} MB, {passes} passes: {:.3} s, {:.3} ms a page; digest {:016x}",
        pages.len(),
        bytes as f64 / 1e6,
        took,
        took * 1e3 / (pages.len() * passes).max(1) as f64,
        hasher.finish()
    );
    Ok(())
}
