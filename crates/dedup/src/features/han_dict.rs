//! jieba's cut without HMM, on jieba's own dictionary compiled into the
//! binary (build.rs), so that nothing is loaded before the first text is
//! cut: jieba-rs builds its trie at start-up, about 0.14 s of CPU, which
//! was most of `crawl dedup`'s start and of a Python `Deduper()`'s (issue
//! 37). jieba-rs itself is still what cuts with HMM (`hmm = true`) and the
//! reference this cut is tested against: the same tokens on random text,
//! on manual pages and on every sentence of the probe stores record.
//!
//! The cut is jieba's: every dictionary word starting at each char of a
//! run of its class (Han, ASCII letters and digits, `+#&._%-`) is an edge
//! of a graph, the route maximizing the sum of `ln(freq) - ln(total)` over
//! its words wins (ties to the longer word), and single ASCII letters and
//! digits the route leaves alone are joined into one word. Between runs,
//! each char is a token of its own (`\r\n` one token).

use std::cell::RefCell;
use std::sync::OnceLock;

mod tables {
    include!(concat!(env!("OUT_DIR"), "/han_dict.rs"));
}

/// The trie's nodes (build.rs says how a slot is laid out).
static SLOTS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/han_slots.bin"));
/// For each BMP char that starts a word, the slot + 1 of its node (bits
/// 0..42) and that slot's bits from 42 up (children, class, child
/// filter): the walk from each char of a run read its root's slot in the
/// 8 MB table, a miss a char, where this 512 KB table mostly stays in the
/// core's cache (issue 37).
static ROOT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/han_root.bin"));
/// The distinct word frequencies, by class.
static FREQS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/han_freqs.bin"));

const CHAR_BITS: u32 = 21;
const KEY_MASK: u64 = (1 << 42) - 1;
const CLASS_SHIFT: u32 = 43;
const CLASS_MASK: u64 = (1 << 13) - 1;
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
const FILTER_MULTIPLIER: u64 = 0xC2B2_AE3D_27D4_EB4F;
const SLOT_MASK: usize = (1 << tables::SLOT_BITS) - 1;

