//! Features: what a document is made of, for SimHash.
//!
//! Two extractors. `words` (the default) segments with jieba, drops stop
//! words and tokens that carry no topic (one character, pure numbers, dates
//! such as `2024年` or `3月`), and weighs each word by term frequency times
//! its IDF from jieba's table, so that rare, topical words steer the
//! fingerprint and common ones barely move it. `shingles` uses overlapping
//! character n-grams, which suits short texts where a handful of words would
//! make a fragile fingerprint. Latin text is lower-cased, so mixed
//! Chinese/English pages work with either.
//!
//! Every script has words ([`Scripts::Unicode`], issue 42): Han through
//! jieba, ASCII through the ASCII word rule, every other script through
//! ICU4X's word segmenter (see `scripts.rs`). And a text that still yields
//! no word (a number, a code, a lone syllable) is fingerprinted from its
//! character trigrams, so that no text with a letter or a digit is left out
//! of the content tier.

mod han_dict;
mod han_runs;
mod idf_table;
mod spaced;

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use jieba_rs::Jieba;
use rustc_hash::FxHashMap;

use crate::same::Word;

use crate::digest::{hex, md5_of};
use crate::fingerprint::Fingerprint;
use crate::hash::{token_hash, token_hash_wide};
use crate::letters;
use crate::scripts;

/// The stop word list shipped with the crate (Chinese function words, then
/// English); `config/stopwords.txt` is the same list for users to edit.
pub const BUNDLED_STOP_WORDS: &str = include_str!("../data/stopwords.txt");

/// The segmenter and the release whose built-in dictionary it uses. Stores
/// record it: another dictionary cuts words differently, so fingerprints
/// would not be comparable. A test checks it against `Cargo.lock`.
pub const SEGMENTER_VERSION: &str = "jieba-rs 0.11";

/// Sentences whose segmentation is recorded (as a digest) next to
/// [`SEGMENTER_VERSION`]: a dictionary or HMM change within one release
/// line shows up as another digest, not only a version bump.
const SEGMENTER_PROBE: &str = "南京市长江大桥于今日正式通车，小明硕士毕业于中国科学院计算所，\
    后在日本京都大学深造。他来到了网易杭研大厦，我们中出了一个叛徒。\
    结婚的和尚未结婚的都去了。工信处女干事每月经过下属科室都要亲口交代24口交换机等技术性器件的安装工作。\
    Mixed 中英文 text with iPhone15 和 COVID-19 疫情。";

/// A digest of the bundled IDF table, recorded by stores: TF x IDF weights
/// decide which words steer a fingerprint.
pub fn idf_digest() -> &'static str {
    idf_table::DIGEST
}

/// [`SEGMENTER_VERSION`] and a digest of how it cuts a fixed probe text
/// (with and without HMM), recorded by stores.
///
/// The cut without HMM is the one fingerprints are made with
/// (`han_dict`, on the compiled dictionary), made here; the cut with HMM is
/// jieba-rs's, kept as a constant (`SEGMENTER_PROBE_HMM_CUT`) that a test compares with
/// the locked jieba-rs: loading jieba-rs's dictionary to cut it again
/// would cost every process that opens a store 0.14 s of CPU.
pub fn segmenter_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut cut = String::new();
        han_dict::cut(SEGMENTER_PROBE, &mut |w| {
            cut.push_str(w);
            cut.push('/');
        });
        cut.push('|');
        cut.push_str(SEGMENTER_PROBE_HMM_CUT);
        cut.push('|');
        format!("{SEGMENTER_VERSION}/{}", hex(&md5_of(&cut)))
    })
}

/// jieba-rs's cut of [`SEGMENTER_PROBE`] with HMM, each token followed by
/// `/` (`tests::the_segmenter_id_is_the_one_stores_recorded` checks it).
const SEGMENTER_PROBE_HMM_CUT: &str = "南京市/长江大桥/于/今日/正式/通车/，/小明/硕士/毕业/于/中国科学院/计算所/，/后/在/日本京都大学/深造/。/\
    他/来到/了/网易/杭研/大厦/，/我们/中出/了/一个/叛徒/。/结婚/的/和/尚未/结婚/的/都/去/了/。/\
    工信处/女干事/每月/经过/下属/科室/都/要/亲口/交代/24/口/交换机/等/技术性/器件/的/安装/工作/。/\
    Mixed/ /中英文/ /text/ /with/ /iPhone15/ /和/ /COVID-19/ /疫情/。/";

/// Which features a document is reduced to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Extractor {
    /// jieba words weighted by TF x IDF.
    #[default]
    Words,
    /// Character n-grams weighted by their count.
    Shingles,
}

