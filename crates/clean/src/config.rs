//! Configuration of the cleaner, readable from the `[clean]` table of `config/crawl.toml`.

use serde::{Deserialize, Serialize};

/// Which OpenCC profile folds Chinese text to one script, so that a Taiwan, Hong Kong
/// or mainland copy of one article produce the same features.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChineseVariant {
    /// Traditional to simplified, character and phrase level (OpenCC `t2s`). The
    /// default until Taiwan vocabulary was folded too (`docs/bench-clean.md`): it
    /// never changes mainland text and folds script-only and Hong Kong copies best,
    /// but a Taiwan edition of a mainland page keeps its own words (軟體, 程式), so
    /// the two look distinct (62.4% within SimHash distance 3). Data directories
    /// built under it keep it (the crawl adopts the recorded setting when
    /// `convert_chinese` is left unset).
    T2s,
    /// Taiwan traditional to simplified, including Taiwan vocabulary (`tw2sp`).
    Tw2sp,
    /// Hong Kong traditional to simplified (`hk2s`).
    Hk2s,
    /// `t2s` plus Taiwan vocabulary (OpenCC's `TWPhrasesRev`: 軟體 -> 软件, 網路 -> 网络)
    /// without `tw2sp`'s Taiwan variant characters, which rewrite mainland text
    /// (什么 -> 什幺, 显著 -> 显着, 抬 -> 擡). The default: a zh-TW edition of a
    /// zh-CN page is the same page in Taiwan words, and the labelled sets count it
    /// so (issue 35: recall on zh-TW/zh-CN documentation and man pages went from
    /// 0.58-0.93 to 0.97-0.99, docs/EVAL.md). Mainland text is left as it is; Taiwan
    /// words written in shared chars are also rewritten in plain traditional copies
    /// (新增 -> 添加), which costs script-only and Hong Kong copies a little (pair
    /// recall 1.000 -> 0.985 on 600 such copies of mainland pages).
    #[default]
    #[serde(rename = "t2s_tw")]
    T2sTw,
    /// No script conversion.
    Off,
}

impl ChineseVariant {
    /// The name used in configuration and error messages.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::T2s => "t2s",
            Self::Tw2sp => "tw2sp",
            Self::Hk2s => "hk2s",
            Self::T2sTw => "t2s_tw",
            Self::Off => "off",
        }
    }
}

/// One normalization step; `order` in [`CleanConfig`] lists them in the order they run.
///
/// The one place a step's name comes from: [`Step::name`] is the name of its
/// `order` entry, of its switch in [`CleanConfig`] (`fold_width = false`), of its
/// normalizer (`Normalizer::name`, used in logs) and of its source file
/// (`normalize/fold_width.rs`, type `FoldWidth`); a test checks that the
/// configuration parses each name back to its step.
///
/// Three steps had other `order` names before (`width`, `chinese`, `whitespace`):
/// they are still accepted, and still what a `Step` serializes to, because the crawl
/// binary stores a digest of the serialized `[clean]` settings in its data directory
/// and refuses to resume when it changes; new names there would make every existing
/// data directory refuse the same settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Leftover tags and HTML entities (text that went through a CMS twice).
    StripMarkup,
    /// Control, zero-width and bidi characters, invisible but different bytes.
    StripControl,
    /// Full-width ASCII and the ideographic space to their half-width forms.
    #[serde(alias = "width", rename(serialize = "width"))]
    FoldWidth,
    /// Unicode NFKC compatibility folding.
    Nfkc,
    /// Traditional to simplified Chinese (the profile is `convert_chinese`).
    #[serde(alias = "chinese", rename(serialize = "chinese"))]
    ConvertChinese,
    /// Emoji and decorative symbols.
    StripSymbols,
    /// Lower-casing.
    Lowercase,
    /// Dropping digits (off by default).
    DropDigits,
    /// Whitespace folding; always best last.
    #[serde(alias = "whitespace", rename(serialize = "whitespace"))]
    FoldWhitespace,
}

