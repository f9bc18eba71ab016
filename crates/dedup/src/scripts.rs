//! Words for every script that jieba does not cut (issue 42).
//!
//! jieba finds words in Han text and in runs of ASCII letters and digits;
//! everything else it hands back one character at a time, which carries no
//! topic and is dropped. So a Russian, Greek, Arabic, Hebrew, Hindi, Thai,
//! Korean or Vietnamese page had no SimHash words at all, and Spanish or
//! Latvian words were cut at every accented letter. Here every other script
//! gets words from ICU4X's word segmenter:
//! - spaced scripts (Latin with accents, Cyrillic, Greek, Arabic, Hebrew,
//!   Devanagari, Hangul, ...) by the Unicode word boundaries of UAX #29;
//! - Thai, Lao, Khmer and Burmese, which write no spaces between words, and
//!   kana, by ICU's dictionaries (the `compiled_data` of `icu_segmenter`,
//!   no LSTM models: a dictionary is deterministic and needs no floating
//!   point, so every platform cuts the same words, as a persisted index
//!   requires).
//!
//! Han text still goes through jieba, so Chinese fingerprints do not move;
//! only the runs of other scripts inside it gain words.

use std::sync::OnceLock;

use icu_segmenter::options::WordBreakInvariantOptions;
use icu_segmenter::{WordSegmenter, WordSegmenterBorrowed};

use crate::digest::{hex, md5_of};

/// The segmenter that cuts the words of scripts jieba does not know,
/// recorded by stores (with a digest of how it cuts a fixed probe text in
/// a dozen scripts) next to jieba's: another release may cut
/// words differently.
pub const UNICODE_SEGMENTER_VERSION: &str = "icu_segmenter 2";

/// Texts whose cut is recorded as a digest: one per way of finding words.
const PROBE: &str = "Переход на новую версию. Η γρήγορη καφέ αλεπού. \
    البيانات المفتوحة. מערכת ההפעלה. हिन्दी भाषा का पाठ। ทุกสองสัปดาห์ภาษาไทย \
    ພາສາລາວ ភាសាខ្មែរ မြန်မာဘာသာ 한국어 텍스트입니다. こんにちは、カタカナ。 \
    Tiếng Việt có dấu. anticorrupción pārbaude";

/// The stop words of the other scripts (see the file's header): added to
/// the configured list when words are found in every script.
pub const MULTI_STOP_WORDS: &str = include_str!("../data/stopwords-multi.txt");

/// [`UNICODE_SEGMENTER_VERSION`] and a digest of how it cuts a probe text
/// in a dozen scripts.
pub fn unicode_segmenter_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut cut = String::new();
        unicode_words(PROBE, &mut |w| {
            cut.push_str(w);
            cut.push('/');
        });
        format!("{UNICODE_SEGMENTER_VERSION}/{}", hex(&md5_of(&cut)))
    })
}

/// The dictionary segmenter, set up once per process: setting it up looks
/// its dictionaries up in the compiled data, which a call per run of text
/// (several per Chinese page with kana or Cyrillic in it) would repeat.
fn segmenter() -> WordSegmenterBorrowed<'static> {
    static SEGMENTER: OnceLock<WordSegmenterBorrowed<'static>> = OnceLock::new();
    *SEGMENTER.get_or_init(|| WordSegmenter::new_dictionary(WordBreakInvariantOptions::default()))
}

/// Whether jieba cuts `c` as Han (its CJK ranges).
#[inline]
pub(crate) fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2EBEF}'
        | '\u{2F800}'..='\u{2FA1F}')
}

/// Calls `f` with every run of characters that jieba would hand back one at
/// a time (neither ASCII, Han nor white space) and that holds a letter:
/// kana, Hangul, Cyrillic in a Chinese page.
pub(crate) fn foreign_runs<'a>(text: &'a str, mut f: impl FnMut(&'a str)) {
    let bytes = text.as_bytes();
    let mut start: Option<usize> = None;
    let mut letter = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        // ASCII and Han ([`crate::letters::starts_han`]) end a run, read on their bytes: a
        // Chinese page's text is mostly both (issue 37).
        let (foreign, c, next) = match b {
            0x00..=0x7F => (false, None, skip_ascii(bytes, i + 1)),
            0xE4..=0xE9 if crate::letters::starts_han(bytes, i) => (false, None, i + 3),
            _ => match text.get(i..).and_then(|s| s.chars().next()) {
                Some(c) => (!is_han(c) && !c.is_whitespace(), Some(c), i + c.len_utf8()),
                None => break,
            },
        };
        match (foreign, start) {
            (true, None) => {
                start = Some(i);
                letter = c.is_some_and(crate::letters::is_alphabetic);
            }
            (true, Some(_)) => letter |= c.is_some_and(crate::letters::is_alphabetic),
            (false, Some(s)) => {
                if letter {
                    f(&text[s..i]);
                }
                start = None;
            }
            (false, None) => {}
        }
        i = next;
    }
    if let Some(s) = start
        && letter
    {
        f(&text[s..]);
    }
}

// `skip_ascii` lives with the letters, which read runs of ASCII too.
pub(crate) use crate::letters::skip_ascii;

