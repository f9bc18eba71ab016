#![allow(clippy::unwrap_used)]
use super::*;

/// The tree as a list of opens and closes with what each node is, for
/// comparison with scraper's.
fn outline(dom: &Dom) -> Vec<String> {
    dom.traverse()
        .map(|edge| match edge {
            Edge::Open(id) => match dom.data(id) {
                NodeData::Document => "doc".to_owned(),
                NodeData::Fragment => "fragment".to_owned(),
                NodeData::Element(e) => {
                    let e = dom.element(e);
                    let mut attrs: Vec<_> = e.attrs().map(|(k, v)| format!("{k}={v}")).collect();
                    attrs.sort();
                    format!("<{} {}>", e.local(), attrs.join(" "))
                }
                NodeData::Text(t) => format!("{:?}", &**t),
                NodeData::Other => "other".to_owned(),
            },
            Edge::Close(_) => "/".to_owned(),
        })
        .collect()
}

/// [`outline`] with every element's and attribute's namespace and
/// prefix: our builder against html5ever's.
fn full_outline(dom: &Dom) -> Vec<String> {
    dom.traverse()
        .map(|edge| match edge {
            Edge::Open(id) => match dom.data(id) {
                NodeData::Element(e) => {
                    let mut attrs: Vec<_> = dom
                        .element(e)
                        .attrs
                        .iter()
                        .map(|a| format!("{:?}={}", a.name, &*a.value))
                        .collect();
                    attrs.sort();
                    format!("<{:?} {}>", e.name, attrs.join(" "))
                }
                NodeData::Text(t) => format!("{:?}", &**t),
                _ => format!("{:?}", std::mem::discriminant(dom.data(id))),
            },
            Edge::Close(_) => "/".to_owned(),
        })
        .collect()
}

fn scraper_outline(html: &str) -> Vec<String> {
    use scraper::Node as S;
    let doc = scraper::Html::parse_document(html);
    doc.tree
        .root()
        .traverse()
        .map(|edge| match edge {
            ego_tree::iter::Edge::Open(n) => match n.value() {
                S::Document => "doc".to_owned(),
                S::Fragment => "fragment".to_owned(),
                S::Element(e) => {
                    let mut attrs: Vec<_> = e.attrs().map(|(k, v)| format!("{k}={v}")).collect();
                    attrs.sort();
                    format!("<{} {}>", e.name(), attrs.join(" "))
                }
                S::Text(t) => format!("{:?}", &**t),
                _ => "other".to_owned(),
            },
            ego_tree::iter::Edge::Close(_) => "/".to_owned(),
        })
        .collect()
}

/// Markup that makes the tree builder use every sink operation:
/// misnested formatting (the adoption agency moves and reparents
/// nodes), text and tables foster-parented before a table, a second
/// `<body>` and `<html>` adding attributes, templates, comments
/// between texts, implied elements, foreign content.
const TRICKY: &[&str] = &[
    "<!DOCTYPE html><p>a<b>b<i>c</b>d</i>e</p>",
    "<table>x<tr>y<td>z</td></tr>w</table>after",
    "<table><b>bold<tr><td>cell</td></tr>more</b></table>",
    "<body a=1><p>x</p><body a=2 b=3><html lang=en x=y>",
    // Attributes added to elements whose own are not the last in the
    // tree's list, and formatting elements reopened with theirs.
    "<html z=0><body a=1><p q=1>x</p><body a=2 b=3><p r=2>y</p><html lang=en z=9 x=y><p s=3 t=4>z</p><body c=5 d=6><b id=k class=m><p>q</b>w",
    "<template><p>in</p>t</template><p>out</p>",
    "a<!--c-->b<?pi x?>c",
    "<a href=1>one<p>two</a>three",
    "<ul><li>1<li>2<li>3</ul><dl><dt>t<dd>d</dl>",
    "<svg><a xlink:href=x>s</a><foreignObject><p>f</p></foreignObject></svg><math><mi>m</mi></math>",
    "<select><option>o<option>p</select><textarea>t&amp;</textarea><title>x</title>",
    "<div><span>a</div>b</span>c",
    "<b><b><b><b>x</b></b></b></b><nobr>1<nobr>2",
    "<p><table><tr><td><p>cell</table>tail",
    "<frameset><frame></frameset>",
    "",
    "<h1>A</h2>B<h3>C",
    "<form><form><input></form>x",
    "text only",
    "<table><tr><td>a<td>b<tr><td>c</table><table>x<caption>y</caption></table>",
    "<script><!--></script>after</script>",
    "<script><!--<scripts></script>",
    "<script>x<!--y</script>",
    "<script>-->--!><!-- -- - </script\t>x",
    "<script><!--<script>x</script>y-->z</script>w",
];

