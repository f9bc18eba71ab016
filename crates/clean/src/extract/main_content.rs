//! Main-content selection: which parts of the page are the article.
//!
//! Two pages of one site share their template (navigation, header, footer, sidebars
//! full of links); if the template stays in the text, the near-duplicate tier sees
//! every page of the site as a copy of every other. So:
//!
//! 1. Template parts are marked: `nav`/`header`/`footer`/`aside`/`menu`, ARIA landmark
//!    roles, class/id names ([`super::boilerplate`]), and figures (captions and photo
//!    credits are not prose). A class name is weaker evidence than a tag, so a
//!    class-marked element stays content when it holds most of the page's text (or
//!    paragraph text) with few links, or wraps the page's article markup holding a
//!    quarter of its paragraph text: themes call whole-page wrappers
//!    `content-with-sidebar` or `container penci_sidebar`.
//! 2. If the page says where its content is, that part is taken when it holds a fair
//!    share of the text: every outermost body container (`itemprop=articleBody`,
//!    `entry-content`, `article-body`, `story-body` ..., the vocabulary trafilatura's
//!    `BODY_XPATH` and most CMSs use; templates split one article into several around
//!    ads), else a dominant `<article>`, else `<main>`/`role=main` (or the best-scored
//!    block inside it, when that holds most of it).
//! 3. Otherwise a Readability-style score: every block with a real paragraph (20+
//!    non-link chars) scores 1 + its commas (`,` `，` `、` `。`) + 1 per 100 chars
//!    (max 3), credited to itself, its parent, half to its grandparent and a sixth to
//!    the next; each candidate's score is scaled by (1 - link density). The best
//!    candidate and its siblings that score comparably are the content.
//! 4. Fail-safe for dedup: if the chosen content holds less than a quarter of the
//!    page's non-link text outside the template, the choice is not trusted (a notice
//!    box or cookie banner repeated on every page of a site would make distinct pages
//!    identical) and the page's visible text minus template and menus is taken.
//!    Likewise if the choice leaves (almost) nothing; then the whole page.
//!
//! Template parts are skipped inside the chosen content too.

use super::{El, Ev, NONE, Renderer, Semantic, Walk};
use crate::zeros::zeros;

/// A block is a paragraph when it has at least this many non-link chars.
const MIN_PARAGRAPH_CHARS: u32 = 20;
/// A body container (`entry-content` ...) with less non-link text than this is an
/// empty slot (a placeholder for an ad or a widget), not a chunk of the article.
const MIN_BODY_CHUNK_CHARS: u64 = 30;
/// The fail-safe's share: when the chosen content holds less than
/// `FAILSAFE_SHARE_NUM / FAILSAFE_SHARE_DEN` of the page's non-link, non-template
/// text, the page's text minus template is used instead. On the article-extraction
/// benchmark a correct choice never holds less than 36% of it, so a quarter is only
/// reached when a small box was picked over the page's real content.
const FAILSAFE_SHARE_NUM: u64 = 1;
const FAILSAFE_SHARE_DEN: u64 = 4;
/// A block that is mostly links with fewer other chars than this is a menu.
const MENU_MAX_NONLINK_CHARS: u64 = 100;
/// A paragraph with a comma this long (non-link chars) outside a flat
/// page's `<pre>` blocks, and at least half as long as they are, is prose of
/// its own: the page is not a message in a frame (a header field listing
/// message ids, with no comma, is as long beside a message several times
/// longer; an introduction above a listing is prose).
const LONG_PROSE_CHARS: u64 = 100;
/// Below this many chars of main text, fall back to the whole page.
const MIN_MAIN_CHARS: usize = 10;

fn parent_of(els: &[El], i: usize) -> Option<usize> {
    els.get(i)
        .map(|e| e.parent)
        .filter(|&p| p != NONE)
        .map(|p| p as usize)
}

fn is_descendant(els: &[El], mut i: usize, ancestor: usize) -> bool {
    while let Some(p) = parent_of(els, i) {
        if p == ancestor {
            return true;
        }
        i = p;
    }
    false
}

/// Whether hidden text is rendered: only in the page's own and whole text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hidden {
    Skip,
    Show,
}

fn render(walk: &Walk<'_>, roots: &[usize], skip: Option<&[bool]>, cap: usize) -> String {
    render_with(walk, roots, skip, Hidden::Skip, None, cap)
}

