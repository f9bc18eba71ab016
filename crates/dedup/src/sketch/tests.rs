#![allow(clippy::unwrap_used)]
use super::*;

/// The chars [`with_kept_chars`] reads, collected.
fn normalized(text: &str) -> Vec<char> {
    with_kept_chars(text, |chars| {
        chars.iter().filter_map(|&c| char::from_u32(c)).collect()
    })
}

/// The filter over every char that [`kept_chars`] was before it read the
/// bytes.
fn normalized_by_chars(text: &str) -> Vec<char> {
    text.chars().filter_map(kept).collect()
}

#[test]
fn normalized_keeps_what_the_char_filter_kept() {
    // Every char of Unicode alone, and after an ASCII letter.
    for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
        let mut buf = [0u8; 4];
        let alone = c.encode_utf8(&mut buf);
        assert_eq!(normalized(alone), normalized_by_chars(alone), "{c:?}");
    }
    for t in [
        "",
        "Ab, c!",
        "长江流域今年夏季降雨偏多",
        "Ωmega İstanbul ǅ",
        "\u{4dc0}\u{4e00}\u{9fff}\u{a000}",
        "x\u{5000}y",
    ] {
        assert_eq!(normalized(t), normalized_by_chars(t), "{t:?}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
    #[test]
    fn kept_chars_are_the_char_filters_on_a_reused_buffer(
        t in "[ -~]{0,300}|[a-zA-Z0-9 \\n中文字é\\u{3400}\\u{4dbf}\\u{5000}\\u{9fff}\\u{a000}İΩ，。😀\\u{10FFFF}]{0,300}",
        before in "[a-z 中é]{0,400}",
    ) {
        // The thread's buffer is reused: a longer text before must leave
        // nothing behind.
        proptest::prop_assert_eq!(normalized(&before), normalized_by_chars(&before));
        proptest::prop_assert_eq!(normalized(&t), normalized_by_chars(&t));
    }

    #[test]
    fn normalized_reads_random_text_as_the_char_filter(t in "[ -~]{0,20}|[a-zA-Z0-9 中文字é\u{3400}\u{4dbf}\u{4dc0}\u{5000}\u{9fff}\u{a000}İΩ，。😀]{0,30}") {
        proptest::prop_assert_eq!(normalized(&t), normalized_by_chars(&t));
    }
}
use std::collections::HashSet;

fn shingles(text: &str) -> HashSet<Vec<char>> {
    let chars: Vec<char> = normalized(text);
    if chars.len() < SHINGLE_CHARS {
        return std::iter::once(chars).collect();
    }
    chars.windows(SHINGLE_CHARS).map(|w| w.to_vec()).collect()
}

/// [`Sketch::of`] as it was first written: the window an array, shifted
/// a char at a time. The packed window must give the same sketch.
fn sketch_reference(text: &str) -> Option<Sketch> {
    let mut mins = [u64::MAX; SKETCH_BINS];
    let mut window = [0u32; SHINGLE_CHARS];
    let mut digest = TextDigest::new();
    let mut seen = 0usize;
    for c in normalized(text) {
        let c = c as u32;
        digest.push(c);
        window.copy_within(1.., 0);
        window[SHINGLE_CHARS - 1] = c;
        seen += 1;
        if seen >= SHINGLE_CHARS {
            add(&mut mins, shingle_hash(&window));
        }
    }
    match seen {
        0 => return None,
        n if n < SHINGLE_CHARS => add(&mut mins, shingle_hash(&window)),
        _ => {}
    }
    Some(Sketch::from_mins(mins, digest))
}

#[test]
fn an_outline_estimates_resemblance_without_bias() {
    // Pairs of pseudo-random texts sharing a known part: the outline's
    // estimate against the exact resemblance of their 5-gram sets.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut word = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        format!("{:x} ", state >> 40)
    };
    let (mut errors, mut far) = (Vec::new(), 0);
    for round in 0..200 {
        let shared: String = (0..40 + round % 7 * 60).map(|_| word()).collect();
        let own_a: String = (0..round % 13 * 12).map(|_| word()).collect();
        let own_b: String = (0..round % 5 * 15).map(|_| word()).collect();
        let (a, b) = (format!("{own_a}{shared}"), format!("{shared}{own_b}"));
        let (_, oa) = count_and_outline(&a);
        let (_, ob) = count_and_outline(&b);
        let (oa, ob) = (
            crate::Outline::from_bytes(oa.unwrap()),
            crate::Outline::from_bytes(ob.unwrap()),
        );
        let est = oa.resemblance(&ob).unwrap();
        let err = est - exact_resemblance(&a, &b);
        far += usize::from(err.abs() > 0.15);
        errors.push(err);
    }
    let mean = errors.iter().sum::<f64>() / errors.len() as f64;
    assert!(mean.abs() < 0.02, "bias {mean}");
    // One standard deviation is at most 0.044 (J = 0, 512 bins of one
    // bit): 0.15 is 3.4 of them.
    assert!(far <= 2, "{far} of 200 estimates off by more than 0.15");
    assert_eq!(count_and_outline("，。"), (0, None));
    let (n, short) = count_and_outline("abc");
    assert_eq!(n, 1);
    let short = short.unwrap();
    // One shingle fills every bin with the same bit.
    assert!(
        short.iter().all(|&b| b == short[0]) && (short[0] == 0 || short[0] == 0xff),
        "{short:?}"
    );
}

