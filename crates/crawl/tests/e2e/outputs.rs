//! What the output lines say about a page: its title and text as the page
//! wrote them (normalization is for the signatures only), and which page,
//! sitemap or feed led to it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::server::{Reply, Request, Server};
use crate::support::zh::{SIMPLIFIED, TITLE_SIMPLIFIED, TITLE_TRADITIONAL, TRADITIONAL, standard_page};
use crate::support::{field, path_of, read_jsonl, site_crawl, tempdir};

/// A zh-TW help page's title: traditional characters and Latin capitals.
const TW_TITLE: &str = "使用瀏覽器重新排序文件 Drive Help";
/// The English sentence both copies carry, capitals included.
const ENGLISH: &str = "<p>Open Google Drive, then choose Sort By Name.</p>";

/// `/` is the traditional (zh-TW) page and links to `/s`, its simplified
/// copy, whose title is the same but simplified.
fn zh_tw_site() -> Server {
    Server::start(|req: &Request| match req.path.as_str() {
        "/" => Reply::html(standard_page(
            TW_TITLE,
            &format!("{TRADITIONAL}{ENGLISH}"),
            &["/s".to_string()],
        )),
        "/s" => Reply::html(standard_page(
            "使用浏览器重新排序文件 Drive Help",
            &format!("{SIMPLIFIED}{ENGLISH}"),
            &[],
        )),
        _ => Reply::status(404),
    })
}

/// kept.jsonl holds the zh-TW page's traditional characters and capitals,
/// while the tiers still find its simplified copy a duplicate (they sign the
/// normalized text, as before); with `crawl.write_normalized` the line also
/// carries the normalized title and text.
#[test]
fn kept_lines_carry_the_page_as_written_and_verdicts_still_fold_scripts() {
    let server = zh_tw_site();
    for normalized in [false, true] {
        let dir = tempdir("outputs");
        let extra = if normalized { "write_normalized = true" } else { "" };
        let dirs = site_crawl(dir.path(), &format!("{}/", server.base()), 2, extra);
        dirs.run_ok(Duration::from_secs(60));
        let kept = dirs.kept();
        assert_eq!(kept.len(), 1, "{kept:?}\n{:?}", dirs.duplicates());
        let k = &kept[0];
        assert_eq!(path_of(field(k, "url")), "/");
        assert_eq!(field(k, "title"), TW_TITLE, "{k}");
        let text = field(k, "text");
        assert!(text.contains("本報訊 記者從市住房和城鄉建設局獲悉"), "{text}");
        assert!(
            text.contains("Open Google Drive, then choose Sort By Name."),
            "{text}"
        );
        assert!(!text.contains("记者") && !text.contains("google"), "{text}");
        // The verdict is the one the normalized text gives: a copy.
        let dups = dirs.duplicates();
        assert_eq!(dups.len(), 1, "{dups:?}");
        assert_eq!(path_of(field(&dups[0], "url")), "/s");
        assert_eq!(field(&dups[0], "duplicate_of"), field(k, "url"));
        // The excerpt shows what was compared: normalized.
        assert!(field(&dups[0], "excerpt").contains("记者从市住房"), "{}", dups[0]);
        if normalized {
            // Taiwan vocabulary folded too (the default `t2s_tw`): 檔案 -> 文档.
            assert_eq!(field(k, "title_normalized"), "使用浏览器重新排序文档 drive help");
            let n = field(k, "text_normalized");
            assert!(n.contains("记者从市住房和城乡建设局获悉"), "{n}");
            assert!(n.contains("open google drive"), "{n}");
        } else {
            assert!(
                k.get("title_normalized").is_none() && k.get("text_normalized").is_none(),
                "{k}"
            );
        }
    }
}