/// Where the `words` extractor finds words outside Han text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scripts {
    /// Every script: ICU4X word boundaries for spaced scripts, its
    /// dictionaries for Thai, Lao, Khmer, Burmese and kana, and a stop list
    /// for the languages stopwords-iso covers. What new stores use.
    #[default]
    Unicode,
    /// ASCII words and jieba only, as stores built before issue 42 cut
    /// them: a Russian or Thai page has no words (it still gets the
    /// trigram fingerprint). Chosen by itself when such a store is opened,
    /// so its fingerprints stay comparable.
    Legacy,
}

/// Settings that change which fingerprint a text gets; a store records them
/// and refuses to open with others.
///
/// ```
/// let cfg: simcrawl_dedup::FeatureConfig = Default::default();
/// assert_eq!(cfg.extractor, simcrawl_dedup::Extractor::Words);
/// assert_eq!(cfg.top_n, 0);
/// ```
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeatureConfig {
    /// `words` or `shingles`.
    pub extractor: Extractor,
    /// Keep only the N heaviest words (0 keeps all). Fewer features make the
    /// fingerprint follow the topic and ignore small edits, at the cost of
    /// more false matches between articles on one topic.
    pub top_n: usize,
    /// Characters per shingle for the `shingles` extractor.
    pub shingle_size: usize,
    /// Let jieba's HMM guess words missing from its dictionary (names, new
    /// terms); slower, and rarely changes a fingerprint.
    pub hmm: bool,
    /// A stop word file (one word per line, `#` comments); `None` uses the
    /// bundled list. With [`Scripts::Unicode`] the bundled list of the
    /// other scripts' stop words is added to it.
    pub stop_words: Option<PathBuf>,
    /// Where words come from outside Han text; `None`: what the store
    /// recorded, or [`Scripts::Unicode`] for a new store.
    pub scripts: Option<Scripts>,
}

impl Default for FeatureConfig {
    fn default() -> Self {
        FeatureConfig {
            extractor: Extractor::Words,
            top_n: 0,
            shingle_size: 3,
            hmm: false,
            stop_words: None,
            scripts: None,
        }
    }
}

/// Why features could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum FeatureError {
    /// The stop word file could not be read.
    #[error("cannot read stop words from {path}: {source}")]
    StopWords {
        /// The file named in the configuration.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A setting is out of range.
    #[error("invalid feature setting: {0}")]
    Invalid(String),
}

/// One feature and its weight, as shown by `crawl distance`.
#[derive(Clone, Debug, PartialEq)]
pub struct Feature {
    /// The word or shingle (lower-cased).
    pub token: String,
    /// TF x IDF for words, the count for shingles.
    pub weight: f64,
}

pub use idf_table::IdfTable;

/// The bundled jieba IDF table (compiled in: nothing to load).
///
/// ```
/// let t = simcrawl_dedup::features::jieba_idf();
/// assert!(t.idf("光化学") > t.idf("中国"));
/// ```
pub fn jieba_idf() -> &'static IdfTable {
    &idf_table::TABLE
}

/// Did what a process that signs documents had to do first: start
/// loading jieba's dictionary and the IDF table (0.2 s of CPU between
/// them) on threads of their own. Both are compiled in now (`han_dict`,
/// `idf_table`), so there is nothing left to start early; jieba-rs's own
/// dictionary, which only the `hmm = true` setting uses, loads on its
/// first use. Kept so that embedders' calls still build.
///
/// ```
/// # #![allow(deprecated)]
/// simcrawl_dedup::features::preload();
/// assert!(simcrawl_dedup::features::jieba_idf().idf("光化学") > 0.0);
/// ```
#[deprecated(note = "nothing needs loading: jieba's dictionary and the IDF table are compiled in")]
pub fn preload() {}

/// The shared jieba segmenter: its dictionary takes a noticeable moment to
/// load, so every extractor in the process uses one.
pub fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Turns text into weighted features and fingerprints. Cheap to clone and
/// safe to share between threads.
///
/// ```
/// use simcrawl_dedup::{FeatureConfig, Features};
/// let f = Features::new(FeatureConfig::default()).unwrap();
/// let words: Vec<String> = f.features("今天北京的天气非常好，适合户外运动。").into_iter().map(|x| x.token).collect();
/// assert!(words.contains(&"北京".to_string()));
/// assert!(!words.contains(&"的".to_string()));   // stop word
/// assert!(!words.contains(&"非常".to_string())); // stop word
/// ```
#[derive(Clone, Debug)]
pub struct Features {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: FeatureConfig,
    scripts: Scripts,
    stop_words: StopWords,
    stop_digest: String,
}

