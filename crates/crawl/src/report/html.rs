//! The report as one HTML file: inline CSS, inline SVG charts drawn here,
//! a few lines of inline script for the cluster search. It fetches nothing
//! when opened, so it can be mailed or archived with the outputs.

use std::fmt::Write as _;

use super::{Cluster, Report, Tier};

/// Escapes text for HTML element content and quoted attribute values.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes `s` and shows its `quoted` parts as code (the URL rewrites
/// name path pieces that way).
fn esc_ticks(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in esc(s).split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(part);
            out.push_str("</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

/// `1234567` -> `1,234,567`.
fn num(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// Only http(s) URLs become links: a `javascript:` URL from a crawled page
/// must not be clickable in the report.
fn link(url: &str) -> String {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        format!("<a href=\"{0}\" rel=\"noreferrer\">{0}</a>", esc(url))
    } else {
        esc(url)
    }
}

/// A bar chart: one bar per value, labels under every `label_every`-th bar.
fn bars(id: &str, values: &[(String, u64)], label_every: usize, color: &str) -> String {
    const W: f64 = 760.0;
    const H: f64 = 180.0;
    const LEFT: f64 = 48.0;
    const BOTTOM: f64 = 22.0;
    let max = values.iter().map(|v| v.1).max().unwrap_or(0).max(1);
    let n = values.len().max(1) as f64;
    let bw = (W - LEFT) / n;
    let mut svg = format!(
        "<svg id=\"{id}\" class=\"chart\" viewBox=\"0 0 {W} {}\" role=\"img\" xmlns=\"http://www.w3.org/2000/svg\">",
        H + BOTTOM
    );
    let _ = write!(
        svg,
        "<text x=\"{}\" y=\"12\" class=\"axis\" text-anchor=\"end\">{}</text><text x=\"{}\" y=\"{H}\" class=\"axis\" text-anchor=\"end\">0</text><line x1=\"{LEFT}\" y1=\"{H}\" x2=\"{W}\" y2=\"{H}\" class=\"base\"/>",
        LEFT - 6.0,
        num(max),
        LEFT - 6.0
    );
    for (i, (label, v)) in values.iter().enumerate() {
        let h = (*v as f64 / max as f64) * (H - 16.0);
        let x = LEFT + i as f64 * bw;
        let _ = write!(
            svg,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{}: {}</title></rect>",
            x + bw * 0.1,
            H - h,
            (bw * 0.8).max(1.0),
            h,
            esc(label),
            num(*v)
        );
        if label_every > 0 && i % label_every == 0 {
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">{}</text>",
                x + bw / 2.0,
                H + 15.0,
                esc(label)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

const STYLE: &str = r#"
:root { --fg:#1d2430; --muted:#5c6777; --line:#dde3ea; --bg:#f6f8fa; --kept:#2f855a; --url:#805ad5; --title:#d69e2e; --content:#c53030; --err:#4a5568; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans CJK SC", sans-serif; color: var(--fg); margin: 0; background: #fff; }
header { padding: 18px 28px 8px; border-bottom: 1px solid var(--line); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; }
.sub, .note { color: var(--muted); font-size: 13px; }
nav { padding: 8px 28px; border-bottom: 1px solid var(--line); font-size: 13px; }
nav a { margin-right: 14px; color: var(--fg); }
main { padding: 0 28px 40px; max-width: 1200px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin-top: 16px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; min-width: 130px; }
.card .v { font-size: 22px; font-weight: 600; } .card .k { color: var(--muted); font-size: 12px; }
.card.kept .v { color: var(--kept); } .card.url .v { color: var(--url); } .card.title .v { color: var(--title); } .card.content .v { color: var(--content); } .card.errors .v { color: var(--err); }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--bg); font-weight: 600; } td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
td { word-break: break-all; }
.chart { width: 100%; max-width: 760px; height: auto; display: block; }
.chart .axis { font-size: 10px; fill: var(--muted); } .chart .base { stroke: var(--line); }
details { border-bottom: 1px solid var(--line); padding: 4px 0; } summary { cursor: pointer; }
.size { display: inline-block; min-width: 52px; font-weight: 600; }
.tier { display: inline-block; padding: 0 6px; border-radius: 3px; color: #fff; font-size: 12px; }
.tier.url { background: var(--url); } .tier.title { background: var(--title); } .tier.content { background: var(--content); } .tier.other { background: var(--err); }
input[type=search] { width: 360px; max-width: 100%; padding: 5px 8px; border: 1px solid var(--line); border-radius: 4px; }
.stats { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 2px 18px; font-size: 13px; }
.stats .k { color: var(--muted); } .stats .v { font-variant-numeric: tabular-nums; }
.two { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 20px; }
.excerpt { font-size: 12px; color: var(--muted); max-width: 46ch; margin-top: 4px; }
.reason { font-weight: 600; color: var(--content); }
tr.suspect td { vertical-align: top; }
"#;

/// Runs after the page is parsed: the cluster filter, and a status a test
/// (or a curious user) can read: `ok`, or the first script error.
const SCRIPT: &str = r#"
window.addEventListener('error', function (e) { document.body.dataset.status = 'error: ' + e.message; });
(function () {
  var box = document.getElementById('cluster-search');
  var rows = Array.prototype.slice.call(document.querySelectorAll('#cluster-list details'));
  var shown = document.getElementById('clusters-shown');
  function filter() {
    var q = box.value.trim().toLowerCase(), n = 0;
    rows.forEach(function (r) {
      var hit = !q || r.dataset.text.indexOf(q) >= 0;
      r.style.display = hit ? '' : 'none';
      if (hit) { n++; }
    });
    shown.textContent = String(n);
  }
  if (box) { box.addEventListener('input', filter); filter(); }
  document.body.dataset.status = 'ok';
})();
"#;

fn tier_badge(t: Tier) -> String {
    format!("<span class=\"tier {0}\">{0}</span>", t.name())
}

fn card(class: &str, id: &str, value: u64, label: &str) -> String {
    format!(
        "<div class=\"card {class}\"><div class=\"v\" id=\"{id}\" data-value=\"{value}\">{}</div><div class=\"k\">{label}</div></div>",
        num(value)
    )
}

fn cluster_html(c: &Cluster, open: bool, out: &mut String) {
    let mut text = c.kept.to_lowercase();
    if let Some(t) = &c.title {
        text.push(' ');
        text.push_str(&t.to_lowercase());
    }
    for m in &c.members {
        text.push(' ');
        text.push_str(&m.url.to_lowercase());
    }
    let _ = write!(
        out,
        "<details{} data-text=\"{}\"><summary><span class=\"size\">{}</span> {} <span class=\"note\">{}</span></summary><table><tr><th>dropped copy</th><th>tier</th><th class=\"n\">similarity</th><th class=\"n\">distance</th><th class=\"n\">duplicates.jsonl line</th></tr>",
        if open { " open" } else { "" },
        esc(&text),
        num(c.size),
        link(&c.kept),
        esc(c.title.as_deref().unwrap_or(""))
    );
    for m in &c.members {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            link(&m.url),
            tier_badge(m.tier),
            m.similarity.map_or("-".to_string(), |s| format!("{s:.3}")),
            m.distance.map_or("-".to_string(), |d| d.to_string()),
            m.line
        );
    }
    if c.size > c.members.len() as u64 {
        let _ = write!(
            out,
            "<tr><td colspan=\"5\" class=\"note\">{} more: the lines of <a href=\"duplicates.jsonl\">duplicates.jsonl</a> whose duplicate_of is this page</td></tr>",
            num(c.size - c.members.len() as u64)
        );
    }
    out.push_str("</table></details>");
}

/// The drops a person should check, first on the page: each with both
/// pages' text side by side.
fn suspects_html(r: &Report, o: &mut String) {
    if r.suspect_counts.is_empty() {
        return;
    }
    let total: u64 = r.suspect_counts.values().sum();
    let why: Vec<String> = r
        .suspect_counts
        .iter()
        .map(|(k, v)| {
            format!(
                "<span class=\"reason\" data-reason=\"{k}\">{k}</span> {}",
                num(*v)
            )
        })
        .collect();
    let _ = write!(
        o,
        "<h2 id=\"suspects\">Verdicts to check</h2><p class=\"note\"><span id=\"suspect-count\" data-value=\"{total}\">{}</span> reasons to look at a drop ({}): <b>larger</b>, the dropped page shows three times the text of the kept one (a part of it matched); <b>template</b>, its own text is all its site's learnt template (it matched on template); <b>few_features</b>, the verdict rests on fewer than {} features. Under each reason, the verdict's class: how the two URLs are related (same host, one path on two hosts, two sites) and what the dropped page was judged on (main text, page, thin, template, or its article alone). The first {} are listed, largest mismatch first.</p><table id=\"suspect-table\"><tr><th>why</th><th>dropped page, and the text it was judged on</th><th>kept page, and its text</th><th class=\"n\">similarity</th></tr>",
        num(total),
        why.join(", "),
        crate::output::lines::FEW_FEATURES,
        r.suspects.len()
    );
    for s in &r.suspects {
        let _ = write!(
            o,
            "<tr class=\"suspect\"><td>{}<div class=\"note pair\">{}</div></td><td>{} <span class=\"note\">{} chars, {} features, {} line {}</span><div class=\"excerpt\">{}</div></td><td>{} <span class=\"note\">{}</span><div class=\"excerpt\">{}</div></td><td class=\"n\">{}</td></tr>",
            s.reasons.join(", "),
            esc(&verdict_class(s)),
            link(&s.url),
            num(s.chars as u64),
            s.features,
            tier_badge(s.tier),
            s.line,
            esc(&s.excerpt),
            link(&s.kept),
            s.kept_chars
                .map_or(String::new(), |c| format!("{} chars", num(c as u64))),
            esc(s.kept_excerpt.as_deref().unwrap_or("(not in kept.jsonl)")),
            s.similarity.map_or("-".to_string(), |v| format!("{v:.3}")),
        );
    }
    o.push_str("</table>");
}

/// A suspect verdict's class: how its URLs are related and what the
/// dropped page was judged on ("same host, main"; "two sites, article").
pub(super) fn verdict_class(s: &super::SuspectRow) -> String {
    let judged = if s.article { "article" } else { s.basis.as_str() };
    [super::pair::label(s.pair), judged]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The whole page.
pub fn render(r: &Report) -> String {
    let mut o = String::with_capacity(64 * 1024);
    let lines = r.kept + r.dropped.total() + r.errors;
    head_html(r, lines, &mut o);
    suspects_html(r, &mut o);
    summary_html(r, lines, &mut o);
    similarity_html(r, &mut o);
    clusters_html(r, &mut o);
    hosts_html(r, &mut o);
    patterns_html(r, &mut o);
    errors_html(r, &mut o);
    timeline_html(r, &mut o);
    let _ = write!(o, "</main><script>{SCRIPT}</script></body></html>");
    o
}

/// The page's head, title line and navigation, up to the start of `<main>`.
fn head_html(r: &Report, lines: u64, o: &mut String) {
    let dir = r.dir.display().to_string();
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>simcrawl report: {}</title><style>{STYLE}</style></head><body data-status=\"loading\">",
        esc(&dir)
    );
    let _ = write!(
        o,
        "<header><h1>simcrawl report</h1><div class=\"sub\">{} &middot; {} output lines{}</div></header>",
        esc(&dir),
        num(lines),
        if r.unreadable > 0 {
            format!(" &middot; {} unreadable lines skipped", num(r.unreadable))
        } else {
            String::new()
        }
    );
    o.push_str("<nav>");
    if !r.suspect_counts.is_empty() {
        o.push_str("<a href=\"#suspects\">To check</a>");
    }
    o.push_str("<a href=\"#summary\">Summary</a><a href=\"#similarity\">Similarity</a><a href=\"#clusters\">Duplicate clusters</a><a href=\"#hosts\">Hosts</a><a href=\"#patterns\">URL patterns</a><a href=\"#errors\">Errors</a>");
    if !r.timeline.is_empty() {
        o.push_str("<a href=\"#timeline\">Over time</a>");
    }
    o.push_str("</nav><main>");
}

/// Summary: the counts of kept, dropped (per tier) and errors, and stats.json.
fn summary_html(r: &Report, lines: u64, o: &mut String) {
    let dropped = r.dropped.total();
    o.push_str("<h2 id=\"summary\">Summary</h2><div class=\"cards\">");
    o.push_str(&card("", "count-lines", lines, "pages judged (output lines)"));
    o.push_str(&card(
        "kept",
        "count-kept",
        r.kept,
        &format!("kept ({})", pct(r.kept, lines)),
    ));
    o.push_str(&card(
        "content",
        "count-dropped",
        dropped,
        &format!("dropped ({})", pct(dropped, lines)),
    ));
    o.push_str(&card("url", "count-url", r.dropped.url, "dropped: URL tier"));
    o.push_str(&card(
        "title",
        "count-title",
        r.dropped.title,
        "dropped: title tier",
    ));
    o.push_str(&card(
        "content",
        "count-content",
        r.dropped.content,
        "dropped: content tier",
    ));
    o.push_str(&card("errors", "count-errors", r.errors, "errors"));
    o.push_str("</div>");
    if let Some(stats) = &r.stats {
        o.push_str("<p class=\"note\">From <code>stats.json</code> (the crawler's counters; <code>dup_url</code> also counts links never fetched because their URL was known, which leave no output line):</p><div id=\"stats\" class=\"stats\">");
        for (k, v) in stats {
            let shown = match v {
                serde_json::Value::Object(m) if m.is_empty() => "none".to_string(),
                serde_json::Value::Object(m) => m
                    .iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                serde_json::Value::Number(n) if n.is_f64() => format!("{:.1}", n.as_f64().unwrap_or(0.0)),
                other => other.to_string(),
            };
            let _ = write!(
                o,
                "<div><span class=\"k\">{}</span> <span class=\"v\">{}</span></div>",
                esc(k),
                esc(&shown)
            );
        }
        o.push_str("</div>");
    }
}

/// Similarity and distance of dropped pages.
fn similarity_html(r: &Report, o: &mut String) {
    o.push_str("<h2 id=\"similarity\">How similar the dropped pages were</h2><div class=\"two\"><div><p class=\"note\">Estimated resemblance to the kept page (the value that decided; exact copies are 1.0)</p>");
    let sim: Vec<(String, u64)> = r
        .similarity
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("{:.2}", i as f64 * 0.05), *c))
        .collect();
    o.push_str(&bars("chart-similarity", &sim, 4, "#c53030"));
    o.push_str("</div><div><p class=\"note\">SimHash Hamming distance to the kept page</p>");
    let dist: Vec<(String, u64)> = r
        .distance
        .iter()
        .enumerate()
        .map(|(i, c)| (i.to_string(), *c))
        .collect();
    let every = (dist.len() / 16).max(1);
    o.push_str(&bars("chart-distance", &dist, every, "#805ad5"));
    o.push_str("</div></div>");
}

/// Clusters: the largest, each with its first copies.
fn clusters_html(r: &Report, o: &mut String) {
    let _ = write!(
        o,
        "<h2 id=\"clusters\">Duplicate clusters</h2><p class=\"note\"><span id=\"cluster-count\" data-value=\"{0}\">{1}</span> kept pages have dropped copies; the largest <span id=\"clusters-listed\">{2}</span> are listed (<span id=\"clusters-shown\">{2}</span> shown), each with its first copies.</p><input type=\"search\" id=\"cluster-search\" placeholder=\"filter by URL or title\"><div id=\"cluster-list\">",
        r.cluster_count,
        num(r.cluster_count),
        r.clusters.len()
    );
    for (i, c) in r.clusters.iter().enumerate() {
        cluster_html(c, i < 3, o);
    }
    o.push_str("</div>");
}

/// Hosts: those with the most output lines.
fn hosts_html(r: &Report, o: &mut String) {
    let _ = write!(
        o,
        "<h2 id=\"hosts\">Hosts</h2><p class=\"note\">{} hosts; the {} with the most output lines:</p><table id=\"host-table\"><tr><th>host</th><th class=\"n\">lines</th><th class=\"n\">kept</th><th class=\"n\">url</th><th class=\"n\">title</th><th class=\"n\">content</th><th class=\"n\">errors</th><th class=\"n\">dropped + errors</th></tr>",
        num(r.host_count),
        r.hosts.len()
    );
    for h in &r.hosts {
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&h.host),
            num(h.fetched()),
            num(h.kept),
            num(h.dropped.url),
            num(h.dropped.title),
            num(h.dropped.content),
            num(h.errors),
            pct(h.dropped.total() + h.errors, h.fetched())
        );
    }
    o.push_str("</table>");
}