#[test]
fn the_tree_is_the_one_scraper_builds() {
    for html in TRICKY {
        assert_eq!(outline(&Dom::parse(html)), scraper_outline(html), "{html}");
    }
}

/// Pieces of markup that drive the tree builder's harder rules; any
/// sequence of them is a page the two trees must agree on.
const PIECES: &[&str] = &[
    "<b>",
    "</b>",
    "<i>",
    "</i>",
    "<p>",
    "</p>",
    "<div>",
    "</div>",
    "<table>",
    "</table>",
    "<tr>",
    "<td>",
    "</td>",
    "<caption>",
    "<colgroup>",
    "<col>",
    "text",
    " ",
    "\n",
    "&amp;",
    "<!--c-->",
    "<template>",
    "</template>",
    "<a href=x>",
    "</a>",
    "<li>",
    "<ul>",
    "</ul>",
    "<body x=1>",
    "<html y=2>",
    "<select>",
    "<option>",
    "</select>",
    "<svg>",
    "</svg>",
    "<math>",
    "<nobr>",
    "<form>",
    "</form>",
    "<h1>",
    "</h2>",
    "<pre>\n",
    "<frameset>",
    "<frame>",
    "<textarea>",
    "</textarea>",
    "<script>",
    "</script>",
    "<head>",
    "<title>",
    "</title>",
    "<br>",
    "</br>",
    "<hr>",
    "<img src=y>",
    "<button>",
    "<dd>",
    "<dt>",
    "<!DOCTYPE html>",
    "<plaintext>",
    "<noscript>",
    "</noscript>",
    "<foreignObject>",
    "<mi>",
    "<font color=red>",
    "</font>",
    "<marquee>",
    "</marquee>",
    "<object>",
    "<applet>",
    "<tbody>",
    "<th>",
    "<rb>",
    "<ruby>",
    "<input>",
    // What the tokenizer of dom/tokens.rs reads itself.
    "&",
    "&amp",
    "&amp;",
    "&ampx",
    "&notit;",
    "&not",
    "&#",
    "&#x",
    "&#x41;",
    "&#65",
    "&#150;",
    "&#0;",
    "&#xD800;",
    "&#99999999;",
    "&nbsp;",
    "&NotANamedRef;",
    "&lt",
    "<",
    "</",
    "</>",
    "< a",
    "<3",
    "\r\n",
    "\r",
    "\u{FEFF}",
    "<DIV CLASS=Up>",
    "<p id=\"a&amp;b\" title='x&notit;y' data=&lt;z>",
    "<a href=?a=1&b=2>",
    "<a href='?x=1&amp=2&ampy'>",
    "<a b c=d e = 'f' g=\"h\"i>",
    "<a x=1 x=2>",
    "<a / b=c/>",
    "<br/>",
    "<img src=x/>",
    "<!-- c -->",
    "<!---->",
    "<!-- a -- b --->",
    "<!--->",
    "<!-->",
    "<!-- x --!>",
    "<!--x",
    "<!DOCTYPE html>",
    "<!doctype HTML>",
    "<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Transitional//EN\" \"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd\">",
    "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01 Transitional//EN\">",
    "<!DOCTYPE html SYSTEM 'about:legacy-compat'>",
    "<!DOCTYPE>",
    "<!DOCTYPEhtml>",
    "<![CDATA[x]]>",
    "<!x>",
    "<?xml?>",
    "</ x>",
    "</&>",
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
    "<title>a &amp; <b> </title>",
    "<textarea>\nx&lt;</textarea>",
    "<style>p>b{}</style>",
    "<script>if (a<b) x='</p>'</script>",
    "<script><!--\nx='</script>'//-->",
    "<script><!-- <script> </script> --></script>",
    "<script>a<!--b<SCRIPT>c</script >d-->e</script>",
    "<script><!--x--></script>",
    "<script><!---->x</script>",
    "<script>--> a -- b</script>",
    "-->",
    "--",
    "<script",
    "</script",
    "</script >",
    "</style/>",
    "<xmp><b></xmp>",
    "<iframe><p></iframe>",
    "<noscript><p>n</noscript>",
    "<pre>\n\nx</pre>",
    "<pre>&#10;x",
    "<listing>\ny",
    "</p a=b>",
    "<a\thref=t\n>",
    "<Title>T</TITLE>",
    "<svg><title>s</title><script>v</script></svg>",
    "<math><mtext><title>t</title>",
    "中文",
    "<p 中=文>",
    "<meta charset=utf-8>",
    "<meta http-equiv=Content-Type content=\"text/html; charset=gbk\">",
    "<span class=\"n\">name</span><span class=\"o\">.</span>",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    #[test]
    fn any_sequence_of_markup_builds_scrapers_tree(
        picks in proptest::collection::vec(0..PIECES.len(), 0..48)
    ) {
        let html: String = picks.iter().map(|&i| PIECES[i]).collect();
        proptest::prop_assert_eq!(outline(&Dom::parse(&html)), scraper_outline(&html), "{}", html);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
    /// The tokenizer of dom/tokens.rs builds the tree html5ever's
    /// tokenizer builds, on any sequence of the pieces (the pages it
    /// gives up on are parsed by html5ever's and agree trivially).
    #[test]
    fn our_tokenizer_builds_html5evers_tree(
        picks in proptest::collection::vec(0..PIECES.len(), 0..40)
    ) {
        let html: String = picks.iter().map(|&i| PIECES[i]).collect();
        let ours = outline(&Dom::parse(&html));
        let theirs = outline(&Dom::parse_with_html5ever(&html, 0));
        proptest::prop_assert_eq!(ours, theirs, "{:?}", html);
    }
}

/// Pieces the tokenizer gives up on, alone or before another piece.
const GIVE_UP: &[&str] = &[
    "<!--->",
    "<!-->",
    "<!-- x --!>",
    "<!--x",
    "<!DOCTYPE>",
    "<!DOCTYPEhtml>",
    "<![CDATA[x]]>",
    "<script>x<!--y</script>",
    "</style/>",
    "</p a=b>",
    "<plaintext>",
    "<",
    "</",
    "</br>",
    "<script>",
    "<script",
    "</script",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
    /// Without the pieces it gives up on, the tokenizer reads every
    /// sequence itself, and builds html5ever's tree.
    #[test]
    fn our_tokenizer_reads_the_rest_itself(
        picks in proptest::collection::vec(0..PIECES.len(), 0..40)
    ) {
        let html: String = picks
            .iter()
            .map(|&i| PIECES[i])
            .filter(|p| !GIVE_UP.contains(p))
            .collect();
        let ours = tokens::parse(&html, Dom::sink(0));
        proptest::prop_assert!(ours.is_some(), "gave up on {:?}", html);
        let ours = outline(&ours.unwrap());
        let theirs = outline(&Dom::parse_with_html5ever(&html, 0));
        proptest::prop_assert_eq!(ours, theirs, "{:?}", html);
    }
}

/// The script data states: a script hidden in a comment (javadoc's,
/// old pages') ends at its `</script>`, unless the comment holds a
/// `<script>` whose end tag it is.
#[test]
fn scripts_in_comments_are_read_here() {
    for html in [
        "<script type=\"text/javascript\"><!--\n try { parent.document.title=\"A\"; } catch(err) {}\n//-->\n</script><p>after</p>",
        "<script><!--\ndocument.write('<script>x</script>');\n//--></script><p>after</p>",
        "<script><!--></script><p>after</p>",
        "<script><!-- a --> b </script><p>after</p>",
        "<script><!--<script>x</script>--></script><p>after</p>",
        "<script><!--<script>x</script></script><p>inside</p>",
    ] {
        let ours = tokens::parse(html, Dom::sink(0));
        assert!(ours.is_some(), "{html}");
        assert_eq!(
            outline(&ours.unwrap()),
            outline(&Dom::parse_with_html5ever(html, 0)),
            "{html}"
        );
    }
}

proptest::proptest! {
    /// Random text over the characters markup is made of, and random
    /// tags, attributes, comments and raw-text elements: our tokenizer
    /// (or html5ever's, where ours gives up) builds html5ever's tree.
    /// CI runs proptest's default number of cases; a long run:
    /// `PROPTEST_CASES=200000 cargo test --release -p simcrawl-clean
    /// --lib fuzz_` (400,000 cases passed on 2026-12-05).
    #[test]
    fn fuzz_markup_chars(html in "[<>/!?&#;=\"' a-eA-Es-tx0-9\\-\n\r\u{FEFF}中]{0,60}") {
        let ours = outline(&Dom::parse(&html));
        let theirs = outline(&Dom::parse_with_html5ever(&html, 0));
        proptest::prop_assert_eq!(ours, theirs, "{:?}", html);
    }

    #[test]
    fn fuzz_tags(parts in proptest::collection::vec(
        "(<[a-zA-Z]{1,8}( [a-z]{1,4}(=(\"[^\"]{0,6}\"|'[^']{0,6}'|[a-z&;#0-9]{0,6}))?){0,3} ?/?>|</[a-zA-Z]{1,8} ?>|[a-z &;#0-9<>-]{0,8}|<!--[a-z -]{0,6}-->|<script>|</script>|<title>|</title>|<!--|-->|<table>|<tr>|<td>|<svg>|</svg>)",
        0..30,
    )) {
        let html: String = parts.concat();
        let ours = outline(&Dom::parse(&html));
        let theirs = outline(&Dom::parse_with_html5ever(&html, 0));
        proptest::prop_assert_eq!(ours, theirs, "{:?}", html);
    }
}

/// Markup our tree builder (dom/build.rs) reads itself: the modes up
/// to "in body" and after it, tables and their sections, implied end
/// tags, formatting elements well nested or reopened after a block.
const OWN_PIECES: &[&str] = &[
    "<b>",
    "</b>",
    "<i>",
    "</i>",
    "<code>",
    "</code>",
    "<p>",
    "</p>",
    "<div>",
    "</div>",
    "<table>",
    "</table>",
    "<thead>",
    "<tbody>",
    "</tbody>",
    "<tr>",
    "</tr>",
    "<td>",
    "</td>",
    "<th>",
    "<caption>",
    "</caption>",
    "<colgroup>",
    "<col>",
    "text",
    " ",
    "\n",
    "&amp;",
    "<!--c-->",
    "<a href=x>",
    "</a>",
    "<li>",
    "<ul>",
    "</ul>",
    "<ol>",
    "</ol>",
    "<dl>",
    "<dd>",
    "<dt>",
    "</dl>",
    "<form>",
    "</form>",
    "<input type=hidden>",
    "<h1>",
    "</h1>",
    "<h2>",
    "</h3>",
    "<pre>\n",
    "</pre>",
    "<span class=s>",
    "</span>",
    "<br>",
    "<hr>",
    "<img src=y>",
    "<button>",
    "</button>",
    "<meta charset=utf-8>",
    "<link rel=x>",
    "<title>t</title>",
    "<script>s</script>",
    "<style>c</style>",
    "<head>",
    "</head>",
    "<body>",
    "</body>",
    "</html>",
    "<html lang=en>",
    "<!DOCTYPE html>",
    "<textarea>\nx</textarea>",
    "<em>",
    "</em>",
    "<strong>",
    "</strong>",
    "<section>",
    "</section>",
    "<nav>",
    "</nav>",
    "<svg viewBox=\"0 0 1 1\" xmlns=\"http://www.w3.org/2000/svg\">",
    "</svg>",
    "<g>",
    "</g>",
    "<path d=x/>",
    "<use xlink:href=#i></use>",
    "<linearGradient>",
    "</lineargradient>",
];

/// Sequences of [`OWN_PIECES`] from a fixed pseudo-random walk: every
/// tree our builder builds is html5ever's, and it builds most of them
/// (the rest, tables with text or misnested formatting that html5ever
/// foster-parents or adopts, it leaves to html5ever).
#[test]
fn our_tree_builder_builds_html5evers_tree() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n
    };
    let (mut built, runs) = (0, 3000);
    for _ in 0..runs {
        let len = next(30);
        let html: String = (0..len).map(|_| OWN_PIECES[next(OWN_PIECES.len())]).collect();
        let theirs = full_outline(&Dom::parse_with_html5ever(&html, 0));
        match tokens::parse_own(&html, Dom::empty(0), usize::MAX) {
            Ok(ours) => {
                built += 1;
                assert_eq!(full_outline(&ours), theirs, "{html:?}");
            }
            Err(who) => assert_eq!(who, tokens::GaveUp::Builder, "{html:?}"),
        }
        assert_eq!(full_outline(&Dom::parse(&html)), theirs, "{html:?}");
    }
    assert!(built * 2 > runs, "our builder built only {built} of {runs} pages");
}