/// The stop words, with a filter in front of the set: most words of a
/// text are not stop words, and looking each one up was 2.5% of `crawl
/// dedup`'s instructions on the labelled set (issue 37). A word whose
/// length and first and last bytes ([`stop_key`]) no stop word has is not one,
/// without hashing it.
///
/// The words live in one string, the sorted list joined by newlines that
/// is also digested ([`Features::describe`]), and the set holds their
/// places in it: a `Box<str>` and a `Vec` for each of the ~8,000 bundled
/// words, made at start-up and freed at exit, were a fifth of a
/// one-document `crawl dedup`'s CPU (issue 37).
#[derive(Debug)]
struct StopWords {
    /// The sorted words, one a line (the bundled lists' are compiled in).
    joined: Cow<'static, str>,
    /// The first of the words of each hash ([`stop_hash`]) in `places`.
    /// Compared by [`crate::same::same`] rather than `==` (libc's
    /// `memcmp`, slow on our machines: `crate::same` says why).
    by_hash: FxHashMap<u64, u32>,
    /// Each word's place in `joined` (start, end), and the next word of
    /// the same hash ([`NO_WORD`] after the last).
    places: Vec<(u32, u32, u32)>,
    /// A bit per [`stop_key`], set for each stop word's.
    filter: Vec<u64>,
}

/// Bits of [`StopWords::filter`]: 8 KB.
const STOP_FILTER_BITS: usize = 1 << 16;

/// The filter bit of a word: its byte length and its first two and last
/// two bytes (most of what sets two Chinese words apart is in their
/// continuation bytes), mixed by a multiply.
#[inline]
fn stop_key(w: &str) -> usize {
    let b = w.as_bytes();
    let at = |i: usize| u64::from(b.get(i).copied().unwrap_or(0));
    let n = b.len();
    let packed =
        (n as u64) << 32 | at(0) << 24 | at(1) << 16 | at(n.wrapping_sub(2)) << 8 | at(n.wrapping_sub(1));
    (packed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 48) as usize & (STOP_FILTER_BITS - 1)
}

/// A stop word's key in [`StopWords::by_hash`].
#[inline]
fn stop_hash(w: &str) -> u64 {
    use std::hash::Hasher;
    let mut h = rustc_hash::FxHasher::default();
    h.write(w.as_bytes());
    h.finish()
}

mod stop_list {
    include!("features/stop_list.rs");
}
use stop_list::stop_word_list;

/// The bundled stop words read at build time (build.rs), joined by
/// newlines: the list alone, and with the list of other scripts.
static STOP_WORDS_BUNDLED: &str = include_str!(concat!(env!("OUT_DIR"), "/stop_words_bundled.txt"));
static STOP_WORDS_UNICODE: &str = include_str!(concat!(env!("OUT_DIR"), "/stop_words_unicode.txt"));

impl StopWords {
    /// The set of the words of `joined`, one a line (sorted, without
    /// repeats: [`stop_word_list`]).
    fn new(joined: Cow<'static, str>) -> Self {
        let mut filter = vec![0u64; STOP_FILTER_BITS / 64];
        let mut places: Vec<(u32, u32, u32)> = Vec::with_capacity(joined.len() / 8);
        let mut by_hash: FxHashMap<u64, u32> = FxHashMap::default();
        by_hash.reserve(joined.len() / 8);
        let mut start = 0usize;
        for w in joined.split('\n') {
            let end = start + w.len();
            // A list of 4 GB does not fit a `u32`: such a word is left out.
            if let (false, Ok(s), Ok(e), Ok(i)) = (
                w.is_empty(),
                u32::try_from(start),
                u32::try_from(end),
                u32::try_from(places.len()),
            ) {
                let k = stop_key(w);
                if let Some(slot) = filter.get_mut(k / 64) {
                    *slot |= 1 << (k % 64);
                }
                // A second word of one hash goes first in its chain.
                let next = by_hash.insert(stop_hash(w), i).unwrap_or(NO_WORD);
                places.push((s, e, next));
            }
            start = end + 1;
        }
        StopWords {
            joined,
            by_hash,
            places,
            filter,
        }
    }

    #[inline]
    fn contains(&self, w: &str) -> bool {
        let k = stop_key(w);
        self.filter.get(k / 64).is_some_and(|f| f & (1 << (k % 64)) != 0)
            && self.by_hash.get(&stop_hash(w)).is_some_and(|&first| {
                let mut at = first;
                while let Some(&(s, e, next)) = self.places.get(at as usize) {
                    if self
                        .joined
                        .as_bytes()
                        .get(s as usize..e as usize)
                        .is_some_and(|b| crate::same::same(b, w.as_bytes()))
                    {
                        return true;
                    }
                    at = next;
                }
                false
            })
    }
}

