//! The lines of the three outputs, one type per output, shared by the
//! crawler and `crawl dedup`.
//!
//! The two modes name a page differently: the crawler by its URL (with what
//! the fetch found: final URL, status, depth, time), `crawl dedup` by its
//! URL and its input line number. A field one mode does not have is left
//! out of its lines (not written as `null`), so each mode writes exactly
//! the fields the README documents for it, in the same order as before the
//! two shared these types.

use serde::Serialize;
use serde_json::value::RawValue;
use simcrawl_dedup::{Duplicate, Fingerprint, Tier};

/// A text already written as a JSON string (quoted and escaped): a page's
/// text for its kept line, escaped by the page task that cleaned it so
/// that the crawl's single writer thread copies it into the line instead
/// of escaping it there (issue 37: escaping the text was 6% of the
/// writer's CPU).
pub type JsonText = Box<RawValue>;

/// `text` as a [`JsonText`]. A `&str` always serializes; the error is
/// serde_json's, returned rather than assumed away.
pub fn json_text(text: &str) -> serde_json::Result<JsonText> {
    serde_json::value::to_raw_value(text)
}

/// A line of `kept.jsonl`.
///
/// Crawler: `url, final_url, status, title, [title_normalized,] [text,]
/// [text_normalized,] simhash, depth, fetched_at`; `crawl dedup`: `url,
/// title, [title_normalized,] simhash, line`. `title` and `text` are the
/// page's own (case, width and script as written): people index and train
/// on them; the normalized forms the tiers compared are written only with
/// `crawl.write_normalized`.
#[derive(Debug, Serialize)]
pub struct KeptLine<'a> {
    pub url: &'a str,
    /// Crawler: the page, sitemap or feed that led to this URL (its `url`
    /// in the outputs), `null` for a seed (and a revisit); as Heritrix's
    /// crawl.log names a URL's referrer. Not written by `crawl dedup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Option<&'a str>>,
    /// Crawler: the URL after redirects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_url: Option<&'a str>,
    /// Crawler: the HTTP status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The title as the page (or the input line) wrote it, whitespace
    /// collapsed.
    pub title: &'a str,
    /// With `crawl.write_normalized`: the title as the title tier compared it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title_normalized: Option<&'a str>,
    /// Crawler, with `crawl.write_text`: the page's main text as written,
    /// one block per line, whitespace collapsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'a RawValue>,
    /// Crawler, with `crawl.write_text` and `crawl.write_normalized`: the
    /// main text normalized, as the content tier signed it (before the
    /// host's template is taken out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_normalized: Option<&'a str>,
    /// 16 hex digits, or `null` when the text had no features (written in
    /// both modes, as it always was).
    pub simhash: Option<String>,
    /// Crawler: links followed from a seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    /// Crawler: Unix time of the fetch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched_at: Option<u64>,
    /// `crawl dedup`: the input line number (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// `crawl dedup` of WARC files: the record the page came from.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub record: Option<FromRecord<'a>>,
    /// Crawler: what the page was judged on, its size and the beginning of
    /// its text ([`Judged`]).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judged<'a>>,
}

/// The WARC record a document of `crawl dedup` came from.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FromRecord<'a> {
    /// Its `WARC-Record-ID`.
    pub record: &'a str,
    /// The file, as given (or found in the directory given).
    pub warc: &'a str,
    /// The payload judged is cut short: at `fetch.max_body_bytes` decoded
    /// bytes (a content-encoded payload inflates no further, so a
    /// compression bomb costs no more than the crawl's own body limit), or
    /// already by its writer (`WARC-Truncated`). Written only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// What a crawled page was judged on, written with its verdict so that a
/// person (and `crawl report`) can tell a drop that rests on little.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Judged<'a> {
    /// `main`, `page`, `thin` or `template` (`crate::identity::Basis`).
    pub basis: crate::identity::Basis,
    /// Characters (not whitespace) of the page's whole visible text.
    pub chars: usize,
    /// Features of the text it was signed with.
    pub features: usize,
    /// The beginning of that text, normalized as it was signed (lower
    /// case, simplified Chinese, the host's template taken out): it shows
    /// what the verdict compared, which the page's own text may not (a
    /// traditional and a simplified copy have the same excerpt).
    pub excerpt: &'a str,
    /// Its language (`crate::lang`), when it is clear.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lang: Option<&'static str>,
}

/// Why a drop deserves a person's look; `crawl report` lists such drops
/// first and `crawl eval --crawled` counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Suspect {
    /// The dropped page shows much more text than the kept page it is said
    /// to copy: the match is on a part of it.
    Larger,
    /// Its own text is all its host's learnt template: what it matched is
    /// template (an exact copy of it).
    Template,
    /// The drop rests on fewer than [`FEW_FEATURES`] features.
    FewFeatures,
}

