//! Recognising template parts (navigation, headers, footers, sidebars, banners) by
//! their tag, ARIA role, or class and id names.
//!
//! Every site names these differently, but from a small shared vocabulary; the lists
//! follow Mozilla Readability's "unlikely candidates", extended with names common on
//! Chinese portals (`top`, `foot`, `hot`, `rank`, `friend` links).

use crate::same::same;

use super::has_token;

/// Tags whose whole content is template by definition.
pub(crate) fn is_boilerplate_tag(name: &html5ever::LocalName) -> bool {
    use html5ever::local_name;
    matches!(
        *name,
        local_name!("nav")
            | local_name!("header")
            | local_name!("footer")
            | local_name!("aside")
            | local_name!("menu")
            | local_name!("dialog")
    )
}

/// ARIA landmark roles of template parts.
pub(crate) fn is_boilerplate_role(role: &str) -> bool {
    role.split_ascii_whitespace().any(|r| {
        [
            "navigation",
            "banner",
            "contentinfo",
            "complementary",
            "search",
            "menu",
            "menubar",
            "dialog",
            "alertdialog",
            "toolbar",
        ]
        .iter()
        .any(|b| r.eq_ignore_ascii_case(b))
    })
}

/// Segment prefixes that mark template whatever else the name says (`main-nav`).
const STRONG: &[&str] = &[
    "nav",
    "menu",
    "breadcrumb",
    "crumb",
    "cookie",
    "consent",
    "gdpr",
    "footer",
    "sidebar",
    "share",
    "sharing",
    "social",
    "copyright",
    "skip",
    "pagination",
    "pager",
    "advert",
    "sponsor",
    "popup",
    "modal",
    "newsletter",
    "subscribe",
    "friendlink",
];

/// Segment prefixes that mark template unless another segment says content
/// (`comment-list` is template; `comment-content` inside it is handled by its parent).
const WEAK_PREFIX: &[&str] = &[
    "comment",
    "related",
    "recommend",
    "banner",
    "widget",
    "login",
    "signin",
    "promo",
    "toolbar",
    "topbar",
    "masthead",
    "footnav",
    "hotnews",
    "ranking",
    "disqus",
    "outbrain",
    "taboola",
    // Debris inside an article that peers prune too (trafilatura's discard lists):
    // captions and photo credits, bylines, galleries, teasers, "most popular".
    "caption",
    "credit",
    "byline",
    "author",
    "timestamp",
    "dateline",
    "gallery",
    "slideshow",
    "carousel",
    "lightbox",
    "teaser",
    "popular",
    "trending",
    "button",
    "btn",
    "rating",
    "viral",
    "syndication",
    "screenreader",
    "visually",
];

/// Whole segments that mark template unless another segment says content.
const WEAK_EXACT: &[&str] = &[
    "ad", "ads", "header", "head", "foot", "side", "top", "bottom", "tags", "tag", "hot", "rank", "links",
    "friend", "aside", "meta", "date", "time", "sr", "hide", "noprint", "tools", "icon",
];

/// Whole segments that say "this is the content".
const OK: &[&str] = &[
    "article", "artical", "content", "body", "main", "post", "entry", "text", "story", "detail", "con",
];

/// How a vocabulary word matches a name segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    Strong,
    WeakPrefix,
    WeakExact,
    Ok,
}

