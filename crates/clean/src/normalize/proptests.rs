//! Property tests of the normalizers on arbitrary text: CJK, traditional chars and
//! phrases, full-width and compatibility forms, every kind of whitespace, control
//! and format chars, combining marks, emoji sequences, entities and tags.
//!
//! Each step must not panic and must be idempotent (`step(step(s)) == step(s)`):
//! the dedup tiers compare normalized texts, so a text normalized twice (a copy
//! that was republished from an already cleaned one) must sign like the original.
//!
//! Two exceptions, inherent, tested with a weaker property (a second run changes
//! the text at most once more: `f(f(f(s))) == f(f(s))`, i.e. no endless chains or
//! cycles):
//!
//! - The Taiwan vocabulary profiles (`tw2sp`, `t2s_tw`) map Taiwan words to
//!   mainland ones, and some mainland words are Taiwan words for something else:
//!   程式 (program) -> 程序, and 程序 (Taiwan: process) -> 进程. OpenCC's dictionaries
//!   say so, and the converter must stay byte-identical to OpenCC. The plain
//!   `t2s` profile chains too, in context: 么麼 -> 幺麽 -> 幺么, and `tw2sp`
//!   once more (-> 幺幺, found by a random draw on 2026-12-07), so a
//!   conversion step is held to a fixed point after three runs,
//!   `f⁴(s) == f³(s)`: no endless chain or cycle.
//! - The default pipeline: a later step can make text an earlier step would have
//!   changed, and the order cannot move (it is part of the settings digest that
//!   data directories store). `fold_width` and `nfkc` turn `＜b＞` into a tag and
//!   `strip_control` or `strip_symbols` can join `&am` and `p;` into an entity, all
//!   after `strip_markup`; removing a symbol puts combining marks next to a new base
//!   (NFKC would reorder or compose them) and can join the two halves of a phrase
//!   after `convert_chinese`; lower-casing turns `&AMp;` into an entity. Each needs
//!   the next run's earlier step once.
//!
//! The two compose: in the default pipeline a run can first make a Taiwan word
//! (a line join puts 程式 next to what made it a phrase) that the next run maps
//! and the one after maps again (`"程式\n贉"`: 程序, then 进程). So the default
//! pipelines are held to a fixed point after three runs, `f⁴(s) == f³(s)`: still
//! no endless chain or cycle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use proptest::prelude::*;

use super::Pipeline;
use crate::config::{ChineseVariant, CleanConfig, Step};

/// Each step alone, built from the configuration the way a [`crate::Cleaner`]
/// builds it: every Chinese profile, whitespace in both its text and title modes.
fn every_step() -> &'static [(String, Pipeline)] {
    static STEPS: OnceLock<Vec<(String, Pipeline)>> = OnceLock::new();
    STEPS.get_or_init(|| {
        let mut out = Vec::new();
        for step in Step::ALL {
            let variants: &[ChineseVariant] = if step == Step::ConvertChinese {
                &crate::normalize::test_support::CONVERTING_VARIANTS
            } else {
                &[ChineseVariant::T2s]
            };
            for &variant in variants {
                for single_line in [false, true] {
                    if single_line && step != Step::FoldWhitespace {
                        continue;
                    }
                    let config = CleanConfig {
                        order: vec![step],
                        convert_chinese: variant,
                        drop_digits: true,
                        ..CleanConfig::default()
                    };
                    let p = Pipeline::from_config(&config, single_line, None).unwrap();
                    assert_eq!(p.step_names(), vec![step.name()]);
                    out.push((format!("{step} ({variant:?}, single_line {single_line})"), p));
                }
            }
        }
        out
    })
}

/// The default text and title pipelines (with `drop_digits` too, which the default
/// leaves off).
fn pipelines() -> &'static [(String, Pipeline)] {
    static P: OnceLock<Vec<(String, Pipeline)>> = OnceLock::new();
    P.get_or_init(|| {
        let mut out = Vec::new();
        for drop_digits in [false, true] {
            let config = CleanConfig {
                drop_digits,
                ..CleanConfig::default()
            };
            for single_line in [false, true] {
                let p = Pipeline::from_config(&config, single_line, None).unwrap();
                out.push((
                    format!("default (drop_digits {drop_digits}, single_line {single_line})"),
                    p,
                ));
            }
        }
        out
    })
}

