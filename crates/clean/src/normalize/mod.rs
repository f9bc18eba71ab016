//! Text normalizers: small composable steps, one per file, chained by a [`Pipeline`].
//!
//! Each step exists to make two copies of one text byte-identical when they differ
//! only in something a reader would not notice (width, script variant, invisible
//! characters, emoji, case, spacing). Every step returns `Cow::Borrowed` when it has
//! nothing to do, so a clean text passes through the pipeline without copies.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use crate::config::{CleanConfig, Step};
use crate::error::CleanError;

/// The shared test macro: checks a normalizer alone, idempotent, and inside the
/// default pipeline. Defined before the submodules so they can use it.
#[cfg(test)]
macro_rules! normalizer_tests {
    ($normalizer:expr, [$(($input:expr, $alone:expr, $pipeline:expr)),* $(,)?]) => {
        #[test]
        fn alone() {
            use $crate::normalize::Normalizer as _;
            let n = $normalizer;
            $(
                assert_eq!(n.normalize(std::borrow::Cow::Borrowed($input)), $alone, "alone, input {:?}", $input);
            )*
        }

        #[test]
        fn idempotent() {
            use $crate::normalize::Normalizer as _;
            let n = $normalizer;
            $(
                let once = n.normalize(std::borrow::Cow::Borrowed($input)).into_owned();
                let twice = n.normalize(std::borrow::Cow::Borrowed(once.as_str())).into_owned();
                assert_eq!(once, twice, "idempotent, input {:?}", $input);
            )*
        }

        #[test]
        fn in_pipeline() {
            let p = $crate::normalize::test_support::default_text_pipeline();
            $(
                assert_eq!(p.run($input), $pipeline, "pipeline, input {:?}", $input);
            )*
        }
    };
}

// One module per step, named after it ([`Step::name`]), holding the type of the
// same name: `fold_width.rs` is `FoldWidth`, `order = ["fold_width"]`,
// `fold_width = true`.
pub mod convert_chinese;
pub mod drop_digits;
pub mod fold_whitespace;
pub mod fold_width;
pub mod lowercase;
pub mod nfkc;
mod opencc;
pub mod strip_control;
pub mod strip_markup;
pub mod strip_symbols;

pub use convert_chinese::ConvertChinese;
pub use drop_digits::DropDigits;
pub use fold_whitespace::FoldWhitespace;
pub use fold_width::FoldWidth;
pub use lowercase::Lowercase;
pub use nfkc::Nfkc;
pub use strip_control::StripControl;
pub use strip_markup::StripMarkup;
pub use strip_symbols::StripSymbols;

/// One normalization step.
///
/// Works on whole strings rather than chars because some steps (OpenCC phrases,
/// entities, tags) look at several chars at once. `Send + Sync` so that one
/// pipeline, with its expensive OpenCC dictionaries, serves every crawler thread.
pub trait Normalizer: Send + Sync + fmt::Debug {
    /// A short name for logs and errors: for the built-in steps, [`Step::name`].
    fn name(&self) -> &'static str;

    /// Normalizes `text`, borrowing it back unchanged when there is nothing to do.
    fn normalize<'a>(&self, text: Cow<'a, str>) -> Cow<'a, str>;
}

/// An ordered chain of normalizers, cheap to clone (steps are shared).
#[derive(Debug, Clone, Default)]
pub struct Pipeline {
    steps: Vec<Arc<dyn Normalizer>>,
}

impl Pipeline {
    /// A pipeline of exactly these steps, for callers composing their own chain.
    #[must_use]
    pub fn new(steps: Vec<Arc<dyn Normalizer>>) -> Self {
        Self { steps }
    }