fn run_dedup(root: &Path, input: &Path, out: &str, config: Option<&Path>) -> Vec<Vec<Value>> {
    let out = root.join(out);
    let mut c = Command::new(env!("CARGO_BIN_EXE_crawl"));
    c.arg("dedup").arg("--input").arg(input).arg("--out").arg(&out);
    if let Some(cfg) = config {
        c.arg("--config").arg(cfg);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    ["kept.jsonl", "duplicates.jsonl"]
        .iter()
        .map(|f| read_jsonl(&out.join(f)))
        .collect()
}

/// `crawl dedup` writes each document's title as its line or page wrote it
/// (a `text` line's given title, an `html` line's `<title>`), still judging
/// a traditional copy a duplicate of its simplified original.
#[test]
fn dedup_kept_lines_carry_titles_as_written() {
    let dir = tempdir("outputs");
    let root = dir.path();
    let plain = |html: &str| html.replace("<p>", "").replace("</p>", "\n").trim().to_string();
    let docs = [
        json!({"url": "http://tw.example/a", "title": "  Help:\n使用瀏覽器  ", "text": plain(TRADITIONAL)}),
        json!({"url": "http://cn.example/a", "title": "Help:使用浏览器", "text": plain(SIMPLIFIED)}),
        json!({"url": "http://tw.example/b", "html": standard_page(TITLE_TRADITIONAL, &format!("{TRADITIONAL}{ENGLISH}"), &[])}),
        json!({"url": "http://cn.example/b", "html": standard_page(TITLE_SIMPLIFIED, &format!("{SIMPLIFIED}{ENGLISH}"), &[])}),
    ];
    // Two corpora, one per kind of line, so that each has its own copy.
    let texts = root.join("texts.jsonl");
    let htmls = root.join("htmls.jsonl");
    std::fs::write(&texts, format!("{}\n{}\n", docs[0], docs[1])).unwrap();
    std::fs::write(&htmls, format!("{}\n{}\n", docs[2], docs[3])).unwrap();
    let cfg = root.join("normalized.toml");
    std::fs::write(&cfg, "[crawl]\nwrite_normalized = true\n").unwrap();
    for (input, title, normalized) in [
        (&texts, "Help: 使用瀏覽器", "help: 使用浏览器"),
        (&htmls, TITLE_TRADITIONAL, TITLE_SIMPLIFIED),
    ] {
        for with_cfg in [false, true] {
            let name = format!("{}-{with_cfg}", input.file_stem().unwrap().to_string_lossy());
            let outs = run_dedup(root, input, &name, with_cfg.then_some(cfg.as_path()));
            let (kept, dups) = (&outs[0], &outs[1]);
            assert_eq!(kept.len(), 1, "{name}: {kept:?} {dups:?}");
            assert_eq!(field(&kept[0], "title"), title, "{name}");
            assert_eq!(dups.len(), 1, "{name}: {dups:?}");
            assert_eq!(field(&dups[0], "duplicate_of"), field(&kept[0], "url"), "{name}");
            if with_cfg {
                assert_eq!(field(&kept[0], "title_normalized"), normalized, "{name}");
            } else {
                assert!(kept[0].get("title_normalized").is_none(), "{name}: {}", kept[0]);
            }
        }
    }
}

/// The site of the `via` tests: a home page linking an article, its
/// copy and a missing page, and a sitemap listing a page nothing links.
fn via_site() -> Server {
    use crate::support::gibberish;
    use std::sync::{Arc, OnceLock};
    let base: Arc<OnceLock<String>> = Arc::new(OnceLock::new());
    let b = base.clone();
    let article = gibberish(41, 120);
    let server = Server::start(move |req: &Request| match req.path.as_str() {
        "/" => Reply::html(crate::support::page(
            "Home",
            &gibberish(40, 120),
            &["/a".to_string(), "/copy".to_string(), "/missing".to_string()],
        )),
        "/a" => Reply::html(crate::support::page("Article", &article, &[])),
        "/copy" => Reply::html(crate::support::page("Article", &article, &[])),
        "/listed" => Reply::html(crate::support::page("Listed", &gibberish(42, 120), &[])),
        "/sitemap.xml" => Reply::Body {
            status: 200,
            content_type: "application/xml",
            body: format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\
                 <url><loc>{}/listed</loc></url></urlset>",
                b.get().map_or("", String::as_str)
            ),
        },
        _ => Reply::status(404),
    });
    base.set(server.base()).unwrap();
    server
}

/// The `via` of every line of the [`via_site`] crawl: `null` for the
/// seed, the linking page for its links (kept, duplicate or failed), the
/// sitemap for the page only it lists.
fn assert_vias(base: &str, kept: &[Value], dups: &[Value], errors: &[Value]) {
    let home = format!("{base}/");
    let via_of = |lines: &[Value], path: &str| -> Value {
        let line = lines
            .iter()
            .find(|v| path_of(field(v, "url")) == path)
            .unwrap_or_else(|| panic!("no line for {path} in {lines:?}"));
        line.get("via")
            .cloned()
            .unwrap_or_else(|| panic!("no via in {line}"))
    };
    assert_eq!(via_of(kept, "/"), Value::Null, "the seed");
    assert_eq!(via_of(kept, "/listed"), json!(format!("{base}/sitemap.xml")));
    // Of the two copies, whichever was judged first is kept.
    assert_eq!(dups.len(), 1, "{dups:?}");
    let (kept_copy, dropped) = if path_of(field(&dups[0], "url")) == "/a" {
        ("/copy", "/a")
    } else {
        ("/a", "/copy")
    };
    assert_eq!(via_of(kept, kept_copy), json!(home));
    assert_eq!(via_of(dups, dropped), json!(home));
    let errors: Vec<Value> = errors
        .iter()
        .filter(|e| field(e, "kind") != "listing")
        .cloned()
        .collect();
    assert_eq!(via_of(&errors, "/missing"), json!(home));
}

/// Every page line names what led to its URL (`via`): `null` for the seed,
/// the linking page for its links (kept, duplicate or failed), the sitemap
/// for the pages only it lists.
#[test]
fn page_lines_say_which_page_or_sitemap_led_to_them() {
    let server = via_site();
    let home = format!("{}/", server.base());
    let dir = tempdir("outputs");
    let dirs = site_crawl(dir.path(), &home, 2, "");
    dirs.run_ok(Duration::from_secs(60));
    assert_vias(&server.base(), &dirs.kept(), &dirs.duplicates(), &dirs.errors());
}

/// The same `via` in a crawl shared by two workers through Redis: the
/// shared frontier's entries carry what led to them (before, its lines
/// left the field out).
#[test]
fn shared_workers_page_lines_say_which_page_or_sitemap_led_to_them() {
    let Some(url) = crate::redis::redis_url("shared_workers_page_lines_say_via") else {
        return;
    };
    let server = via_site();
    let dir = tempdir("outputs-redis");
    let s = crate::redis::Shared::new(
        dir.path(),
        &format!("{}/", server.base()),
        &url,
        &crate::redis::namespace("via"),
        30_000,
    );
    let workers = ["v1", "v2"];
    let mut children: Vec<_> = workers.iter().map(|w| s.spawn(w)).collect();
    s.wait_ok(&mut children, &workers);
    let (mut kept, mut dups, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for (_, file, v) in s.lines(&workers) {
        match file {
            "kept" => kept.push(v),
            "duplicates" => dups.push(v),
            _ => errors.push(v),
        }
    }
    assert_vias(&server.base(), &kept, &dups, &errors);
}