/// Slot `i` of the table (0, an empty slot, past its end).
#[inline(always)]
fn slot(i: usize) -> u64 {
    SLOTS
        .get(i * 8..i * 8 + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The [`ROOT`] entry of `c` (0: no word starts with it).
#[inline(always)]
fn root_entry(c: char) -> u64 {
    let c = c as usize;
    ROOT.get(c * 8..c * 8 + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// The node of the one-char prefix `c`, and its slot's bits that a walk
/// reads (from 42 up; the key below them is the node's, not the slot's),
/// all from [`ROOT`].
#[inline(always)]
fn root(c: char) -> Option<(usize, u64)> {
    let e = root_entry(c);
    let i = ((e & KEY_MASK) as usize).checked_sub(1)?;
    Some((i, e))
}

/// The slot where the child of `node` by `c` is looked for first.
#[inline(always)]
fn child_home(node: usize, c: char) -> usize {
    let want = ((node as u64 + 1) << CHAR_BITS) | u64::from(c);
    (want.wrapping_mul(MULTIPLIER) >> (64 - tables::SLOT_BITS)) as usize
}

/// How many chars ahead of the walk the graph's first reads are
/// prefetched ([`prefetch_walk`]).
const PREFETCH_AHEAD: usize = 8;

/// How many nodes past the root a prefetched walk asks for.
const PREFETCH_DEPTH: usize = 2;

/// Asks the cache for the slots a walk from `chars[pos]` reads first, the
/// next [`PREFETCH_DEPTH`] nodes' home slots after its root (where they
/// most often are) unless the root's filter rules out the first child,
/// without waiting for them: each
/// walk's reads depend on the one before, so one walk at a time waited
/// out a miss into the 8 MB table per char, where the walks of the next
/// chars could be on their way (issue 37). Only the cache is touched
/// (the root's own bits are in [`ROOT`], read here).
#[inline(always)]
fn prefetch_walk(chars: &[(usize, char)], pos: usize) {
    if let Some(&(_, c)) = chars.get(pos)
        && let Some((mut node, slot)) = root(c)
    {
        let mut ahead = chars
            .get(pos + 1..)
            .unwrap_or_default()
            .iter()
            .take(PREFETCH_DEPTH);
        // The root's filter (in [`ROOT`]) rules out most first children:
        // no read of the 8 MB table is asked for them.
        if let Some(&(_, next)) = ahead.next() {
            if slot & child_bit(next) == 0 {
                return;
            }
            node = child_home(node, next);
            prefetch_index::prefetch_index(SLOTS, node * 8);
        }
        for &(_, next) in ahead {
            node = child_home(node, next);
            prefetch_index::prefetch_index(SLOTS, node * 8);
        }
    }
}

/// The bit of a slot's child filter that a child by `c` sets.
#[inline(always)]
fn child_bit(c: char) -> u64 {
    1u64 << (56 + (u64::from(c).wrapping_mul(FILTER_MULTIPLIER) >> 61))
}

/// The child of node `node` (whose slot is `s`) by `c`.
#[inline(always)]
fn child(node: usize, s: u64, c: char) -> Option<(usize, u64)> {
    // Most walks end at a char no child has: the filter rules that out
    // without a probe into the 8 MB table.
    if s & child_bit(c) == 0 {
        return None;
    }
    let want = ((node as u64 + 1) << CHAR_BITS) | u64::from(c);
    let mut i = child_home(node, c);
    loop {
        let s = slot(i);
        if s == 0 {
            return None;
        }
        if s & KEY_MASK == want {
            return Some((i, s));
        }
        i = (i + 1) & SLOT_MASK;
    }
}

/// `ln(freq)` of each frequency class, computed as jieba-rs does, once.
fn log_freqs() -> &'static [f64] {
    static LOGS: OnceLock<Vec<f64>> = OnceLock::new();
    LOGS.get_or_init(|| {
        FREQS
            .chunks_exact(4)
            .filter_map(|b| b.try_into().ok())
            .map(|b| f64::from(u32::from_le_bytes(b)).ln())
            .collect()
    })
}

/// Whether jieba's default cut takes `c` into a run it segments (its
/// `RE_HAN_DEFAULT`: its CJK ranges, ASCII letters and digits, `+#&._%-`);
/// everything else it hands back one character at a time.
#[inline]
fn in_jieba_run(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || matches!(c, '+' | '#' | '&' | '.' | '_' | '%' | '-')
    } else {
        matches!(c,
            '\u{4E00}'..='\u{9FFF}'
            | '\u{3400}'..='\u{4DBF}'
            | '\u{F900}'..='\u{FAFF}'
            | '\u{20000}'..='\u{2A6DF}'
            | '\u{2A700}'..='\u{2EBEF}'
            | '\u{2F800}'..='\u{2FA1F}')
    }
}

/// A step of the best route from a char: the char it ends before, and
/// the log probability of the rest of the run from here.
#[derive(Clone, Copy)]
struct Step {
    prob: f64,
    end: usize,
}

/// Buffers reused from run to run on a thread.
#[derive(Default)]
struct Scratch {
    /// Byte offset of each char of the run, and the char.
    chars: Vec<(usize, char)>,
    route: Vec<Step>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Whether the dictionary holds `word` (jieba-rs's `has_word`).
#[cfg(test)]
pub(super) fn has_word(word: &str) -> bool {
    let mut chars = word.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    let Some(mut at) = root(first) else {
        return false;
    };
    for c in chars {
        match child(at.0, at.1, c) {
            Some(next) => at = next,
            None => return false,
        }
    }
    (at.1 >> CLASS_SHIFT) & CLASS_MASK != 0
}

/// The words jieba (without HMM) cuts from `run`, a run of its class
/// (every char passes [`in_jieba_run`]), in order.
pub(super) fn cut_run<'a>(run: &'a str, emit: &mut dyn FnMut(&'a str)) {
    cut_run_kept::<true>(run, emit);
}

/// [`cut_run`] without the words of one char, other than single ASCII
/// letters and digits (which are joined): features never take a word of
/// one char (`is_valid_word`), and a Chinese text is cut into many (the
/// route's single Han chars), each a call and a check for nothing.
pub(super) fn cut_run_words<'a>(run: &'a str, emit: &mut dyn FnMut(&'a str)) {
    cut_run_kept::<false>(run, emit);
}

/// [`cut_run`], with the words of one char only if `SINGLES`.
fn cut_run_kept<'a, const SINGLES: bool>(run: &'a str, emit: &mut dyn FnMut(&'a str)) {
    SCRATCH.with(|s| {
        // A re-entrant call (an `emit` that cuts) gets buffers of its own.
        match s.try_borrow_mut() {
            Ok(mut s) => {
                cut_run_with::<SINGLES>(&mut s, run, emit);
                // A thread keeps its buffers, but not those of one huge run
                // (a page-long line of Han text) for the rest of its life.
                if s.chars.capacity() > SCRATCH_KEPT_CHARS {
                    *s = Scratch::default();
                }
            }
            Err(_) => cut_run_with::<SINGLES>(&mut Scratch::default(), run, emit),
        }
    });
}

/// Chars of run whose buffers a thread keeps for the next run (a few MB
/// at most between the buffers).
const SCRATCH_KEPT_CHARS: usize = 1 << 16;

fn cut_run_with<'a, const SINGLES: bool>(s: &mut Scratch, run: &'a str, emit: &mut dyn FnMut(&'a str)) {
    let Scratch { chars, route } = s;
    chars.clear();
    chars.extend(run.char_indices());
    let n = chars.len();
    let logs = log_freqs();
    // The best route, from the end (jieba-rs's `calc`, operation for
    // operation, so that ties fall the same way). Each char's words are
    // walked from the trie as its step is chosen, in the order jieba-rs
    // lists them (shortest first): the routes of the chars after it are
    // known by then, so the graph jieba-rs builds first is never stored
    // (building it and reading it back was a fifth of the cut, issue 37).
    let log_total = (tables::TOTAL_FREQ as f64).ln();
    route.clear();
    route.resize(n + 1, Step { prob: 0.0, end: n });
    for pos in n.saturating_sub(PREFETCH_AHEAD)..n {
        prefetch_walk(chars, pos);
    }
    for idx in (0..n).rev() {
        if let Some(ahead) = idx.checked_sub(PREFETCH_AHEAD) {
            prefetch_walk(chars, ahead);
        }
        let mut best: Option<Step> = None;
        if let Some(mut at) = chars.get(idx).and_then(|&(_, c)| root(c)) {
            let mut end = idx + 1;
            loop {
                let class = ((at.1 >> CLASS_SHIFT) & CLASS_MASK) as usize;
                if let Some(&lf) = class.checked_sub(1).and_then(|c| logs.get(c)) {
                    let prob = lf - log_total + route.get(end).map_or(0.0, |r| r.prob);
                    if best.is_none_or(|b| prob > b.prob || (prob == b.prob && end > b.end)) {
                        best = Some(Step { prob, end });
                    }
                }
                let Some(&(_, c)) = chars.get(end) else { break };
                match child(at.0, at.1, c) {
                    Some(step) => at = step,
                    None => break,
                }
                end += 1;
            }
        }
        let fallback = || Step {
            prob: (0.0 - log_total) + route.get(idx + 1).map_or(0.0, |r| r.prob),
            end: idx + 1,
        };
        let step = best.unwrap_or_else(fallback);
        if let Some(slot) = route.get_mut(idx) {
            *slot = step;
        }
    }
    // The cut: single ASCII letters and digits joined.
    let byte = |i: usize| chars.get(i).map_or(run.len(), |&(b, _)| b);
    let mut x = 0;
    let mut left: Option<usize> = None;
    while x < n {
        let y = route.get(x).map_or(n, |r| r.end);
        if y - x == 1 && chars.get(x).is_some_and(|&(_, c)| c.is_ascii_alphanumeric()) {
            left.get_or_insert(x);
        } else {
            if let Some(start) = left.take() {
                emit(&run[byte(start)..byte(x)]);
            }
            if SINGLES || y - x > 1 {
                emit(&run[byte(x)..byte(y)]);
            }
        }
        x = y;
    }
    if let Some(start) = left {
        emit(&run[byte(start)..]);
    }
}

/// The blocks jieba splits `text` into before it cuts anything: maximal
/// runs of its class ([`in_jieba_run`], `true`) and of everything else
/// (`false`), in order.
///
/// Read on the bytes: ASCII by [`super::LATIN_CLASS`] (non-zero exactly for
/// jieba's ASCII run chars) and Han ([`crate::letters::starts_han`], in
/// runs) from their lead bytes; only other chars are decoded (decoding each was 2.5% of
/// `crawl dedup`'s instructions on the labelled set, issue 37).
pub(super) fn blocks<'a>(text: &'a str, mut each: impl FnMut(&'a str, bool)) {
    let bytes = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    let mut current: Option<bool> = None;
    while let Some(&b) = bytes.get(i) {
        let (matched, len) = match b {
            0x00..=0x7F => (super::LATIN_CLASS[usize::from(b)] != 0, 1),
            0xE4..=0xE9 if crate::letters::starts_han(bytes, i) => (true, 3),
            _ => match text.get(i..).and_then(|s| s.chars().next()) {
                Some(c) => (in_jieba_run(c), c.len_utf8()),
                None => break,
            },
        };
        match current {
            Some(cur) if cur != matched => {
                each(&text[start..i], cur);
                start = i;
                current = Some(matched);
            }
            None => current = Some(matched),
            Some(_) => {}
        }
        i += len;
    }
    if let Some(cur) = current {
        each(&text[start..], cur);
    }
}

/// Every token jieba (without HMM) cuts `text` into, in order: the words
/// of its runs ([`cut_run`]), and each char between them (`\r\n` as one).
pub(super) fn cut<'a>(text: &'a str, emit: &mut dyn FnMut(&'a str)) {
    blocks(text, |block, matched| {
        if matched {
            cut_run(block, emit);
            return;
        }
        let mut i = 0;
        while let Some(c) = block[i..].chars().next() {
            let len = if block[i..].starts_with("\r\n") {
                2
            } else {
                c.len_utf8()
            };
            emit(&block[i..i + len]);
            i += len;
        }
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::jieba;
    use super::*;

    fn ours(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        cut(text, &mut |w| out.push(w));
        out
    }

    /// The char-by-char split [`blocks`] replaced.
    fn blocks_by_chars(text: &str) -> Vec<(&str, bool)> {
        let (mut out, mut rest) = (Vec::new(), text);
        while let Some(first) = rest.chars().next() {
            let matched = in_jieba_run(first);
            let len = rest
                .char_indices()
                .find(|&(_, c)| in_jieba_run(c) != matched)
                .map_or(rest.len(), |(i, _)| i);
            let (block, after) = rest.split_at(len);
            out.push((block, matched));
            rest = after;
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn blocks_split_as_the_char_scan(text in "[a-zA-Z09+#&._%\\- ,;!@中文\u{4e00}\u{4dbf}\u{4dc0}\u{3400}\u{5000}\u{9fff}\u{a000}\u{f900}\u{20000}\u{2a6e0}\u{3042}\u{ff0c}\u{3002}\u{e9}\r\n]{0,30}") {
            let mut got = Vec::new();
            blocks(&text, |b, m| got.push((b, m)));
            proptest::prop_assert_eq!(got, blocks_by_chars(&text));
        }
    }

    #[test]
    fn latin_class_marks_jiebas_ascii_run_chars() {
        for b in 0u8..128 {
            assert_eq!(
                super::super::LATIN_CLASS[usize::from(b)] != 0,
                in_jieba_run(char::from(b)),
                "{b}"
            );
        }
    }

    fn theirs(text: &str) -> Vec<&str> {
        jieba().cut(text, false).into_iter().map(|t| t.word).collect()
    }

    #[test]
    fn the_compiled_dictionary_is_jiebas() {
        use std::io::Read;
        assert_eq!(tables::WORDS, 349_045);
        let gz: &[u8] = include_bytes!("../../data/jieba_dict.txt.gz");
        let mut text = String::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_string(&mut text)
            .unwrap();
        let mut words = 0;
        for w in text.lines().filter_map(|l| l.split_ascii_whitespace().next()) {
            assert!(has_word(w), "{w}");
            assert!(jieba().has_word(w), "{w}");
            // A prefix is a word in both or in neither.
            let prefix: String = w.chars().take(w.chars().count().div_ceil(2)).collect();
            assert_eq!(has_word(&prefix), jieba().has_word(&prefix), "{prefix}");
            words += 1;
        }
        assert_eq!(words, tables::WORDS);
        for w in ["我们的天", "t恤", "卡拉OK", "zzz", ""] {
            assert_eq!(has_word(w), jieba().has_word(w), "{w}");
        }
    }

    #[test]
    fn cuts_manual_text_as_jieba_does() {
        let texts = [
            "南京市长江大桥于今日正式通车，小明硕士毕业于中国科学院计算所，后在日本京都大学深造。",
            "cursors(3tk) tk built-in commands\r\n-cursor 组件选项允许 tk\n编程者改变特定组件的鼠标光标。x_cursor arrow",
            "使用 gcc -o a.out main.c 编译c++程序，c#也可以；版本2.0-rc1，50%的用户",
            "中文abc中文 abc 中文123 t恤衫 卡拉ok厅 T恤衫 卡拉OK厅 a.b_c&d%e-f 𠀀𪛟𪜀 ",
            "長江大橋 繁體中文也一樣切 ｆｕｌｌ ｗｉｄｔｈ　全角",
            "",
            "\r\n\r\n",
        ];
        for t in texts {
            assert_eq!(ours(t), theirs(t), "{t}");
        }
    }

    #[test]
    fn a_huge_run_is_cut_and_its_buffers_let_go() {
        let text = "中华人民共和国".repeat(20_000);
        assert_eq!(ours(&text), theirs(&text));
        let kept = SCRATCH.with(|s| s.borrow().chars.capacity());
        assert!(kept <= SCRATCH_KEPT_CHARS, "{kept}");
        assert_eq!(ours("中国"), ["中国"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn cuts_random_text_as_jieba_does(
            text in "(中国|北京|天气|编程者|组件|光标|长江|大桥|市长|南京市|研究生|生命|起源|T恤|t恤|卡拉OK|4S店|[中文字的了是在不有人这大学生活国家ab1cSO+#&._%\\- \n\r]|\u{3400}|\u{2A6DF}|\u{2A6E0}|\u{2A700}|\u{2F800}|é|ж|。|，){0,60}"
        ) {
            proptest::prop_assert_eq!(ours(&text), theirs(&text));
        }
    }
}
