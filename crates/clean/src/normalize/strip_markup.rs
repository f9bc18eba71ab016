//! Leftover markup: tags and HTML entities inside text.
//!
//! Text that went through a CMS, a feed or a scraper twice often carries escaped
//! markup (`&lt;p&gt;`, `&amp;nbsp;`) or raw tags; a clean copy of the same article
//! does not. This step decodes entities and removes tags, again while a pass leaves
//! new markup behind (up to a cap).

use std::borrow::Cow;

use html5ever::data::{C1_REPLACEMENTS, NAMED_ENTITIES};

use super::Normalizer;
use crate::config::Step;

/// Decodes `&name;`, `&#NN;`, `&#xHH;`, then removes `<tag ...>`, `</tag>`, `<!-- ... -->`,
/// until no markup is left (twice-escaped text is decoded twice).
///
/// Block-level tags become a space so that words on either side stay apart; inline
/// tags vanish so that `foo<b>bar</b>` stays one word. A `<` not followed by a tag
/// name (`a < b`) is kept.
#[derive(Debug, Clone, Copy, Default)]
pub struct StripMarkup;

/// A tag is at most this long; beyond it, a `<` is treated as text.
const MAX_TAG_LEN: usize = 2048;

const BLOCK_TAGS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
];

impl Normalizer for StripMarkup {
    fn name(&self) -> &'static str {
        Step::StripMarkup.name()
    }

    fn normalize<'a>(&self, mut text: Cow<'a, str>) -> Cow<'a, str> {
        // A pass can leave new markup behind: a twice-escaped entity (`&amp;lt;`)
        // decodes to an entity, a removed tag joins the halves of another (`<<b>b>`,
        // `&am<i></i>p;`). Passes repeat until nothing changes, so that the step is
        // idempotent (a text cleaned twice equals the text cleaned once); every pass
        // that changes something shortens the text, and the cap bounds the work on a
        // pathological page (a megabyte of `&amp;amp;amp;...`) to a few linear passes.
        for _ in 0..MAX_PASSES {
            match strip_once(&text) {
                Some(s) => text = Cow::Owned(s),
                None => break,
            }
        }
        text
    }
}

/// At most this many passes of [`strip_once`]: text escaped more often than this is
/// not leftover markup but a page built to be slow, and is left partly escaped.
const MAX_PASSES: usize = 16;

/// One pass: entities decoded, then tags removed; `None` when nothing changed.
fn strip_once(text: &str) -> Option<String> {
    // Entities first: escaped markup (`&lt;p&gt;`) is leftover markup too.
    let decoded = if memchr::memchr(b'&', text.as_bytes()).is_some() {
        decode_entities(text)
    } else {
        None
    };
    let current = decoded.as_deref().unwrap_or(text);
    let stripped = if memchr::memchr(b'<', current.as_bytes()).is_some() {
        strip_tags(current)
    } else {
        None
    };
    stripped.or(decoded)
}

/// Returns the length in bytes of a tag starting at `s` (which begins with `<`), and
/// whether it is a block tag; `None` when `s` does not start a tag.
fn tag_at(s: &str) -> Option<(usize, bool)> {
    let b = s.as_bytes();
    if s.starts_with("<!--") {
        let end = s.get(4..)?.find("-->")?;
        return Some((4 + end + 3, false));
    }
    let next = *b.get(1)?;
    let name_start = match next {
        b'/' => 2,
        b'!' | b'?' => 1,
        c if c.is_ascii_alphabetic() => 1,
        _ => return None,
    };
    if name_start == 2 && !b.get(2).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let limit = b.len().min(MAX_TAG_LEN);
    let mut end = None;
    for (i, &c) in b.iter().enumerate().take(limit).skip(1) {
        match c {
            b'>' => {
                end = Some(i + 1);
                break;
            }
            b'<' => return None,
            _ => {}
        }
    }
    let end = end?;
    if is_address_or_uri(&s[1..end - 1]) {
        return None;
    }
    let name: String = s[name_start..end]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    Some((end, BLOCK_TAGS.contains(&name.as_str())))
}

/// Whether what stands between `<` and `>` is an address or a link
/// written in angle brackets (`<joe@example.org>`, `<https://example.org>`,
/// `<mailto:joe@example.org>`): text that every copy shows (mail headers
/// and quotes, changelogs, man pages' authors), not a tag. A tag's name is
/// never followed by `://`, and an `@` in a tag sits in a quoted or
/// spaced attribute value. (Anything else in angle brackets, such as the
/// `<T>` and `<K, V>` of generic types, is still taken for a tag.)
fn is_address_or_uri(inner: &str) -> bool {
    let name_len = inner
        .bytes()
        .position(|c| !(c.is_ascii_alphanumeric() || c == b'+' || c == b'-' || c == b'.'))
        .unwrap_or(inner.len());
    let uri = name_len > 0 && inner[name_len..].starts_with("://");
    let address = inner.contains('@')
        && !inner.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '=');
    uri || address
}

fn strip_tags(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already handled
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'<', &text.as_bytes()[i..]) {
        let at = i + off;
        if let Some((len, block)) = tag_at(&text[at..]) {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..at]);
            if block {
                o.push(' ');
            }
            copied = at + len;
            i = copied;
        } else {
            i = at + 1;
        }
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}