/// Pages of the shapes documentation and news sites have are built
/// by our builder, not left to html5ever's.
#[test]
fn common_pages_are_built_by_our_builder() {
    for html in [
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Doc</title>\n<link rel=stylesheet href=s.css>\n<script src=a.js></script>\n</head>\n<body>\n<div class=body><h1>Title</h1><p>Some <code>code</code> and <a href=x>a link</a>.<p>More<ul><li>one<li>two</ul></div>\n</body>\n</html>\n",
        "<table class=docutils><colgroup><col width=10%><col></colgroup><thead><tr><th>a<th>b</thead><tbody><tr><td><p>x</p><td>y<tr><td>z</td></tr></tbody></table>",
        "<dl><dt><code>f(x)</code><dd><p>Does <em>things</em>.</p></dl><pre>\nline\n</pre>",
        "<p><b>bold <i>both</p>after",
        "<form action=s><input type=text name=q><button>Go</button></form><table><form><tr><td>c</table>",
        "<html><head><title>x</title></head><body><p>a</p></body></html><!-- end -->\n",
        "<table><caption>Cap</caption><tr><td>1</td></tr></table>",
        "<button class=theme><svg class=\"icon\" viewBox=\"0 0 24 24\"><use xlink:href=\"#sun\"></use><path d=\"M1 1\"/></svg><span>Theme</span></button>",
    ] {
        let ours = tokens::parse_own(html, Dom::empty(0), usize::MAX);
        assert!(ours.is_ok(), "{html}");
        assert_eq!(
            full_outline(&ours.unwrap()),
            full_outline(&Dom::parse_with_html5ever(html, 0)),
            "{html}"
        );
    }
}