#[test]
fn shingles_are_counted_within_two_percent_at_every_size() {
    // Pseudo-random words (a fixed LCG): texts from a handful of
    // shingles to forty thousand, each counted exactly.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut word = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        format!("{:x} ", state >> 40)
    };
    for words in [1, 2, 5, 30, 100, 300, 1000, 3000, 7000] {
        let text: String = (0..words).map(|_| word()).collect();
        let exact = shingles(&text).len() as f64;
        let got = f64::from(shingle_count(&text));
        let close = (got / exact - 1.0).abs() < 0.02 || (got - exact).abs() <= 1.0;
        assert!(close, "{words} words: {got} counted, {exact} exact");
    }
}

/// [`count_and_outline`] as it was written over [`normalized`]'s chars.
fn count_and_outline_reference(text: &str) -> (u32, Option<[u8; OUTLINE_BINS / 8]>) {
    let mut bits = [0u64; COUNT_BITS / 64];
    let mut mins = [u64::MAX; OUTLINE_BINS];
    let mut window = [0u32; SHINGLE_CHARS];
    let mut seen = 0usize;
    let mut set = |w: &[u32; SHINGLE_CHARS]| {
        let hi = (u64::from(w[0]) << 42) | (u64::from(w[1]) << 21) | u64::from(w[2]);
        let lo = (u64::from(w[3]) << 21) | u64::from(w[4]);
        let h = (hi.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ lo.wrapping_mul(0xC2B2_AE3D_27D4_EB4F))
            .wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        let bit = (h >> (64 - COUNT_BITS.trailing_zeros())) as usize;
        bits[bit / 64] |= 1 << (bit % 64);
        let bin_bits = OUTLINE_BINS.trailing_zeros();
        let slot = &mut mins[(h >> (64 - bin_bits)) as usize];
        *slot = (*slot).min(h & ((1 << (64 - bin_bits)) - 1));
    };
    for c in normalized(text) {
        window.copy_within(1.., 0);
        window[SHINGLE_CHARS - 1] = c as u32;
        seen += 1;
        if seen >= SHINGLE_CHARS {
            set(&window);
        }
    }
    match seen {
        0 => return (0, None),
        n if n < SHINGLE_CHARS => set(&window),
        _ => {}
    }
    densify(&mut mins);
    let mut outline = [0u8; OUTLINE_BINS / 8];
    for (i, m) in mins.into_iter().enumerate() {
        outline[i / 8] |= ((fmix64(m ^ SEED_A) & 1) as u8) << (i % 8);
    }
    (linear_count(&bits), Some(outline))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
    #[test]
    fn outlines_count_as_over_the_chars(
        text in "[a-zA-Z0-9 中文字é\u{10FFFF}\u{1F600}\u{20000}，。ÀΩ\u{3400}\u{4e00}\u{3001}\u{ff21}İ_\n-]{0,80}"
    ) {
        proptest::prop_assert_eq!(count_and_outline(&text), count_and_outline_reference(&text));
    }

    #[test]
    fn the_packed_window_signs_as_the_array_did(
        text in "[a-zA-Z0-9 中文字é\u{10FFFF}\u{1F600}\u{20000}，。ÀΩ\u{3400}\u{4e00}\u{3001}\u{ff21}İ_\n-]{0,60}"
    ) {
        proptest::prop_assert_eq!(Sketch::of(&text), sketch_reference(&text));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Long texts, signed one after another on the thread's buffer of
    /// chars ([`with_kept_chars`]), against the sketch and outline over
    /// the chars one at a time.
    #[test]
    fn long_texts_sign_and_outline_as_over_the_chars(
        text in "[a-z0-9 中文字é，。Ω\u{3400}\u{4e00}\n]{500,1500}|[a-z ]{200,700}"
    ) {
        proptest::prop_assert_eq!(Sketch::of(&text), sketch_reference(&text));
        proptest::prop_assert_eq!(count_and_outline(&text), count_and_outline_reference(&text));
    }
}

fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (shingles(a), shingles(b));
    a.intersection(&b).count() as f64 / a.union(&b).count() as f64
}

