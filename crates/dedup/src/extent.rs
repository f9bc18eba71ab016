//! A page's extent: how much it shows, in the units resemblance counts
//! (issue 35).
//!
//! A crawler judges a page on the text that makes it what it is: its main
//! text without its host's template, when that is most of what it says.
//! Two pages of one host can then be alike by that text and not as a
//! reader sees them. Doxygen's list of the functions whose names start
//! with `o` is the list of all members starting with `o` without four
//! entries and without the sentence that introduces it, which extraction
//! leaves outside the main text: 0.82 alike by main text, 0.58 by
//! everything shown. The full list shows 284 distinct 5-grams, the
//! functions 177: no two texts of those sizes can be more than 177/284 =
//! 0.62 alike, so neither is the other's copy, and dropping one loses what
//! only it shows.
//!
//! So a checked page carries its [`Extent`], the distinct shingles of
//! everything it shows outside what it declares template
//! ([`crate::sketch::shingle_count`]), and a page of the same host is not
//! a copy of one whose extent is too far from its own
//! ([`Extent::resemblance_at_most`] under [`PAGE_MIN_SIMILARITY`]). The
//! rule is sound whatever text a page is judged on: the resemblance of two
//! sets is at most the ratio of their sizes. Across hosts it does not
//! apply: a story inside another site's frame shows more by nature, and its
//! article is what counts ([`crate::article`]).
//!
//! Sizes alone let two pages of one size through. A page judged on a
//! block extraction picks can share that block with a page that says
//! something else around it: an English manual page's character table
//! and a Japanese translation's (0.97 alike by the table, 0.53 by
//! everything shown), a `Peekable` and a `Drain` page of one rustdoc
//! whose trait listings match. So the extent also carries an
//! [`Outline`] of what the page shows, a 64-byte MinHash of the same
//! shingles taken in the pass that counts them, and a page of the same
//! host is not a copy of one whose outline is less than
//! [`PAGE_MIN_SIMILARITY`] alike with its own: the rule the sizes bound,
//! estimated. Across hosts neither applies.

use crate::sketch::OUTLINE_BINS;

/// The resemblance two pages of one host must be able to reach on
/// everything they show for one to be the other's copy: halfway between
/// the lines the gates label by (distinct below 0.5, near-duplicate from
/// 0.8). Two pages that cannot reach it are not near-duplicates however
/// alike the texts they are judged on; two that are near-duplicates are
/// at least 0.8 alike, so their sizes are never this far apart.
pub const PAGE_MIN_SIMILARITY: f64 = 0.65;

/// The estimate of [`Outline::resemblance`] two pages of one host must
/// reach for one to be the other's copy: [`PAGE_MIN_SIMILARITY`] plus two
/// standard errors of the outline there (512 bins of one bit:
/// `sqrt((1 - 0.65²) / 512)`, 0.034). It was set at one error of the
/// outline of 64 bins of 8 bits outlines had before 2026-12-03 (0.06): at
/// the line itself a pair truly 0.60-0.64 alike passed about one time in
/// three: sibling references on one host (cppreference's `deque::rend`
/// for `array::rend`, `map::find` for `set::find`, 0.63-0.64 as shown, the
/// one description each container repeats) were dropped by a held-out
/// set's crawl and `crawl dedup` alike (issue 35). A copy, 0.8 or more
/// alike, is now 3.4 errors over it. One path on two hosts keeps the line
/// itself: a news story republished at the same path by two sites was lost
/// when it was raised there (docs/EVAL.md, "Issue 35, eleventh round").
///
/// ```
/// use simcrawl_dedup::{PAGE_MIN_SIMILARITY, SHOWN_MIN_ON_ONE_HOST};
/// let p = PAGE_MIN_SIMILARITY;
/// let error = ((1.0 - p * p) / 512.0).sqrt(); // 512 bins of one bit
/// assert!((SHOWN_MIN_ON_ONE_HOST - (p + 2.0 * error)).abs() < 0.01);
/// ```
pub const SHOWN_MIN_ON_ONE_HOST: f64 = 0.71;

/// How much a page shows: the distinct 5-grams of its letters and digits
/// outside the parts it declares template (navigation, header, footer).
///
/// ```
/// use simcrawl_dedup::Extent;
/// // The list of all members, and the list of its functions.
/// let members = Extent { shingles: 284, outline: None };
/// let functions = Extent { shingles: 177, outline: None };
/// assert!(functions.resemblance_at_most(members) < 0.65);
/// // A page and its copy with a longer footer note.
/// let (page, copy) = (Extent { shingles: 1000, outline: None }, Extent { shingles: 1090, outline: None });
/// assert!(page.resemblance_at_most(copy) > 0.9);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Extent {
    /// Distinct 5-grams of everything the page shows outside declared
    /// template.
    pub shingles: u32,
    /// A MinHash of those 5-grams (`None`: a record written before
    /// outlines, or a page that shows no letter or digit).
    #[cfg_attr(feature = "serde", serde(default))]
    pub outline: Option<Outline>,
}

