#![allow(clippy::unwrap_used)]
use super::*;

fn words(text: &str) -> Vec<String> {
    Features::new(FeatureConfig::default())
        .unwrap()
        .features(text)
        .into_iter()
        .map(|f| f.token)
        .collect()
}

/// What jieba alone gives: the reference the faster word paths are
/// compared with (here and in `han_runs`).
pub(super) fn jieba_valid_words(text: &str) -> Vec<&str> {
    jieba()
        .cut(text, false)
        .into_iter()
        .map(|t| t.word)
        .filter(|w| is_valid_word(w))
        .collect()
}

/// The valid words a faster word path `cut` emits for `text`: what is
/// compared with [`jieba_valid_words`].
pub(super) fn valid_words<'a>(cut: fn(&'a str, &mut dyn FnMut(&'a str)), text: &'a str) -> Vec<&'a str> {
    let mut out = Vec::new();
    cut(text, &mut |w| {
        if is_valid_word(w) {
            out.push(w);
        }
    });
    out
}

fn fast_valid_words(text: &str) -> Vec<&str> {
    valid_words(latin_words, text)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    // The characters jieba treats specially (its run class, the ones
    // its ASCII dictionary words are made of) and others around them.
    #[test]
    fn latin_words_cut_as_jieba_does(text in "[act+#&._%\\- 0-9é\u{00a0}\nxyzα/]{0,40}") {
        proptest::prop_assert!(!has_han(&text));
        proptest::prop_assert_eq!(fast_valid_words(&text), jieba_valid_words(&text));
    }
}

#[test]
fn latin_words_cut_prose_and_code_as_jieba_does() {
    let texts = [
        "the quick brown fox jumps over the lazy dog; don't stop-words.",
        "install c++ and c# (v2.0), run `make -j4 && ./a.out` at 50% at&t",
        "élan vital, naïve café — über straße, 1990s-era e-mail user_name@example.com",
        "переход на новую версию python3.11 и rust 1.95",
        "x++ y## c+ +c c#c c++c ++c #c",
    ];
    for t in texts {
        assert_eq!(fast_valid_words(t), jieba_valid_words(t), "{t}");
    }
    assert!(has_han("abc 中 def"));
    assert!(has_han("\u{20001}"));
    assert!(!has_han("abc ü ж"));
    // Same features and fingerprint through either path.
    let f = Features::new(FeatureConfig::default()).unwrap();
    let text = "Release notes: the C++ compiler and c# bindings now build on ARM64; see docs/build.md.";
    let mut via_jieba: FxHashMap<String, u32> = FxHashMap::default();
    for w in jieba_valid_words(&text.to_lowercase()) {
        *via_jieba.entry(w.to_string()).or_insert(0) += 1;
    }
    let feats = f.features(text);
    assert!(
        feats.iter().any(|x| x.token == "c++") && feats.iter().any(|x| x.token == "arm64"),
        "{feats:?}"
    );
    for x in &feats {
        assert!(via_jieba.contains_key(&x.token), "{} not cut by jieba", x.token);
    }
}

#[test]
fn has_han_finds_what_a_scan_of_the_chars_finds() {
    // Every char whose lead byte the scan skips is not Han.
    let skipped = |c: char| {
        let mut b = [0u8; 4];
        !matches!(c.encode_utf8(&mut b).as_bytes()[0], 0xE3..=0xE9 | 0xEF | 0xF0)
    };
    let missed: Vec<char> = (0..=0x10FFFFu32)
        .filter_map(char::from_u32)
        .filter(|&c| skipped(c) && scripts::is_han(c))
        .collect();
    assert!(missed.is_empty(), "{missed:?}");
    for t in [
        "",
        "abc",
        "man 1 ls",
        "é ж ありがとう 한국어",
        "abc中",
        "\u{3400}",
        "\u{4DBF}x",
        "\u{33FF}\u{4DC0}\u{9FFF}",
        "\u{F900}",
        "\u{FB00}\u{2EBF0}",
        "\u{20000}",
        "\u{2FA1F}",
        "ＡＢＣ、。",
    ] {
        assert_eq!(has_han(t), t.chars().any(scripts::is_han), "{t:?}");
    }
}