/// Traditional chars and phrases, and simplified chars that traditional ones fold
/// onto (so that conversion meets its own output).
const CHINESE: &[&str] = &[
    "臺灣", "開放", "經濟", "發展", "軟體", "網路", "網絡", "乾", "燥", "隆", "國際", "資料", "後", "裡",
    "著", "們", "為", "這", "說", "時", "會", "從", "麼", "甚", "於", "與", "學", "體", "龍", "髮", "鬆",
    "頭", "干", "发", "后", "里", "么", "只", "着", "什么", "显著", "程式", "新增", "記者", "報導", "的",
    "是", "中文", "简体",
];

/// Entities and tags, whole and in pieces.
const MARKUP: &[&str] = &[
    "&amp;",
    "&lt;",
    "&gt;",
    "&nbsp;",
    "&#x41;",
    "&#20013;",
    "&#0;",
    "&quot;",
    "&lt",
    "&amp",
    "<b>",
    "</b>",
    "<p>",
    "</p>",
    "<br/>",
    "<!-- c -->",
    "<a href=\"x\">",
    "&",
    "<",
    ">",
    ";",
    "#",
    "amp",
    "lt",
    "/",
    "p",
];

/// Whitespace of every kind, line breaks included.
const SPACES: &[&str] = &[
    " ", "  ", "\t", "\n", "\n\n", "\r\n", "\r", "\u{a0}", "\u{3000}", "\u{2028}", "\u{2029}", "\u{85}",
    "\u{b}", "\u{c}", "\u{2003}", "\u{1680}", "\u{202f}",
];

/// Invisible format chars (zero-width, bidi, soft hyphen, BOM, annotation).
const FORMAT: &[char] = &[
    '\u{ad}', '\u{61c}', '\u{180e}', '\u{200b}', '\u{200c}', '\u{200d}', '\u{200e}', '\u{202a}', '\u{202e}',
    '\u{2060}', '\u{2066}', '\u{feff}', '\u{fff9}',
];

fn fragment() -> impl Strategy<Value = String> {
    let range = |lo: char, hi: char| prop::char::range(lo, hi).prop_map(String::from);
    prop_oneof![
        // ASCII letters, digits and punctuation.
        prop::collection::vec(prop::char::range(' ', '~'), 1..6).prop_map(|v| v.into_iter().collect()),
        range('\u{4e00}', '\u{9fff}'),
        prop::sample::select(CHINESE).prop_map(str::to_owned),
        prop::sample::select(MARKUP).prop_map(str::to_owned),
        prop::sample::select(SPACES).prop_map(str::to_owned),
        prop::sample::select(FORMAT).prop_map(String::from),
        // Full-width forms and the ideographic space; half-width katakana.
        range('\u{ff01}', '\u{ffee}'),
        // C0 and C1 controls.
        range('\0', '\u{1f}'),
        range('\u{7f}', '\u{9f}'),
        // Combining marks (Latin, CJK voicing marks) and Hangul jamo.
        range('\u{300}', '\u{36f}'),
        range('\u{3099}', '\u{309c}'),
        range('\u{1100}', '\u{11ff}'),
        // Latin with diacritics and other cased scripts.
        range('\u{c0}', '\u{24f}'),
        range('\u{370}', '\u{52f}'),
        // Compatibility forms: CJK compatibility ideographs, circled numbers,
        // ligatures, superscripts, letterlike symbols, Roman numerals.
        range('\u{f900}', '\u{faff}'),
        range('\u{2460}', '\u{24ff}'),
        range('\u{fb00}', '\u{fb4f}'),
        range('\u{2070}', '\u{218f}'),
        // Emoji, dingbats, arrows, skin tones, variation selectors, tags.
        range('\u{1f300}', '\u{1faff}'),
        range('\u{2190}', '\u{27bf}'),
        range('\u{fe00}', '\u{fe0f}'),
        range('\u{e0020}', '\u{e007f}'),
        Just("\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}".to_owned()),
        Just("\u{2764}\u{fe0f}".to_owned()),
        // Anything at all.
        any::<char>().prop_map(String::from),
    ]
}

/// A text of up to 40 fragments.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..40).prop_map(|v| v.concat())
}

/// Text without the chars behind the pipeline's exceptions: Chinese, Latin and
/// full-width letters and digits, punctuation other than markup, whitespace, format
/// chars, controls.
fn plain_text() -> impl Strategy<Value = String> {
    let range = |lo: char, hi: char| prop::char::range(lo, hi).prop_map(String::from);
    let fragment = prop_oneof![
        prop::collection::vec(prop::char::range(' ', '~'), 1..6)
            .prop_map(|v| v.into_iter().filter(|c| !matches!(c, '&' | '<' | '>')).collect()),
        range('\u{4e00}', '\u{9fff}'),
        prop::sample::select(CHINESE).prop_map(str::to_owned),
        prop::sample::select(SPACES).prop_map(str::to_owned),
        prop::sample::select(FORMAT).prop_map(String::from),
        range('\u{ff10}', '\u{ff19}'),
        range('\u{ff21}', '\u{ff3a}'),
        range('\u{ff41}', '\u{ff5a}'),
        range('\0', '\u{1f}'),
        range('\u{c0}', '\u{24f}'),
    ];
    prop::collection::vec(fragment, 0..40).prop_map(|v| v.concat())
}