/// URL patterns behind the duplicates.
fn patterns_html(r: &Report, o: &mut String) {
    o.push_str("<h2 id=\"patterns\">URL patterns behind the duplicates</h2><p class=\"note\">How each dropped URL differs from its kept page's. A rewrite that recurs on one host is a duplicate URL space: fix it on the site (redirect, canonical link) or stop the crawler from following it.</p><table id=\"pattern-table\"><tr><th>host</th><th>rewrite</th><th class=\"n\">dropped</th><th>example (dropped &rarr; kept)</th></tr>");
    for p in &r.patterns {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{} &rarr; {}</td></tr>",
            esc(&p.host),
            esc_ticks(&p.rewrite),
            num(p.count),
            link(&p.example.0),
            link(&p.example.1)
        );
    }
    o.push_str("</table>");
}

/// Errors, per kind with examples.
fn errors_html(r: &Report, o: &mut String) {
    o.push_str("<h2 id=\"errors\">Errors</h2>");
    if r.error_kinds.is_empty() {
        o.push_str("<p class=\"note\">None.</p>");
    } else {
        o.push_str(
            "<table id=\"error-table\"><tr><th>kind</th><th class=\"n\">count</th><th>examples</th></tr>",
        );
        for (kind, e) in &r.error_kinds {
            let examples: Vec<String> = e
                .examples
                .iter()
                .map(|(at, msg)| format!("{}<br><span class=\"note\">{}</span>", link(at), esc(msg)))
                .collect();
            let _ = write!(
                o,
                "<tr><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(kind),
                num(e.count),
                examples.join("<br>")
            );
        }
        o.push_str("</table>");
    }
}

