//! A text's blocks and their digests, taken once per text.
//!
//! A block's digest is FNV-1a over its bytes: one multiply per byte, each
//! waiting for the one before it, so a page's digests cost about four
//! cycles a byte however fast the core is, and they were taken up to three
//! times a page (its main text and its own text stripped, its own text
//! observed; issue 37). [`TextBlocks`] takes them once, four blocks at a
//! time (four independent chains keep the multiplier busy), and outside
//! any lock: a learner shared between threads then only looks them up
//! ([`crate::TemplateLearner::template_of`]), so its writer waits less for
//! its readers.

use std::borrow::Cow;
use std::collections::HashSet;

use super::{DigestState, PageBlocks};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The digest of one block: FNV-1a 64 over its bytes, then MurmurHash3's finalizer.
/// Fixed forever, because the state is persisted.
pub(super) fn digest(block: &str) -> u64 {
    finish(fnv(FNV_OFFSET, block.as_bytes()))
}

#[inline]
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(FNV_PRIME);
    }
    h
}

#[inline]
fn finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The blocks of a text: its non-empty lines, trimmed.
pub(super) fn blocks(text: &str) -> impl Iterator<Item = &str> {
    let mut from = 0;
    let mut ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    std::iter::from_fn(move || {
        let end = ends.next()?;
        let line = text.get(from..end).unwrap_or_default();
        from = end + 1;
        Some(trimmed(line))
    })
    .filter(|l| !l.is_empty())
}

/// `line` trimmed as [`str::trim`] trims it. A normalized text's lines
/// mostly start and end with a byte of ASCII that is no space, which
/// needs no trimming: `lines` and `trim`, which decode chars from both
/// ends of every line, were 1.3% of a crawl's instructions on the zh/en
/// documentation mix (issue 37).
#[inline]
fn trimmed(line: &str) -> &str {
    match (line.as_bytes().first(), line.as_bytes().last()) {
        (Some(&a), Some(&z)) if a.is_ascii_graphic() && z.is_ascii_graphic() => line,
        _ => line.trim(),
    }
}

/// [`digest`] of each of `blocks`, in order. Four lanes hash four blocks
/// at once, each over the bytes all four still have; a lane whose block
/// ends takes the next one, so a long paragraph among short list items
/// does not leave three lanes idle. Once no block is left to hand out,
/// the blocks still in lanes finish one at a time, as do all the blocks
/// of a text with fewer than four.
fn digests(blocks: &[&str]) -> Vec<u64> {
    const LANES: usize = 4;
    let mut out = crate::zeros::zeros::<u64>(blocks.len());
    if blocks.len() < LANES {
        for (o, b) in out.iter_mut().zip(blocks) {
            *o = digest(b);
        }
        return out;
    }
    // Each lane: the block it hashes, its bytes not hashed yet, its state.
    let mut lane: [(usize, &[u8], u64); LANES] =
        std::array::from_fn(|i| (i, blocks[i].as_bytes(), FNV_OFFSET));
    let mut next = LANES;
    loop {
        let n = lane.iter().map(|l| l.1.len()).min().unwrap_or(0);
        let (mut h0, mut h1, mut h2, mut h3) = (lane[0].2, lane[1].2, lane[2].2, lane[3].2);
        let (b0, b1, b2, b3) = (&lane[0].1[..n], &lane[1].1[..n], &lane[2].1[..n], &lane[3].1[..n]);
        for (((&x0, &x1), &x2), &x3) in b0.iter().zip(b1).zip(b2).zip(b3) {
            h0 = (h0 ^ u64::from(x0)).wrapping_mul(FNV_PRIME);
            h1 = (h1 ^ u64::from(x1)).wrapping_mul(FNV_PRIME);
            h2 = (h2 ^ u64::from(x2)).wrapping_mul(FNV_PRIME);
            h3 = (h3 ^ u64::from(x3)).wrapping_mul(FNV_PRIME);
        }
        (lane[0].2, lane[1].2, lane[2].2, lane[3].2) = (h0, h1, h2, h3);
        for l in &mut lane {
            l.1 = &l.1[n..];
        }
        for k in 0..LANES {
            let (i, rest, h) = lane[k];
            if !rest.is_empty() {
                continue;
            }
            if let Some(o) = out.get_mut(i) {
                *o = finish(h);
            }
            let Some(b) = blocks.get(next) else {
                // No block left to hand out: the other lanes finish alone.
                for (j, &(i, rest, h)) in lane.iter().enumerate() {
                    if j != k
                        && let Some(o) = out.get_mut(i)
                    {
                        *o = finish(fnv(h, rest));
                    }
                }
                return out;
            };
            lane[k] = (next, b.as_bytes(), FNV_OFFSET);
            next += 1;
        }
    }
}