/// The vocabulary bucketed by first letter: every element with a class is looked up,
/// so a segment is compared with the few words sharing its first letter, not with
/// all of them (the linear scan was a tenth of the whole cleaning time).
#[derive(Debug)]
struct Vocab {
    buckets: [Vec<(&'static [u8], Word)>; 26],
}

fn vocab() -> &'static Vocab {
    static VOCAB: std::sync::OnceLock<Vocab> = std::sync::OnceLock::new();
    VOCAB.get_or_init(|| {
        let mut buckets: [Vec<(&'static [u8], Word)>; 26] = Default::default();
        let lists: [(&[&'static str], Word); 4] = [
            (STRONG, Word::Strong),
            (WEAK_PREFIX, Word::WeakPrefix),
            (WEAK_EXACT, Word::WeakExact),
            (OK, Word::Ok),
        ];
        for (list, kind) in lists {
            for w in list {
                if let Some(&b) = w.as_bytes().first()
                    && let Some(bucket) = buckets.get_mut(usize::from(b.wrapping_sub(b'a')))
                {
                    bucket.push((w.as_bytes(), kind));
                }
            }
        }
        Vocab { buckets }
    })
}

/// Longest prefix of a segment that matters (every vocabulary word is shorter).
const SEGMENT_PREFIX: usize = 24;

/// Marks of one `class` or `id` token.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct TokenMarks {
    strong: bool,
    weak: bool,
    ok: bool,
}

fn token_marks(token: &str) -> TokenMarks {
    let vocab = vocab();
    let mut m = TokenMarks::default();
    for seg in token.split(['-', '_', ':', '.']).filter(|s| !s.is_empty()) {
        let raw = seg.as_bytes();
        let mut buf = [0u8; SEGMENT_PREFIX];
        let len = raw.len().min(SEGMENT_PREFIX);
        for (d, s) in buf.iter_mut().zip(raw) {
            *d = s.to_ascii_lowercase();
        }
        let lower = &buf[..len];
        let Some(bucket) = vocab.buckets.get(usize::from(lower[0].wrapping_sub(b'a'))) else {
            continue;
        };
        // Compared in place, not by `starts_with` and `==` (crate::same
        // says why).
        let starts = |w: &[u8]| lower.get(..w.len()).is_some_and(|p| same(p, w));
        for &(w, kind) in bucket {
            match kind {
                Word::Strong if starts(w) => m.strong = true,
                Word::WeakPrefix if starts(w) => m.weak = true,
                Word::WeakExact if raw.len() == w.len() && same(lower, w) => m.weak = true,
                Word::Ok if raw.len() == w.len() && same(lower, w) => m.ok = true,
                _ => {}
            }
        }
    }
    m
}

/// Words of a heading's `class` or `id` that name a list of other pages'
/// teasers: WordPress related-posts plugins and themes (`relatedposts-title`,
/// `jp-relatedposts-headline`, `yarpp-related`), "recommended" and "most
/// popular" boxes.
const RELATED: &[&str] = &["related", "recommend", "popular", "trending", "youmayalsolike"];

/// Whether a heading's `class` or `id` value names a related-content list
/// ([`RELATED`], anywhere in a token, any case).
pub(crate) fn names_related(value: &str) -> bool {
    value.split_ascii_whitespace().any(|token| {
        let lower = token.to_ascii_lowercase().replace(['-', '_'], "");
        RELATED.iter().any(|w| lower.contains(w))
    })
}

/// Name segments of an article's lead, set apart above its body: RT's
/// `article__summary`, the Guardian's `standfirst`, BBC's
/// `story-body__introduction`, `article-lead`, `dek`.
const LEAD: &[&str] = &[
    "summary",
    "lead",
    "lede",
    "standfirst",
    "intro",
    "introduction",
    "dek",
    "abstract",
];

/// Whether a `class` or `id` value names an article's lead ([`LEAD`]: a
/// whole segment of a token, split at `-`, `_`, any case).
#[cfg(test)]
pub(crate) fn names_lead(value: &str) -> bool {
    value.split_ascii_whitespace().any(is_lead_token)
}

/// Whether one token of a `class` or `id` value names an article's lead.
fn is_lead_token(token: &str) -> bool {
    token
        .split(['-', '_'])
        .any(|seg| LEAD.iter().any(|w| seg.eq_ignore_ascii_case(w)))
}

/// Whether a `class` or `id` value names a template part.
#[cfg(test)]
fn is_boilerplate_name(value: &str) -> bool {
    is_boilerplate_names(value, "")
}

/// Whether an element's `class` and `id` together name a template part.
///
/// Each token is judged on its own (`comment-list` is template, `comment-content` is
/// not), then, as in Readability (`okMaybeItsACandidate` is tested on the whole
/// class and id string), a content word in *another* token clears a mark: themes put
/// layout classes next to the content ones (`article-body pagination-first`,
/// `post has-sidebar`), and dropping the article for them loses the whole page. A
/// token that says both (`sidebar-content`) stays template: that is a sidebar's body.
pub(crate) fn is_boilerplate_names(class: &str, id: &str) -> bool {
    let mut boiler = Boiler::default();
    for token in class.split_ascii_whitespace().chain(id.split_ascii_whitespace()) {
        boiler.add(token_marks(token));
    }
    boiler.says()
}

/// [`is_boilerplate_names`]'s reading of the tokens so far.
#[derive(Debug, Default, Clone, Copy)]
struct Boiler {
    /// A token marks template on its own.
    marked_alone: bool,
    /// A token says content without a template mark.
    ok_alone: bool,
}

impl Boiler {
    fn add(&mut self, m: TokenMarks) {
        if m.strong || (m.weak && !m.ok) {
            self.marked_alone = true;
        } else if m.ok && !m.weak {
            // (A strong token never gets here: `sidebar-content` clears nothing.)
            self.ok_alone = true;
        }
    }

    /// Whether the tokens name a template part.
    fn says(&self) -> bool {
        self.marked_alone && !self.ok_alone
    }
}

/// Whether a class and id that mark template ([`is_boilerplate_names`]) do so
/// only by a generic box word (`widget`): a page builder's wrapper, which
/// Elementor puts around every widget's content, the post's own included.
/// Such a box is template beside an article, not as the inner wrapper of a
/// body container (`main_content::wraps_body`); `comment-list` inside a
/// `post-entry` says what it holds, and stays template.
pub(crate) fn names_generic_box(class: &str, id: &str) -> bool {
    // Without the word, nothing is left out: the names mark as they did.
    let has_word = |v: &str| v.as_bytes().windows(6).any(|w| w.eq_ignore_ascii_case(b"widget"));
    if !has_word(class) && !has_word(id) {
        return false;
    }
    let without = |value: &str| -> String {
        value
            .split_ascii_whitespace()
            .map(|token| {
                token
                    .split(['-', '_', ':', '.'])
                    .filter(|seg| !seg.to_ascii_lowercase().starts_with("widget"))
                    .collect::<Vec<_>>()
                    .join("-")
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    is_boilerplate_names(class, id) && !is_boilerplate_names(&without(class), &without(id))
}

/// Class or id fragments that name an article's body container. Peers rely on the
/// same vocabulary (trafilatura's `BODY_XPATH`: `post-content`, `entry-content`,
/// `article-body`, `story-body` ...; WordPress, Drupal and most news CMSs emit them).
/// Matched as substrings of a token with `-` and `_` removed, case-insensitively.
const CONTENT_HINTS: &[&str] = &[
    "articlebody",
    "articlecontent",
    "articletext",
    "articlecopy",
    "postcontent",
    "postbody",
    "posttext",
    "postentry",
    "entrycontent",
    "entrybody",
    "storybody",
    "storycontent",
    "storytext",
    "bodytext",
    "textcontent",
    "contentbody",
    "newscontent",
    "newstext",
    "newsbody",
    "itembody",
    "articledetail",
    "detailcontent",
];

/// Whether a `class` or `id` value names an article body container (see
/// [`CONTENT_HINTS`]).
#[cfg(test)]
pub(crate) fn is_content_name(value: &str) -> bool {
    value
        .split_ascii_whitespace()
        .any(|token| token.len() <= 64 && names_body_word(token.as_bytes()) && is_content_token(token))
}

/// Whether `token` contains `body`, `content`, `text`, `copy`, `entry` or `detail`
/// (any case): every hint does, and most class tokens (`menu-item`, `col-md-4`) do
/// not, so one pass dispatching on the first byte rules them out cheaply (this check
/// runs for every element with a class).
fn names_body_word(token: &[u8]) -> bool {
    let at = |i: usize, word: &[u8]| {
        token
            .get(i..i + word.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(word))
    };
    (0..token.len()).any(|i| match token[i] | 0x20 {
        b'b' => at(i, b"body"),
        b'c' => at(i, b"content") || at(i, b"copy"),
        b't' => at(i, b"text"),
        b'e' => at(i, b"entry"),
        b'd' => at(i, b"detail"),
        _ => false,
    })
}

/// What one token of a `class` or `id` value (a run without ASCII
/// whitespace) says, for each rule that reads tokens: what an element's
/// names say is these facts combined over its tokens ([`TokenNames::fold`]),
/// so a token is read once for every rule, and a class token met on
/// earlier pages need not be read again (the walk remembers them). Before,
/// each rule split the whole value again: on the zh/en documentation mix,
/// where nearly every heading's section has an id of its own, reading the
/// names of elements was 2.7% of a crawl's instructions (issue 37).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenNames {
    /// Its template and content marks ([`token_marks`]).
    marks: TokenMarks,
    /// It names an article's lead ([`names_lead`]).
    pub lead: bool,
    /// It names an article's body ([`is_content_name`]).
    pub content: bool,
    /// It hides the element on every screen, as a class
    /// (`has_token(class, "hidden")`, or `d-none`).
    pub hidden: bool,
}

impl TokenNames {
    /// The facts of `token`, which holds no ASCII whitespace.
    pub(crate) fn of(token: &str) -> Self {
        let marks = token_marks(token);
        Self {
            marks,
            lead: is_lead_token(token),
            content: token.len() <= 64
                && names_body_word(token.as_bytes())
                && !marks.strong
                && is_content_squashed(token),
            hidden: has_token(token, "hidden") || has_token(token, "d-none"),
        }
    }

    /// Folds one more token into `names` (the tokens of the class, then of
    /// the id, in order): what [`is_boilerplate_names`], [`names_lead`] and
    /// [`is_content_name`] say of the whole values.
    pub(crate) fn fold(self, names: &mut NamesSoFar) {
        names.boiler.add(self.marks);
        names.lead |= self.lead;
        names.content |= self.content;
    }
}

/// The facts of an element's tokens folded so far ([`TokenNames::fold`]).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct NamesSoFar {
    boiler: Boiler,
    pub lead: bool,
    pub content: bool,
}

impl NamesSoFar {
    /// [`is_boilerplate_names`] of the values whose tokens were folded.
    pub(crate) fn boiler(&self) -> bool {
        self.boiler.says()
    }
}

/// The full check of one token (at most 64 bytes) against [`CONTENT_HINTS`].
#[cfg(test)]
fn is_content_token(token: &str) -> bool {
    let (buf, n) = squashed(token);
    is_content_squashed_by_windows(&buf[..n]) && !token_marks(token).strong
}

/// The first 64 bytes of `token` without `-` and `_`, lower-cased, and
/// how many there are.
fn squashed(token: &str) -> ([u8; 64], usize) {
    let mut buf = [0u8; 64];
    let mut n = 0;
    for (&b, slot) in token
        .as_bytes()
        .iter()
        .filter(|&&b| b != b'-' && b != b'_')
        .zip(buf.iter_mut())
    {
        *slot = b.to_ascii_lowercase();
        n += 1;
    }
    (buf, n)
}

/// [`is_content_token`] but for its strong mark: the token, without `-`
/// and `_`, lower-cased, holds a hint and not `comment`. The hints and
/// `comment` are found in one pass of an Aho-Corasick automaton.
fn is_content_squashed(token: &str) -> bool {
    let (buf, n) = squashed(token);
    let squashed = &buf[..n];
    let Some(hints) = content_hints() else {
        return is_content_squashed_by_windows(squashed);
    };
    let (mut hint, mut comment) = (false, false);
    for m in hints.find_overlapping_iter(squashed) {
        if m.pattern().as_usize() < CONTENT_HINTS.len() {
            hint = true;
        } else {
            comment = true;
        }
    }
    // "comments-body" or "sidebar-content" are not the article (the strong
    // mark of "sidebar" is the caller's).
    hint && !comment
}

/// The automaton of [`CONTENT_HINTS`], then `comment` (`None` if it could
/// not be built, which the fixed patterns rule out).
fn content_hints() -> Option<&'static aho_corasick::AhoCorasick> {
    static HINTS: std::sync::OnceLock<Option<aho_corasick::AhoCorasick>> = std::sync::OnceLock::new();
    HINTS
        .get_or_init(|| aho_corasick::AhoCorasick::new(CONTENT_HINTS.iter().chain(&["comment"])).ok())
        .as_ref()
}

/// [`is_content_squashed`] on its squashed token, a window scan per hint:
/// its reference, and its way should the automaton not be built.
fn is_content_squashed_by_windows(squashed: &[u8]) -> bool {
    let has = |word: &[u8]| squashed.windows(word.len()).any(|w| w == word);
    CONTENT_HINTS.iter().any(|h| has(h.as_bytes())) && !has(b"comment")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads() {
        for l in [
            "article__summary summary",
            "standfirst",
            "story-body__introduction",
            "article-lead",
        ] {
            assert!(names_lead(l), "{l}");
        }
        for c in [
            "leaderboard",
            "summary-list-item2",
            "article__text text",
            "introjs",
        ] {
            assert_eq!(names_lead(c), c.starts_with("summary"), "{c}");
        }
    }

    #[test]
    fn related_headings() {
        for r in [
            "relatedpoststitle",
            "jp-relatedposts-headline",
            "widget-title Most_Popular",
            "recommended",
        ] {
            assert!(names_related(r), "{r}");
        }
        for c in ["entry-title", "post-title", "related", "section-heading"] {
            assert_eq!(names_related(c), c == "related", "{c}");
        }
    }

    #[test]
    fn names() {
        for b in [
            "nav",
            "main-nav",
            "site-footer",
            "sidebar right",
            "cookie-banner",
            "breadcrumbs",
            "share_box",
            "comment-list",
            "ad",
            "top",
            "hot-news",
            "friendlinks",
            "navbar-inverse",
            "Skip-To-Content",
        ] {
            assert!(is_boilerplate_name(b), "{b} should be boilerplate");
        }
        for c in [
            "article-content",
            "content",
            "post-body",
            "main",
            "comment-content",
            "story text",
            "headline",
            "adjacent",
            "shadow",
            "",
        ] {
            assert!(!is_boilerplate_name(c), "{c} should not be boilerplate");
        }
    }

    #[test]
    fn content_word_in_another_token_clears_a_mark() {
        assert!(!is_boilerplate_names("article-body pagination-first", ""));
        assert!(!is_boilerplate_names("post has-sidebar", ""));
        assert!(is_boilerplate_names("container", "content-sidebar"));
        assert!(is_boilerplate_names("penci-sidebar-content", ""));
        assert!(is_boilerplate_names("sidebar right", "block-1"));
        assert!(!is_boilerplate_names("widget_text", ""));
        assert!(names_generic_box("elementor-widget-container", ""));
        assert!(!names_generic_box("widget", "sidebar-widget-3"));
        assert!(!names_generic_box("comment_container", ""));
        assert!(!names_generic_box("widget comments-widget", ""));
        assert!(!names_generic_box("entry-content", ""));
    }

    #[test]
    fn content_names() {
        for c in [
            "entry-content",
            "article__body x",
            "post_content",
            "StoryBody",
            "c-article-text",
        ] {
            assert!(is_content_name(c), "{c} should name content");
        }
        for c in [
            "content",
            "article",
            "sidebar-content",
            "comment-body-text",
            "share-post-content",
            "",
        ] {
            assert!(!is_content_name(c), "{c} should not name content");
        }
    }

    #[test]
    fn roles() {
        assert!(is_boilerplate_role("navigation"));
        assert!(is_boilerplate_role("Banner"));
        assert!(!is_boilerplate_role("main"));
        assert!(!is_boilerplate_role("article"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// One pass of the automaton finds what a window scan per hint found.
        #[test]
        fn hints_found_in_one_pass_are_those_of_the_window_scans(
            pieces in proptest::collection::vec(
                proptest::sample::select(
                    &["post", "Content", "body", "-", "_", "comment", "article", "text", "entry", "story", "news",
                      "detail", "x", "é", "itembody", "copy", "COMMENT", "s"][..],
                ),
                0..12,
            )
        ) {
            let token = pieces.concat();
            let (buf, n) = squashed(&token);
            proptest::prop_assert_eq!(
                is_content_squashed(&token),
                is_content_squashed_by_windows(&buf[..n]),
                "{:?}", token
            );
        }
    }
}