/// Renders `roots`' events; `from` (an event and a byte in its text)
/// starts the rendering there instead of at the first root's start.
fn render_with(
    walk: &Walk<'_>,
    roots: &[usize],
    skip: Option<&[bool]>,
    hidden: Hidden,
    from: Option<(usize, usize)>,
    cap: usize,
) -> String {
    let mut r = Renderer::new(cap);
    for &root in roots {
        let Some(el) = walk.els.get(root) else {
            continue;
        };
        let (s, e) = (el.ev_start as usize, el.ev_end as usize);
        for (at, ev) in walk.events.iter().enumerate().take(e).skip(s) {
            let owner = ev.owner() as usize;
            if let Some(skip) = skip
                && skip.get(owner).copied().unwrap_or(false)
            {
                continue;
            }
            if hidden == Hidden::Skip && walk.els.get(owner).is_some_and(|o| o.hidden) {
                continue;
            }
            match (from, *ev) {
                (Some((first, _)), _) if at < first => {}
                (Some((first, byte)), Ev::Text { owner, text, pre }) if at == first => r.event(&Ev::Text {
                    owner,
                    text: text.get(byte..).unwrap_or(""),
                    pre,
                }),
                _ => r.event(ev),
            }
            if r.full {
                break;
            }
        }
    }
    r.out
}

/// A message's `<pre>` blocks without the header block an archive may show
/// at the top of the first (public-inbox: `From:`, `To:`, `Cc:`, `Subject:`,
/// `Date:`, `Message-ID:` lines, then a blank line, then the body). Another
/// archive shows those fields outside the message, or not at all, so a
/// short reply's copy matched neither way with them in (docs/EVAL.md,
/// "Issue 35, ninth round: a second archiver").
fn render_message(walk: &Walk<'_>, pres: &[usize], skip: &[bool], cap: usize) -> String {
    let from = pres.first().and_then(|&p| header_block_end(walk, p));
    render_with(walk, pres, Some(skip), Hidden::Skip, from, cap)
}

/// The text events of element `i`, in order, with their index in the
/// page's events.
fn text_events<'w>(walk: &'w Walk<'_>, i: usize) -> impl Iterator<Item = (usize, &'w str)> {
    let (s, e) = walk
        .els
        .get(i)
        .map_or((0, 0), |el| (el.ev_start as usize, el.ev_end as usize));
    walk.events
        .iter()
        .enumerate()
        .take(e)
        .skip(s)
        .filter_map(|(at, ev)| match ev {
            Ev::Text { text, .. } => Some((at, *text)),
            _ => None,
        })
}

/// Where the body starts in a `<pre>` that opens with an RFC 5322 header
/// block (at least two `Name: value` lines, folded lines indented, up to
/// the first blank line): the text event and the byte in it.
fn header_block_end(walk: &Walk<'_>, pre: usize) -> Option<(usize, usize)> {
    const MAX_HEADER_BYTES: usize = 16 * 1024;
    let mut text = String::new();
    // (event, where its text starts in `text`)
    let mut starts = Vec::new();
    for (at, t) in text_events(walk, pre) {
        starts.push((at, text.len(), t));
        text.push_str(t);
        if text.len() > MAX_HEADER_BYTES {
            break;
        }
    }
    // (the HTML parser has made every CRLF an LF)
    let end = text.find("\n\n")?;
    let mut fields = 0;
    for (n, line) in text[..end].split('\n').enumerate() {
        if line.starts_with([' ', '\t']) && n > 0 {
            continue;
        }
        let name = line.split_once(':')?.0;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return None;
        }
        fields += 1;
    }
    if fields < 2 {
        return None;
    }
    let body = end + 2;
    let &(at, begin, t) = starts.iter().rev().find(|&&(_, b, _)| b <= body)?;
    let byte = (body - begin).min(t.len());
    t.is_char_boundary(byte).then_some((at, byte))
}

fn render_all(walk: &Walk<'_>, skip: Option<&[bool]>, cap: usize) -> String {
    render_all_with(walk, skip, Hidden::Skip, cap)
}

fn render_all_with(walk: &Walk<'_>, skip: Option<&[bool]>, hidden: Hidden, cap: usize) -> String {
    let roots: Vec<usize> = (0..walk.els.len())
        .filter(|&i| walk.els[i].parent == NONE)
        .collect();
    render_with(walk, &roots, skip, hidden, None, cap)
}

/// Whether `s` has at least `n` characters that are not whitespace (a
/// count that stops there: it was read only against [`MIN_MAIN_CHARS`]).
fn has_nonws(s: &str, n: usize) -> bool {
    s.chars().filter(|c| !c.is_whitespace()).take(n).count() >= n
}