/// The end of a chain of [`StopWords::places`].
const NO_WORD: u32 = u32::MAX;

impl Features {
    /// Builds an extractor, reading the stop word file if one is configured.
    pub fn new(config: FeatureConfig) -> Result<Features, FeatureError> {
        if config.extractor == Extractor::Shingles && !(1..=16).contains(&config.shingle_size) {
            return Err(FeatureError::Invalid(format!(
                "shingle_size must be between 1 and 16, got {}",
                config.shingle_size
            )));
        }
        let scripts = config.scripts.unwrap_or_default();
        let every_script = scripts == Scripts::Unicode && config.extractor == Extractor::Words;
        let joined = match &config.stop_words {
            None if every_script => Cow::Borrowed(STOP_WORDS_UNICODE),
            None => Cow::Borrowed(STOP_WORDS_BUNDLED),
            Some(path) => {
                let mut list = read_file(path)?;
                if every_script {
                    list.push('\n');
                    list.push_str(scripts::MULTI_STOP_WORDS);
                }
                Cow::Owned(stop_word_list(&list).join("\n"))
            }
        };
        let stop_words = StopWords::new(joined);
        let stop_digest = hex(&md5_of(&stop_words.joined));
        Ok(Features {
            inner: Arc::new(Inner {
                config,
                scripts,
                stop_words,
                stop_digest,
            }),
        })
    }

    /// The settings this extractor was built with.
    pub fn config(&self) -> &FeatureConfig {
        &self.inner.config
    }

    /// Where words come from outside Han text (resolved: never `None`).
    pub fn scripts(&self) -> Scripts {
        self.inner.scripts
    }

    /// A one-line description of everything that affects fingerprints,
    /// recorded by stores (the stop words enter as a digest of the list).
    /// [`Scripts::Legacy`] describes itself as stores did before there was
    /// a choice, so they open unchanged.
    pub fn describe(&self) -> String {
        let c = &self.inner.config;
        match (c.extractor, self.inner.scripts) {
            (Extractor::Words, Scripts::Legacy) => format!(
                "words(top_n={},hmm={},stop_words={})",
                c.top_n, c.hmm, self.inner.stop_digest
            ),
            (Extractor::Words, Scripts::Unicode) => format!(
                "words(top_n={},hmm={},stop_words={},scripts=unicode/{},fallback=char3)",
                c.top_n,
                c.hmm,
                self.inner.stop_digest,
                scripts::unicode_segmenter_id()
            ),
            (Extractor::Shingles, _) => format!("shingles(n={},stop_words=none)", c.shingle_size),
        }
    }

    /// The weighted features of `text`, heaviest first (ties by token, so
    /// the order is deterministic).
    pub fn features(&self, text: &str) -> Vec<Feature> {
        let mut out = Vec::new();
        self.for_each_feature(text, |t, w| {
            out.push(Feature {
                token: t.to_string(),
                weight: w,
            })
        });
        out.sort_by(|a, b| b.weight.total_cmp(&a.weight).then_with(|| a.token.cmp(&b.token)));
        out
    }

    /// The SimHash of `text`; `None` only when the text has no letter or
    /// digit. A text without words (only stop words or numbers) is
    /// fingerprinted from its character trigrams, so it is still compared.
    ///
    /// ```
    /// use simcrawl_dedup::{FeatureConfig, Features};
    /// let f = Features::new(FeatureConfig::default()).unwrap();
    /// let a = f.fingerprint("国务院总理李强主持召开国务院常务会议，研究部署进一步优化营商环境的政策措施").unwrap();
    /// let b = f.fingerprint("国务院总理李强主持召开国务院常务会议，研究部署进一步优化营商环境的相关政策措施").unwrap();
    /// assert!(a.distance(b) <= 3);
    /// assert!(f.fingerprint("的 了 2024年 3月").is_some()); // trigrams
    /// assert_eq!(f.fingerprint("，。！"), None);
    /// ```
    pub fn fingerprint(&self, text: &str) -> Option<Fingerprint> {
        self.fingerprint_counted(text).0
    }