    /// Builds the chain described by `config`. `single_line` folds all whitespace,
    /// newlines included, into single spaces (titles); otherwise lines are kept.
    ///
    /// `chinese` lets a text and a title pipeline share one converter.
    pub(crate) fn from_config(
        config: &CleanConfig,
        single_line: bool,
        chinese: Option<&Arc<ConvertChinese>>,
    ) -> Result<Self, CleanError> {
        let mut seen = Vec::with_capacity(config.order.len());
        let mut steps: Vec<Arc<dyn Normalizer>> = Vec::new();
        for &step in &config.order {
            if seen.contains(&step) {
                return Err(CleanError::InvalidConfig(format!(
                    "step `{step}` is listed twice in `order`"
                )));
            }
            seen.push(step);
            if !config.enabled(step) {
                continue;
            }
            let n: Arc<dyn Normalizer> = match step {
                Step::StripMarkup => Arc::new(StripMarkup),
                Step::StripControl => Arc::new(StripControl),
                Step::FoldWidth => Arc::new(FoldWidth),
                Step::Nfkc => Arc::new(Nfkc),
                Step::ConvertChinese => match chinese {
                    Some(c) => c.clone(),
                    None => Arc::new(ConvertChinese::new(config.convert_chinese)?),
                },
                Step::StripSymbols => Arc::new(StripSymbols),
                Step::Lowercase => Arc::new(Lowercase),
                Step::DropDigits => Arc::new(DropDigits),
                Step::FoldWhitespace => Arc::new(FoldWhitespace { single_line }),
            };
            steps.push(n);
        }
        Ok(Self { steps })
    }

    /// Runs every step in order.
    #[must_use]
    pub fn run<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut cur = Cow::Borrowed(text);
        for step in &self.steps {
            cur = step.normalize(cur);
        }
        cur
    }

    /// The names of the steps, in order (for logs and tests).
    #[must_use]
    pub fn step_names(&self) -> Vec<&'static str> {
        self.steps.iter().map(|s| s.name()).collect()
    }
}

/// What a per-char step does with one char.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CharAction {
    Keep,
    Drop,
    Replace(char),
    /// The char's full lower-case mapping (which may be several chars):
    /// the char-at-a-time reference the `lowercase` step, which has its
    /// own scan, is tested against.
    #[cfg_attr(not(test), allow(dead_code))]
    Lowercase,
}

/// Applies a per-char rule, copying only when some char changes.
pub(crate) fn map_chars<'a>(text: Cow<'a, str>, f: impl Fn(char) -> CharAction) -> Cow<'a, str> {
    map_chars_by_lead(text, &ALL_LEADS, f)
}

/// The UTF-8 lead bytes (and ASCII bytes) of the chars a per-char rule may change:
/// chars starting with any other byte are kept without decoding them, so a scan over
/// Chinese text (lead bytes 0xE4..=0xE9) is a tight byte loop.
#[derive(Debug)]
pub(crate) struct LeadSet {
    pub(crate) bytes: [bool; 256],
    /// Which ASCII bytes are in the set, when a scan can pass eight bytes
    /// without one at a time ([`LeadSet::next_candidate`]).
    ascii: AsciiLeads,
    /// The set's ranges as `(first, last - first)`, [`NO_RANGE`] past
    /// the ones it has: what [`LeadSet::next_in_blocks`] compares bytes
    /// with.
    ranges: [(u8, u8); MAX_RANGES],
    /// Whether no lead byte of U+4000..U+9FFF (0xE4 to 0xE9: the bulk of
    /// Han) is in the set: a scan then passes a run of such chars three
    /// bytes at a time ([`LeadSet::past`]).
    passes_han: bool,
}

/// Ranges a [`LeadSet`] is made of, at most.
const MAX_RANGES: usize = 8;

/// A range no byte of UTF-8 is in (0xFF never occurs in it).
const NO_RANGE: (u8, u8) = (0xFF, 0);

/// Bytes [`LeadSet::next_in_blocks`] tests at a time.
const SCAN_BLOCK: usize = 32;

/// The ASCII bytes of a [`LeadSet`], for the kinds an eight-byte word can be
/// tested for at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AsciiLeads {
    /// None: a word is passed when it is all ASCII.
    No,
    /// The C0 controls and DEL (`strip_control`).
    Controls,
    /// `A` to `Z` (`lowercase`).
    Capitals,
    /// Any other mix: bytes are tested one at a time.
    Other,
}

/// The high bit of each byte of a word.
const HIGH: u64 = 0x8080_8080_8080_8080;
/// Each byte of a word set to 1.
const ONES: u64 = 0x0101_0101_0101_0101;