#[test]
fn has_upper_finds_what_a_scan_of_the_chars_finds() {
    // No char the byte scan skips has a case.
    let cased: Vec<char> = ('\u{3000}'..='\u{9FFF}').filter(|c| c.is_uppercase()).collect();
    assert!(cased.is_empty(), "{cased:?}");
    for t in [
        "abc",
        "abC",
        "中文Ａ",
        "中文ａ",
        "Ωmega",
        "ωmega",
        "\u{1D400}",
        "ⓐⒶ",
        "é中É",
        "",
        "a long line of lower-case ascii text, then Upper",
        "a long line of lower-case ascii text, then é and É",
        "exactly sixteen!exactly sixteen!",
        "exactly sixteen!exactly sixteen!Z",
        "@[`{ around the capitals, sixteen and more",
    ] {
        assert_eq!(has_upper(t), t.chars().any(is_upper), "{t}");
    }
    assert!(has_upper("中文 Ж"));
    assert!(!has_upper("中文 ж 〇"));
    // Blocks of 32 bytes passed whole, and the bytes after the last one.
    let lower = "中文字符 and lower-case words, 〇 ".repeat(9);
    for tail in ["", "z", "Z", "é", "É", "Ⓐ", "\u{1D400}", "ｚ", "Ｚ"] {
        for t in [
            format!("{lower}{tail}"),
            format!("{tail}{lower}"),
            format!("{lower}{tail}{lower}"),
        ] {
            assert_eq!(has_upper(&t), t.chars().any(is_upper), "{t}");
        }
    }
}

proptest::proptest! {
    #[test]
    fn has_upper_finds_what_a_scan_of_random_text_finds(t in "[ -~]{0,40}|[a-z@\\[`{ 中é]{0,30}[A-ZÉ]?[a-z ]{0,20}") {
        proptest::prop_assert_eq!(has_upper(&t), t.chars().any(is_upper), "{:?}", t);
    }
}

/// The stop words as they were read before [`stop_word_list`]: every
/// line lower-cased into a `String`, in a `BTreeSet`.
fn stop_words_by_set(list: &str) -> Vec<String> {
    let set: std::collections::BTreeSet<String> = list
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    set.into_iter().collect()
}

proptest::proptest! {
    /// The words, their order and so the digest stores record are those
    /// of the set: upper case (a title-case `ǅ`, a final `Σ`), comments,
    /// blanks and repeats among them.
    #[test]
    fn stop_words_are_read_as_the_set_read_them(list in "([ a-zA-Zé中ǅǄΣσς#\\t]{0,6}\n){0,30}") {
        let ours: Vec<String> = stop_word_list(&list).into_iter().map(|w| w.into_owned()).collect();
        proptest::prop_assert_eq!(&ours, &stop_words_by_set(&list));
        let set = StopWords::new(Cow::Owned(ours.join("\n")));
        for w in &ours {
            proptest::prop_assert!(set.contains(w), "{:?}", w);
        }
    }
}

/// The lists read at build time are those a configured file of the same
/// words gives: for the words extractor of every script (the default),
/// and for the others.
#[test]
fn the_bundled_stop_words_are_read_as_the_set_read_them() {
    let every_script = format!("{BUNDLED_STOP_WORDS}\n{}", scripts::MULTI_STOP_WORDS);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stop.txt");
    std::fs::write(&file, BUNDLED_STOP_WORDS).unwrap();
    let legacy = FeatureConfig {
        scripts: Some(Scripts::Legacy),
        ..FeatureConfig::default()
    };
    for (config, list) in [
        (FeatureConfig::default(), every_script.as_str()),
        (legacy, BUNDLED_STOP_WORDS),
    ] {
        let bundled = Features::new(config.clone()).unwrap();
        assert_eq!(
            bundled.inner.stop_words.joined,
            stop_words_by_set(list).join("\n")
        );
        let from_file = Features::new(FeatureConfig {
            stop_words: Some(file.clone()),
            ..config
        })
        .unwrap();
        assert_eq!(bundled.describe(), from_file.describe());
        assert_eq!(bundled.inner.stop_words.joined, from_file.inner.stop_words.joined);
    }
}