/// What a page shows, coarsely: a one-permutation MinHash of its 5-grams
/// in 512 bins of one bit (64 bytes in a record; the [`crate::Sketch`] a
/// page is judged by has 128 bins of 8 or 16 bits). It only has to tell
/// pages that are 0.8 or more alike from pages under 0.65: its standard
/// error is 0.027 at 0.8 and 0.034 at 0.65.
///
/// Outlines written before 2026-12-03 hold 64 bins of 8 bits in the same
/// 64 bytes, an error of 0.06 at 0.65: a man page rendered by mandoc and
/// by man2html (0.63 alike as shown) was estimated 0.67 and dropped
/// (docs/EVAL.md, "Issue 35, fifteenth round"). Records keep such outlines
/// and say which layout they hold; two outlines of different layouts do not
/// compare ([`Outline::resemblance`] is `None`), so the rules they decide
/// wait until both pages are checked again.
///
/// ```
/// use simcrawl_dedup::Extent;
/// let story = "The council approved the new budget on Tuesday after a long debate about schools, roads \
///     and the harbour. Teachers will get four more classrooms, the ring road gets new lights, and the \
///     old quay is to be rebuilt before winter. The mayor said the vote was the closest in ten years.";
/// let other = "Heavy rain closed the mountain pass overnight and the ferry to the islands was cancelled \
///     until Friday. Farmers in the valley moved their herds uphill, and the school bus ran a shorter loop. \
///     The weather office expects two more days of storms, with gusts strong enough to keep boats in port.";
/// let page = Extent::of(story);
/// let copy = Extent::of(&format!("{story} Share this story."));
/// let apart = Extent::of(&format!("{story} {other}"));
/// let alike = |a: Extent, b: Extent| a.outline_resemblance(&b).unwrap();
/// assert!(alike(page, copy) > 0.8);
/// assert!(alike(page, apart) < 0.65);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Outline {
    bins: [u8; OUTLINE_BYTES],
    layout: Layout,
}

/// How an outline's 64 bytes hold its bins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// 512 bins of one bit, eight to a byte (since 2026-12-03).
    Bits,
    /// 64 bins of one byte (records written before).
    Bytes,
}

/// Bytes of an [`Outline`] in a record.
pub const OUTLINE_BYTES: usize = OUTLINE_BINS / 8;

impl std::fmt::Debug for Outline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Outline({:?}, ", self.layout)?;
        for b in &self.bins[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..)")
    }
}

impl Outline {
    /// The estimated resemblance (Jaccard index of 5-gram sets) of the two
    /// pages: the share of bins that agree, less the share that agree by
    /// chance (one in two for bits, one in 256 for bytes); `None` when one
    /// outline was written in the layout before 2026-12-03 and the other
    /// was not.
    ///
    /// ```
    /// use simcrawl_dedup::{Extent, Outline};
    /// let page = Extent::of("a table of character codes and a paragraph about them").outline.unwrap();
    /// assert_eq!(page.resemblance(&page), Some(1.0));
    /// let old = Outline::from_bytes_before_bits(page.to_bytes());
    /// assert_eq!(page.resemblance(&old), None);
    /// ```
    #[must_use]
    pub fn resemblance(&self, other: &Outline) -> Option<f64> {
        if self.layout != other.layout {
            return None;
        }
        let pairs = self.bins.iter().zip(&other.bins);
        Some(match self.layout {
            Layout::Bits => {
                let differ: u32 = pairs.map(|(a, b)| (a ^ b).count_ones()).sum();
                crate::sketch::matching_bins_resemblance(OUTLINE_BINS - differ as usize, OUTLINE_BINS, 1)
            }
            Layout::Bytes => {
                let same = pairs.filter(|(a, b)| a == b).count();
                crate::sketch::matching_bins_resemblance(same, OUTLINE_BYTES, 8)
            }
        })
    }

    /// Its bytes in a record, read back by [`Outline::from_bytes`] (or
    /// [`Outline::from_bytes_before_bits`] when [`Outline::is_before_bits`]).
    #[must_use]
    pub fn to_bytes(&self) -> [u8; OUTLINE_BYTES] {
        self.bins
    }

    /// The outline of [`Outline::to_bytes`].
    #[must_use]
    pub fn from_bytes(bins: [u8; OUTLINE_BYTES]) -> Outline {
        Outline {
            bins,
            layout: Layout::Bits,
        }
    }

    /// An outline written before 2026-12-03, of 64 bins of 8 bits: it
    /// compares only with outlines of its own layout.
    #[must_use]
    pub fn from_bytes_before_bits(bins: [u8; OUTLINE_BYTES]) -> Outline {
        Outline {
            bins,
            layout: Layout::Bytes,
        }
    }

    /// Whether it holds the layout before 2026-12-03 (64 bins of 8 bits).
    #[must_use]
    pub fn is_before_bits(&self) -> bool {
        self.layout == Layout::Bytes
    }
}

