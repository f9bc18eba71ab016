//! End-to-end tests of site-level template learning (`[template]`): the real `crawl`
//! binary against a help site on 127.0.0.1 whose pages share a large template block
//! (header, notice, footer, identical on every page) around short distinct bodies.
//! Without learning, the template makes the pages resemble each other beyond
//! `dedup.min_similarity` and they are dropped as duplicates; with it, every page
//! judged once its host's template is learnt is kept, and a resumed crawl starts with
//! what the interrupted one learnt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use crate::support::server::{Reply, Request, Server};
use crate::support::{Dirs, field, gibberish};

/// Help pages of the site.
const HELP: usize = 40;

fn tempdir() -> tempfile::TempDir {
    crate::support::tempdir("e2e-template-")
}

/// A page of the help site: the shared template (plain paragraphs, no header or
/// footer markup for main-content extraction to recognize) around `body`.
fn help_page(title: &str, body: &str, links: &[String]) -> String {
    let mut list = String::new();
    for l in links {
        list.push_str(&format!("<p><a href=\"{l}\">topic {l}</a></p>"));
    }
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body>\
         <div><p>{}</p><p>{}</p><div><p>{body}</p>{list}</div><p>{}</p></div></body></html>",
        gibberish(900, 15),
        gibberish(901, 90),
        gibberish(902, 45),
    )
}

/// `/` links to `/help/0` .. `/help/{HELP - 1}`; each help page has its own short body.
fn help_site() -> Server {
    Server::start(|req: &Request| {
        if req.path == "/" {
            let links: Vec<String> = (0..HELP).map(|i| format!("/help/{i}")).collect();
            return Reply::html(help_page("Help center", &gibberish(7, 12), &links));
        }
        match req
            .path
            .strip_prefix("/help/")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&i| i < HELP)
        {
            Some(i) => Reply::html(help_page(
                &format!("Help topic {i}"),
                &gibberish(1_000 + i as u64, 12),
                &[],
            )),
            None => Reply::status(404),
        }
    })
}

/// A crawl of `server` from `/`, in `root`; `crawl` goes into `[crawl]`, `template`
/// into `[template]`.
fn dirs(root: &Path, server: &Server, crawl: &str, template: &str) -> Dirs {
    let dirs = crate::support::site_crawl(root, &format!("{}/", server.base()), 2, crawl);
    let mut text = std::fs::read_to_string(&dirs.config).unwrap();
    text.push_str(&format!("\n[template]\n{template}\n"));
    std::fs::write(&dirs.config, text).unwrap();
    dirs
}

fn run(dirs: &Dirs) {
    dirs.run_ok(Duration::from_secs(60));
}

fn stat(dirs: &Dirs, key: &str) -> u64 {
    let stats = dirs.stats();
    stats[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key} in {stats}"))
}

#[test]
fn without_learning_the_shared_template_makes_help_pages_duplicates() {
    let server = help_site();
    let dir = tempdir();
    let dirs = dirs(dir.path(), &server, "", "enabled = false");
    run(&dirs);
    let dups = dirs.duplicates();
    assert_eq!(stat(&dirs, "fetched"), HELP as u64 + 1);
    assert!(
        dups.len() >= HELP - 5,
        "only {} of {} pages dropped: the template is not dominant enough",
        dups.len(),
        HELP + 1
    );
    // Two help pages share 150 template words and have 12 of their own
    // each (about 0.84 alike): the median is above 0.8; each is one
    // sketch's estimate (standard deviation ~0.035; another shingle hash
    // put one of 40 at 0.788), so a page may fall under 0.8, none under
    // the content tier's 0.75.
    let mut similarity: Vec<f64> = dups
        .iter()
        .map(|d| d["similarity"].as_f64().unwrap_or(0.0))
        .collect();
    similarity.sort_by(f64::total_cmp);
    assert!(
        similarity[similarity.len() / 2] > 0.8,
        "median resemblance <= 0.8: {dups:?}"
    );
    assert!(similarity[0] >= 0.75, "a page dropped under 0.75: {dups:?}");
    assert_eq!(stat(&dirs, "template_stripped"), 0);
}

#[test]
fn with_learning_help_pages_after_the_first_few_are_kept() {
    let server = help_site();
    let dir = tempdir();
    // min_pages = 5 (the default); up to 4 pages (2 per host in flight, 2 more
    // waiting for the writer) may be signed before the 5th page is observed.
    let dirs = dirs(dir.path(), &server, "", "min_pages = 5");
    run(&dirs);
    let kept = dirs.kept();
    let dups = dirs.duplicates();
    assert_eq!(stat(&dirs, "fetched"), HELP as u64 + 1);
    assert!(
        dups.len() <= 10,
        "{} pages dropped: {dups:?}\nstderr:\n{}",
        dups.len(),
        dirs.log()
    );
    assert_eq!(kept.len() + dups.len(), HELP + 1);
    assert!(stat(&dirs, "template_stripped") >= (HELP - 10) as u64);
    // kept.jsonl has the full text, template included.
    let notice = gibberish(901, 90);
    let first_words: String = notice.split_whitespace().take(5).collect::<Vec<_>>().join(" ");
    assert!(
        kept.iter().all(|k| field(k, "text").contains(&first_words)),
        "template missing from kept texts"
    );
}

#[test]
fn a_resumed_crawl_judges_its_first_pages_with_the_learnt_template() {
    let server = help_site();
    let dir = tempdir();
    // Five pages: each is signed with at most four observed, below min_pages = 5,
    // so none is stripped, but the learner has five pages once they are judged.
    let first = dirs(dir.path(), &server, "max_pages = 5", "");
    run(&first);
    assert_eq!(stat(&first, "fetched"), 5);
    assert_eq!(stat(&first, "template_stripped"), 0);
    let dups_before = first.duplicates().len();

    // The same command with a larger budget: the learnt template is loaded, so the
    // very first pages of this run are stripped too, and none is dropped.
    let resumed = dirs(dir.path(), &server, "max_pages = 1000", "");
    run(&resumed);
    assert_eq!(stat(&resumed, "fetched"), HELP as u64 + 1);
    assert_eq!(
        stat(&resumed, "template_stripped"),
        HELP as u64 + 1 - 5,
        "a page of the resumed crawl was judged without the learnt template; stderr:\n{}",
        resumed.log()
    );
    let dups = resumed.duplicates();
    assert_eq!(
        dups.len(),
        dups_before,
        "pages dropped after the resume: {:?}",
        &dups[dups_before..]
    );
    assert!(
        resumed.log().contains("site templates loaded"),
        "{}",
        resumed.log()
    );
}