/// Generated text made of the words of jieba's IDF table (real
/// vocabulary), seeded.
fn text(seed: u64, words: usize) -> String {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let chars: Vec<char> = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严龙飞".chars().collect();
    (0..words * 2)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chars[(x % chars.len() as u64) as usize]
        })
        .collect()
}

/// Pairs from identical to unrelated (a base text and an edited copy
/// where a share of the text is replaced): (exact, estimated at `bits`).
fn edited_pairs(bits: u32) -> Vec<(f64, f64)> {
    (0..40u64)
        .map(|seed| {
            let base = text(seed, 800);
            let cut = (seed as usize % 10) * base.chars().count() / 10;
            let edited: String = base
                .chars()
                .take(cut)
                .chain(text(seed + 1000, 800 - cut / 2).chars())
                .collect();
            let est = Sketch::of(&base)
                .unwrap()
                .narrow(bits)
                .resemblance(&Sketch::of(&edited).unwrap().narrow(bits));
            (jaccard(&base, &edited), est)
        })
        .collect()
}

#[test]
fn estimate_tracks_exact_jaccard() {
    let worst = edited_pairs(16)
        .iter()
        .map(|(e, s)| (e - s).abs())
        .fold(0.0, f64::max);
    // 128 bins: standard deviation <= 0.045; 40 pairs stay within 4 sd.
    assert!(worst < 0.18, "worst error {worst}");
}

#[test]
fn short_texts_still_compare() {
    let a = Sketch::of("新建文件夹").unwrap();
    let b = Sketch::of("新建 文件夹").unwrap();
    assert_eq!(a.resemblance(&b), 1.0);
    let c = Sketch::of("删除文件夹").unwrap();
    assert!(a.resemblance(&c) < 0.5);
    // Fewer than 5 characters: one shingle of the whole text.
    let d = Sketch::of("插入").unwrap();
    let e = Sketch::of("删除").unwrap();
    assert!(d.resemblance(&e) < 0.01);
    assert_eq!(d.resemblance(&Sketch::of("插 入!").unwrap()), 1.0);
}

#[test]
fn case_and_punctuation_do_not_count() {
    let a = Sketch::of("The Quick Brown Fox, jumps over the lazy dog.").unwrap();
    let b = Sketch::of("the quick brown fox jumps over the lazy dog").unwrap();
    assert!(a.same_text(&b));
    assert!(a.band_keys(10, 4).eq(b.band_keys(10, 4)));
}

#[test]
fn encoding_round_trips_and_rejects_wrong_lengths() {
    let s = Sketch::of(&text(7, 300)).unwrap();
    let mut buf = Vec::new();
    s.encode_into(&mut buf);
    assert_eq!(buf.len(), Sketch::ENCODED_LEN);
    assert_eq!(Sketch::decode(&buf), Some(s));
    assert_eq!(Sketch::decode(&buf[1..]), None);
}

#[test]
fn narrow_sketches_round_trip_and_compare_with_wide_ones() {
    let s = Sketch::of(&text(7, 300)).unwrap().narrow(8);
    let mut buf = Vec::new();
    s.encode_into(&mut buf);
    assert_eq!(buf.len(), Sketch::ENCODED_LEN_NARROW);
    let back = Sketch::decode(&buf).unwrap();
    assert_eq!((back.bits(), &back), (8, &s));
    // Narrowing twice, or to a width it has, changes nothing.
    assert_eq!(s.narrow(8), s);
    assert_eq!(s.narrow(16), s);
    // A wide sketch and its narrow self: the same text.
    let wide = Sketch::of(&text(7, 300)).unwrap();
    assert_eq!(wide.resemblance(&s), 1.0);
    let mut other = wide.clone();
    other.digest ^= 1;
    assert_eq!(other.resemblance(&s), 1.0, "equal low bytes are equal bins");
    other.bins[0] ^= 0x100; // differs above the low byte only
    assert_eq!(other.resemblance(&s), 1.0);
    assert!(other.resemblance(&wide) < 1.0);
}