/// Below this many features a signature says little (a heading, a notice).
pub const FEW_FEATURES: usize = 20;

impl Suspect {
    /// Every reason, in the order reports list them.
    pub const ALL: [Suspect; 3] = [Suspect::Larger, Suspect::Template, Suspect::FewFeatures];

    /// The name used in the outputs.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Suspect::Larger => "larger",
            Suspect::Template => "template",
            Suspect::FewFeatures => "few_features",
        }
    }

    /// The reasons to look at a drop: the dropped page's `basis`, `chars`
    /// and `features`, and the kept partner's `chars` when known. "Much
    /// larger": three times the text and 2,000 characters more.
    #[must_use]
    pub fn of(basis: &str, chars: usize, features: usize, partner_chars: Option<usize>) -> Vec<Suspect> {
        let mut out = Vec::new();
        if partner_chars.is_some_and(|p| chars >= p.saturating_mul(3) && chars >= p + 2000) {
            out.push(Suspect::Larger);
        }
        if basis == "template" {
            out.push(Suspect::Template);
        }
        if features < FEW_FEATURES {
            out.push(Suspect::FewFeatures);
        }
        out
    }
}

impl<'a> KeptLine<'a> {
    /// The fields both modes write; a mode adds its own with struct update
    /// syntax (`KeptLine { line: Some(n), ..KeptLine::new(..) }`).
    #[must_use]
    pub fn new(url: &'a str, title: &'a str, fingerprint: Option<Fingerprint>) -> Self {
        KeptLine {
            url,
            via: None,
            final_url: None,
            status: None,
            title,
            title_normalized: None,
            text: None,
            text_normalized: None,
            simhash: fingerprint.map(|f| f.to_string()),
            depth: None,
            fetched_at: None,
            line: None,
            record: None,
            judged: None,
        }
    }
}

/// A line of `duplicates.jsonl`: `url, tier, duplicate_of, [distance,]
/// [similarity,]` and, for `crawl dedup`, `line`.
#[derive(Debug, Serialize)]
pub struct DuplicateLine<'a> {
    pub url: &'a str,
    /// Crawler: the page, sitemap or feed that led to this URL (its `url`
    /// in the outputs), `null` for a seed (and a revisit); as Heritrix's
    /// crawl.log names a URL's referrer. Not written by `crawl dedup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Option<&'a str>>,
    pub tier: Tier,
    pub duplicate_of: &'a str,
    /// Hamming distance of the SimHashes (title and content tiers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<u32>,
    /// The estimated resemblance that decided (title and content tiers),
    /// rounded by [`round3`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    /// Content tier: `true` when the page was matched on its article
    /// against another site's page with the same article
    /// (`simcrawl_dedup::Article`); the similarity is the articles'.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub article: bool,
    /// `crawl dedup`: the input line number (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// `crawl dedup` of WARC files: the record the page came from.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub record: Option<FromRecord<'a>>,
    /// Crawler, title and content tiers: what the page was judged on.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Judged<'a>>,
}

impl<'a> DuplicateLine<'a> {
    /// The line of `url`, found a copy by the tiers.
    #[must_use]
    pub fn new(url: &'a str, d: &'a Duplicate) -> Self {
        DuplicateLine {
            url,
            via: None,
            tier: d.tier,
            duplicate_of: &d.of,
            distance: d.distance,
            similarity: d.similarity.map(round3),
            article: d.article,
            line: None,
            record: None,
            judged: None,
        }
    }

    /// The line of `url`, a URL-tier copy of `of` (e.g. a redirect to a URL
    /// already seen): no content compared.
    #[must_use]
    pub fn url_tier(url: &'a str, of: &'a str) -> Self {
        DuplicateLine {
            url,
            via: None,
            tier: Tier::Url,
            duplicate_of: of,
            distance: None,
            similarity: None,
            article: false,
            line: None,
            record: None,
            judged: None,
        }
    }
}

/// A line of `errors.jsonl`.
///
/// Crawler: `url, kind, error` (a final failure, or a page not kept such as
/// `noindex`); `crawl dedup`: `line, error` (a line that is not a document).
#[derive(Debug, Serialize)]
pub struct ErrorLine<'a> {
    /// Crawler: the page's URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<&'a str>,
    /// Crawler: the page, sitemap or feed that led to this URL (its `url`
    /// in the outputs), `null` for a seed (and a revisit); as Heritrix's
    /// crawl.log names a URL's referrer. Not written by `crawl dedup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Option<&'a str>>,
    /// Crawler: the failure's kind (`timeout`, `status_4xx`, `noindex`...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'a str>,
    /// `crawl dedup`: the input line number (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub error: &'a str,
}

