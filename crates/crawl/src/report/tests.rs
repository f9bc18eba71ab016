//! The report's reading of outputs, tested on small hand-written ones.

#![allow(clippy::unwrap_used)]
use super::*;

fn write_outputs(dir: &Path, kept: &[&str], dups: &[&str], errors: &[&str]) {
    for (name, lines) in [
        ("kept.jsonl", kept),
        ("duplicates.jsonl", dups),
        ("errors.jsonl", errors),
    ] {
        let mut s = lines.join("\n");
        s.push('\n');
        std::fs::write(dir.join(name), s).unwrap();
    }
}

#[test]
fn each_verdict_to_check_says_how_its_pages_are_related_and_what_was_judged() {
    let dir = tempfile::tempdir().unwrap();
    write_outputs(
        dir.path(),
        &[],
        &[
            r#"{"url":"http://b.test/world/9","tier":"content","duplicate_of":"http://a.test/news/1","similarity":0.9,"basis":"page","chars":3000,"features":8,"excerpt":"story","article":true}"#,
            r#"{"url":"http://man.zh-tw.test/man1/tar.1.html","tier":"title","duplicate_of":"http://man.zh-cn.test/man1/tar.1.html","similarity":0.8,"basis":"main","chars":3000,"features":8,"excerpt":"tar"}"#,
            r#"{"url":"http://a.test/x","tier":"content","duplicate_of":"http://www.a.test:8080/y","similarity":0.95,"basis":"thin","chars":300,"features":8,"excerpt":"x"}"#,
        ],
        &[],
    );
    let r = build(dir.path(), Limits::default()).unwrap();
    let classes: Vec<String> = r.suspects.iter().map(html::verdict_class).collect();
    assert_eq!(
        classes,
        [
            "two sites, article",
            "one path, two hosts, main",
            "same host, thin"
        ]
    );
    let page = html::render(&r);
    for c in &classes {
        assert!(
            page.contains(&format!("<div class=\"note pair\">{c}</div>")),
            "{c}"
        );
    }
}

#[test]
fn suspicious_drops_are_listed_first_with_both_texts() {
    let dir = tempfile::tempdir().unwrap();
    write_outputs(
        dir.path(),
        &[
            r#"{"url":"http://a.test/footer","title":"Index","basis":"main","chars":400,"features":30,"excerpt":"copyright the team"}"#,
            r#"{"url":"http://a.test/ok","title":"Ok","basis":"main","chars":5000,"features":300,"excerpt":"a long article"}"#,
        ],
        &[
            // Much larger than its kept page: listed first.
            r#"{"url":"http://a.test/contents","tier":"content","duplicate_of":"http://a.test/footer","similarity":1.0,"basis":"main","chars":90000,"features":30,"excerpt":"copyright the team"}"#,
            r#"{"url":"http://a.test/menu","tier":"title","duplicate_of":"http://a.test/ok","similarity":0.95,"basis":"thin","chars":300,"features":8,"excerpt":"menu opens"}"#,
            r#"{"url":"http://a.test/tpl","tier":"content","duplicate_of":"http://a.test/ok","similarity":1.0,"basis":"template","chars":300,"features":40,"excerpt":"site footer"}"#,
            // A fine drop, and a batch line without the crawler's facts.
            r#"{"url":"http://a.test/ok2","tier":"content","duplicate_of":"http://a.test/ok","similarity":0.9,"basis":"main","chars":5100,"features":290,"excerpt":"a long article"}"#,
            r#"{"url":"http://a.test/b","tier":"content","duplicate_of":"http://a.test/ok","similarity":0.9}"#,
        ],
        &[],
    );
    let r = build(dir.path(), Limits::default()).unwrap();
    let want: BTreeMap<&str, u64> = [("few_features", 1), ("larger", 1), ("template", 1)].into();
    assert_eq!(r.suspect_counts, want);
    let urls: Vec<&str> = r.suspects.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "http://a.test/contents",
            "http://a.test/menu",
            "http://a.test/tpl"
        ]
    );
    let first = &r.suspects[0];
    assert_eq!(first.reasons, ["larger"]);
    assert_eq!(first.kept_chars, Some(400));
    assert_eq!(first.kept_excerpt.as_deref(), Some("copyright the team"));
    assert_eq!(r.suspects[1].reasons, ["few_features"]);
    assert_eq!(r.suspects[2].reasons, ["template"]);
    let page = html::render(&r);
    let at = page.find("id=\"suspects\"").unwrap();
    assert!(at < page.find("id=\"summary\"").unwrap(), "listed first");
    assert!(page.contains("a long article") && page.contains("menu opens"));
    // Limited: all are counted, the first listed.
    let r = build(
        dir.path(),
        Limits {
            suspects: 1,
            ..Limits::default()
        },
    )
    .unwrap();
    assert_eq!(r.suspects.len(), 1);
    assert_eq!(r.suspect_counts.values().sum::<u64>(), 3);
}