/// The texts of a page: its main content, and its own visible text.
#[derive(Debug)]
pub(crate) struct Texts {
    /// The main content (everything when main-content extraction is off).
    pub main: String,
    /// The visible text outside the parts marked as template (navigation,
    /// header, footer, sidebars by tag, role or class name), link text
    /// included: what the page has of its own when its content is links.
    pub own: String,
    /// Characters (not whitespace) of `own` that are link text.
    pub own_link_chars: usize,
    /// The main text is a message in an archive's frame
    /// (`flat_page_preformatted`).
    pub framed: bool,
}

/// Picks the main content (or everything when `main_content` is off) and
/// renders it, and the page's own visible text.
pub(crate) fn select_texts(walk: &Walk<'_>, main_content: bool, cap: usize) -> Texts {
    if !main_content {
        return Texts {
            main: render_all(walk, None, cap),
            own: render_all_with(walk, None, Hidden::Show, cap),
            own_link_chars: walk.els.iter().map(|e| e.own_link_chars as usize).sum(),
            framed: false,
        };
    }
    let (main, framed) = select_text(walk, cap);
    // Only what the page itself declares template (tags and ARIA roles):
    // class names are guesses, good enough to choose a main block, not to
    // say what a page does not own (a section whose id ends in `-tools`
    // would take a whole table of contents with it).
    let els = &walk.els;
    let mut declared = zeros::<bool>(els.len());
    for i in 0..els.len() {
        declared[i] = els[i].tag_boiler || parent_of(els, i).is_some_and(|p| declared[p]);
    }
    let own = render_all_with(walk, Some(&declared), Hidden::Show, cap);
    let own_link_chars = els
        .iter()
        .zip(&declared)
        .filter(|(_, d)| !**d)
        .map(|(e, _)| e.own_link_chars as usize)
        .sum();
    Texts {
        main,
        own,
        own_link_chars,
        framed,
    }
}

/// Subtree totals over everything (template included), which protect mis-marked
/// wrappers from their class names.
struct PageTotals {
    /// Chars per subtree.
    all: Vec<u64>,
    /// Link chars per subtree.
    all_link: Vec<u64>,
    /// Chars of the whole page.
    total: u64,
    /// Paragraph text per subtree (blocks with a real paragraph).
    para: Vec<u64>,
    /// The deepest semantic content marker's paragraph text per subtree.
    sem_para: Vec<u64>,
    /// Paragraph text of the whole page.
    para_total: u64,
}

/// Subtree totals over everything, to protect mis-marked wrappers.
fn page_totals(els: &[El]) -> PageTotals {
    let n = els.len();
    let mut all = zeros::<u64>(n);
    let mut all_link = zeros::<u64>(n);
    for i in (0..n).rev() {
        all[i] += u64::from(els[i].own_chars);
        all_link[i] += u64::from(els[i].own_link_chars);
        if let Some(p) = parent_of(els, i) {
            all[p] += all[i];
            all_link[p] += all_link[i];
        }
    }
    let total: u64 = (0..n).filter(|&i| els[i].parent == NONE).map(|i| all[i]).sum();

    // Paragraph text per subtree (blocks with a real paragraph), and the deepest
    // semantic content marker's paragraph text, to protect mis-marked wrappers.
    let mut para = zeros::<u64>(n);
    let mut sem_para = zeros::<u64>(n);
    for i in (0..n).rev() {
        let e = &els[i];
        if e.block && e.para_chars >= MIN_PARAGRAPH_CHARS {
            para[i] += u64::from(e.para_chars);
        }
        if e.semantic >= Semantic::Article {
            sem_para[i] = sem_para[i].max(para[i]);
        }
        if let Some(p) = parent_of(els, i) {
            para[p] += para[i];
            sem_para[p] = sem_para[p].max(sem_para[i]);
        }
    }
    let para_total: u64 = (0..n).filter(|&i| els[i].parent == NONE).map(|i| para[i]).sum();
    PageTotals {
        all,
        all_link,
        total,
        para,
        sem_para,
        para_total,
    }
}