/// The char a numeric reference to code point `n` stands for, as HTML
/// decodes it: NUL, surrogates and numbers past Unicode are U+FFFD, and
/// 0x80-0x9F are read as windows-1252 (the tokenizer's rule, shared with
/// `crate::dom`'s tokenizer).
pub(crate) fn numeric_reference(n: u32) -> char {
    match n {
        0 => '\u{FFFD}',
        0x80..=0x9F => C1_REPLACEMENTS
            .get((n - 0x80) as usize)
            .copied()
            .flatten()
            .or_else(|| char::from_u32(n))
            .unwrap_or('\u{FFFD}'),
        _ => char::from_u32(n).unwrap_or('\u{FFFD}'),
    }
}

/// Decodes one entity at the start of `s` (which begins with `&`): the chars it stands
/// for and its length in bytes.
fn entity_at(s: &str) -> Option<(char, Option<char>, usize)> {
    let b = s.as_bytes();
    if b.get(1) == Some(&b'#') {
        let (digits_start, radix) = match b.get(2) {
            Some(b'x' | b'X') => (3, 16),
            _ => (2, 10),
        };
        let digits = s[digits_start..]
            .bytes()
            .take_while(|c| c.is_ascii_hexdigit() && (radix == 16 || c.is_ascii_digit()))
            .count();
        if digits == 0 {
            return None;
        }
        let mut len = digits_start + digits;
        if b.get(len) == Some(&b';') {
            len += 1;
        }
        let n = u32::from_str_radix(&s[digits_start..digits_start + digits], radix).unwrap_or(0x11_0000);
        return Some((numeric_reference(n), None, len));
    }
    // Named: the longest alphanumeric run, with its `;` if any. The table also holds
    // the legacy names that may appear without `;` (`&amp`, `&nbsp`).
    let name_len = s[1..]
        .bytes()
        .take(40)
        .take_while(u8::is_ascii_alphanumeric)
        .count();
    if name_len == 0 {
        return None;
    }
    let with_semi = b.get(1 + name_len) == Some(&b';');
    let key = if with_semi {
        &s[1..name_len + 2]
    } else {
        &s[1..=name_len]
    };
    let (a, b2) = *NAMED_ENTITIES.get(key)?;
    if a == 0 {
        // The table also lists every prefix of every name, with no value.
        return None;
    }
    let first = char::from_u32(a)?;
    let second = if b2 == 0 { None } else { char::from_u32(b2) };
    Some((first, second, key.len() + 1))
}

fn decode_entities(text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'&', &text.as_bytes()[i..]) {
        let at = i + off;
        if let Some((c, c2, len)) = entity_at(&text[at..]) {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..at]);
            o.push(c);
            if let Some(c2) = c2 {
                o.push(c2);
            }
            copied = at + len;
            i = copied;
        } else {
            i = at + 1;
        }
    }
    let mut o = out?;
    o.push_str(&text[copied..]);
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    normalizer_tests!(
        StripMarkup,
        [
            ("foo<b>bar</b>", "foobar", "foobar"),
            ("<p>one</p><p>two</p>", " one  two ", "one two"),
            ("a < b and c > d", "a < b and c > d", "a < b and c > d"),
            ("Tom &amp; Jerry", "Tom & Jerry", "tom & jerry"),
            ("&lt;p&gt;文本&lt;/p&gt;", " 文本 ", "文本"),
            ("a &lt; b", "a < b", "a < b"),
            ("&#20013;&#x6587;&nbsp;ok", "中文\u{a0}ok", "中文 ok"),
            ("AT&T &unknown; &amp", "AT&T &unknown; &", "at&t &unknown; &"),
            ("x<!-- hidden -->y", "xy", "xy"),
            (
                "&#0;&#x110000;&#150;",
                "\u{FFFD}\u{FFFD}\u{2013}",
                "\u{FFFD}\u{FFFD}\u{2013}"
            ),
            ("&copy; 2024 新闻", "© 2024 新闻", "© 2024 新闻"),
        ]
    );

    /// Markup that one pass leaves behind is removed too: the step is idempotent.
    #[test]
    fn markup_left_by_a_pass_is_removed() {
        for (input, expected) in [
            ("&amp;lt;p&amp;gt;x", " x"),
            ("&amp;amp;amp;", "&"),
            ("<<b>b>x", "x"),
            ("&am<i></i>p;", "&"),
            ("&#x26;lt;", "<"),
        ] {
            assert_eq!(StripMarkup.normalize(Cow::Borrowed(input)), expected, "{input:?}");
        }
    }

    /// An address or a link in angle brackets is text, not a tag; tags
    /// with attributes, self-closing or custom are still tags, and so is
    /// what generic types put in angle brackets (as before).
    #[test]
    fn addresses_in_angle_brackets_are_text() {
        for (input, expected) in [
            (
                "From: Joe Perches <joe@perches.com>",
                "From: Joe Perches <joe@perches.com>",
            ),
            ("&lt;joe@perches.com&gt; wrote:", "<joe@perches.com> wrote:"),
            ("see <https://example.org/a>", "see <https://example.org/a>"),
            ("<mailto:joe@perches.com>", "<mailto:joe@perches.com>"),
            ("a<br/>b<x-note class=\"n\">c</x-note><br\n>d", "a bc d"),
            ("<a href=\"mailto:joe@perches.com\">Joe</a>", "Joe"),
            ("Map<K, V> and List<T>", "Map and List"),
        ] {
            assert_eq!(StripMarkup.normalize(Cow::Borrowed(input)), expected, "{input:?}");
        }
    }

    #[test]
    fn unterminated_tag_is_text() {
        let s = "x <div class=\"a\" and no end";
        assert_eq!(StripMarkup.normalize(Cow::Borrowed(s)), s);
    }
}