impl Step {
    /// The default order: markup first (it can hide anything), script conversion after
    /// width/NFKC (which can turn compatibility ideographs into convertible ones),
    /// whitespace last (every other step may leave spaces behind).
    pub const DEFAULT_ORDER: [Step; 9] = [
        Step::StripMarkup,
        Step::StripControl,
        Step::FoldWidth,
        Step::Nfkc,
        Step::ConvertChinese,
        Step::StripSymbols,
        Step::Lowercase,
        Step::DropDigits,
        Step::FoldWhitespace,
    ];

    /// Every step (the default order lists each once).
    pub const ALL: [Step; 9] = Self::DEFAULT_ORDER;

    /// The step's name in configuration, logs and error messages (see [`Step`]).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::StripMarkup => "strip_markup",
            Self::StripControl => "strip_control",
            Self::FoldWidth => "fold_width",
            Self::Nfkc => "nfkc",
            Self::ConvertChinese => "convert_chinese",
            Self::StripSymbols => "strip_symbols",
            Self::Lowercase => "lowercase",
            Self::DropDigits => "drop_digits",
            Self::FoldWhitespace => "fold_whitespace",
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Settings of a [`crate::Cleaner`].
///
/// Every field has a default, and unknown keys are rejected, so that a typo in
/// `crawl.toml` is an error instead of a silently ignored setting. Each step's switch
/// is named after the step ([`Step::name`]).
///
/// Serialized, the settings keep the names of the first release (`chinese_variant`
/// for `convert_chinese`, see [`Step`] for the steps in `order`): the crawl binary
/// stores a digest of this form, which must not change for the same settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CleanConfig {
    /// Keep only the main content (article) instead of the whole body. On by default:
    /// a site's template (navigation, footer, sidebars) otherwise makes all its pages
    /// look alike to the near-duplicate tier. Fail-safe: when the chosen block holds
    /// less than a quarter of the page's non-link text outside the template (a notice
    /// box repeated on every page of a help system), the page's visible text minus
    /// template and menus is used instead, so distinct pages never reduce to the same
    /// small box.
    pub main_content: bool,
    /// Traditional to simplified conversion profile, `off` to skip the step; default
    /// `t2s` (see [`ChineseVariant`] for the measurements behind it). Formerly
    /// `chinese_variant`, still accepted.
    #[serde(alias = "chinese_variant", rename(serialize = "chinese_variant"))]
    pub convert_chinese: ChineseVariant,
    /// Full-width to half-width folding; default on.
    pub fold_width: bool,
    /// Unicode NFKC; default on.
    pub nfkc: bool,
    /// Remove leftover tags and decode leftover entities; default on.
    pub strip_markup: bool,
    /// Remove control, zero-width and bidi characters; default on.
    pub strip_control: bool,
    /// Remove emoji and decorative symbols; default on.
    pub strip_symbols: bool,
    /// Lower-case letters; default on.
    pub lowercase: bool,
    /// Remove digits. Off by default: it makes "page 1" and "page 2", or two daily
    /// reports differing only in their figures, identical.
    pub drop_digits: bool,
    /// Fold whitespace runs; default on.
    pub fold_whitespace: bool,
    /// The steps that run, in this order; a step runs only if it is listed here and its
    /// switch above is on. Default: [`Step::DEFAULT_ORDER`].
    pub order: Vec<Step>,
    /// Input beyond this many bytes is ignored (default 8 MiB): bounds parse time and
    /// memory on pathological pages; real articles are far smaller.
    pub max_html_bytes: usize,
    /// The extracted text is cut at this many bytes (default 1 MiB, on a char boundary).
    pub max_text_bytes: usize,
    /// At most this many links are reported per page (default 10 000).
    pub max_links: usize,
}

impl Default for CleanConfig {
    fn default() -> Self {
        Self {
            main_content: true,
            convert_chinese: ChineseVariant::T2sTw,
            fold_width: true,
            nfkc: true,
            strip_markup: true,
            strip_control: true,
            strip_symbols: true,
            lowercase: true,
            drop_digits: false,
            fold_whitespace: true,
            order: Step::DEFAULT_ORDER.to_vec(),
            max_html_bytes: 8 * 1024 * 1024,
            max_text_bytes: 1024 * 1024,
            max_links: 10_000,
        }
    }
}

