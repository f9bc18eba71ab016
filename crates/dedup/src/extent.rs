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

/// The resemblance two pages of one host must be able to reach on
/// everything they show for one to be the other's copy: halfway between
/// the lines the gates label by (distinct below 0.5, near-duplicate from
/// 0.8). Two pages that cannot reach it are not near-duplicates however
/// alike the texts they are judged on; two that are near-duplicates are
/// at least 0.8 alike, so their sizes are never this far apart.
pub const PAGE_MIN_SIMILARITY: f64 = 0.65;

/// How much a page shows: the distinct 5-grams of its letters and digits
/// outside the parts it declares template (navigation, header, footer).
///
/// ```
/// use simcrawl_dedup::Extent;
/// // The list of all members, and the list of its functions.
/// let members = Extent { shingles: 284 };
/// let functions = Extent { shingles: 177 };
/// assert!(functions.resemblance_at_most(members) < 0.65);
/// // A page and its copy with a longer footer note.
/// assert!(Extent { shingles: 1000 }.resemblance_at_most(Extent { shingles: 1090 }) > 0.9);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Extent {
    /// Distinct 5-grams of everything the page shows outside declared
    /// template.
    pub shingles: u32,
}

impl Extent {
    /// The extent of a page that shows `text` outside declared template.
    ///
    /// ```
    /// use simcrawl_dedup::Extent;
    /// assert_eq!(Extent::of("abcdefg"), Extent { shingles: 3 });
    /// ```
    #[must_use]
    pub fn of(text: &str) -> Extent {
        Extent {
            shingles: crate::sketch::shingle_count(text),
        }
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

    /// Two bytes in a record, saturated at 65,535 shingles (two pages that
    /// large are compared by their texts alone).
    pub(crate) fn to_bytes(self) -> [u8; 2] {
        u16::try_from(self.shingles).unwrap_or(u16::MAX).to_le_bytes()
    }

    pub(crate) fn from_bytes(b: [u8; 2]) -> Extent {
        Extent {
            shingles: u32::from(u16::from_le_bytes(b)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_the_size_ratio_either_way() {
        let (a, b) = (Extent { shingles: 300 }, Extent { shingles: 500 });
        assert!((a.resemblance_at_most(b) - 0.6).abs() < 1e-12);
        assert!((b.resemblance_at_most(a) - 0.6).abs() < 1e-12);
        assert_eq!(Extent::default().resemblance_at_most(Extent::default()), 1.0);
        assert_eq!(Extent::default().resemblance_at_most(a), 0.0);
    }

    #[test]
    fn bytes_round_trip_and_saturate() {
        let e = Extent { shingles: 1234 };
        assert_eq!(Extent::from_bytes(e.to_bytes()), e);
        let huge = Extent { shingles: 1 << 20 };
        assert_eq!(Extent::from_bytes(huge.to_bytes()), Extent { shingles: 65_535 });
    }
}