/// Which elements are template: effective template marks, inherited downwards
/// (parents precede children). A section a related-content heading opens is
/// template whatever it holds. A class name is a weaker signal than a tag: a
/// class-marked element is kept when it holds most of the page's paragraph text with
/// few links, or wraps the page's article markup (`<article>`, `articleBody`,
/// `entry-content`) holding a fair share of it. Themes name whole-page wrappers
/// `content-with-sidebar`.
fn template_marks(els: &[El], t: &PageTotals) -> Vec<bool> {
    let n = els.len();
    let mut boiler = zeros::<bool>(n);
    for i in 0..n {
        let e = &els[i];
        let protected = (t.all[i] * 2 > t.total && t.all_link[i] * 10 < t.all[i] * 3)
            || (t.para[i] * 2 > t.para_total && t.all_link[i] * 10 < t.all[i] * 4)
            || t.sem_para[i] * 4 > t.para_total
            || wraps_body(els, t, i);
        let marked = e.tag_boiler || e.related || (e.class_boiler && !protected);
        boiler[i] = marked || parent_of(els, i).is_some_and(|p| boiler[p]);
    }
    boiler
}

/// Whether `i` holds most (three quarters or more) of the paragraph text of a
/// body container (`post-content` ...) that is its parent or grandparent:
/// that container's inner wrapper, whatever its class says. Elementor wraps
/// every widget's content, the post's own included, in
/// `elementor-widget-container`: as a "widget" it was template, the post
/// widget was left empty, and the story's page fell back to all it shows
/// (issue 35, a held-out news seed: copies in that template missed). Only a
/// box named by a generic word ([`El::generic_box`]) is such a wrapper: a
/// comment section inside a container named `post-entry` (Enfold's theme)
/// says what it holds and stays template, as does a share box or a widget
/// beside the text, which holds little of the body's paragraphs.
fn wraps_body(els: &[El], t: &PageTotals, i: usize) -> bool {
    if !els[i].generic_box {
        return false;
    }
    let mut up = parent_of(els, i);
    for _ in 0..2 {
        let Some(a) = up else { return false };
        if els[a].semantic == Semantic::Body {
            return t.para[a] > 0 && t.para[i] * 4 >= t.para[a] * 3;
        }
        up = parent_of(els, a);
    }
    false
}

/// Subtree totals without template parts.
struct ContentTotals {
    sub: Vec<u64>,
    sub_link: Vec<u64>,
}

impl ContentTotals {
    fn new(els: &[El], boiler: &[bool]) -> Self {
        let n = els.len();
        let mut sub = zeros::<u64>(n);
        let mut sub_link = zeros::<u64>(n);
        for i in (0..n).rev() {
            if boiler[i] {
                continue;
            }
            sub[i] += u64::from(els[i].own_chars);
            sub_link[i] += u64::from(els[i].own_link_chars);
            if let Some(p) = parent_of(els, i) {
                sub[p] += sub[i];
                sub_link[p] += sub_link[i];
            }
        }
        ContentTotals { sub, sub_link }
    }

    /// Non-link, non-template chars of `i`'s subtree.
    fn nonlink(&self, i: usize) -> u64 {
        self.sub[i].saturating_sub(self.sub_link[i])
    }

    /// The share of `i`'s non-template text that is link text (1 when it has none).
    fn density(&self, i: usize) -> f64 {
        if self.sub[i] == 0 {
            1.0
        } else {
            self.sub_link[i] as f64 / self.sub[i] as f64
        }
    }
}

/// Readability-style paragraph scores: every block with a real paragraph scores
/// 1 + its commas + 1 per 100 chars (max 3), credited to itself, its parent, half
/// to its grandparent and a sixth to the next.
fn paragraph_scores(els: &[El], boiler: &[bool]) -> Vec<f64> {
    let n = els.len();
    let mut score = zeros::<f64>(n);
    for i in 0..n {
        let e = &els[i];
        if !e.block || boiler[i] || e.para_chars < MIN_PARAGRAPH_CHARS {
            continue;
        }
        let s = 1.0 + f64::from(e.para_commas) + (f64::from(e.para_chars) / 100.0).min(3.0);
        score[i] += s;
        let mut up = parent_of(els, i);
        for div in [1.0, 2.0, 6.0] {
            let Some(p) = up else { break };
            score[p] += s / div;
            up = parent_of(els, p);
        }
    }
    score
}

/// The best-scored block, its score scaled by (1 - link density).
fn best_scored_block(els: &[El], boiler: &[bool], score: &[f64], c: &ContentTotals) -> Option<(usize, f64)> {
    let mut top: Option<(usize, f64)> = None;
    for i in 0..els.len() {
        if boiler[i] || !els[i].block || score[i] <= 0.0 {
            continue;
        }
        let f = score[i] * (1.0 - c.density(i));
        // `>=`: on a tie the deeper (later) element wins, e.g. a <div> holding <br>-
        // separated text rather than its otherwise empty wrapper.
        if top.is_none_or(|(_, best)| f >= best) {
            top = Some((i, f));
        }
    }
    top
}