#[test]
fn text_of_concatenates_descendant_text() {
    let dom = Dom::parse("<h1>A <b>bold</b> <i>x</i></h1>");
    let h1 = dom
        .traverse()
        .find_map(|e| match e {
            Edge::Open(id) if matches!(dom.data(id), NodeData::Element(e) if *dom.element(e).local() == html5ever::local_name!("h1")) => Some(id),
            _ => None,
        })
        .unwrap();
    assert_eq!(dom.text_of(h1), "A bold x");
}

#[test]
fn attr_reads_attributes_without_a_namespace() {
    let dom = Dom::parse("<a href=x class=c>t</a><svg><a xlink:href=y>s</a></svg>");
    let hrefs: Vec<_> = dom
        .traverse()
        .filter_map(|e| match e {
            Edge::Open(id) => match dom.data(id) {
                NodeData::Element(e) if *dom.element(e).local() == html5ever::local_name!("a") => {
                    Some(dom.element(e).attr("href"))
                }
                _ => None,
            },
            Edge::Close(_) => None,
        })
        .collect();
    assert_eq!(hrefs, vec![Some("x"), None]);
}

/// The deepest element's number of element ancestors, itself included.
fn element_depth(dom: &Dom) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for edge in dom.traverse() {
        match edge {
            Edge::Open(id) if matches!(dom.data(id), NodeData::Element(_)) => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            Edge::Close(id) if matches!(dom.data(id), NodeData::Element(_)) => depth -= 1,
            _ => {}
        }
    }
    deepest
}