impl CleanConfig {
    /// A digest of every setting (MD5 of their JSON, hex), for an index to
    /// record: a text cleaned under other settings signs differently, so
    /// the `crawl` binary and the Python `Deduper` refuse an index built
    /// under another digest rather than mix fingerprints.
    ///
    /// ```
    /// use simcrawl_clean::{ChineseVariant, CleanConfig};
    /// let d = CleanConfig::default().digest()?;
    /// assert_eq!(d.len(), 32);
    /// let t2s = CleanConfig { convert_chinese: ChineseVariant::T2s, ..CleanConfig::default() };
    /// assert_ne!(t2s.digest()?, d);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn digest(&self) -> Result<String, serde_json::Error> {
        use md5::{Digest, Md5};
        let json = serde_json::to_string(self)?;
        let digest: [u8; 16] = Md5::digest(json.as_bytes()).into();
        Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Whether `step` is switched on (independently of `order`).
    #[must_use]
    pub fn enabled(&self, step: Step) -> bool {
        match step {
            Step::StripMarkup => self.strip_markup,
            Step::StripControl => self.strip_control,
            Step::FoldWidth => self.fold_width,
            Step::Nfkc => self.nfkc,
            Step::ConvertChinese => self.convert_chinese != ChineseVariant::Off,
            Step::StripSymbols => self.strip_symbols,
            Step::Lowercase => self.lowercase,
            Step::DropDigits => self.drop_digits,
            Step::FoldWhitespace => self.fold_whitespace,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// The settings as `crawl.toml` would hold them, parsed.
    fn parse(toml_text: &str) -> Result<CleanConfig, toml::de::Error> {
        toml::from_str(toml_text)
    }

    #[test]
    fn every_name_parses_back_to_its_step_in_order_and_as_its_switch() {
        for step in Step::ALL {
            let name = step.name();
            let c = parse(&format!("order = [\"{name}\"]")).unwrap();
            assert_eq!(c.order, vec![step], "{name}");
            // The switch of a step is the key of the same name.
            let off = if step == Step::ConvertChinese {
                "\"off\""
            } else {
                "false"
            };
            let c = parse(&format!("{name} = {off}")).unwrap();
            assert!(!c.enabled(step), "{name}");
            assert!(
                Step::ALL
                    .iter()
                    .filter(|&&s| s != step)
                    .all(|&s| c.enabled(s) == CleanConfig::default().enabled(s))
            );
            assert_eq!(step.to_string(), name);
        }
    }

    #[test]
    fn former_names_are_still_accepted() {
        let c =
            parse("chinese_variant = \"tw2sp\"\norder = [\"width\", \"chinese\", \"whitespace\"]").unwrap();
        assert_eq!(c.convert_chinese, ChineseVariant::Tw2sp);
        assert_eq!(
            c.order,
            vec![Step::FoldWidth, Step::ConvertChinese, Step::FoldWhitespace]
        );
        // Both names of one setting at once are an error, not a silent choice.
        assert!(parse("chinese_variant = \"off\"\nconvert_chinese = \"t2s\"").is_err());
    }

    /// The crawl binary stores the MD5 of exactly this text for the default settings
    /// (`crates/crawl/src/backend/local/state.rs`): renaming a step or a key must not change it, or
    /// every existing data directory would refuse to resume. (The default profile changed
    /// from `t2s` to `t2s_tw` on purpose; the crawl adopts `t2s` for an index built
    /// under it.)
    #[test]
    fn the_serialized_form_is_the_stored_one() {
        let json = serde_json::to_string(&CleanConfig::default()).unwrap();
        assert_eq!(
            json,
            "{\"main_content\":true,\"chinese_variant\":\"t2s_tw\",\"fold_width\":true,\"nfkc\":true,\
             \"strip_markup\":true,\"strip_control\":true,\"strip_symbols\":true,\"lowercase\":true,\
             \"drop_digits\":false,\"fold_whitespace\":true,\"order\":[\"strip_markup\",\"strip_control\",\
             \"width\",\"nfkc\",\"chinese\",\"strip_symbols\",\"lowercase\",\"drop_digits\",\"whitespace\"],\
             \"max_html_bytes\":8388608,\"max_text_bytes\":1048576,\"max_links\":10000}"
        );
        // And it reads back to the same settings.
        assert_eq!(
            serde_json::from_str::<CleanConfig>(&json).unwrap(),
            CleanConfig::default()
        );
    }
}