impl LeadSet {
    /// The set of `ranges` of bytes (inclusive).
    pub(crate) const fn new(ranges: &[(u8, u8)]) -> Self {
        assert!(
            ranges.len() <= MAX_RANGES,
            "a LeadSet of more ranges than MAX_RANGES"
        );
        let mut t = [false; 256];
        let mut spans = [NO_RANGE; MAX_RANGES];
        let mut r = 0;
        while r < ranges.len() {
            let (lo, hi) = ranges[r];
            assert!(lo <= hi, "a LeadSet range must not be empty");
            // A scan stops at a byte of the set and decodes the char there
            // (`LeadSet::next_in_blocks`): a continuation byte starts none.
            assert!(hi < 0x80 || lo > 0xBF, "a LeadSet holds no continuation byte");
            spans[r] = (lo, hi - lo);
            let mut b = lo as usize;
            while b <= hi as usize {
                t[b] = true;
                b += 1;
            }
            r += 1;
        }
        // Which of the testable kinds the ASCII half of the set is.
        let (mut no, mut controls, mut capitals) = (true, true, true);
        let mut b = 0;
        while b < 128 {
            let c = b as u8;
            no &= !t[b];
            controls &= t[b] == (c < 0x20 || c == 0x7F);
            capitals &= t[b] == c.is_ascii_uppercase();
            b += 1;
        }
        let ascii = if no {
            AsciiLeads::No
        } else if controls {
            AsciiLeads::Controls
        } else if capitals {
            AsciiLeads::Capitals
        } else {
            AsciiLeads::Other
        };
        let mut passes_han = true;
        let mut lead = 0xE4;
        while lead <= 0xE9 {
            passes_han &= !t[lead];
            lead += 1;
        }
        Self {
            bytes: t,
            ascii,
            ranges: spans,
            passes_han,
        }
    }

    /// The offset of the next byte at or after `i` that may start a char of
    /// the set: past the eight-byte words there that hold none (all ASCII,
    /// and none of the set's ASCII bytes), else `i` itself. Most of an
    /// English text and of the commands of a Chinese manual page is such
    /// words, and a step has nothing to do in them (issue 37).
    #[inline]
    fn next_candidate(&self, bytes: &[u8], i: usize) -> usize {
        match self.ascii {
            AsciiLeads::Other => i,
            AsciiLeads::No => skip_ascii(bytes, i),
            // A byte below 0x20 (Bit Twiddling Hacks' `hasless`), or DEL.
            AsciiLeads::Controls => pass_words(bytes, i, |x| {
                let del = x ^ (ONES * 0x7F);
                (x.wrapping_sub(ONES * 0x20) & !x) | (del.wrapping_sub(ONES) & !del)
            }),
            // +0x3F sets the high bit from `A` up, +0x25 from `[` up.
            AsciiLeads::Capitals => pass_words(bytes, i, |x| {
                x.wrapping_add(ONES * 0x3F) & !x.wrapping_add(ONES * 0x25)
            }),
        }
    }

    /// Where a scan goes on after the char at `i`, which is not in the set:
    /// past the ASCII words after it that hold none of the set's bytes
    /// ([`LeadSet::next_candidate`]) when it is ASCII, else past the whole
    /// char (its UTF-8 width) and, for a set without Han's lead bytes, the
    /// Han chars right after it: a Chinese text went through the scan's
    /// loop a char at a time, for nothing, in three steps (issue 37).
    #[inline]
    pub(crate) fn past(&self, bytes: &[u8], i: usize) -> usize {
        match bytes.get(i) {
            Some(&b) if b < 0x80 => self.next_candidate(bytes, i + 1),
            Some(&b) => {
                let mut i = i + utf8_width(b);
                if self.passes_han {
                    while bytes.get(i).is_some_and(|b| b.wrapping_sub(0xE4) <= 0xE9 - 0xE4) {
                        i += 3;
                    }
                }
                i
            }
            None => i,
        }
    }

    /// Whether a scan is faster in blocks ([`LeadSet::next_in_blocks`])
    /// than a char at a time ([`LeadSet::past`]): for a set whose ASCII
    /// bytes no eight-byte test tells ([`AsciiLeads::Other`]). Byte by
    /// byte, `strip_control` stopped at every newline of a text until its
    /// set left the newline and the tab out, and then had no word test
    /// (issue 37); the sets that have one were as fast as before or
    /// faster on the labelled texts with their own scans.
    #[inline]
    pub(crate) fn scans_in_blocks(&self) -> bool {
        self.ascii == AsciiLeads::Other
    }