/// A page nested past the cap is flattened (its text kept, its depth
/// near the cap), as it was when every page was scanned before parsing.
#[test]
fn a_page_past_the_depth_cap_is_flattened_and_keeps_its_text() {
    for depth in [nesting::MAX_DEPTH + 1, 3_000] {
        let html = format!("{}deep text{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let dom = Dom::parse(&html);
        assert!(dom.flattened(), "depth {depth}");
        assert!(
            element_depth(&dom) <= nesting::MAX_DEPTH + 3,
            "depth {depth}: {}",
            element_depth(&dom)
        );
        assert!(
            outline(&dom).iter().any(|n| n == "\"deep text\""),
            "depth {depth}"
        );
        // The tree is the one the scan's flattened markup gives.
        let flat = nesting::flatten(&html, nesting::MAX_DEPTH).unwrap();
        assert_eq!(
            full_outline(&dom),
            full_outline(&Dom::parse_with_html5ever(&flat, 0))
        );
    }
    // At the cap, nothing is cut.
    let html = format!("{}x", "<div>".repeat(nesting::MAX_DEPTH - 2));
    let dom = Dom::parse(&html);
    assert!(!dom.flattened());
    assert_eq!(element_depth(&dom), nesting::MAX_DEPTH);
}

/// The scan before parsing estimates depth from the tags alone: unclosed
/// `<div>`s in table cells, which the cells' ends close, add up there.
/// Our builder counts the elements really open, so such a page is built
/// whole, as html5ever builds it unflattened.
#[test]
fn unclosed_elements_the_parser_closes_do_not_flatten_a_page() {
    let html = format!(
        "<table>{}</table><p>after</p>",
        "<tr><td><div class=cell>cell</td></tr>".repeat(nesting::MAX_DEPTH + 100)
    );
    assert!(
        nesting::flatten(&html, nesting::MAX_DEPTH).is_some(),
        "the scan would flatten it"
    );
    let dom = Dom::parse(&html);
    assert!(!dom.flattened());
    assert!(dom.by_html5ever().is_none());
    assert_eq!(
        full_outline(&dom),
        full_outline(&Dom::parse_with_html5ever(&html, 0))
    );
    let cells = outline(&dom).iter().filter(|n| n.starts_with("<div ")).count();
    assert_eq!(cells, nesting::MAX_DEPTH + 100);
}

/// A page left to html5ever is still flattened first: its builder does
/// not count its depth for us.
#[test]
fn a_deep_page_left_to_html5ever_is_flattened() {
    // A NUL makes our tokenizer give up.
    let html = format!("\0{}deep{}", "<span>".repeat(2_000), "</span>".repeat(2_000));
    let dom = Dom::parse(&html);
    assert_eq!(dom.by_html5ever(), Some(Html5ever::Tokenizer));
    assert!(dom.flattened());
    assert!(
        element_depth(&dom) <= nesting::MAX_DEPTH + 3,
        "{}",
        element_depth(&dom)
    );
}