/// Body containers (`articleBody`, `entry-content` ...): every outermost one with
/// real text, in page order; none unless together they cover a fair share of what
/// the scoring found (`top_nonlink`). Templates split one article into several of
/// them around ads and embeds (`article__body` chunks), so taking only the largest
/// loses the rest of the article.
fn body_containers(els: &[El], boiler: &[bool], c: &ContentTotals, top_nonlink: u64) -> Vec<usize> {
    let n = els.len();
    let mut roots: Vec<usize> = Vec::new();
    let mut last = (0..n).collect::<Vec<usize>>();
    for i in (0..n).rev() {
        if let Some(p) = parent_of(els, i) {
            last[p] = last[p].max(last[i]);
        }
    }
    let best_body = (0..n)
        .filter(|&i| els[i].semantic == Semantic::Body && !boiler[i])
        .map(|i| c.nonlink(i))
        .max()
        .unwrap_or(0);
    let mut covered_until = 0usize;
    let mut body_sum = 0u64;
    for i in 0..n {
        if i < covered_until || els[i].semantic != Semantic::Body || boiler[i] {
            continue;
        }
        let v = c.nonlink(i);
        if v >= MIN_BODY_CHUNK_CHARS && v * 10 >= best_body {
            roots.push(i);
            body_sum += v;
            covered_until = last[i] + 1;
        }
    }
    if body_sum < 50 || body_sum * 2 < top_nonlink {
        roots.clear();
    }
    roots
}

/// The article's lead, when a template sets it apart just above the body
/// container `body`: the nearest earlier sibling of it (or of an ancestor
/// up to two levels, within the page's article) that is named a lead
/// ([`El::lead`]), is not template and holds prose, few links. RT keeps
/// a story's first paragraph in `article__summary` beside `article__text`;
/// without it a copy of the story elsewhere, whole, was under the
/// near-duplicate line against its original (issue 35's news set).
fn lead_before(els: &[El], boiler: &[bool], c: &ContentTotals, body: usize) -> Option<usize> {
    let mut child = body;
    for _ in 0..3 {
        let parent = parent_of(els, child)?;
        let lead = (parent + 1..child)
            .rev()
            .filter(|&i| els[i].parent == parent as u32)
            .find(|&i| els[i].lead && !boiler[i] && c.nonlink(i) >= MIN_LEAD_CHARS && c.density(i) < 0.3);
        if lead.is_some() {
            return lead;
        }
        child = parent;
    }
    None
}

/// Non-link characters a lead must hold: a sentence.
const MIN_LEAD_CHARS: u64 = 40;

/// A dominant `<article>`, else the largest `<main>`/`role=main`, when it covers a
/// fair share of what the scoring found (`top_nonlink`).
fn dominant_landmark(els: &[El], boiler: &[bool], c: &ContentTotals, top_nonlink: u64) -> Option<usize> {
    for level in [Semantic::Article, Semantic::Main] {
        let mut best: Option<usize> = None;
        let mut second = 0u64;
        for i in 0..els.len() {
            if els[i].semantic != level || boiler[i] {
                continue;
            }
            match best {
                Some(b) if c.nonlink(i) <= c.nonlink(b) => second = second.max(c.nonlink(i)),
                Some(b) => {
                    second = second.max(c.nonlink(b));
                    best = Some(i);
                }
                None => best = Some(i),
            }
        }
        if let Some(b) = best {
            let v = c.nonlink(b);
            // Several <article>s of similar size are a listing, not one article.
            let dominant = level != Semantic::Article || v >= second * 2;
            if dominant && v >= 50 && v * 2 >= top_nonlink {
                return Some(b);
            }
        }
    }
    None
}

/// The best-scored block `t` (score `best`) and its siblings that score comparably:
/// they belong to the same article (content split across several containers).
fn scored_block_and_siblings(
    els: &[El],
    boiler: &[bool],
    score: &[f64],
    c: &ContentTotals,
    (t, best): (usize, f64),
) -> Vec<usize> {
    let mut roots = vec![t];
    if let Some(p) = parent_of(els, t) {
        let threshold = (best * 0.2).max(10.0);
        for i in p + 1..els.len() {
            if i == t || els[i].parent != p as u32 || boiler[i] {
                continue;
            }
            let f = score[i] * (1.0 - c.density(i));
            let long_paragraph = els[i].para_chars >= 80 && c.density(i) < 0.25;
            if f >= threshold || long_paragraph {
                roots.push(i);
            }
        }
    }
    roots
}