impl Extent {
    /// The extent of a page that shows `text` outside declared template.
    ///
    /// ```
    /// use simcrawl_dedup::Extent;
    /// assert_eq!(Extent::of("abcdefg").shingles, 3);
    /// assert!(Extent::of("，。").outline.is_none());
    /// ```
    #[must_use]
    pub fn of(text: &str) -> Extent {
        let (shingles, outline) = crate::sketch::count_and_outline(text);
        Extent {
            shingles,
            outline: outline.map(Outline::from_bytes),
        }
    }

    /// How alike the two pages' outlines say they are, when both have one
    /// of one layout.
    #[must_use]
    pub fn outline_resemblance(&self, other: &Extent) -> Option<f64> {
        self.outline?.resemblance(&other.outline?)
    }

    /// The largest resemblance (Jaccard index of 5-gram sets) two pages
    /// of these extents can have: the smaller over the larger.
    #[must_use]
    pub fn resemblance_at_most(self, other: Extent) -> f64 {
        let (small, large) = if self.shingles <= other.shingles {
            (self.shingles, other.shingles)
        } else {
            (other.shingles, self.shingles)
        };
        if large == 0 {
            1.0
        } else {
            f64::from(small) / f64::from(large)
        }
    }

    /// How many of this page's shingles the other page lacks, estimated
    /// from how alike the two are (`resemblance`, a Jaccard index of what
    /// they show): of `a` and `b` shingles, `r (a + b) / (1 + r)` are
    /// shared.
    ///
    /// ```
    /// use simcrawl_dedup::Extent;
    /// let story = Extent { shingles: 7000, outline: None };
    /// let front = Extent { shingles: 6600, outline: None };
    /// // 0.88 alike: the story page shows some 640 shingles of its own.
    /// let own = story.own_beyond(front, 0.88);
    /// assert!((600.0..700.0).contains(&own), "{own}");
    /// assert_eq!(story.own_beyond(story, 1.0), 0.0);
    /// ```
    #[must_use]
    pub fn own_beyond(self, other: Extent, resemblance: f64) -> f64 {
        let (a, b) = (f64::from(self.shingles), f64::from(other.shingles));
        let r = resemblance.clamp(0.0, 1.0);
        (a - r * (a + b) / (1.0 + r)).max(0.0)
    }

    /// Two bytes in a record, saturated at 65,535 shingles (two pages that
    /// large are compared by their texts alone).
    pub(crate) fn to_bytes(self) -> [u8; 2] {
        u16::try_from(self.shingles).unwrap_or(u16::MAX).to_le_bytes()
    }

    pub(crate) fn from_bytes(b: [u8; 2]) -> Extent {
        Extent {
            shingles: u32::from(u16::from_le_bytes(b)),
            outline: None,
        }
    }
}

/// An outline as the hexadecimal text of its 64 bytes, after `b1:` for
/// the layout of 512 bins of one bit: an outline serialized before
/// 2026-12-03 (128 hex digits alone) reads back in its own layout.
#[cfg(feature = "serde")]
impl serde::Serialize for Outline {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let hex = crate::digest::hex(&self.bins);
        match self.layout {
            Layout::Bits => s.serialize_str(&format!("{BITS_PREFIX}{hex}")),
            Layout::Bytes => s.serialize_str(&hex),
        }
    }
}

/// What a serialized outline of one-bit bins starts with.
#[cfg(feature = "serde")]
const BITS_PREFIX: &str = "b1:";

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Outline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Outline, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        let (hex, from): (&str, fn([u8; OUTLINE_BYTES]) -> Outline) = match text.strip_prefix(BITS_PREFIX) {
            Some(hex) => (hex, Outline::from_bytes),
            None => (&text, Outline::from_bytes_before_bits),
        };
        crate::digest::from_hex(hex)
            .and_then(|bytes| <[u8; OUTLINE_BYTES]>::try_from(bytes).ok())
            .map(from)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid outline of {} hex digits (want 128, after \"{BITS_PREFIX}\")",
                    hex.len()
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_the_size_ratio_either_way() {
        let sized = |shingles| Extent {
            shingles,
            outline: None,
        };
        let (a, b) = (sized(300), sized(500));
        assert!((a.resemblance_at_most(b) - 0.6).abs() < 1e-12);
        assert!((b.resemblance_at_most(a) - 0.6).abs() < 1e-12);
        assert_eq!(Extent::default().resemblance_at_most(Extent::default()), 1.0);
        assert_eq!(Extent::default().resemblance_at_most(a), 0.0);
    }

    #[test]
    fn bytes_round_trip_and_saturate() {
        let sized = |shingles| Extent {
            shingles,
            outline: None,
        };
        let e = sized(1234);
        assert_eq!(Extent::from_bytes(e.to_bytes()), e);
        assert_eq!(Extent::from_bytes(sized(1 << 20).to_bytes()), sized(65_535));
    }
}
