//! HTML parsing alone over every `.html` file under a folder, held in
//! memory, four ways, alternating rounds; prints each way's CPU per page
//! and MB/s (issue 37, target 2; docs/BENCHMARKS.md "Parsers side by
//! side"):
//!
//! - `scraper`: `Html::parse_document`, the DOM the crawl's cleaner walks
//!   (html5ever's tokenizer and tree builder, scraper's tree);
//! - `html5ever-tokenizer`: html5ever's tokenizer alone, into a sink that
//!   counts tokens (what the tree builder adds is the difference);
//! - `html5gum`: html5gum's tokenizer, its default emitter (tags with
//!   attributes, text), tokens counted;
//! - `lol_html`: Cloudflare's streaming rewriter with a handler on every
//!   element and every text chunk (what spider-rs uses for links).
//!
//!   parse-compare DIR [ROUNDS]

use std::cell::Cell;
use std::path::Path;

use html5ever::tokenizer::{BufferQueue, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};

fn files(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "html") {
            if let Ok(b) = std::fs::read(&p) {
                out.push(String::from_utf8_lossy(&b).into_owned());
            }
        }
    }
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct Count(Cell<u64>);

impl TokenSink for Count {
    type Handle = ();
    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        if !matches!(token, Token::ParseError(_)) {
            self.0.set(self.0.get() + 1);
        }
        TokenSinkResult::Continue
    }
}

fn scraper_way(page: &str) -> u64 {
    let html = scraper::Html::parse_document(page);
    html.tree.nodes().count() as u64
}

fn html5ever_tokens(page: &str) -> u64 {
    let tok = Tokenizer::new(Count(Cell::new(0)), TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(page.into());
    let _ = tok.feed(&input);
    tok.end();
    tok.sink.0.get()
}

fn html5gum_tokens(page: &str) -> u64 {
    let mut n = 0u64;
    for t in html5gum::Tokenizer::new(page).flatten() {
        if !matches!(t, html5gum::Token::Error(_)) {
            n += 1;
        }
    }
    n
}

fn lol_html_events(page: &str) -> u64 {
    let n = Cell::new(0u64);
    let settings = lol_html::Settings {
        element_content_handlers: vec![
            lol_html::element!("*", |_el| {
                n.set(n.get() + 1);
                Ok(())
            }),
            lol_html::text!("*", |_t| {
                n.set(n.get() + 1);
                Ok(())
            }),
        ],
        ..lol_html::Settings::new()
    };
    let mut rw = lol_html::HtmlRewriter::new(settings, |_: &[u8]| {});
    let _ = rw.write(page.as_bytes());
    let _ = rw.end();
    n.get()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: parse-compare DIR [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
    let mut pages = Vec::new();
    files(Path::new(dir), &mut pages);
    let bytes: usize = pages.iter().map(String::len).sum();
    println!("{} pages, {:.1} MB", pages.len(), bytes as f64 / 1e6);
    let ways: [(&str, fn(&str) -> u64); 4] = [
        ("scraper", scraper_way),
        ("html5ever-tokenizer", html5ever_tokens),
        ("html5gum", html5gum_tokens),
        ("lol_html", lol_html_events),
    ];
    let mut ns: Vec<Vec<u64>> = vec![Vec::new(); ways.len()];
    for r in 0..rounds {
        for k in 0..ways.len() {
            // Rotated order, so no way always runs first.
            let i = (k + r) % ways.len();
            let t = thread_cpu_ns();
            let mut sum = 0u64;
            for p in &pages {
                sum = sum.wrapping_add(ways[i].1(p));
            }
            ns[i].push(thread_cpu_ns() - t);
            std::hint::black_box(sum);
        }
    }
    println!("way,median_ms_per_page,mb_per_s,rounds_s");
    for (i, (name, _)) in ways.iter().enumerate() {
        let mut v = ns[i].clone();
        v.sort_unstable();
        let med = v[v.len() / 2] as f64;
        println!(
            "{name},{:.3},{:.1},{}",
            med / pages.len() as f64 / 1e6,
            bytes as f64 / (med / 1e9) / 1e6,
            v.iter().map(|x| format!("{:.2}", *x as f64 / 1e9)).collect::<Vec<_>>().join(" ")
        );
    }
}