    /// [`Features::fingerprint`] and how many features it was made of: a
    /// verdict that rests on a handful of features says little about the
    /// page, and callers that explain verdicts show it.
    ///
    /// ```
    /// use simcrawl_dedup::{FeatureConfig, Features};
    /// let f = Features::new(FeatureConfig::default()).unwrap();
    /// let text = "开放数据 政府信息公开 开放数据";
    /// let (fp, n) = f.fingerprint_counted(text);
    /// assert_eq!(fp, f.fingerprint(text));
    /// assert_eq!(n, f.features(text).len());
    /// assert!(n >= 2, "{n}");
    /// assert_eq!(f.fingerprint_counted("，。"), (None, 0));
    /// ```
    pub fn fingerprint_counted(&self, text: &str) -> (Option<Fingerprint>, usize) {
        self.fingerprint_counted_bits(text, 64)
    }

    /// [`Features::fingerprint_counted`] at `bits` = 64 or 128 (any other
    /// width is 64: [`crate::DedupConfig::bits`] is checked where it is
    /// read). A 128-bit fingerprint's low half is the 64-bit one.
    ///
    /// ```
    /// use simcrawl_dedup::{FeatureConfig, Features};
    /// let f = Features::new(FeatureConfig::default()).unwrap();
    /// let text = "开放数据 政府信息公开 开放数据";
    /// let (wide, n) = f.fingerprint_counted_bits(text, 128);
    /// let (narrow, m) = f.fingerprint_counted(text);
    /// assert_eq!((wide.unwrap().low(), n), (narrow.unwrap().low(), m));
    /// assert_eq!(wide.unwrap().bits(), 128);
    /// ```
    pub fn fingerprint_counted_bits(&self, text: &str, bits: u32) -> (Option<Fingerprint>, usize) {
        if bits == 128 {
            self.simhash(text, token_hash_wide, Fingerprint::from_hashed_wide)
        } else {
            self.simhash(text, token_hash, Fingerprint::from_hashed)
        }
    }

    /// The SimHash of `text`'s features hashed by `hash` and voted by
    /// `vote`, and how many features there were.
    fn simhash<H>(
        &self,
        text: &str,
        hash: impl Fn(&str) -> H,
        vote: impl FnOnce(Vec<(H, f64)>) -> Fingerprint,
    ) -> (Option<Fingerprint>, usize) {
        let mut hashed: Vec<(H, f64)> = Vec::new();
        self.for_each_feature(text, |t, w| hashed.push((hash(t), w)));
        let n = hashed.len();
        ((n > 0).then(|| vote(hashed)), n)
    }

    fn for_each_feature(&self, text: &str, mut emit: impl FnMut(&str, f64)) {
        let lowered;
        let text = if has_upper(text) {
            lowered = text.to_lowercase();
            lowered.as_str()
        } else {
            text
        };
        let mut n = 0usize;
        let mut counted = |t: &str, w: f64| {
            n += 1;
            emit(t, w);
        };
        match self.inner.config.extractor {
            Extractor::Words => self.words(text, &mut counted),
            Extractor::Shingles => shingles(text, self.inner.config.shingle_size, &mut counted),
        }
        // No word at all (a number, a code, a syllable, a script nothing
        // cuts): the character trigrams still place the text, so the content
        // tier checks it rather than keeping it unseen (issue 42). Texts
        // that have words are unchanged, so existing indexes stay valid.
        if n == 0 {
            shingles(text, FALLBACK_SHINGLE, &mut emit);
        }
    }

    fn words<'t>(&self, text: &'t str, emit: &mut dyn FnMut(&str, f64)) {
        let idf = jieba_idf();
        // Keyed by `Word`: the order of `&str` keys, compared in place.
        // Each word's count and its IDF hash, taken when the word is first
        // seen ([`IdfTable::hash_of`]).
        let mut tf: FxHashMap<Word<'t>, (u32, u64)> = FxHashMap::default();
        let mut count = |w: &'t str| {
            if is_valid_word(w) && !self.inner.stop_words.contains(w) {
                match tf.entry(Word(w)) {
                    Entry::Occupied(mut seen) => seen.get_mut().0 += 1,
                    Entry::Vacant(new) => {
                        new.insert((1, idf.hash_of(w)));
                    }
                }
            }
        };
        let every_script = self.inner.scripts == Scripts::Unicode && !text.is_ascii();
        if self.inner.config.hmm || has_han(text) {
            // jieba hands other scripts back one character at a time: their
            // words are counted after jieba's.
            if self.inner.config.hmm {
                for token in jieba().cut(text, true) {
                    count(token.word);
                }
                if every_script {
                    scripts::foreign_runs(text, |run| scripts::unicode_words(run, &mut count));
                }
            } else {
                let mut others = Vec::new();
                han_runs::han_text_words_and_others(text, &mut count, every_script.then_some(&mut others));
                for between in others {
                    scripts::foreign_runs(between, |run| scripts::unicode_words(run, &mut count));
                }
            }
        } else if every_script {
            spaced::every_script_words(text, &mut count);
        } else {
            latin_words(text, &mut count);
        }
        let mut weighted: Vec<(&str, f64)> = Vec::with_capacity(tf.len());
        let mut hashes: Vec<u64> = Vec::with_capacity(tf.len());
        for (w, (n, h)) in tf {
            weighted.push((w.0, f64::from(n)));
            hashes.push(h);
        }
        idf.weigh_hashed(&mut weighted, &hashes);
        let top_n = self.inner.config.top_n;
        if top_n > 0 && weighted.len() > top_n {
            let by_weight = |a: &(&str, f64), b: &(&str, f64)| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0));
            weighted.select_nth_unstable_by(top_n - 1, by_weight);
            weighted.truncate(top_n);
        }
        for (w, weight) in weighted {
            emit(w, weight);
        }
    }
}

