//! A help system where every page carries the same Chinese notice box ("this help
//! page is incomplete, please help us ...") above its own English reference content:
//! tables of options, definition lists, code and short lines, none of which looks like
//! a prose paragraph. Picking the notice box as the main content made dozens of
//! distinct pages identical for the dedup tiers; the fail-safe must keep them apart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;

use simcrawl_clean::Page;
use url::Url;

const NOTICE: &str = "此帮助页面尚不完整，请帮助我们完善它。如果您熟悉这一功能，请编辑本页，\
    补充说明、示例和截图，并检查现有内容是否准确，谢谢您的贡献，我们会尽快审核并发布。";

const WORDS: &[&str] = &[
    "buffer",
    "cursor",
    "window",
    "search",
    "replace",
    "indent",
    "syntax",
    "folding",
    "register",
    "macro",
    "tabstop",
    "spell",
    "encoding",
    "session",
    "viminfo",
    "backup",
    "undo",
    "redo",
    "mapping",
    "autocmd",
    "quickfix",
    "tags",
    "grep",
    "diff",
    "terminal",
    "clipboard",
    "wildmenu",
    "statusline",
    "ruler",
    "mouse",
];

fn word(i: usize, j: usize) -> &'static str {
    WORDS[(i * 7 + j * 13 + j * j) % WORDS.len()]
}

/// One help page: site header, sidebar menu, the notice box, then the page's own
/// reference content, then a footer.
fn help_page(i: usize) -> String {
    let mut rows = String::new();
    for j in 0..12 {
        rows.push_str(&format!(
            "<tr><td><code>--{}-{j}</code></td><td>Set the {} of the {} ({i}.{j}).</td></tr>\n",
            word(i, j),
            word(i, j + 1),
            word(i, j + 2)
        ));
    }
    let mut defs = String::new();
    for j in 0..6 {
        defs.push_str(&format!(
            "<dt>{}</dt><dd>See <a href=\"/help/{}\">{}</a>; default {j}.</dd>\n",
            word(i, j + 3),
            word(i, j + 4),
            word(i, j + 4)
        ));
    }
    let menu: String = WORDS
        .iter()
        .map(|w| format!("<li><a href=\"/help/{w}\">{w}</a></li>"))
        .collect();
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t} - Help</title></head>
<body>
<div id=\"header\"><a href=\"/\">Editor Help</a> | <a href=\"/help/\">Index</a> | <a href=\"/search\">Search</a></div>
<div id=\"sidebar\"><ul>{menu}</ul></div>
<div id=\"main\">
  <div class=\"notice\"><p>{NOTICE}</p></div>
  <h1>{t}</h1>
  <div class=\"body\">
    <p>:{t} {a}</p>
    <table>{rows}</table>
    <dl>{defs}</dl>
    <pre>:set {a}={i}\n:set {b}&amp;</pre>
  </div>
</div>
<div id=\"footer\">Content is available under the GNU FDL. <a href=\"/about\">About</a></div>
</body></html>",
        t = word(i, 0),
        a = word(i, 1),
        b = word(i, 2),
    )
}

#[test]
fn notice_box_on_every_page_does_not_make_pages_identical() {
    let mut texts = HashSet::new();
    for i in 0..20 {
        let url = Url::parse(&format!("https://help.example.org/page/{i}")).unwrap();
        let page = Page::parse(help_page(i).as_bytes(), Some("text/html; charset=utf-8"), &url).unwrap();
        // The page's own content is there (one of its option rows) ...
        assert!(
            page.text.contains(&format!("({i}.3)")),
            "page {i} lost its own content: {:?}",
            page.text
        );
        // ... and the template is not.
        assert!(
            !page.text.contains("editor help"),
            "page {i} kept the header: {:?}",
            page.text
        );
        assert!(
            !page.text.contains("gnu fdl"),
            "page {i} kept the footer: {:?}",
            page.text
        );
        texts.insert(page.text);
    }
    assert_eq!(texts.len(), 20, "distinct help pages must give distinct texts");
}

#[test]
fn notice_box_alone_is_still_the_text_of_a_page_without_other_content() {
    // With nothing else on the page, the notice is all there is: it must stay.
    let html = format!(
        "<html><body><nav><a href=\"/\">Home</a></nav><div class=\"notice\"><p>{NOTICE}</p></div></body></html>"
    );
    let url = Url::parse("https://help.example.org/empty").unwrap();
    let page = Page::parse(html.as_bytes(), None, &url).unwrap();
    assert!(page.text.contains("此帮助页面尚不完整"), "{:?}", page.text);
    assert!(!page.text.contains("home"), "{:?}", page.text);
}