#[test]
fn the_stop_word_filter_passes_every_stop_word() {
    let f = Features::new(FeatureConfig::default()).unwrap();
    let stop = &f.inner.stop_words;
    let all: Vec<&str> = stop.joined.lines().collect();
    assert!(all.len() > 500, "{}", all.len());
    for w in &all {
        assert!(stop.contains(w), "{w}");
        // A longer word the map does not hold is not taken for it.
        assert!(
            !stop.contains(&format!("{w}x")) || all.contains(&&*format!("{w}x")),
            "{w}x"
        );
    }
    // Words that are not stop words, filtered out or looked up: never in.
    let mut filtered = 0;
    for w in [
        "rust",
        "compiler",
        "长江",
        "manual",
        "kernel",
        "xyzzy",
        "中华人民共和国",
    ] {
        assert!(!all.contains(&w) && !stop.contains(w), "{w}");
        let k = stop_key(w);
        filtered += usize::from(stop.filter[k / 64] & (1 << (k % 64)) == 0);
    }
    assert!(
        filtered >= 4,
        "the filter lets nearly everything through: {filtered}"
    );
}

#[test]
fn alnum_bits_mark_the_ascii_letters_and_digits_of_every_byte_at_every_place() {
    for b in 0..=255u8 {
        for place in 0..8 {
            // The byte among bytes of every other kind around it.
            for fill in [b' ', b'a', 0xE4, b'9'] {
                let mut word = [fill; 8];
                word[place] = b;
                let bits = alnum_bits(u64::from_le_bytes(word));
                for (i, &x) in word.iter().enumerate() {
                    assert_eq!(
                        bits >> i & 1 == 1,
                        x.is_ascii_alphanumeric(),
                        "{b:#x} at {place} in {fill:#x}"
                    );
                }
                assert_eq!(bits >> 8, 0);
            }
        }
    }
}

proptest::proptest! {
    #[test]
    fn ascii_words_are_the_split_of_before(t in "[ -~]{0,100}|[a-c0-9 .+é中\u{a0}]{0,60}|([a-z]{1,12}[ .,-]{1,2}){0,12}") {
        let mut ours = Vec::new();
        ascii_words(&t, &mut |w| ours.push(w));
        let theirs: Vec<&str> = t.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 2).collect();
        proptest::prop_assert_eq!(ours, theirs);
    }
}

/// The rule spelled out char by char, as it stood before ASCII words
/// took a shortcut.
fn valid_by_chars(w: &str) -> bool {
    let chars = w.chars().count();
    let letters = w
        .chars()
        .filter(|&c| is_cjk(c) || letters::is_alphabetic(c))
        .count();
    chars >= 2 && letters > 0 && !is_date_like(w)
}

proptest::proptest! {
    #[test]
    fn ascii_words_are_judged_as_char_by_char(w in "[a-z0-9\\-/.:_+#%&]{0,6}|[0-9年月日号时点分秒中国\u{ff11}\u{3042}é\\-:]{0,4}") {
        proptest::prop_assert_eq!(is_valid_word(&w), valid_by_chars(&w), "{:?}", w);
    }
}

#[test]
fn invalid_tokens_are_dropped() {
    assert!(!is_valid_word("中"));
    assert!(!is_valid_word("2024"));
    assert!(!is_valid_word("2024年"));
    assert!(!is_valid_word("3月"));
    assert!(!is_valid_word("12.5"));
    assert!(!is_valid_word("2024-03-01"));
    assert!(is_valid_word("中国"));
    assert!(is_valid_word("rust"));
    assert!(is_valid_word("5g网络"));
    assert!(!is_valid_word("a") && !is_valid_word("12") && !is_valid_word("1-2"));
    assert!(is_valid_word("a1") && is_valid_word("x86_64") && is_valid_word("v2.0"));
}

#[test]
fn mixed_text_gives_lowercase_english_and_chinese_words() {
    let w = words("Rust 语言 在 2024年3月 发布了 新版本 Rust Compiler");
    assert!(w.contains(&"rust".to_string()), "{w:?}");
    assert!(w.contains(&"compiler".to_string()), "{w:?}");
    assert!(w.contains(&"语言".to_string()), "{w:?}");
    assert!(w.iter().all(|t| !t.contains("2024") && t != "在"), "{w:?}");
    assert!(w.iter().all(|t| t.to_lowercase() == *t), "{w:?}");
}