/// The main content, and whether it is a message taken out of its archive's
/// frame (`flat_page_preformatted`).
fn select_text(walk: &Walk<'_>, cap: usize) -> (String, bool) {
    let els = &walk.els;
    let n = els.len();
    let boiler = template_marks(els, &page_totals(els));
    let content = ContentTotals::new(els, &boiler);
    let score = paragraph_scores(els, &boiler);
    let top = best_scored_block(els, &boiler, &score, &content);

    // Semantic markup, when it covers a fair share of what the scoring found.
    let top_nonlink = top.map_or(0, |(t, _)| content.nonlink(t));
    let mut roots = body_containers(els, &boiler, &content, top_nonlink);
    if let Some(&first) = roots.first()
        && let Some(lead) = lead_before(els, &boiler, &content, first)
    {
        roots.insert(0, lead);
    }
    if roots.is_empty()
        && let Some(b) = dominant_landmark(els, &boiler, &content, top_nonlink)
    {
        roots.push(b);
    }

    // Inside the semantic part, a scored block holding most of its text is tighter
    // still: it leaves out bylines, tag lists and the like that templates add.
    if let (&[root], Some((t, _))) = (roots.as_slice(), top)
        && t != root
        && is_descendant(els, t, root)
        && content.nonlink(t) * 4 >= content.nonlink(root) * 3
    {
        roots.clear();
    }

    if roots.is_empty()
        && let Some(top) = top
    {
        roots = scored_block_and_siblings(els, &boiler, &score, &content, top);
    }

    // A flat page (the choice is its body or blocks of it: no container
    // around the content) whose `<pre>` blocks hold a fair share of
    // its text is a mail archive's message page, a plain-text document or a
    // listing: the preformatted text is what its author wrote, the rest is
    // header fields, thread links and prev/next subjects (MHonArc, Pipermail
    // and public-inbox all put the message in a `<pre>`;
    // docs/eval-mailarchive.md).
    let page_chars: u64 = (0..n)
        .filter(|&i| els[i].parent == NONE)
        .map(|i| content.nonlink(i))
        .sum();
    let framed = match flat_page_preformatted(walk, &boiler, &content, (&roots, page_chars)) {
        Some(pres) => {
            roots = pres;
            true
        }
        None => false,
    };

    // Fail-safe for dedup: a chosen block holding only a small share of the page's
    // text (a notice box repeated on every page of a help system, a cookie banner)
    // would make distinct pages identical. Then the page's visible text minus its
    // template is returned instead: more template-like text, but never two distinct
    // pages reduced to the same small box.
    // (`flat_page_preformatted` applied it to the page up to the message's
    // end)
    let main_chars: u64 = roots.iter().map(|&r| content.nonlink(r)).sum();
    let trusted = |shown: u64| main_chars * FAILSAFE_SHARE_DEN >= shown * FAILSAFE_SHARE_NUM;
    if framed
        || trusted(page_chars)
        || trusted(page_chars.saturating_sub(listing_beside(els, &boiler, &content, &roots)))
    {
        let text = if framed {
            render_message(walk, &roots, &boiler, cap)
        } else {
            render(walk, &roots, Some(&boiler), cap)
        };
        if has_nonws(&text, MIN_MAIN_CHARS) {
            return (text, framed);
        }
    }
    let template = without_menus(walk, &boiler, &content.sub, &content.sub_link);
    let text = render_all(walk, Some(&template), cap);
    if has_nonws(&text, MIN_MAIN_CHARS) {
        return (text, false);
    }
    (render_all(walk, None, cap), false)
}

/// Teasers in an `<article>` of their own each, at least this many, make a
/// listing.
const MIN_LISTED_ARTICLES: usize = 3;

/// The nearest `<article>` holding `i` (or `i` itself), template left out.
fn enclosing_article(els: &[El], boiler: &[bool], i: usize) -> Option<usize> {
    let mut at = Some(i);
    while let Some(a) = at {
        if els[a].semantic == Semantic::Article && !boiler[a] {
            return Some(a);
        }
        at = parent_of(els, a);
    }
    None
}

