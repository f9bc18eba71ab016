//! The multi-genre gate (issue 35; docs/EVAL.md, "Genres"): beside the
//! documentation of the HTML gate (`html_gate.rs`), real API references of
//! five generators, man pages of several languages and renderers,
//! syndicated news inside other sites' templates, a manual in fourteen
//! languages, and mailing-list archives (real mail in MHonArc's archives), each judged on both paths users run: crawled over loopback
//! with the defaults, and through `crawl dedup` over the same pages as
//! `html` lines (`scripts/genre-gate.sh`). On every genre and path no unique
//! page may be lost, the near-duplicate components holding a page of 300
//! characters or more must be found, and no page may be dropped for a
//! partner it does not resemble (a false drop) beyond the few named in
//! [`GENRES`], each with why it is still there.
//!
//! `scripts/test.sh` builds the sets with their builders
//! (`scripts/build-{apiref,manpage,news,multilang,mailarchive}-set.sh`) into one folder
//! and points `SIMCRAWL_GENRE_SETS` at it; without the variable the test
//! says so and passes only outside CI.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gate_report;

use std::path::{Path, PathBuf};
use std::process::Command;

use gate_report::total_rows;

/// One genre of the gate and what it must meet.
struct Genre {
    /// Its folder under `SIMCRAWL_GENRE_SETS` (as `scripts/test.sh` names it).
    set: &'static str,
    /// Recall over components holding a page of >= 300 characters, on each
    /// path: the 0.95, except where the measured figure is below it
    /// and the reason is known (see each genre).
    min_recall: f64,
    /// The false drops still made, as the pairs of pages they name (either
    /// way round): the gate fails on any other. Crawl verdicts depend on the
    /// order pages arrive in, so a run may show some of these or none.
    known_false_drops: &'static [(&'static str, &'static str)],
    /// Known false drops as groups of pages (one message on several
    /// archives): a false drop between two pages of one group is known.
    known_false_drop_groups: &'static [&'static [&'static str]],
    /// The news set's copy recall (`scripts/news_copy_recall.py`): copies of
    /// one story dropped over the copies beyond one, on each path.
    min_copy_recall: Option<f64>,
}

const GENRES: &[Genre] = &[
    Genre {
        set: "apiref",
        // Recall read 0.925-0.966 with the order pages arrive in, on both
        // paths (the crawl's fetch order, `crawl dedup` over shuffled
        // lines): which pages come before a host's template is learnt
        // decides whether some sibling pages are judged on their own text
        // (docs/EVAL.md, "the crawl's recall on API references"). Since a
        // block is template only on 0.8 of a host's pages (the headings
        // every class page repeats are content, docs/EVAL.md "thirteenth
        // round"), it reads 0.950-0.956 in the crawl and 0.962 through
        // `crawl dedup`; the floor keeps a margin for the order.
        min_recall: 0.93,
        // None since outlines have one-bit bins (2026-12-03, docs/EVAL.md
        // "fifteenth round"). The five listed before were all refused by
        // the outline on one host (0.71) once it could tell 0.63 from 0.71:
        // two Doxygen source listings of libstdc++ headers (`a20447_source`
        // for `a01514_source`: exact 0.622 by the visible text, 0.629 as
        // the outline reads it; their sizes bound the sketch's 0.757 at
        // 0.748 when both are judged on all they show), and rustdoc's
        // `core::iter::Peekable` against the `alloc` iterators
        // (`vec::IntoIter`, `vec::Drain`, `string::Drain`,
        // `vec::DrainFilter`: 0.63-0.64 exact by their trait listings,
        // 0.633-0.648 by the outline), which the old outline (64 bins of 8
        // bits, error 0.06) put over 0.71 in one CI crawl of eight. An
        // outline is of what a page shows outside declared template, so
        // the crawl's order does not move these estimates.
        known_false_drops: &[],
        known_false_drop_groups: &[],
        min_copy_recall: None,
    },
    Genre {
        set: "manpages",
        min_recall: 0.95,
        // None since outlines have 512 bins of one bit (2026-12-03): the
        // last one was a man page rendered by groff and by man2html on two
        // hosts, the same manual text (0.77-0.80 by the main text) inside
        // each renderer's chrome, which on a page this short (about 460
        // characters) puts the visible texts at 0.63. The outlines decide
        // at one path on two hosts, and the 64 bins of 8 bits estimated this
        // pair (`clockid_t(3type)`, 0.629 exact) at 0.671; one-bit bins at
        // 0.621. An outline is of what a page shows outside declared
        // template, so the crawl's order does not move it.
        known_false_drops: &[],
        known_false_drop_groups: &[],
        min_copy_recall: None,
    },
    Genre {
        set: "news",
        // Components over the combined labels chain stories together
        // through index and teaser pages, so this recall says little about
        // copies (docs/eval-news.md); copy recall is the measure for news.
        min_recall: 0.80,
        // None since front pages are judged on all they show (two sites on
        // one theme, whose front pages' one main text was the theme's
        // author box, were the last one).
        known_false_drops: &[],
        known_false_drop_groups: &[],
        min_copy_recall: Some(0.95),
    },
    Genre {
        set: "multilang",
        min_recall: 0.95,
        known_false_drops: &[],
        known_false_drop_groups: &[],
        min_copy_recall: None,
    },
    Genre {
        set: "mail",
        // Copies of one message in two lists' MHonArc archives, the mirror
        // and public-inbox (lore.test) are found when extraction takes the
        // message out of its frame (its header block, thread overview and
        // reply instructions left out) and the page is judged on it; what
        // is missed is messages not in one run of `<pre>` blocks
        // (text/html parts, format=flowed mail): docs/eval-mailarchive.md.
        // Measured 0.950-0.953 on both paths (2026-12-02), 0.956-0.958
        // since the thirteenth round, 0.972-0.974 since a short reply's
        // header fields no longer count against its message (2026-12-06).
        min_recall: 0.94,
        known_false_drops: &[],
        known_false_drop_groups: &[
            // An archive's date index and thread index: its messages' subjects
            // in two orders (0.57-0.65 by the visible text, whose 5-grams
            // cross from one subject to the next).
            &[
                "http://alsa-devel.lists.test/maillist.html",
                "http://alsa-devel.lists.test/threads.html",
            ],
            &[
                "http://ceph-devel.lists.test/maillist.html",
                "http://ceph-devel.lists.test/threads.html",
            ],
            &[
                "http://cpufreq.lists.test/maillist.html",
                "http://cpufreq.lists.test/threads.html",
            ],
            &[
                "http://devel.lists.test/maillist.html",
                "http://devel.lists.test/threads.html",
            ],
            &[
                "http://e1000-devel.lists.test/maillist.html",
                "http://e1000-devel.lists.test/threads.html",
            ],
            &[
                "http://linux-bluetooth.lists.test/maillist.html",
                "http://linux-bluetooth.lists.test/threads.html",
            ],
            &[
                "http://linux-cifs.lists.test/maillist.html",
                "http://linux-cifs.lists.test/threads.html",
            ],
            // Mark Brown's two replies in one thread ("this doesn't apply
            // against -next", "applied, thanks"), each a line of its own
            // under the same quoted patch and a header block of the same
            // delivery route, and their copies on linux-kernel: 0.69-0.70
            // alike by what they are judged on, so the title tier (0.7 for
            // one title) may drop one for the other, by the order pages
            // arrive in (0.73 by the pages, different messages by the
            // message labels): 2 of 8 crawls of a debug build (docs/EVAL.md
            // "Issue 35, thirteenth round"). One drop in ~850, within the
            // issue's 0.2%.
            &[
                "http://alsa-devel.lists.test/msg00003.html",
                "http://alsa-devel.lists.test/msg00005.html",
                "http://linux-kernel.lists.test/msg00101.html",
                "http://linux-kernel.lists.test/msg00104.html",
            ],
            &[
                "http://linux-fsdevel.lists.test/maillist.html",
                "http://linux-fsdevel.lists.test/threads.html",
            ],
            &[
                "http://linux-i2c.lists.test/maillist.html",
                "http://linux-i2c.lists.test/threads.html",
            ],
            &[
                "http://linux-kernel.lists.test/maillist.html",
                "http://linux-kernel.lists.test/threads.html",
            ],
            &[
                "http://linux-media.lists.test/maillist.html",
                "http://linux-media.lists.test/threads.html",
            ],
            &[
                "http://linux-mmc.lists.test/maillist.html",
                "http://linux-mmc.lists.test/threads.html",
            ],
            &[
                "http://linux-nfs.lists.test/maillist.html",
                "http://linux-nfs.lists.test/threads.html",
            ],
            &[
                "http://linux-scsi.lists.test/maillist.html",
                "http://linux-scsi.lists.test/threads.html",
            ],
            &[
                "http://linuxppc-dev.lists.test/maillist.html",
                "http://linuxppc-dev.lists.test/threads.html",
            ],
            &[
                "http://mirror.test/maillist.html",
                "http://mirror.test/threads.html",
            ],
            &[
                "http://netdev.lists.test/maillist.html",
                "http://netdev.lists.test/threads.html",
            ],
            &[
                "http://notmuch.lists.test/maillist.html",
                "http://notmuch.lists.test/threads.html",
            ],
            &[
                "http://ocfs2-devel.lists.test/maillist.html",
                "http://ocfs2-devel.lists.test/threads.html",
            ],
            &[
                "http://platform-driver-x86.lists.test/maillist.html",
                "http://platform-driver-x86.lists.test/threads.html",
            ],
            &[
                "http://samba-technical.lists.test/maillist.html",
                "http://samba-technical.lists.test/threads.html",
            ],
            &[
                "http://user-mode-linux-user.lists.test/maillist.html",
                "http://user-mode-linux-user.lists.test/threads.html",
            ],
            &[
                "http://xen-devel.lists.test/maillist.html",
                "http://xen-devel.lists.test/threads.html",
            ],
        ],
        min_copy_recall: None,
    },
];

/// The two pages a `false drop: A (...) with B)` line of `crawl eval
/// --crawled` names.
fn false_drop_pair(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("false drop: ")?;
    let (dropped, rest) = rest.split_once(' ')?;
    let partner = rest.rsplit_once(" with ")?.1.strip_suffix(')')?;
    Some((dropped, partner))
}

/// What `genre` got wrong on both paths, in words (empty: it passes).
fn judge(genre: &Genre, set: &Path, out: &Path) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/genre-gate.sh");
    let run = Command::new("bash")
        .arg(script)
        .arg(set)
        .arg(out)
        .arg(env!("CARGO_BIN_EXE_crawl"))
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&run.stdout).into_owned();
    let name = genre.set;
    if !run.status.success() {
        let log = std::fs::read_to_string(out.join("crawl-run/crawl.log")).unwrap_or_default();
        return vec![format!(
            "{name}: genre-gate.sh failed:\n{report}\n{}\n{log}",
            String::from_utf8_lossy(&run.stderr)
        )];
    }
    let mut wrong = Vec::new();
    let rows = total_rows(&report);
    if rows.len() != 2 {
        return vec![format!("{name}: expected a crawl and a batch row:\n{report}")];
    }
    for (path, row) in ["crawl", "crawl dedup"].iter().zip(&rows) {
        if row[1] < row[0] * 0.95 {
            wrong.push(format!("{name}, {path}: reached {} of {} pages", row[1], row[0]));
        }
        if row[2] < 100.0 {
            wrong.push(format!("{name}, {path}: {} drops, too few to score", row[2]));
        }
        if row[3] != 0.0 {
            wrong.push(format!("{name}, {path}: {} unique pages lost", row[3]));
        }
        if row[5] < genre.min_recall {
            wrong.push(format!(
                "{name}, {path}: recall (>= 300 chars) {} < {}",
                row[5], genre.min_recall
            ));
        }
    }
    let known = |a: &str, b: &str| {
        genre
            .known_false_drops
            .iter()
            .any(|&(x, y)| (x, y) == (a, b) || (y, x) == (a, b))
            || genre
                .known_false_drop_groups
                .iter()
                .any(|g| g.contains(&a) && g.contains(&b))
    };
    let listed: Vec<(&str, &str)> = report.lines().filter_map(false_drop_pair).collect();
    let counted: f64 = rows.iter().map(|r| r[7]).sum();
    if listed.len() as f64 != counted {
        wrong.push(format!(
            "{name}: {counted} false drops counted, {} listed",
            listed.len()
        ));
    }
    for (a, b) in listed {
        if !known(a, b) {
            wrong.push(format!("{name}: false drop {a} for {b}"));
        }
    }
    if let Some(min) = genre.min_copy_recall {
        wrong.extend(copy_recall_failures(name, set, out, min));
    }
    if !wrong.is_empty() {
        wrong.push(format!("{name}'s report:\n{report}"));
    }
    wrong
}