#[test]
fn tf_idf_orders_rare_words_first() {
    let f = Features::new(FeatureConfig::default()).unwrap();
    let feats = f.features("量子计算 量子计算 量子计算 中国 中国 中国");
    let pos = |t: &str| feats.iter().position(|x| x.token == t).unwrap();
    assert!(
        pos("量子") < pos("中国") || feats[0].token.contains("量子"),
        "{feats:?}"
    );
    // term frequency multiplies the IDF
    let idf = jieba_idf().idf("中国");
    let zg = feats.iter().find(|x| x.token == "中国").unwrap();
    assert!((zg.weight - 3.0 * idf).abs() < 1e-9);
}

#[test]
fn the_segmenter_id_is_the_one_stores_recorded() {
    // As it was computed when jieba-rs made both cuts: existing stores
    // open unchanged.
    let mut cut = String::new();
    for hmm in [false, true] {
        for token in jieba().cut(SEGMENTER_PROBE, hmm) {
            cut.push_str(token.word);
            cut.push('/');
        }
        cut.push('|');
    }
    let hmm_cut = cut.split('|').nth(1).unwrap();
    assert_eq!(hmm_cut, SEGMENTER_PROBE_HMM_CUT);
    assert_eq!(
        segmenter_id(),
        format!("{SEGMENTER_VERSION}/{}", hex(&md5_of(&cut)))
    );
}

#[test]
fn segmenter_version_matches_the_locked_jieba() {
    // Outside the workspace (a published crate) there is no lock file.
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    let Ok(lock) = std::fs::read_to_string(lock) else {
        return;
    };
    let locked = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"jieba-rs\""))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .unwrap();
    let recorded = SEGMENTER_VERSION.strip_prefix("jieba-rs ").unwrap();
    assert!(
        locked == recorded || locked.starts_with(&format!("{recorded}.")),
        "jieba-rs {locked} is locked but SEGMENTER_VERSION says {recorded}: update it"
    );
    assert!(segmenter_id().starts_with(SEGMENTER_VERSION));
    assert_eq!(idf_digest().len(), 32);
}

#[test]
fn unknown_words_get_the_mean_idf() {
    let t = jieba_idf();
    assert!((t.idf("zzqxjv") - t.mean()).abs() < 1e-12);
    assert!(t.mean() > 1.0 && t.mean() < 20.0);
    // Every line of the bundled table is read (270,132 words).
    assert_eq!(t.words().count(), 270_132);
}

#[test]
fn top_n_keeps_the_heaviest() {
    let cfg = FeatureConfig {
        top_n: 2,
        ..Default::default()
    };
    let f = Features::new(cfg).unwrap();
    let all = Features::new(FeatureConfig::default())
        .unwrap()
        .features("经济 发展 改革 开放 创新 科技 人才 教育");
    let top = f.features("经济 发展 改革 开放 创新 科技 人才 教育");
    assert_eq!(top.len(), 2);
    assert_eq!(top, all[..2].to_vec());
}

#[test]
fn shingles_ignore_punctuation_and_count() {
    let cfg = FeatureConfig {
        extractor: Extractor::Shingles,
        shingle_size: 2,
        ..Default::default()
    };
    let f = Features::new(cfg).unwrap();
    let a = f.features("北京，北京！");
    let b = f.features("北京北京");
    assert_eq!(a, b);
    let bj = a.iter().find(|x| x.token == "北京").unwrap();
    assert_eq!(bj.weight, 2.0);
    assert_eq!(f.features("北").len(), 1); // shorter than n: one feature
}

#[test]
fn custom_stop_words_file_and_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("stop.txt");
    std::fs::write(&p, "# mine\n北京\n").unwrap();
    let f = Features::new(FeatureConfig {
        stop_words: Some(p.clone()),
        ..Default::default()
    })
    .unwrap();
    let w: Vec<String> = f.features("北京 天气").into_iter().map(|x| x.token).collect();
    assert_eq!(w, vec!["天气".to_string()]);
    assert_ne!(
        f.describe(),
        Features::new(FeatureConfig::default()).unwrap().describe()
    );
    let missing = dir.path().join("nope.txt");
    let e = Features::new(FeatureConfig {
        stop_words: Some(missing),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("nope.txt"), "{e}");
}