/// The non-link text of a listing beside the chosen content (`roots`): the
/// other outermost `<article>`s, at least [`MIN_LISTED_ARTICLES`], when
/// the content is inside one `<article>` at least twice the largest of
/// them (0 otherwise). The fail-safe leaves it out of the page's text: a
/// story whose template follows it with "more stories", each teaser an
/// `<article>` with its description (Digg's story pages), held under a
/// quarter of the page, so the page's main text became all of it, mostly
/// the listing, and a copy of the story in that template was dropped for
/// that site's front page (issue 35, a held-out news seed). Teasers of
/// similar size, with no article twice their size, are a listing page's
/// own content and still count.
fn listing_beside(els: &[El], boiler: &[bool], c: &ContentTotals, roots: &[usize]) -> u64 {
    let Some(story) = roots.first().and_then(|&r| enclosing_article(els, boiler, r)) else {
        return 0;
    };
    if roots.iter().any(|&r| r != story && !is_descendant(els, r, story)) {
        return 0;
    }
    let (mut listed, mut largest, mut count) = (0u64, 0u64, 0usize);
    for i in 0..els.len() {
        if els[i].semantic != Semantic::Article
            || boiler[i]
            || i == story
            || is_descendant(els, i, story)
            || is_descendant(els, story, i)
        {
            continue;
        }
        // Outermost: not inside another listed article.
        if parent_of(els, i)
            .and_then(|p| enclosing_article(els, boiler, p))
            .is_some_and(|a| !is_descendant(els, story, a))
        {
            continue;
        }
        let v = c.nonlink(i);
        listed += v;
        largest = largest.max(v);
        count += 1;
    }
    if count >= MIN_LISTED_ARTICLES && c.nonlink(story) >= largest * 2 {
        listed
    } else {
        0
    }
}

/// The `<pre>` blocks of a flat page (see `select_text`) when they are one
/// run (children of the body with next to nothing between them: a
/// message's parts and its attachments' captions), hold at least the
/// fail-safe's share of its non-link text but for its mail header fields
/// ([`is_mail_field`]), and no other block is a long paragraph of prose
/// ([`LONG_PROSE_CHARS`]). A man page's synopsis and
/// examples are `<pre>` blocks too, but with its sections between them.
///
/// An `<hr>` after the run ends it, and the fail-safe's share is of the
/// page up to there: public-inbox (lore.kernel.org's archiver) follows the
/// message's `<pre>` with a break, then the thread's overview and the reply
/// instructions in `<pre>` blocks of their own, together often larger than
/// a short reply; MHonArc and Pipermail close the message with a break
/// too. A `<pre>` that is mostly links (a search form's) is not part of it.
fn flat_page_preformatted(
    walk: &Walk<'_>,
    boiler: &[bool],
    c: &ContentTotals,
    (roots, page_chars): (&[usize], u64),
) -> Option<Vec<usize>> {
    let els = &walk.els;
    // the page's `<body>` (or its root): no element around the content;
    // the choice is it, or blocks of it (a best block and its siblings:
    // the message itself when it is long)
    let top_level = |i: usize| parent_of(els, i).is_none_or(|p| parent_of(els, p).is_none());
    let root = match roots {
        &[r] if top_level(r) => r,
        &[r, ..] => parent_of(els, r)
            .filter(|&p| top_level(p) && roots.iter().all(|&i| els[i].parent == els[r].parent))?,
        [] => return None,
    };
    let mut pres = Vec::new();
    // non-link text of the children between the first `<pre>` and the
    // current one, counted into `between` when another `<pre>` follows
    let (mut gap, mut between) = (0u64, 0u64);
    // elements come after their parents: inside the body, inside a `<pre>`
    let (mut under, mut in_pre) = (zeros::<bool>(els.len()), zeros::<bool>(els.len()));
    let mut longest_other = 0u32;
    // where the break that ends the message is
    let mut end_at: Option<usize> = None;
    // non-link text of the body's children after the break that ends the
    // message: the archive's thread and reply sections
    let mut after = 0u64;
    for i in root + 1..els.len() {
        let Some(up) = parent_of(els, i) else { continue };
        under[i] = up == root || under[up];
        in_pre[i] = in_pre[up] || els[up].preformatted;
        if boiler[i] || els[i].hidden || in_pre[i] || !under[i] {
            continue;
        }
        // a thematic break after the message ends it: public-inbox puts
        // the thread's overview and the reply instructions in `<pre>`
        // blocks of their own after an `<hr>`
        if up == root && els[i].rule && !pres.is_empty() && end_at.is_none() {
            end_at = Some(i);
        }
        let ended = end_at.is_some();
        if up == root && ended {
            after += c.nonlink(i);
        }
        if up == root && els[i].preformatted {
            // mostly links: navigation (a form's search box), not the message
            if ended || c.sub_link[i] > c.nonlink(i) {
                continue;
            }
            between += gap;
            gap = 0;
            pres.push(i);
            continue;
        }
        if up == root && !pres.is_empty() && !ended {
            gap += c.nonlink(i);
        }
        // prose has commas; a header field of message ids or a base64
        // face image has none, and a field that has (a `Cc` list, an
        // `Organization`'s address) is a field, not prose
        if els[i].block && els[i].para_commas > 0 && !is_mail_field(walk, i) {
            longest_other = longest_other.max(els[i].para_chars);
        }
    }
    let pre_chars: u64 = pres.iter().map(|&p| c.nonlink(p)).sum();
    let one_run = !pres.is_empty() && between * 10 <= pre_chars;
    let prose_beside = u64::from(longest_other) >= (pre_chars / 2).max(LONG_PROSE_CHARS);
    if !one_run || prose_beside {
        return None;
    }
    let holds = |shown: u64| pre_chars * FAILSAFE_SHARE_DEN >= shown * FAILSAFE_SHARE_NUM;
    let shown = page_chars.saturating_sub(after);
    if holds(shown) {
        return Some(pres);
    }
    // The header fields are the message's envelope, not a box beside it: a
    // short reply under a long `To`/`Cc`/`List-*` block is still the
    // message. Counted, they made a reply of two lines fail the share and
    // be judged on its fields, which the replies of one thread share
    // nearly whole (two of them were dropped one for the other at 0.70),
    // while a long message was judged on its body alone. Read only here,
    // where they can decide: every block's name read was a cost on pages
    // that are no message.
    let end = end_at.unwrap_or(els.len());
    let fields: u64 = (root + 1..end)
        .filter(|&i| under[i] && !in_pre[i] && !boiler[i] && !els[i].hidden)
        // the message's own `<pre>` blocks (public-inbox's opens with its
        // header fields) are the message
        .filter(|&i| !(els[i].preformatted && parent_of(els, i) == Some(root)))
        .filter(|&i| els[i].block && els[i].para_chars > 0 && is_mail_field(walk, i))
        .map(|i| u64::from(els[i].para_chars))
        .sum();
    holds(shown.saturating_sub(fields)).then_some(pres)
}

