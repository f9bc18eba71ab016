//! The language of a page's text (`lang` in kept and duplicate lines;
//! `crawl.languages` keeps only some).
//!
//! whatlang (trigrams and scripts, 70 languages, no model to load, about a
//! microsecond per hundred characters) over the first [`SAMPLE_BYTES`] of
//! the text the page is judged on; chosen over lingua (more accurate on
//! very short texts, but tens of MB of models and ten times slower) because
//! a page's text is long enough, and the crawl's CPU per page is the budget.
//! Only an answer whatlang calls reliable is given; Chinese in either
//! script is `zh`. Codes are ISO 639-1 where one exists, else whatlang's
//! ISO 639-3.

/// Bytes of text looked at: enough for a reliable answer, a bounded cost.
pub const SAMPLE_BYTES: usize = 2048;

/// The language of `text`, when whatlang is sure of it.
pub fn detect(text: &str) -> Option<&'static str> {
    let mut end = text.len().min(SAMPLE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let info = whatlang::detect(&text[..end])?;
    info.is_reliable().then(|| iso639_1(info.lang().code()))
}

/// ISO 639-1 of an ISO 639-3 code whatlang gives (the 639-3 code itself
/// where 639-1 has none).
fn iso639_1(code: &'static str) -> &'static str {
    match code {
        "cmn" => "zh",
        "eng" => "en",
        "rus" => "ru",
        "spa" => "es",
        "por" => "pt",
        "ita" => "it",
        "ben" => "bn",
        "fra" => "fr",
        "deu" => "de",
        "ukr" => "uk",
        "kat" => "ka",
        "ara" => "ar",
        "hin" => "hi",
        "jpn" => "ja",
        "heb" => "he",
        "yid" => "yi",
        "pol" => "pl",
        "amh" => "am",
        "jav" => "jv",
        "kor" => "ko",
        "nob" => "nb",
        "dan" => "da",
        "swe" => "sv",
        "fin" => "fi",
        "tur" => "tr",
        "nld" => "nl",
        "hun" => "hu",
        "ces" => "cs",
        "ell" => "el",
        "bul" => "bg",
        "bel" => "be",
        "mar" => "mr",
        "kan" => "kn",
        "ron" => "ro",
        "slv" => "sl",
        "hrv" => "hr",
        "srp" => "sr",
        "mkd" => "mk",
        "lit" => "lt",
        "lav" => "lv",
        "est" => "et",
        "tam" => "ta",
        "vie" => "vi",
        "urd" => "ur",
        "tha" => "th",
        "guj" => "gu",
        "uzb" => "uz",
        "pan" => "pa",
        "aze" => "az",
        "ind" => "id",
        "tel" => "te",
        "pes" => "fa",
        "mal" => "ml",
        "ori" => "or",
        "mya" => "my",
        "nep" => "ne",
        "sin" => "si",
        "khm" => "km",
        "tuk" => "tk",
        "aka" => "ak",
        "zul" => "zu",
        "sna" => "sn",
        "afr" => "af",
        "lat" => "la",
        "slk" => "sk",
        "cat" => "ca",
        "tgl" => "tl",
        "hye" => "hy",
        "cym" => "cy",
        "epo" => "eo",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_in_both_scripts_english_and_short_text() {
        let simplified = "长江流域遭遇罕见高温干旱，多地启动抗旱应急响应。气象部门预计，未来一周仍将持续晴热天气，\
                          农业和供水部门正在加紧调度水源，保障群众生活用水和农田灌溉。";
        let traditional = "長江流域遭遇罕見高溫乾旱，多地啟動抗旱應急響應。氣象部門預計，未來一週仍將持續晴熱天氣，\
                           農業和供水部門正在加緊調度水源，保障群眾生活用水和農田灌溉。";
        let english = "The city council approved the new budget on Tuesday. Spending on parks, libraries and \
                       roads will rise, while the property tax stays the same for another year.";
        let german = "Der Stadtrat hat am Dienstag den neuen Haushalt beschlossen. Die Ausgaben für Parks, \
                      Bibliotheken und Straßen steigen, die Grundsteuer bleibt gleich.";
        assert_eq!(detect(simplified), Some("zh"));
        assert_eq!(detect(traditional), Some("zh"));
        assert_eq!(detect(english), Some("en"));
        assert_eq!(detect(german), Some("de"));
        assert_eq!(detect("ok"), None);
        assert_eq!(detect(""), None);
        // A long text is sampled at a character boundary.
        assert_eq!(detect(&simplified.repeat(40)), Some("zh"));
    }
}