/// Copy recall below `min` on either path, and story pages dropped for a
/// page of another story (`scripts/news_copy_recall.py`).
fn copy_recall_failures(name: &str, set: &Path, out: &Path, min: f64) -> Vec<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/news_copy_recall.py");
    let run = Command::new("python3")
        .arg(script)
        .arg(set)
        .arg(out)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&run.stdout).into_owned();
    if !run.status.success() {
        return vec![format!(
            "{name}: news_copy_recall.py failed: {}",
            String::from_utf8_lossy(&run.stderr)
        )];
    }
    // stories, pages beyond one, dropped, copy recall, wrong drops, stories lost
    let rows: Vec<Vec<f64>> = total_rows(&report).into_iter().filter(|r| r.len() == 6).collect();
    if rows.len() != 2 {
        return vec![format!("{name}: expected two copy-recall rows:\n{report}")];
    }
    let mut wrong = Vec::new();
    for (path, row) in ["crawl", "crawl dedup"].iter().zip(&rows) {
        if row[3] < min {
            wrong.push(format!(
                "{name}, {path}: copy recall {} < {min}\n{report}",
                row[3]
            ));
        }
        if row[5] != 0.0 {
            wrong.push(format!("{name}, {path}: {} stories lost\n{report}", row[5]));
        }
        // A story dropped for its host's front page or a teaser page is
        // not lost here (its copies are kept), but would be where it
        // exists nowhere else (docs/EVAL.md, "Issue 35, eleventh round").
        if row[4] != 0.0 {
            wrong.push(format!(
                "{name}, {path}: {} story pages dropped for a page of another story\n{report}",
                row[4]
            ));
        }
    }
    wrong
}

#[test]
fn every_genre_keeps_its_unique_pages_and_finds_its_copies_on_both_paths() {
    let Some(sets) = gate_report::labelled_set(
        "SIMCRAWL_GENRE_SETS",
        "genre gate",
        "see scripts/test.sh for how the sets are built",
    ) else {
        return;
    };
    let dir = tempfile::Builder::new()
        .prefix("genre_gate")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    // One genre after another: their crawls would compete for two cores
    // (and time out fetches) if run side by side.
    let mut wrong = Vec::new();
    for genre in GENRES {
        let set = PathBuf::from(&sets).join(genre.set);
        assert!(
            set.join("pages.jsonl").is_file(),
            "{}: no labelled set (pages.jsonl)",
            set.display()
        );
        wrong.extend(judge(genre, &set, &dir.path().join(genre.set)));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn false_drop_lines_name_both_pages() {
    let line = "  false drop: http://a.test/x.html (tier title, estimated 1.000, exact 0.641 with http://b.test/index.html)";
    assert_eq!(
        false_drop_pair(line),
        Some(("http://a.test/x.html", "http://b.test/index.html"))
    );
    assert_eq!(
        false_drop_pair("  lost: http://a.test/x.html (tier content)"),
        None
    );
}