/// Timeline: kept pages over time.
fn timeline_html(r: &Report, o: &mut String) {
    if !r.timeline.is_empty() {
        let first = r.timeline[0].0;
        let _ = write!(
            o,
            "<h2 id=\"timeline\">Over time</h2><p class=\"note\">Kept pages per {} s, from <code>fetched_at</code> (seconds since the first bucket)</p>",
            r.bucket_secs
        );
        let rows: Vec<(String, u64)> = r
            .timeline
            .iter()
            .map(|(t, c)| (format!("+{}s", t - first), *c))
            .collect();
        let every = (rows.len() / 10).max(1);
        o.push_str(&bars("chart-timeline", &rows, every, "#2f855a"));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn escapes_markup_and_links_only_http() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
        assert!(link("javascript:alert(1)").starts_with("javascript"));
        assert!(!link("javascript:alert(1)").contains("<a"));
        assert!(link("https://a.test/?q=<b>").contains("href=\"https://a.test/?q=&lt;b&gt;\""));
    }

    #[test]
    fn quoted_parts_become_code() {
        assert_eq!(esc_ticks("`//` in <p>"), "<code>//</code> in &lt;p&gt;");
        assert_eq!(esc_ticks("another path"), "another path");
    }

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(num(0), "0");
        assert_eq!(num(999), "999");
        assert_eq!(num(1000), "1,000");
        assert_eq!(num(1_234_567), "1,234,567");
    }

    #[test]
    fn charts_scale_to_the_largest_bar() {
        let svg = bars("c", &[("a".into(), 2), ("b".into(), 4)], 1, "red");
        assert_eq!(svg.matches("<rect").count(), 2);
        // The tallest bar spans the plot height (180 - 16).
        assert!(svg.contains("height=\"164.0\""), "{svg}");
        assert!(svg.contains("height=\"82.0\""), "{svg}");
    }
}