impl<'a> ErrorLine<'a> {
    /// The crawler's line for a page that failed (or was not kept).
    #[must_use]
    pub fn page(url: &'a str, kind: &'a str, error: &'a str) -> Self {
        ErrorLine {
            url: Some(url),
            via: None,
            kind: Some(kind),
            line: None,
            error,
        }
    }

    /// This line with the page, sitemap or feed that led to its URL
    /// (`None`: a seed).
    #[must_use]
    pub fn via(self, via: Option<&'a str>) -> Self {
        ErrorLine {
            via: Some(via),
            ..self
        }
    }

    /// The crawler's line for a page that asked not to be indexed (kind
    /// `noindex`, counted in `noindex`, not in `errors`).
    #[must_use]
    pub fn noindex(url: &'a str) -> Self {
        Self::page(url, "noindex", "meta robots noindex: not kept")
    }

    /// `crawl dedup`'s line for an input line that is not a document.
    #[must_use]
    pub fn input_line(line: u64, error: &'a str) -> Self {
        ErrorLine {
            url: None,
            via: None,
            kind: None,
            line: Some(line),
            error,
        }
    }
}

/// A resemblance as written in outputs: three decimals are what the
/// estimate is worth (its standard deviation is about 0.03).
#[must_use]
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn json(v: &impl Serialize) -> String {
        serde_json::to_string(v).unwrap()
    }

    fn dup() -> Duplicate {
        Duplicate {
            tier: Tier::Content,
            of: "http://a/1".into(),
            distance: Some(3),
            similarity: Some(0.876_54),
            fingerprint: None,
            of_id: None,
            url_skipped: false,
            article: false,
        }
    }

    /// The crawler's lines, byte for byte as before the types were shared.
    #[test]
    fn crawler_lines_keep_their_fields_and_order() {
        let t = json_text("t \"quoted\"\n").unwrap();
        let kept = KeptLine {
            final_url: Some("http://a/2"),
            status: Some(200),
            text: Some(&t),
            depth: Some(1),
            fetched_at: Some(9),
            ..KeptLine::new("http://a/1", "T", Some(Fingerprint::new(0xab)))
        };
        assert_eq!(
            json(&kept),
            r#"{"url":"http://a/1","final_url":"http://a/2","status":200,"title":"T","text":"t \"quoted\"\n","simhash":"00000000000000ab","depth":1,"fetched_at":9}"#
        );
        let no_text = KeptLine {
            final_url: Some("http://a/1"),
            status: Some(200),
            depth: Some(0),
            fetched_at: Some(9),
            ..KeptLine::new("http://a/1", "T", None)
        };
        assert_eq!(
            json(&no_text),
            r#"{"url":"http://a/1","final_url":"http://a/1","status":200,"title":"T","simhash":null,"depth":0,"fetched_at":9}"#
        );
        let d = dup();
        assert_eq!(
            json(&DuplicateLine::new("http://a/3", &d)),
            r#"{"url":"http://a/3","tier":"content","duplicate_of":"http://a/1","distance":3,"similarity":0.877}"#
        );
        assert_eq!(
            json(&DuplicateLine::url_tier("http://a/r", "http://a/1")),
            r#"{"url":"http://a/r","tier":"url","duplicate_of":"http://a/1"}"#
        );
        assert_eq!(
            json(&ErrorLine::page("http://a/4", "timeout", "timed out")),
            r#"{"url":"http://a/4","kind":"timeout","error":"timed out"}"#
        );
    }

    /// `crawl dedup`'s lines, byte for byte as before the types were shared.
    #[test]
    fn batch_lines_keep_their_fields_and_order() {
        let kept = KeptLine {
            line: Some(4),
            ..KeptLine::new("http://a/1", "T", Some(Fingerprint::new(0xab)))
        };
        assert_eq!(
            json(&kept),
            r#"{"url":"http://a/1","title":"T","simhash":"00000000000000ab","line":4}"#
        );
        let d = dup();
        let line = DuplicateLine {
            line: Some(5),
            ..DuplicateLine::new("http://a/3", &d)
        };
        assert_eq!(
            json(&line),
            r#"{"url":"http://a/3","tier":"content","duplicate_of":"http://a/1","distance":3,"similarity":0.877,"line":5}"#
        );
        assert_eq!(
            json(&ErrorLine::input_line(2, "invalid JSON")),
            r#"{"line":2,"error":"invalid JSON"}"#
        );
    }
}

/// `changes.jsonl`: what one revisit found (`crate::revisit`).
#[derive(Debug, Serialize)]
pub struct ChangeLine<'a> {
    pub url: &'a str,
    pub status: crate::revisit::Change,
    /// SimHash distance between the text now and the text judged before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<u32>,
    /// The page was judged again: `kept` or `duplicate` (of `of`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of: Option<&'a str>,
}