/// Characters per shingle of the fingerprint of a text without words.
const FALLBACK_SHINGLE: usize = 3;

fn shingles(text: &str, n: usize, emit: &mut dyn FnMut(&str, f64)) {
    // Only letters and digits take part, so punctuation and spacing
    // differences between copies do not change the shingles.
    let kept: String = text.chars().filter(|&c| letters::is_alphanumeric(c)).collect();
    let starts: Vec<usize> = kept.char_indices().map(|(i, _)| i).chain([kept.len()]).collect();
    let mut counts: FxHashMap<&str, u32> = FxHashMap::default();
    if starts.len() <= n {
        if !kept.is_empty() {
            counts.insert(&kept, 1);
        }
    } else {
        for w in starts.windows(n + 1) {
            *counts.entry(&kept[w[0]..w[n]]).or_insert(0) += 1;
        }
    }
    for (s, c) in counts {
        emit(s, f64::from(c));
    }
}

/// Whether jieba would see any Han character in `text` (its CJK ranges):
/// text without one takes [`latin_words`].
///
/// Read on the bytes: a Han char's UTF-8 starts with 0xE3..=0xE9, 0xEF or
/// 0xF0, and only there is a char decoded, and ASCII is passed eight bytes
/// at a time, so a manual page's long ASCII stretches cost little (decoding
/// every char before the first Han one was 2% of `crawl dedup`'s CPU on the
/// labelled set, issue 37).
fn has_han(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b < 0x80 {
            i = scripts::skip_ascii(bytes, i + 1);
            continue;
        }
        if matches!(b, 0xE3..=0xE9 | 0xEF | 0xF0)
            && text
                .get(i..)
                .and_then(|s| s.chars().next())
                .is_some_and(scripts::is_han)
        {
            return true;
        }
        i += 1;
    }
    false
}

/// The words jieba (without HMM) cuts from text that holds no Han
/// character, in the same order, found without its dictionary walk:
/// jieba builds its word graph one letter at a time, and skipping it cut
/// the crawl's CPU per page by 9.5% on LibreOffice's help (two thirds of it
/// English) and batch time by 9% on the labelled set (issue 28,
/// docs/BENCHMARKS.md).
///
/// Why it is the same cut: jieba cuts only runs of ASCII letters, digits
/// and `+#&._%-` (its "Han" class, Han characters aside). In such a run it
/// joins consecutive letters and digits into one word and leaves every
/// other character a word of its own, unless a dictionary word spans
/// several characters. The only such words of lower-case ASCII in its
/// dictionary are `c#` and `c++`, so a run holding `+` or `#` goes to
/// jieba itself. What jieba emits outside those runs is one character at a
/// time, which [`is_valid_word`] drops anyway; so are the lone `&._%-`.
/// `tests::latin_words_cut_as_jieba_does` compares both on random text.
///
/// Both scans read a byte's class from [`LATIN_CLASS`] (a run's end, then
/// its words): a chain of compares a byte, and `str::split` over the chars
/// of every run, were 5% of `crawl dedup`'s instructions on the labelled
/// set (issue 37).
fn latin_words<'a>(text: &'a str, emit: &mut dyn FnMut(&'a str)) {
    let bytes = text.as_bytes();
    let class = |i: usize| bytes.get(i).map_or(0, |&b| LATIN_CLASS[usize::from(b)]);
    let mut i = 0;
    while i < bytes.len() {
        if class(i) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        // A bit per class the run holds.
        let mut classes = 0u8;
        while let k @ 1.. = class(i) {
            classes |= 1 << k;
            i += 1;
        }
        // Run boundaries are ASCII bytes, so they are char boundaries.
        let Some(run) = text.get(start..i) else { return };
        if classes & 1 << PLUS_OR_HASH != 0 {
            han_dict::cut_run(run, emit);
        } else if classes == 1 << ALNUM {
            // Letters and digits only (most words of prose): the run is
            // the one word `ascii_words` would find, without a second
            // pass over it.
            if run.len() >= 2 {
                emit(run);
            }
        } else {
            ascii_words(run, emit);
        }
    }
}