    /// The offset of the first byte of the set at or after `i` (a char
    /// boundary), or the text's length: blocks of [`SCAN_BLOCK`] bytes
    /// that hold none are passed by comparing them with the set's ranges
    /// (vector code, when the set is a constant the caller inlines), then
    /// bytes one at a time. Only a byte that starts a char can be in a set
    /// ([`LeadSet::new`] refuses 0x80 to 0xBF), so the byte found starts one.
    #[inline(always)]
    pub(crate) fn next_in_blocks(&self, bytes: &[u8], mut i: usize) -> usize {
        let in_ranges = |b: u8| {
            self.ranges
                .iter()
                .fold(false, |found, &(lo, span)| found | (b.wrapping_sub(lo) <= span))
        };
        while let Some(block) = bytes.get(i..i + SCAN_BLOCK) {
            if block.iter().fold(false, |found, &b| found | in_ranges(b)) {
                break;
            }
            i += SCAN_BLOCK;
        }
        while let Some(&b) = bytes.get(i) {
            if self.contains(b) {
                return i;
            }
            i += 1;
        }
        i
    }

    /// Where a scan goes on from `i`, a byte not in the set: in blocks
    /// or past the char, whichever is faster for this set
    /// ([`LeadSet::scans_in_blocks`]).
    #[inline(always)]
    pub(crate) fn skip(&self, bytes: &[u8], i: usize) -> usize {
        if self.scans_in_blocks() {
            self.next_in_blocks(bytes, i)
        } else {
            self.past(bytes, i)
        }
    }

    #[inline]
    pub(crate) fn contains(&self, b: u8) -> bool {
        self.bytes[b as usize]
    }

    /// Whether the UTF-8 encoding of `c` starts with a byte of the set.
    #[cfg(test)]
    pub(crate) fn contains_char(&self, c: char) -> bool {
        let mut buf = [0u8; 4];
        self.contains(c.encode_utf8(&mut buf).as_bytes()[0])
    }
}

/// The offset of the first byte at or after `i` that is not ASCII (`bytes.len()`
/// if none), eight bytes at a time: most of an English text and the commands of
/// a Chinese manual page are ASCII, and a step that changes no ASCII char has
/// nothing to do there (issue 37).
#[inline]
pub(crate) fn skip_ascii(bytes: &[u8], i: usize) -> usize {
    let mut i = pass_words(bytes, i, |_| 0);
    while bytes.get(i).is_some_and(u8::is_ascii) {
        i += 1;
    }
    i
}

/// The offset of the first flagged byte at or after `i`, eight bytes at a
/// time: a byte beyond ASCII, or one whose high bit `held` sets in a word of
/// ASCII bytes (exact there: no carry or borrow crosses a byte). Carries and
/// borrows only run up, to later bytes, so the first flagged byte of a word
/// is right even when a byte beyond ASCII follows it. Stops before the last
/// bytes that do not fill a word.
#[inline(always)]
fn pass_words(bytes: &[u8], mut i: usize, held: impl Fn(u64) -> u64) -> usize {
    while let Some(Ok(word)) = bytes.get(i..i + 8).map(<[u8; 8]>::try_from) {
        let x = u64::from_le_bytes(word);
        let flags = (x | held(x)) & HIGH;
        if flags != 0 {
            return i + flags.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    i
}

/// Whether the char at `bytes[i]` is a CJK ideograph of U+4000..U+4DBF or
/// U+4E00..U+9FFF, told from its first two bytes: a lead of 0xE5 to 0xE9,
/// or 0xE4 unless 0xB7 follows (U+4DC0..U+4DFF, the Yijing hexagrams).
/// The dedup crate's `letters::starts_han` tells the same, for its scans
/// (neither crate depends on the other).
#[inline(always)]
pub(crate) fn starts_han(bytes: &[u8], i: usize) -> bool {
    match bytes.get(i) {
        Some(0xE5..=0xE9) => true,
        Some(0xE4) => bytes.get(i + 1) != Some(&0xB7),
        _ => false,
    }
}

/// The bytes of the char that `lead` starts (1 for a byte that starts none).
#[inline]
pub(crate) fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xFF => 4,
        _ => 1,
    }
}

/// Every ASCII byte and lead byte (continuation bytes never start a char).
const ALL_LEADS: LeadSet = LeadSet::new(&[(0x00, 0x7F), (0xC0, 0xFF)]);

