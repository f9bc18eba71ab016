//! The words jieba cuts from a text with Han in it, with its dictionary
//! walk kept for the runs of the text that need it ([`han_text_words`]).

use super::han_dict;
use super::latin_words;

/// The words jieba (without HMM) cuts from a text with Han in it, in the
/// same order, with its dictionary walk kept for the runs that need it.
///
/// jieba segments each maximal run of its class ([`han_dict::blocks`]) on its
/// own, and emits what lies between runs one character at a time (never a
/// valid word). A run of ASCII only is cut as [`latin_words`] cuts it (see
/// there why that is the same cut), without walking the dictionary one
/// letter at a time: Chinese manuals are mostly commands and options, and
/// those runs were 63% of the characters jieba walked on the labelled set.
/// Runs holding a Han character are cut as jieba cuts them, on its
/// dictionary compiled in ([`han_dict::cut_run`]).
/// `tests::han_text_words_cut_as_jieba_does` compares both on random text.
#[cfg(test)]
pub(super) fn han_text_words<'a>(text: &'a str, emit: &mut dyn FnMut(&'a str)) {
    han_text_words_and_others(text, emit, None);
}

/// [`han_text_words`], and with `others` the stretches between runs that
/// hold a char beyond ASCII, in order: where every char that is neither
/// ASCII, Han nor white space lies (`scripts::foreign_runs`), since each
/// char of a run is ASCII or Han. So the words of other scripts are found
/// without a second pass over the whole text (`tests::others_hold_every_foreign_run`).
pub(super) fn han_text_words_and_others<'a>(
    text: &'a str,
    emit: &mut dyn FnMut(&'a str),
    mut others: Option<&mut Vec<&'a str>>,
) {
    han_dict::blocks(text, |block, matched| match (matched, block.is_ascii()) {
        // What lies between runs is never a valid word.
        (false, true) => {}
        (false, false) => {
            if let Some(others) = others.as_deref_mut() {
                others.push(block);
            }
        }
        (true, true) => latin_words(block, emit),
        (true, false) => han_dict::cut_run_words(block, emit),
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::tests::{jieba_valid_words, valid_words};
    use super::*;

    fn han_valid_words(text: &str) -> Vec<&str> {
        valid_words(han_text_words, text)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        // Han (words of the dictionary among them), the ASCII of jieba's
        // runs, the extension ranges at their edges, other scripts, spaces.
        #[test]
        fn han_text_words_cut_as_jieba_does(
            text in "(中国|北京|天气|编程者|组件|光标|t恤|卡拉ok|[中文字ab1c+#&._%\\- \n\r]|\u{3400}|\u{2A6DF}|\u{2A6E0}|\u{2A700}|\u{2F800}|é|ж|。|，){0,40}"
        ) {
            proptest::prop_assert_eq!(han_valid_words(&text), jieba_valid_words(&text));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The runs of other scripts found in the stretches between jieba's
        /// runs are those found in the whole text, in the same order.
        #[test]
        fn others_hold_every_foreign_run(
            text in "(中国|t恤|[中文ab1+#&._%\\- \n]|\u{3400}|\u{2A6DF}|\u{2A6E0}|\u{2A700}|\u{2F800}|é|ж|Ω|あい|한국|。|，|\u{3000}|\u{a0}){0,40}"
        ) {
            let mut whole = Vec::new();
            crate::scripts::foreign_runs(&text, |r| whole.push(r));
            let mut others = Vec::new();
            han_text_words_and_others(&text, &mut |_| {}, Some(&mut others));
            let mut between = Vec::new();
            for o in others {
                crate::scripts::foreign_runs(o, |r| between.push(r));
            }
            proptest::prop_assert_eq!(between, whole);
        }
    }

    #[test]
    fn han_text_words_cut_manual_text_as_jieba_does() {
        let texts = [
            "cursors(3tk) tk built-in commands\n-cursor 组件选项允许 tk\n编程者改变特定组件的鼠标光标。x_cursor arrow",
            "使用 gcc -o a.out main.c 编译c++程序，c#也可以；版本2.0-rc1，50%的用户",
            "中文abc中文 abc 中文123 t恤衫 卡拉ok厅 a.b_c&d%e-f 𠀀𪛟𪜀 ",
        ];
        for t in texts {
            assert_eq!(han_valid_words(t), jieba_valid_words(t), "{t}");
            assert!(!han_valid_words(t).is_empty());
        }
    }
}