/// The word-like segments of `text` by ICU's word segmenter (UAX #29, with
/// dictionaries for the scripts written without spaces). A segment of ASCII
/// only is cut further by `ascii` (the crate's ASCII word rule), so that an
/// English word has the same features in a page with an accented letter
/// elsewhere as in a pure ASCII page.
pub(crate) fn unicode_words<'a>(text: &'a str, emit: &mut dyn FnMut(&'a str)) {
    unicode_words_with(text, emit, &mut |w, emit| emit(w));
}

/// Cuts an ASCII segment into words, handing each to the sink.
pub(crate) type AsciiCut<'f, 'a> = dyn FnMut(&'a str, &mut dyn FnMut(&'a str)) + 'f;

/// [`unicode_words`], with ASCII segments handed to `ascii`.
pub(crate) fn unicode_words_with<'a>(
    text: &'a str,
    emit: &mut dyn FnMut(&'a str),
    ascii: &mut AsciiCut<'_, 'a>,
) {
    let mut breaks = segmenter().segment_str(text);
    let mut prev = 0;
    while let Some(b) = breaks.next() {
        if b > prev && breaks.is_word_like() {
            let word = &text[prev..b];
            if word.is_ascii() {
                ascii(word, emit);
            } else {
                emit(word);
            }
        }
        prev = b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        unicode_words(text, &mut |w| out.push(w));
        out
    }

    #[test]
    fn spaced_scripts_are_cut_at_word_boundaries_with_their_accents() {
        assert_eq!(
            words("Переход на новую версию."),
            ["Переход", "на", "новую", "версию"]
        );
        assert_eq!(words("anticorrupción pārbaude"), ["anticorrupción", "pārbaude"]);
        assert_eq!(words("Η γρήγορη αλεπού"), ["Η", "γρήγορη", "αλεπού"]);
        assert_eq!(words("한국어 텍스트입니다."), ["한국어", "텍스트입니다"]);
        assert_eq!(words("מערכת ההפעלה"), ["מערכת", "ההפעלה"]);
        assert_eq!(words("البيانات المفتوحة"), ["البيانات", "المفتوحة"]);
    }

    #[test]
    fn scripts_without_spaces_are_cut_by_dictionary() {
        // ICU's own example: "every two weeks" is three words.
        assert_eq!(words("ทุกสองสัปดาห์"), ["ทุก", "สอง", "สัปดาห์"]);
        let burmese = words("မြန်မာဘာသာစကား");
        assert!(burmese.len() >= 2, "{burmese:?}");
        let kana = words("こんにちは、カタカナ");
        assert!(kana.contains(&"カタカナ"), "{kana:?}");
    }

    /// The char-by-char scan [`foreign_runs`] replaced.
    fn foreign_runs_by_chars(text: &str) -> Vec<&str> {
        let (mut runs, mut start, mut letter) = (Vec::new(), None, false);
        for (i, c) in text.char_indices() {
            let foreign = !c.is_ascii() && !is_han(c) && !c.is_whitespace();
            match (foreign, start) {
                (true, None) => (start, letter) = (Some(i), crate::letters::is_alphabetic(c)),
                (true, Some(_)) => letter |= crate::letters::is_alphabetic(c),
                (false, Some(s)) => {
                    if letter {
                        runs.push(&text[s..i]);
                    }
                    start = None;
                }
                (false, None) => {}
            }
        }
        if let Some(s) = start.filter(|_| letter) {
            runs.push(&text[s..]);
        }
        runs
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn foreign_runs_as_the_char_scan(text in "[a-c .中文\u{4e00}\u{4000}\u{4dc0}\u{4dff}\u{4fff}\u{3400}\u{f900}\u{20000}\u{3042}\u{30a2}\u{ac00}\u{436}\u{e9}\u{300}\u{3000}\u{a0}\u{ff0c}\u{2019}\u{1f600}]{0,30}") {
            let mut runs = Vec::new();
            foreign_runs(&text, |r| runs.push(r));
            proptest::prop_assert_eq!(runs, foreign_runs_by_chars(&text));
        }
    }

    #[test]
    fn skip_ascii_stops_at_the_first_byte_beyond_ascii() {
        for t in [
            "",
            "a",
            "abcdefgh",
            "abcdefghi",
            "abcdefg中",
            "abcdefgh中",
            "中",
            "a中b",
        ] {
            let b = t.as_bytes();
            for i in 0..=b.len() {
                let expected = (i..b.len()).find(|&k| !b[k].is_ascii()).unwrap_or(b.len());
                assert_eq!(skip_ascii(b, i), expected, "{t:?} from {i}");
            }
        }
    }

    #[test]
    fn foreign_runs_skip_ascii_han_and_punctuation_only_runs() {
        let mut runs = Vec::new();
        foreign_runs("中文 Привет мир abc，。 日本語のテキスト", |r| runs.push(r));
        assert_eq!(runs, ["Привет", "мир", "のテキスト"]);
    }

    #[test]
    fn the_segmenter_id_is_stable_within_a_process() {
        assert!(unicode_segmenter_id().starts_with(UNICODE_SEGMENTER_VERSION));
        assert_eq!(unicode_segmenter_id(), unicode_segmenter_id());
        assert!(MULTI_STOP_WORDS.lines().any(|l| l == "которые"));
        assert!(
            !MULTI_STOP_WORDS
                .lines()
                .any(|l| !l.starts_with('#') && l.is_ascii())
        );
    }
}