/// Applies a per-char rule that keeps every char whose first UTF-8 byte is not in
/// `leads`, copying only when some char changes. Inlined into each step, whose
/// `leads` is a constant, so that [`LeadSet::next_in_blocks`] compares with
/// constant ranges.
#[inline(always)]
pub(crate) fn map_chars_by_lead<'a>(
    text: Cow<'a, str>,
    leads: &LeadSet,
    f: impl Fn(char) -> CharAction,
) -> Cow<'a, str> {
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already in `out`
    let mut i = 0;
    let bytes = text.as_bytes();
    while let Some(&b) = bytes.get(i) {
        if !leads.contains(b) {
            i = leads.skip(bytes, i);
            continue;
        }
        // An ASCII char (a capital, a control) is its byte: no decoding.
        let c = if b < 0x80 {
            char::from(b)
        } else if let Some(c) = text.get(i..).and_then(|s| s.chars().next()) {
            c
        } else {
            break;
        };
        let len = c.len_utf8();
        let action = f(c);
        if action != CharAction::Keep {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(text.get(copied..i).unwrap_or_default());
            match action {
                CharAction::Replace(r) => o.push(r),
                // `to_lowercase` is a call through Unicode's tables; a
                // capital of ASCII is most of what `lowercase` changes.
                CharAction::Lowercase if c.is_ascii() => o.push(c.to_ascii_lowercase()),
                CharAction::Lowercase => o.extend(c.to_lowercase()),
                CharAction::Keep | CharAction::Drop => {}
            }
            copied = i + len;
        }
        i += len;
    }
    finish_copy(text, out, copied)
}