/// Header fields a mail archive shows (RFC 5322's, and the registered
/// families by prefix), lower case.
const MAIL_FIELDS: &[&str] = &[
    "from",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "sender",
    "reply-to",
    "organization",
    "message-id",
    "in-reply-to",
    "references",
    "user-agent",
    "mail-followup-to",
    "envelope-to",
    "delivered-to",
    "return-path",
    "archived-at",
    "mime-version",
];
const MAIL_FIELD_PREFIXES: &[&str] = &["x-", "list-", "content-", "resent-", "thread-"];

/// Whether block `i`'s text is a mail header field (`Name: value`, the
/// name one of [`MAIL_FIELDS`] or of their families).
fn is_mail_field(walk: &Walk<'_>, i: usize) -> bool {
    let mut head = String::new();
    for (_, text) in text_events(walk, i) {
        head.push_str(text);
        if head.len() >= 48 {
            break;
        }
    }
    let Some((name, _)) = head.trim_start().split_once(':') else {
        return false;
    };
    let name = name.trim_end().to_ascii_lowercase();
    if name.contains(char::is_whitespace) {
        return false;
    }
    MAIL_FIELDS.contains(&name.as_str()) || MAIL_FIELD_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The template marks plus menus: blocks that are mostly links with little other
/// text (unnamed link lists are navigation too), inherited downwards.
fn without_menus(walk: &Walk<'_>, boiler: &[bool], sub: &[u64], sub_link: &[u64]) -> Vec<bool> {
    let els = &walk.els;
    let mut skip = boiler.to_vec();
    for i in 0..els.len() {
        if skip[i] {
            continue;
        }
        let nonlink = sub[i].saturating_sub(sub_link[i]);
        let menu = els[i].block && sub_link[i] * 2 > sub[i] && nonlink < MENU_MAX_NONLINK_CHARS;
        skip[i] = menu || parent_of(els, i).is_some_and(|p| skip[p]);
    }
    skip
}