/// Classes of bytes for [`latin_words`] and [`ascii_words`]: 0 outside
/// jieba's runs (non-ASCII bytes among them), [`ALNUM`] for ASCII letters
/// and digits, [`PLUS_OR_HASH`] for `+` and `#`, 2 for `&._%-`.
const LATIN_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if c.is_ascii_alphanumeric() {
            ALNUM
        } else if c == b'+' || c == b'#' {
            PLUS_OR_HASH
        } else if matches!(c, b'&' | b'.' | b'_' | b'%' | b'-') {
            2
        } else {
            0
        };
        b += 1;
    }
    t
};
const ALNUM: u8 = 1;
const PLUS_OR_HASH: u8 = 3;

/// The runs of ASCII letters and digits of two chars or more in `text`:
/// jieba's cut of a run without `+` or `#` ([`latin_words`]), and the
/// segmenter's of a field of ASCII only (`spaced::every_script_words`).
/// Any other byte, non-ASCII ones too, ends a run (the words of
/// `text.split(|c: char| !c.is_ascii_alphanumeric())` two bytes long or
/// more, found on the bytes).
///
/// Eight bytes at a time ([`alnum_bits`]): each run's start and end are
/// found from the bits of the bytes that are letters or digits, where a
/// byte at a time took two tests a byte; English text with a few chars
/// beyond ASCII comes here whole, and the loop was 1.5% of `crawl dedup`'s
/// CPU on the labelled set (issue 37).
fn ascii_words<'a>(text: &'a str, emit: &mut dyn FnMut(&'a str)) {
    let bytes = text.as_bytes();
    let mut word: Option<usize> = None;
    let mut emit_word = |start: usize, end: usize| {
        if end - start >= 2
            && let Some(w) = text.get(start..end)
        {
            emit(w);
        }
    };
    let mut at = 0;
    while let Some(Ok(chunk)) = bytes.get(at..at + 8).map(<[u8; 8]>::try_from) {
        let alnum = alnum_bits(u64::from_le_bytes(chunk));
        // From `from` on, the next start of a word, then its end, and so
        // on until neither is in this chunk.
        let mut from = 0u32;
        loop {
            match word {
                Some(start) => {
                    let ends = !alnum & (0xFF << from) & 0xFF;
                    if ends == 0 {
                        break;
                    }
                    from = ends.trailing_zeros();
                    emit_word(start, at + from as usize);
                    word = None;
                }
                None => {
                    let starts = alnum & (0xFF << from) & 0xFF;
                    if starts == 0 {
                        break;
                    }
                    from = starts.trailing_zeros();
                    word = Some(at + from as usize);
                }
            }
        }
        at += 8;
    }
    for (i, &b) in bytes.iter().enumerate().skip(at) {
        match (word, LATIN_CLASS[usize::from(b)] == ALNUM) {
            (None, true) => word = Some(i),
            (Some(start), false) => {
                emit_word(start, i);
                word = None;
            }
            _ => {}
        }
    }
    if let Some(start) = word {
        emit_word(start, bytes.len());
    }
}