/// The end of a step that copies `text` into `out` only once a char
/// changes: `text` itself when none did, else `out` with the rest of
/// `text` from byte `copied` on.
#[inline]
pub(crate) fn finish_copy(text: Cow<'_, str>, out: Option<String>, copied: usize) -> Cow<'_, str> {
    match out {
        None => text,
        Some(mut o) => {
            o.push_str(text.get(copied..).unwrap_or_default());
            Cow::Owned(o)
        }
    }
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
pub(crate) mod test_support {
    use std::sync::OnceLock;

    /// Text for the per-char steps' lead-set scans: long ASCII runs with and
    /// without capitals and controls, CJK, full-width forms, Latin-1 and
    /// format chars, so that words of eight bytes both pass and stop.
    pub(crate) const PER_CHAR_TEXT: &str = "(abcdefghij|klmnopqrstuvwxyz 0123456789|ABCDE|Xy|\\n|\\t|\\r|\u{7f}|\u{1}|\u{1f}|@|\\[|`|\\{|\u{85}|\u{ad}|\u{c9}|\u{e9}|\u{3000}|中文字|\u{ff21}\u{ff41}|\u{ffe5}|\u{200b}|\u{2028}|\u{feff}|\u{1f600}|\u{130}|\u{3a3}){0,16}";

    use super::Pipeline;
    use crate::config::{ChineseVariant, CleanConfig};

    /// Every profile that converts Chinese (all but `Off`).
    pub(crate) const CONVERTING_VARIANTS: [ChineseVariant; 4] = [
        ChineseVariant::T2s,
        ChineseVariant::Tw2sp,
        ChineseVariant::Hk2s,
        ChineseVariant::T2sTw,
    ];

    /// The default text pipeline, built once for all tests (OpenCC is slow to build).
    pub(crate) fn default_text_pipeline() -> &'static Pipeline {
        static P: OnceLock<Pipeline> = OnceLock::new();
        P.get_or_init(
            || match Pipeline::from_config(&CleanConfig::default(), false, None) {
                Ok(p) => p,
                Err(e) => panic!("default pipeline: {e}"),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_ascii_stops_at_the_first_byte_beyond_ascii() {
        let texts = [
            "",
            "a",
            "abcdefgh",
            "abcdefghi",
            "abcdefg中",
            "abcdefgh中",
            "中",
            "a中b",
            "0123456789abcdef\u{e9}xyz",
        ];
        for t in texts {
            let b = t.as_bytes();
            for i in 0..=b.len() {
                let expected = (i..b.len()).find(|&k| !b[k].is_ascii()).unwrap_or(b.len());
                assert_eq!(skip_ascii(b, i), expected, "{t:?} from {i}");
            }
        }
    }

    /// Every set's next candidate is the first byte of the set, or a byte at
    /// most eight before it, never past one; and the kinds are told right.
    #[test]
    fn next_candidate_never_passes_a_byte_of_the_set() {
        let sets = [
            (LeadSet::new(&[(0xE3, 0xE3)]), AsciiLeads::No),
            (
                LeadSet::new(&[(0x00, 0x1F), (0x7F, 0x7F), (0xC2, 0xC2)]),
                AsciiLeads::Controls,
            ),
            (LeadSet::new(&[(b'A', b'Z'), (0xC2, 0xE2)]), AsciiLeads::Capitals),
            (LeadSet::new(&[(b'A', b'Y')]), AsciiLeads::Other),
            (ALL_LEADS, AsciiLeads::Other),
        ];
        let texts = [
            "abcdefghij\u{3000}",
            "plain lower case text, no capitals here at all\n",
            "some words Then A capital\tand a tab, \u{7f}del\u{1}",
            "ZZZZZZZZ@[`{~ 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "中文字符，全角：ＡＢＣ end",
            "",
        ];
        for (set, kind) in &sets {
            assert_eq!(set.ascii, *kind);
            for t in texts {
                let b = t.as_bytes();
                for i in 0..=b.len() {
                    let next = set.next_candidate(b, i);
                    let first = (i..b.len()).find(|&k| set.contains(b[k])).unwrap_or(b.len());
                    assert!(next >= i && next <= first, "{t:?} from {i}: {next} past {first}");
                    // It stops at a byte in the set or beyond ASCII, or in the
                    // last seven bytes, left to the byte loop.
                    if *kind != AsciiLeads::Other {
                        assert!(
                            next == first || !b[next].is_ascii() || next + 8 > b.len(),
                            "{t:?} from {i}: {next}"
                        );
                    } else {
                        assert_eq!(next, i);
                    }
                }
            }
        }
    }

    /// A scan decodes the char at the byte it stops at: a set of
    /// continuation bytes is refused when it is made.
    #[test]
    #[should_panic(expected = "no continuation byte")]
    fn a_set_of_continuation_bytes_is_refused() {
        let _ = LeadSet::new(&[(b'a', b'z'), (0xA0, 0xC2)]);
    }

    /// A block scan stops at the set's first byte at or after where it
    /// starts, from every char boundary, in blocks and in the bytes after
    /// the last block.
    #[test]
    fn next_in_blocks_stops_at_the_first_byte_of_the_set() {
        let sets = [
            LeadSet::new(&[(0xE3, 0xE3)]),
            LeadSet::new(&[(0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x7F), (0xC2, 0xC2)]),
            LeadSet::new(&[(b'A', b'Z'), (0xC2, 0xE2)]),
            LeadSet::new(&[(b'A', b'Y')]),
            ALL_LEADS,
            LeadSet::new(&[(0xF0, 0xF4)]),
        ];
        let long = "plain lower case text, no capitals here at all, ".repeat(3);
        let texts = [
            "abcdefghij\u{3000}".to_owned(),
            format!("{long}\n{long}Z{long}\u{1}"),
            "some words Then A capital\tand a tab, \u{7f}del\u{1}".to_owned(),
            "中文字符，全角：ＡＢＣ end".repeat(5),
            format!("{}\u{3000}{}😀", "中文".repeat(20), "x".repeat(40)),
            String::new(),
        ];
        for set in &sets {
            for t in &texts {
                let b = t.as_bytes();
                for i in (0..=b.len()).filter(|&i| t.is_char_boundary(i)) {
                    let first = (i..b.len()).find(|&k| set.contains(b[k])).unwrap_or(b.len());
                    assert_eq!(set.next_in_blocks(b, i), first, "{t:?} from {i}");
                }
            }
        }
    }

    #[test]
    fn default_order_has_all_enabled_steps_but_digits() {
        let p = test_support::default_text_pipeline();
        assert_eq!(
            p.step_names(),
            vec![
                "strip_markup",
                "strip_control",
                "fold_width",
                "nfkc",
                "convert_chinese",
                "strip_symbols",
                "lowercase",
                "fold_whitespace"
            ]
        );
    }

    #[test]
    fn duplicate_step_is_rejected() {
        let config = CleanConfig {
            order: vec![Step::FoldWidth, Step::FoldWidth],
            ..CleanConfig::default()
        };
        assert!(matches!(
            Pipeline::from_config(&config, false, None),
            Err(CleanError::InvalidConfig(_))
        ));
    }

    #[test]
    fn pipeline_is_send_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Pipeline>();
    }
}