#[test]
fn narrow_estimate_tracks_exact_jaccard_without_bias() {
    // The same pairs at 8 bits: the chance matches (1 in 256) are
    // subtracted, so the mean error stays near 0.
    let pairs = edited_pairs(8);
    let worst = pairs.iter().map(|(e, s)| (e - s).abs()).fold(0.0, f64::max);
    let sum: f64 = pairs.iter().map(|(e, s)| s - e).sum();
    assert!(worst < 0.18, "worst error {worst}");
    assert!((sum / 40.0).abs() < 0.03, "mean error {}", sum / 40.0);
    let a = Sketch::of(&text(1, 2000)).unwrap().narrow(8);
    let b = Sketch::of(&text(2, 2000)).unwrap().narrow(8);
    let exact = jaccard(&text(1, 2000), &text(2, 2000));
    assert!((a.resemblance(&b) - exact).abs() < 0.1);
}

#[test]
fn chance_matches_are_subtracted_at_the_width_compared() {
    // 32 bins agree on all 16 bits, 32 more on the low byte only.
    let a: [u16; SKETCH_BINS] = std::array::from_fn(|i| i as u16);
    let b: [u16; SKETCH_BINS] = std::array::from_fn(|i| match i {
        0..32 => i as u16,
        32..64 => i as u16 | 0x100,
        _ => (i as u16) ^ 0x80,
    });
    let (a, b) = (Sketch::from_bins(a, 1), Sketch::from_bins(b, 2));
    let at = |p: f64, chance: f64| (p - chance) / (1.0 - chance);
    assert!((a.resemblance(&b) - at(0.25, 1.0 / 65536.0)).abs() < 1e-12);
    let (na, nb) = (a.narrow(8), b.narrow(8));
    assert!((na.resemblance(&nb) - at(0.5, 1.0 / 256.0)).abs() < 1e-12);
    // A wide sketch against a narrow one: compared on 8 bits.
    assert!((a.resemblance(&nb) - at(0.5, 1.0 / 256.0)).abs() < 1e-12);
}

#[test]
fn band_keys_agree_exactly_on_equal_bins() {
    let a = Sketch::of(&text(3, 500)).unwrap();
    let mut b = a.clone();
    b.digest ^= 1;
    b.bins[0] ^= 1; // band 0 differs, the rest agree
    let ka: Vec<u64> = a.band_keys(10, 4).collect();
    let kb: Vec<u64> = b.band_keys(10, 4).collect();
    assert_ne!(ka[0], kb[0]);
    assert_eq!(ka[1..], kb[1..]);
    // Different bands with equal bins get different keys.
    let mut c = a.clone();
    c.bins = [7; SKETCH_BINS];
    let kc: Vec<u64> = c.band_keys(3, 4).collect();
    assert_ne!(kc[0], kc[1]);
}

#[test]
fn unrelated_texts_share_few_bins() {
    let a = Sketch::of(&text(1, 2000)).unwrap();
    let b = Sketch::of(&text(2, 2000)).unwrap();
    let exact = jaccard(&text(1, 2000), &text(2, 2000));
    assert!(
        (a.resemblance(&b) - exact).abs() < 0.1,
        "{} vs {exact}",
        a.resemblance(&b)
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
    /// Shingles hashed a block at a time count and outline as shifted in
    /// a char at a time, at every length around the block's and the
    /// window's (1 to 4 chars: one padded shingle).
    #[test]
    fn counts_and_outlines_by_blocks_are_those_by_chars(
        t in "[a-zA-Z0-9 \\n中文字é\\u{3400}\\u{9fff}İΩ，。😀\\u{10FFFF}]{0,600}|[a-z]{0,8}",
    ) {
        proptest::prop_assert_eq!(count_and_outline(&t), count_and_outline_by_chars(&t), "{:?}", t);
    }
}

#[test]
fn counts_and_outlines_by_blocks_are_those_by_chars_on_long_texts() {
    for words in [0, 1, 2, 3, 126, 127, 128, 129, 130, 1000, 5000] {
        let t = text(words as u64 + 7, words);
        assert_eq!(count_and_outline(&t), count_and_outline_by_chars(&t), "{words}");
    }
    for n in 0..(HASH_BLOCK + 2 * SHINGLE_CHARS) {
        let t: String = "abcdefghij".chars().cycle().take(n).collect();
        assert_eq!(count_and_outline(&t), count_and_outline_by_chars(&t), "{n}");
    }
}
