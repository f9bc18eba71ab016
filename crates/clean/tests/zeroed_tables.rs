//! The cleaner's per-page tables are not asked of the allocator as zeroed
//! memory (see `src/zeros.rs`): jemalloc, the crawl's allocator, zeroes a
//! large zeroed request by giving its pages back to the kernel, and every
//! page of the table then faults twice. Counted here by wrapping the
//! system allocator, on a page with thousands of elements, whose tables
//! are far above the 32 KiB where jemalloc's large requests begin.
// A global allocator can only be written as `unsafe impl`; it forwards
// every call to `System` unchanged.
#![allow(unsafe_code, clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use simcrawl_clean::Page;
use url::Url;

/// Where jemalloc's large size classes (no thread cache) begin.
const LARGE: usize = 32 * 1024;

struct Counting;

static LARGE_ZEROED: AtomicUsize = AtomicUsize::new(0);
static LARGE_PLAIN: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Only this test's thread is counted (the harness has its own).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counted(layout: Layout, zeroed: bool) {
    if layout.size() > LARGE && COUNTING.with(Cell::get) {
        let counter = if zeroed { &LARGE_ZEROED } else { &LARGE_PLAIN };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(layout, false);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(layout, true);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted(Layout::from_size_align(new_size, layout.align()).unwrap(), false);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A documentation page of `sections` sections, each a heading, two
/// paragraphs with links and inline code, and a list: about 14 elements
/// a section, and a navigation bar and footer for the main-content rules
/// to set aside.
fn big_page(sections: usize) -> String {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><title>Reference</title></head><body>\
         <nav><a href=\"/\">Home</a> <a href=\"/api\">API</a></nav><main>",
    );
    for i in 0..sections {
        html.push_str(&format!(
            "<section id=\"s{i}\"><h2>Function number {i}</h2>\
             <p>Returns the <code>value</code> of entry {i}, as the \
             <a href=\"/api/{i}\">reference</a> says, unless it is empty.</p>\
             <p>Raises <em>KeyError</em> when entry {i} is missing; see \
             <a href=\"/errors#{i}\">errors</a>.</p>\
             <ul><li>since 1.{i}</li><li><span class=\"k\">pure</span></li></ul>\
             </section>"
        ));
    }
    html.push_str("</main><footer>Copyright</footer></body></html>");
    html
}

#[test]
fn a_large_pages_tables_are_not_zeroed_allocations() {
    let html = big_page(800);
    let url = Url::parse("https://docs.example.com/api/index.html").unwrap();
    COUNTING.with(|c| c.set(true));
    let page = Page::parse(html.as_bytes(), Some("text/html; charset=utf-8"), &url);
    COUNTING.with(|c| c.set(false));
    let page = page.unwrap();
    // The page was cleaned, and its main text kept: the tables were used.
    assert!(page.text.contains("function number 799"), "{}", &page.text[..200]);
    assert!(!page.text.contains("copyright"));
    // Large plain allocations did happen (the tree, the text), so the
    // counting saw the cleaner's large requests ...
    assert!(LARGE_PLAIN.load(Ordering::Relaxed) > 0);
    // ... and none of them asked for zeroed memory.
    assert_eq!(LARGE_ZEROED.load(Ordering::Relaxed), 0);
}
