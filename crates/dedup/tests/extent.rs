//! A page of one host that is alike by the text it is judged on but far
//! smaller or larger as a whole is not a copy (issue 35,
//! `simcrawl_dedup::extent`).

use simcrawl_dedup::{Deduper, Document, Extent, MemoryStore, Refusal, Signature};

/// A member list: lines that repeat a handful of namespaces, as doxygen's
/// "Namespace Members" pages do.
fn member_list(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("operator{i}() : __gnu_cxx, std::chrono, std, std::rel_ops\n"))
        .collect()
}

/// An introduction of `n` distinct sentences.
fn intro(n: usize) -> String {
    (0..n)
        .map(|i| format!("Sentence {i} says what the page lists and how its {i} entries are sorted. "))
        .collect()
}

/// A page judged on `text` that shows `shown` outside declared template.
fn page(d: &Deduper<MemoryStore>, url: &str, text: &str, shown: Option<&str>) -> Signature {
    let mut sig = d.sign(&Document::new(url, "libstdc++: Namespace Members", text));
    sig.extent = shown.map(Extent::of);
    sig
}

#[test]
fn a_list_shown_inside_a_much_larger_page_of_its_host_is_kept_either_way() -> simcrawl_dedup::Result<()> {
    let all = member_list(0, 60);
    let functions = member_list(0, 54);
    let all_shown = format!("{}{all}", intro(12));
    let (a, b) = (Extent::of(&all_shown), Extent::of(&functions));
    assert!(
        a.resemblance_at_most(b) < simcrawl_dedup::PAGE_MIN_SIMILARITY,
        "{a:?} {b:?}"
    );
    let pages = [
        (
            "http://lib.example/members_o.html",
            all.as_str(),
            all_shown.as_str(),
        ),
        (
            "http://lib.example/members_func_o.html",
            functions.as_str(),
            functions.as_str(),
        ),
    ];
    for order in [[0, 1], [1, 0]] {
        let d = Deduper::in_memory()?;
        for i in order {
            let (url, text, shown) = pages[i];
            assert!(
                d.check_signed(&page(&d, url, text, Some(shown)))?.is_unique(),
                "{url}"
            );
        }
        // Without extents (a text, or a record written before them) the
        // texts alone decide: the second list is a copy.
        let d = Deduper::in_memory()?;
        let (url, text, _) = pages[order[0]];
        assert!(d.check_signed(&page(&d, url, text, None))?.is_unique());
        let (url, text, shown) = pages[order[1]];
        let v = d.check_signed(&page(&d, url, text, Some(shown)))?;
        assert_eq!(v.partner(), Some(pages[order[0]].0));
    }
    Ok(())
}

#[test]
fn pages_of_one_size_are_still_copies() -> simcrawl_dedup::Result<()> {
    let d = Deduper::in_memory()?;
    let list = member_list(0, 60);
    let shown = format!("{}{list}", intro(3));
    assert!(
        d.check_signed(&page(&d, "http://lib.example/o.html", &list, Some(&shown)))?
            .is_unique()
    );
    let v = d.check_signed(&page(
        &d,
        "http://lib.example/o.html?lang=en",
        &list,
        Some(&shown),
    ))?;
    assert_eq!(v.partner(), Some("http://lib.example/o.html"));
    Ok(())
}

#[test]
fn across_hosts_a_larger_frame_is_no_reason_to_keep_a_copy() -> simcrawl_dedup::Result<()> {
    let story = member_list(100, 40);
    let framed = format!("{}{story}", intro(40));
    for copy in [
        "http://man2html.example/man4/ttyS.4.html",
        "http://news-b.example/world/1234",
    ] {
        let d = Deduper::in_memory()?;
        let original = "http://mandoc.example/man4/ttyS.4.html";
        assert!(
            d.check_signed(&page(&d, original, &story, Some(&story)))?
                .is_unique()
        );
        let v = d.check_signed(&page(&d, copy, &story, Some(&framed)))?;
        assert_eq!(v.partner(), Some(original), "{copy}");
    }
    Ok(())
}

#[test]
fn explain_says_why_a_page_far_larger_is_not_the_partner() -> simcrawl_dedup::Result<()> {
    let all = member_list(0, 60);
    let functions = member_list(0, 54);
    let all_shown = format!("{}{all}", intro(12));
    let d = Deduper::in_memory()?;
    assert!(
        d.check_signed(&page(&d, "http://lib.example/o.html", &all, Some(&all_shown)))?
            .is_unique()
    );
    let sig = page(&d, "http://lib.example/func_o.html", &functions, Some(&functions));
    let e = d.explain(&sig)?;
    assert!(e.verdict.is_none());
    let c = &e.candidates[0];
    assert!(c.similarity.is_some_and(|s| s >= 0.75), "{c:?}");
    match c.refused {
        Some(Refusal::SizesApart { at_most }) => assert!(at_most < 0.65, "{at_most}"),
        other => panic!("{other:?}"),
    }
    assert!(
        c.refused
            .is_some_and(|r| r.to_string().contains("too far apart in size"))
    );
    // A page with too little text of its own, same size: refused for that.
    let mut thin = page(&d, "http://lib.example/o2.html", &functions, Some(&all_shown));
    thin.min_similarity = Some(1.0);
    let e = d.explain(&thin)?;
    assert_eq!(e.candidates[0].refused, Some(Refusal::Stricter { min: 1.0 }));
    // Nothing stops an exact copy of the same size.
    let e = d.explain(&page(&d, "http://lib.example/o3.html", &all, Some(&all_shown)))?;
    assert_eq!(e.candidates[0].refused, None);
    assert!(e.verdict.is_some());
    Ok(())
}