#[test]
fn counts_tiers_clusters_hosts_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    write_outputs(
        dir.path(),
        &[
            r#"{"url":"http://a.test/x","title":"X","fetched_at":100}"#,
            r#"{"url":"http://a.test/y","title":"Y","fetched_at":160}"#,
            r#"{"url":"http://b.test/z","title":"Z","fetched_at":170}"#,
        ],
        &[
            r#"{"url":"http://a.test//x","tier":"title","duplicate_of":"http://a.test/x","distance":0,"similarity":1.0}"#,
            r#"{"url":"http://m.test/x","tier":"content","duplicate_of":"http://a.test/x","distance":5,"similarity":0.82}"#,
            r#"{"url":"http://a.test/y?sid=1","tier":"url","duplicate_of":"http://a.test/y"}"#,
            r#"{"url":"http://a.test//y","tier":"content","duplicate_of":"http://a.test/y","distance":2,"similarity":0.97}"#,
            r#"{"url":"http://a.test//x/","tier":"content","duplicate_of":"http://a.test/x","distance":1,"similarity":0.75}"#,
        ],
        &[
            r#"{"url":"http://a.test/p","kind":"robots_disallowed","error":"disallowed"}"#,
            r#"{"line":7,"error":"invalid JSON"}"#,
            r#"{"url":"http://c.test/q","kind":"timeout","error":"timed out"}"#,
            r#"{"url":"http://c.test/r","kind":"timeout","error":"timed out"}"#,
        ],
    );
    let r = build(dir.path(), Limits::default()).unwrap();
    assert_eq!(r.kept, 3);
    assert_eq!(
        r.dropped,
        TierCounts {
            url: 1,
            title: 1,
            content: 3,
            other: 0
        }
    );
    assert_eq!(r.errors, 4);
    assert_eq!(r.unreadable, 0);
    // Largest cluster first, with its title from kept.jsonl.
    assert_eq!(r.cluster_count, 2);
    assert_eq!(r.clusters[0].kept, "http://a.test/x");
    assert_eq!(r.clusters[0].title.as_deref(), Some("X"));
    assert_eq!(r.clusters[0].size, 3);
    assert_eq!(r.clusters[0].members[1].url, "http://m.test/x");
    assert_eq!(r.clusters[0].members[1].line, 2);
    assert_eq!(r.clusters[1].size, 2);
    // Similarity bins: 1.0 and 0.97 in the last bin, 0.82 in [0.80, 0.85), 0.75 in [0.75, 0.80).
    assert_eq!(r.similarity[19], 2);
    assert_eq!(r.similarity[16], 1);
    assert_eq!(r.similarity[15], 1);
    assert_eq!(r.distance, vec![1, 1, 1, 0, 0, 1]);
    // Hosts: a.test has 2 kept, 4 dropped (1 url, 1 title, 2 content) and 1 error.
    let a = r.hosts.iter().find(|h| h.host == "a.test").unwrap();
    assert_eq!((a.kept, a.dropped.total(), a.errors, a.fetched()), (2, 4, 1, 7));
    assert_eq!(r.hosts[0].host, "a.test");
    assert_eq!(r.host_count, 4);
    // `//` produced three of the drops on a.test.
    assert_eq!(r.patterns[0].host, "a.test");
    assert_eq!(r.patterns[0].rewrite, "`//` in the path");
    assert_eq!(r.patterns[0].count, 2);
    assert_eq!(r.error_kinds["timeout"].count, 2);
    assert_eq!(r.error_kinds["malformed line"].examples[0].0, "input line 7");
    // 100..=170 s: 71 one-second buckets (at most 120 bars).
    assert_eq!(r.bucket_secs, 1);
    assert_eq!(r.timeline.len(), 71);
    assert_eq!(r.timeline.iter().map(|t| t.1).sum::<u64>(), 3);
}

#[test]
fn limits_cap_lists_but_not_counts() {
    let dir = tempfile::tempdir().unwrap();
    let dups: Vec<String> = (0..30)
        .map(|i| {
            format!(
                r#"{{"url":"http://a.test/k{}/{i}","tier":"content","duplicate_of":"http://a.test/k{}","similarity":0.9}}"#,
                i % 3,
                i % 3
            )
        })
        .collect();
    let dups: Vec<&str> = dups.iter().map(String::as_str).collect();
    write_outputs(dir.path(), &[], &dups, &[]);
    let limits = Limits {
        clusters: 2,
        members: 4,
        ..Limits::default()
    };
    let r = build(dir.path(), limits).unwrap();
    assert_eq!(r.cluster_count, 3);
    assert_eq!(r.clusters.len(), 2);
    assert!(r.clusters.iter().all(|c| c.size == 10 && c.members.len() == 4));
    assert_eq!(r.dropped.content, 30);
}

#[test]
fn torn_lines_are_counted_not_fatal_and_empty_dirs_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    write_outputs(
        dir.path(),
        &[r#"{"url":"http://a.test/x"}"#, r#"{"url":"http://a.te"#],
        &[],
        &[],
    );
    let r = build(dir.path(), Limits::default()).unwrap();
    assert_eq!((r.kept, r.unreadable), (1, 1));
    let empty = tempfile::tempdir().unwrap();
    let err = build(empty.path(), Limits::default()).unwrap_err().to_string();
    assert!(err.contains("holds no kept.jsonl"), "{err}");
}

#[test]
fn host_of_groups_by_authority() {
    assert_eq!(host_of("http://user@Example.test:8080/a?b"), "Example.test:8080");
    assert_eq!(host_of("https://a.test"), "a.test");
    assert_eq!(host_of("not a url"), "not a url");
    assert_eq!(host_of(""), "(none)");
}

#[test]
fn timeline_buckets_stay_few() {
    let times: Vec<u64> = (0..100_000).map(|i| 1_000_000 + i).collect();
    let (rows, bucket) = timeline(&times);
    assert!(rows.len() <= 120, "{}", rows.len());
    assert_eq!(bucket, 1800);
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), 100_000);
}