/// Bit `i` set for each byte `i` (little-endian) of `x` that is an ASCII
/// letter or digit. Each byte is compared with the ranges' ends by an add
/// or a subtract whose result stays within the byte (its top bit cleared
/// first), so no carry crosses to the next; the results' top bits are then
/// gathered by a multiply.
#[inline(always)]
fn alnum_bits(x: u64) -> u32 {
    const fn each(b: u8) -> u64 {
        u64::from_ne_bytes([b; 8])
    }
    let ascii = !x & each(0x80);
    let low = x & each(0x7F);
    let folded = low | each(0x20);
    let letter = (folded + each(0x80 - b'a')) & (each(0x80 + b'z') - folded);
    let digit = (low + each(0x80 - b'0')) & (each(0x80 + b'9') - low);
    let top = (letter | digit) & ascii;
    // Bit 7 of byte i to bit 56 + i.
    (((top >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56) as u32
}

/// A word carries topic only if it has at least two characters, at least one
/// letter, and is not a date or a number with a unit of time. Inlined into
/// the one caller that runs on every word (a call each was 1% of `crawl
/// dedup`'s instructions, issue 37).
#[inline(always)]
fn is_valid_word(w: &str) -> bool {
    // Most words are ASCII (a manual's commands and options, English): one
    // with a letter is never a date, whose chars are digits and `-/.:`.
    if w.is_ascii() {
        return w.len() >= 2 && w.bytes().any(|b| b.is_ascii_alphabetic());
    }
    // Most others are Chinese: one of two chars or more that starts with an
    // ideograph other than a date unit is a letter and never a date.
    if w.len() > 3
        && let Some(c) = w.chars().next()
        && is_cjk(c)
        && !is_date_unit(c)
    {
        return true;
    }
    let mut chars = 0usize;
    let mut letters = 0usize;
    for c in w.chars() {
        chars += 1;
        if is_cjk(c) || letters::is_alphabetic(c) {
            letters += 1;
        }
    }
    if chars < 2 || letters == 0 {
        return false;
    }
    !is_date_like(w)
}

/// CJK Unified Ideographs: letters, decided without `char`'s slow Unicode
/// table walk (the bulk of Chinese text).
fn is_cjk(c: char) -> bool {
    ('\u{4E00}'..='\u{9FFF}').contains(&c)
}

/// Whether `text` has an upper-case char ([`is_upper`]), read on the bytes:
/// only a byte that may start one is looked at ([`may_start_upper`]: `A`
/// to `Z`, and the lead bytes of U+0080 to U+2FFF and U+A000 up; CJK
/// punctuation, kana and Han, U+3000 to U+9FFF, have no case), and 32
/// bytes without such a byte are passed at once, compared in vector code.
/// The crawl's and `crawl dedup`'s texts come lower-cased by the cleaner,
/// so the scan always runs to the end: byte by byte it was 2% of `crawl
/// dedup`'s instructions, then eight ASCII bytes at a time (but a Chinese
/// text a char at a time) 1.5% of its samples (issue 37).
fn has_upper(text: &str) -> bool {
    const BLOCK: usize = 32;
    let bytes = text.as_bytes();
    let mut i = 0;
    loop {
        while let Some(block) = bytes.get(i..i + BLOCK) {
            if block.iter().fold(false, |found, &b| found | may_start_upper(b)) {
                break;
            }
            i += BLOCK;
        }
        let Some(at) = bytes
            .get(i..)
            .and_then(|rest| rest.iter().position(|&b| may_start_upper(b)))
            .map(|k| i + k)
        else {
            return false;
        };
        // `A` to `Z`, or a char led by the byte (every byte of the set
        // beyond ASCII is a lead byte).
        let Some(c) = text.get(at..).and_then(|s| s.chars().next()) else {
            return false;
        };
        if is_upper(c) {
            return true;
        }
        i = at + c.len_utf8();
    }
}

/// Whether `b` may start an upper-case char: `A` to `Z`, or a lead byte
/// of U+0080 to U+2FFF (0xC2 to 0xE2) or of U+A000 up (0xEA to 0xF4).
#[inline(always)]
fn may_start_upper(b: u8) -> bool {
    (b.wrapping_sub(b'A') < 26)
        | (b.wrapping_sub(0xC2) <= 0xE2 - 0xC2)
        | (b.wrapping_sub(0xEA) <= 0xF4 - 0xEA)
}

/// `char::is_uppercase` with fast answers for ASCII and CJK, which have
/// no case beyond `A-Z`.
fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_uppercase()
    } else {
        !is_cjk(c) && c.is_uppercase()
    }
}

/// The ideographs of a date or time after its digits ([`is_date_like`]).
fn is_date_unit(c: char) -> bool {
    matches!(c, '年' | '月' | '日' | '号' | '时' | '点' | '分' | '秒')
}

/// `2024年`, `3月`, `15日`, `10点`, `2024年3月`: digits followed by date units.
fn is_date_like(w: &str) -> bool {
    let mut saw_digit = false;
    for c in w.chars() {
        if c.is_ascii_digit() || ('０'..='９').contains(&c) {
            saw_digit = true;
        } else if !(is_date_unit(c) || matches!(c, '-' | '/' | '.' | ':')) {
            return false;
        }
    }
    saw_digit
}

fn read_file(path: &Path) -> Result<String, FeatureError> {
    let file = std::fs::File::open(path).map_err(|source| FeatureError::StopWords {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = String::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(|source| FeatureError::StopWords {
            path: path.to_path_buf(),
            source,
        })?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
