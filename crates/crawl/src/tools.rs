//! `crawl fingerprint` and `crawl distance`: look at what the content tier sees.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use simcrawl_dedup::Features;

use crate::config::Config;

/// What the files given to `crawl fingerprint` and `crawl distance` hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Plain text, normalized as the cleaner normalizes page text.
    Text,
    /// HTML pages, cleaned as the crawler cleans them (`--html`).
    Html,
}

impl Input {
    /// From the `--html` flag.
    pub fn from_html_flag(html: bool) -> Input {
        if html { Input::Html } else { Input::Text }
    }
}

/// The text the content tier would fingerprint for a file's bytes.
fn text_of(cleaner: &simcrawl_clean::Cleaner, bytes: &[u8], input: Input, name: &str) -> Result<String> {
    Ok(title_and_text(cleaner, bytes, input, name)?.1)
}

/// The title (HTML only) and text the tiers would see for a file's bytes.
fn title_and_text(
    cleaner: &simcrawl_clean::Cleaner,
    bytes: &[u8],
    input: Input,
    name: &str,
) -> Result<(String, String)> {
    if input == Input::Html {
        let base = url::Url::parse("http://localhost/").context("base URL")?;
        let page = cleaner
            .parse(bytes, None, &base)
            .with_context(|| format!("cannot clean {name} as HTML"))?;
        Ok((page.title, page.text))
    } else {
        Ok((
            String::new(),
            cleaner.normalize_text(&String::from_utf8_lossy(bytes)),
        ))
    }
}

fn read_input(path: Option<&Path>) -> Result<(String, Vec<u8>)> {
    match path {
        None => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .context("cannot read standard input")?;
            Ok(("-".to_string(), buf))
        }
        Some(p) => Ok((
            p.display().to_string(),
            std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?,
        )),
    }
}

/// Prints `<hex>  <name>` per file (16 digits, 32 at `dedup.bits = 128`);
/// returns how many had no features.
pub fn fingerprint(cfg: &Config, files: &[PathBuf], input: Input) -> Result<usize> {
    anyhow::ensure!(
        matches!(cfg.dedup.bits, 64 | 128),
        "dedup.bits = {}: must be 64 or 128",
        cfg.dedup.bits
    );
    let cleaner = simcrawl_clean::Cleaner::new(cfg.clean.clone())?;
    let features = Features::new(cfg.dedup.features.clone())?;
    let sources: Vec<Option<&Path>> = if files.is_empty() {
        vec![None]
    } else {
        files.iter().map(|p| Some(p.as_path())).collect()
    };
    let mut empty = 0;
    let mut out = std::io::stdout().lock();
    for source in sources {
        let (name, bytes) = read_input(source)?;
        let text = text_of(&cleaner, &bytes, input, &name)?;
        match features.fingerprint_counted_bits(&text, cfg.dedup.bits).0 {
            Some(fp) => writeln!(out, "{fp}  {name}")?,
            None => {
                empty += 1;
                writeln!(out, "{}  {name}", "-".repeat(cfg.dedup.bits as usize / 4))?;
                eprintln!("{name}: no features (empty text, or only stop words and numbers)");
            }
        }
    }
    Ok(empty)
}

/// Prints the distance of two files, their resemblance (estimated and
/// exact), the verdict each tier would give B after A was kept, and the
/// features that weigh most in each.
pub fn distance(cfg: &Config, a: &Path, b: &Path, input: Input, top: usize) -> Result<u32> {
    let cleaner = simcrawl_clean::Cleaner::new(cfg.clean.clone())?;
    let deduper = simcrawl_dedup::Deduper::new(simcrawl_dedup::MemoryStore::new(), cfg.dedup.clone())?;
    let features = deduper.features();
    let mut fps = Vec::new();
    let mut docs = Vec::new();
    for p in [a, b] {
        let (name, bytes) = read_input(Some(p))?;
        let (title, text) = title_and_text(&cleaner, &bytes, input, &name)?;
        let fp = deduper
            .fingerprint(&text)
            .with_context(|| format!("{name}: no features (empty text, or only stop words and numbers)"))?;
        fps.push((name.clone(), fp, features.features(&text)));
        docs.push((name, title, text));
    }
    let d = fps[0].1.distance(fps[1].1);
    let k = cfg.dedup.max_distance;
    let c = deduper.compare(
        &simcrawl_dedup::Document::new(&docs[0].0, &docs[0].1, &docs[0].2),
        &simcrawl_dedup::Document::new(&docs[1].0, &docs[1].1, &docs[1].2),
    );
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "distance {d} ({})",
        if d <= k {
            format!("SimHash candidates: <= {k}")
        } else {
            format!("not SimHash candidates: > {k}")
        }
    )?;
    let dc = &cfg.dedup;
    writeln!(
        out,
        "resemblance {} estimated from the sketches, {:.3} exact (character 5-grams)",
        c.similarity.map_or("-".to_string(), |s| format!("{s:.3}")),
        c.exact_similarity
    )?;
    let verdict = |dup: bool| if dup { "duplicate (B dropped)" } else { "kept" };
    writeln!(
        out,
        "title tier ({:?}, min {}): {}, {}",
        dc.title_policy,
        dc.title_min_similarity,
        if c.same_title {
            "same title"
        } else {
            "different titles"
        },
        verdict(c.title_duplicate)
    )?;
    writeln!(
        out,
        "content tier (min {}): candidate by {}, {}",
        dc.min_similarity,
        c.found_by,
        verdict(c.content_duplicate)
    )?;
    for (name, fp, feats) in &fps {
        writeln!(out, "\n{fp}  {name}  ({} features)", feats.len())?;
        for f in feats.iter().take(top) {
            writeln!(out, "  {:>10.3}  {}", f.weight, f.token)?;
        }
    }
    Ok(d)
}