/// A text's blocks (its non-empty lines, trimmed) with their digests,
/// taken once: what a learner strips a text by
/// ([`crate::TemplateLearner::template_of`]) and what it counts
/// ([`TextBlocks::page_blocks`]).
///
/// ```
/// use simcrawl_clean::{TemplateConfig, TemplateLearner, TextBlocks};
/// let mut l = TemplateLearner::new(TemplateConfig { min_pages: 2, ..TemplateConfig::default() })?;
/// for page in ["menu | home\nabout a", "menu | home\nabout b"] {
///     l.observe_blocks("h", &TextBlocks::of(page).page_blocks());
/// }
/// let page = TextBlocks::of("menu | home\n  about c\n");
/// let template = l.template_of("h", &page).expect("the menu is template");
/// assert_eq!(page.without(&template), "about c");
/// assert_eq!(l.own_lines("h", "menu | home\n  about c\n").as_deref(), Some("about c"));
/// # Ok::<(), simcrawl_clean::CleanError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct TextBlocks<'t> {
    text: &'t str,
    blocks: Vec<&'t str>,
    digests: Vec<u64>,
}

/// Which blocks of a [`TextBlocks`] are a host's template, one flag each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateBlocks(pub(super) Vec<bool>);

impl<'t> TextBlocks<'t> {
    /// The blocks of `text` and their digests.
    #[must_use]
    pub fn of(text: &'t str) -> TextBlocks<'t> {
        let mut found: Vec<&str> =
            Vec::with_capacity(memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1);
        found.extend(blocks(text));
        let digests = digests(&found);
        TextBlocks {
            text,
            blocks: found,
            digests,
        }
    }

    /// The blocks of `text`: `known` when it holds that very string's (the
    /// same slice, not an equal copy), else digested now. A page's own
    /// text is often the text it is judged on, and its blocks, digested
    /// for the learner, then serve stripping it too.
    ///
    /// ```
    /// use simcrawl_clean::TextBlocks;
    /// let page = String::from("menu\nabout a");
    /// let known = TextBlocks::of(&page);
    /// assert!(matches!(TextBlocks::of_known(&page, Some(&known)), std::borrow::Cow::Borrowed(_)));
    /// let copy = page.clone();
    /// assert!(matches!(TextBlocks::of_known(&copy, Some(&known)), std::borrow::Cow::Owned(_)));
    /// ```
    #[must_use]
    pub fn of_known<'k>(text: &'t str, known: Option<&'k TextBlocks<'t>>) -> Cow<'k, TextBlocks<'t>> {
        match known {
            Some(k) if std::ptr::eq(k.text, text) => Cow::Borrowed(k),
            _ => Cow::Owned(TextBlocks::of(text)),
        }
    }

    /// The digests, in the blocks' order.
    pub(super) fn digests(&self) -> &[u64] {
        &self.digests
    }

    /// The page's distinct blocks as [`crate::TemplateLearner::observe_blocks`]
    /// counts them: [`PageBlocks::of`] the text, without digesting it again.
    #[must_use]
    pub fn page_blocks(&self) -> PageBlocks {
        let mut seen: HashSet<u64, DigestState> = HashSet::default();
        PageBlocks(self.digests.iter().copied().filter(|d| seen.insert(*d)).collect())
    }

    /// The blocks that are not `template`, one per line.
    #[must_use]
    pub fn without(&self, template: &TemplateBlocks) -> String {
        let mut out = String::with_capacity(self.text.len());
        for (b, _) in self
            .blocks
            .iter()
            .zip(&template.0)
            .filter(|&(_, &is_template)| !is_template)
        {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(b);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn digests_four_at_a_time_are_each_blocks_own(
            // Blocks of every length from 0 to 40 bytes and a few long
            // ones, in orders that make lanes finish together, apart and
            // last.
            owned in proptest::collection::vec(
                proptest::prop_oneof![9 => "[a-z]{0,40}", 1 => "[a-z]{200,3200}"],
                0..40,
            )
        ) {
            let blocks: Vec<&str> = owned.iter().map(String::as_str).collect();
            let one_at_a_time: Vec<u64> = blocks.iter().map(|b| digest(b)).collect();
            proptest::prop_assert_eq!(digests(&blocks), one_at_a_time, "{} blocks", blocks.len());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The blocks are the lines `str::lines` gives, trimmed, the empty
        /// ones left out, whatever the line ends and spaces around them.
        #[test]
        fn blocks_are_the_trimmed_lines(
            pieces in proptest::collection::vec(
                proptest::sample::select(&["a", "中文", " ", "\n", "\r", "\r\n", "\t", "\u{3000}", "\u{a0}", "é", "-", "\u{85}"][..]),
                0..40,
            )
        ) {
            let text = pieces.concat();
            let by_lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            proptest::prop_assert_eq!(blocks(&text).collect::<Vec<_>>(), by_lines.clone(), "{:?}", text);
            proptest::prop_assert_eq!(TextBlocks::of(&text).blocks, by_lines, "{:?}", text);
        }
    }

    #[test]
    fn page_blocks_from_text_blocks_equal_page_blocks_of_the_text() {
        let text = "首页 | 关于我们\n正文第一段。\n\n  首页 | 关于我们  \nb\nc\nd\ne\nb\n";
        assert_eq!(TextBlocks::of(text).page_blocks(), PageBlocks::of(text));
        assert_eq!(TextBlocks::of(text).page_blocks().len(), 6);
        assert!(TextBlocks::of(" \n\n").page_blocks().is_empty());
    }
}