/// Whether a step is idempotent by design (see the module documentation): every
/// Chinese profile chains somewhere, even on single chars.
fn idempotent(name: &str) -> bool {
    !name.starts_with(Step::ConvertChinese.name())
}

/// Every default pipeline reaches a fixed point within three runs:
/// `f⁴(s) == f³(s)` (the module documentation says why not two).
fn stable_after_three_runs(s: &str) -> Result<(), proptest::test_runner::TestCaseError> {
    for (name, p) in pipelines() {
        let mut runs = vec![p.run(s).into_owned()];
        for _ in 0..3 {
            let next = p.run(runs.last().map_or("", String::as_str)).into_owned();
            runs.push(next);
        }
        proptest::prop_assert_eq!(&runs[2], &runs[3], "{} on {:?}", name, s);
    }
    Ok(())
}

/// The longest chain known (module documentation): `tw2sp` changes 么麼
/// three times, every other profile twice, and each then stays.
#[test]
fn conversion_chains_in_context_end_after_three_runs() {
    for (name, p) in every_step() {
        if idempotent(name) {
            continue;
        }
        let mut chain = vec!["么麼".to_owned()];
        for _ in 0..4 {
            let next = p.run(chain.last().map_or("", String::as_str)).into_owned();
            chain.push(next);
        }
        let expected: &[&str] = if name.contains("Tw2sp") {
            &["么麼", "幺麽", "幺么", "幺幺", "幺幺"]
        } else {
            &["么麼", "幺麽", "幺么", "幺么", "幺么"]
        };
        assert_eq!(chain, expected, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_step_is_idempotent(s in text()) {
        for (name, p) in every_step() {
            let once = p.run(&s).into_owned();
            let twice = p.run(&once).into_owned();
            if idempotent(name) {
                prop_assert_eq!(&once, &twice, "{} on {:?}", name, s);
            } else {
                let thrice = p.run(&twice).into_owned();
                let fourth = p.run(&thrice).into_owned();
                prop_assert_eq!(&thrice, &fourth, "{} on {:?}", name, s);
            }
        }
    }

    /// The weaker property (see the module documentation); and idempotent on text
    /// that holds none of the chars behind its exceptions.
    #[test]
    fn the_default_pipeline_is_stable_after_three_runs(s in text()) {
        stable_after_three_runs(&s)?;
    }

    /// Even plain text is not always idempotent in one run: OpenCC's t2s
    /// dictionaries chain in context ("么麼" -> "幺麽" -> "幺么"), so the
    /// property is stability after three runs here too.
    #[test]
    fn the_default_pipeline_is_stable_on_plain_text(s in plain_text()) {
        stable_after_three_runs(&s)?;
    }

    /// The NFKC step normalizes only the runs of chars that may change: the result
    /// must be NFKC of the whole text.
    #[test]
    fn nfkc_is_unicode_nfkc(s in text()) {
        use unicode_normalization::UnicodeNormalization as _;
        let expected: String = s.nfkc().collect();
        let got = super::Normalizer::normalize(&super::Nfkc, std::borrow::Cow::Borrowed(s.as_str()));
        prop_assert_eq!(got.as_ref(), expected.as_str());
    }
}

/// The pipeline's exceptions (module documentation), one example each: the second
/// run changes the text, the third does not.
#[test]
fn the_default_pipelines_exceptions_settle_on_the_second_run() {
    let (_, p) = &pipelines()[0];
    for s in [
        "＜b＞x",           // fold_width makes a tag
        "﹤b﹥x",           // nfkc makes a tag
        "&am\u{200b}p;",    // strip_control makes an entity
        "<🌀b>x",           // strip_symbols makes a tag
        "&AMp;",            // lowercase makes an entity
        "\u{300}🌀\u{316}", // strip_symbols leaves marks out of canonical order
    ] {
        let once = p.run(s).into_owned();
        let twice = p.run(&once).into_owned();
        assert_ne!(once, twice, "{s:?}");
        assert_eq!(p.run(&twice), twice, "{s:?}");
    }
}
