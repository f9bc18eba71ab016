//! How well each [`SketchVersion`] estimates resemblance on real texts:
//! every text of at least 300 chars of a JSONL corpus (`"text"` fields)
//! against a copy with a pseudo-random 0-40% of it replaced by another
//! text's chars, the estimate against the exact Jaccard index of the two
//! texts' 5-grams of lower-cased letters and digits.
//!
//! ```text
//! cargo run --release -p simcrawl-dedup --example sketch_accuracy -- target/eval-set/docs.jsonl
//! ```
//!
//! Prints, per version and width, the mean and RMS error and how many
//! pairs between 0.6 and 0.9 land on the other side of 0.75 (the content
//! tier's line) than their exact resemblance.

use std::collections::HashSet;

use simcrawl_dedup::{Sketch, SketchVersion};

/// The 5-grams the sketch is made of, as a reference: letters and digits,
/// lower case (the sketch's own filter differs on a few symbols).
fn shingles(text: &str) -> HashSet<Vec<char>> {
    let kept: Vec<char> = text
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    if kept.len() < 5 {
        return std::iter::once(kept).collect();
    }
    kept.windows(5).map(<[char]>::to_vec).collect()
}

fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (shingles(a), shingles(b));
    a.intersection(&b).count() as f64 / a.union(&b).count().max(1) as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: sketch_accuracy CORPUS.jsonl (lines with a \"text\" field)")?;
    let corpus = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let mut texts = Vec::new();
    for (n, line) in corpus.lines().enumerate() {
        let doc: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{path}:{}: {e}", n + 1))?;
        if let Some(t) = doc.get("text").and_then(|t| t.as_str())
            && t.chars().count() >= 300
        {
            texts.push(t.to_owned());
        }
    }
    if texts.len() < 2 {
        return Err(format!("{path}: fewer than two texts of 300 chars").into());
    }
    let mut state = 0x1234_5678_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // One edited copy per text, the same for every version.
    let pairs: Vec<(usize, String, f64)> = (0..texts.len())
        .map(|i| {
            let chars: Vec<char> = texts[i].chars().collect();
            let cut = chars.len() * (next() % 40) as usize / 100;
            let start = next() as usize % (chars.len() - cut + 1);
            let other = &texts[(i + 7) % texts.len()];
            let edited: String = chars[..start]
                .iter()
                .copied()
                .chain(other.chars().take(cut))
                .chain(chars[start + cut..].iter().copied())
                .collect();
            let exact = jaccard(&texts[i], &edited);
            (i, edited, exact)
        })
        .collect();
    println!("{} pairs from {path}", pairs.len());
    println!("| version | bits | mean error | RMS error | pairs 0.6-0.9 on the wrong side of 0.75 |");
    println!("|---|---|---|---|---|");
    for version in [SketchVersion::V1, SketchVersion::V2] {
        for bits in [8, 16] {
            let sketch = |t: &str| Sketch::of_version(t, version).map(|s| s.narrow(bits));
            let (mut sum, mut squares, mut band, mut wrong) = (0.0, 0.0, 0, 0);
            for (i, edited, exact) in &pairs {
                let (Some(a), Some(b)) = (sketch(&texts[*i]), sketch(edited)) else {
                    continue;
                };
                let error = a.resemblance(&b) - exact;
                sum += error;
                squares += error * error;
                if (0.6..0.9).contains(exact) {
                    band += 1;
                    if (exact + error >= 0.75) != (*exact >= 0.75) {
                        wrong += 1;
                    }
                }
            }
            let n = pairs.len() as f64;
            println!(
                "| {version:?} | {bits} | {:+.4} | {:.4} | {wrong} of {band} |",
                sum / n,
                (squares / n).sqrt()
            );
        }
    }
    Ok(())
}
