//! An in-memory run of `crawl dedup` as a pipeline of four stages over the
//! chunks of its input (issue 37): the two that run on every core and the
//! two that must take the documents in input order overlap, each chunk one
//! stage behind the chunk read after it.

use anyhow::Result;
use rayon::prelude::*;
use simcrawl_dedup::{Deduper, MemoryStore};

use super::{
    Cleaned, Parsed, ParsedDoc, Run, clean, emit, lines, signed, tell_languages, verdicts_in_memory,
};
use crate::progress::Progress;
use crate::template::Templates;

/// The chunks of an in-memory run, through four stages at once, each
/// chunk one stage behind the one read after it: cleaned (every core;
/// `text` lines signed in the same pass), identified (`html` lines, in
/// order: a page's identity depends on the template learnt from the pages
/// before it), signed (every core) and judged (in order, its languages told
/// first, its lines written). The two ordered stages run on one core while
/// the two parallel ones take the others, so no core waits for a chunk's
/// slowest line or for a serial pass (issue 37). Signing never waits for a
/// verdict, and each stage takes the chunks in input order, so the
/// verdicts and lines are those of one chunk after the other. A chunk of
/// `text` lines only skips the two middle stages when no chunk is in them
/// (so a corpus without `html` lines runs in two stages). A read error
/// ends the input: the chunks read before it are judged and written, then
/// it is returned.
pub(super) fn judge_overlapped(
    d: &Deduper<MemoryStore>,
    run: &mut Run,
    mut chunks: impl Iterator<Item = Result<lines::Chunk>>,
    progress: &Progress,
    input: &str,
) -> Result<()> {
    let (cleaner, templates, lang) = (&run.cleaner, &run.templates, &run.lang);
    let (outputs, p, write_normalized) = (&mut run.outputs, &mut run.p, run.write_normalized);
    let mut cleaned: Option<(lines::Chunk, Vec<Staged>)> = None;
    let mut identified: Option<Identified> = None;
    let mut signed: Option<(lines::Chunk, Vec<Parsed>)> = None;
    let mut failed: Option<anyhow::Error> = None;
    loop {
        // None: the input is done (or failed).
        let next = match failed {
            Some(_) => None,
            None => chunks.next().transpose().unwrap_or_else(|e| {
                failed = Some(e);
                None
            }),
        };
        if next.is_none() && cleaned.is_none() && identified.is_none() && signed.is_none() {
            return failed.map_or(Ok(()), Err);
        }
        let (to_identify, to_sign, to_judge) = (cleaned.take(), identified.take(), signed.take());
        let ((now_cleaned, now_signed), (now_identified, judged)) = rayon::join(
            || {
                rayon::join(
                    || {
                        next.map(|c| {
                            let staged = clean_stage(d, cleaner, &c.lines);
                            (c, staged)
                        })
                    },
                    || to_sign.map(|(c, staged, ids)| (c, sign_stage(d, staged, ids))),
                )
            },
            || -> (Option<Identified>, Result<()>) {
                let now_identified = to_identify.map(|(c, staged)| {
                    let ids = identify_stage(templates, &staged);
                    (c, staged, ids)
                });
                let judged = to_judge.map_or(Ok(()), |(chunk, mut parsed)| {
                    tell_languages(&mut parsed, lang);
                    let verdicts = verdicts_in_memory(d, &parsed)?;
                    let to = (&mut *outputs, &mut *p, write_normalized);
                    emit(to, (&chunk.lines, chunk.bytes), &parsed, verdicts, input)
                });
                (now_identified, judged)
            },
        );
        judged?;
        progress.set(p.bytes);
        (cleaned, identified, signed) = (now_cleaned, now_identified, now_signed);
        // A chunk without `html` lines is signed once cleaned: with no chunk
        // ahead of it in the stages between, it is judged at the next step,
        // not two steps later. A corpus of `text` lines then runs in two
        // stages, and its last chunks are not judged one by one on one core
        // once the others have nothing left to clean (issue 37).
        if identified.is_none()
            && signed.is_none()
            && let Some((chunk, staged)) =
                cleaned.take_if(|(_, staged)| !staged.iter().any(|s| matches!(s, Ok(StagedDoc::Html(_)))))
        {
            // No line has an identity to wait for: the sign stage only
            // unboxes what the clean stage signed.
            let ids = staged.iter().map(|_| None).collect();
            signed = Some((chunk, sign_stage(d, staged, ids)));
        }
    }
}

/// A line of an in-memory run cleaned and, unless it is an `html` line,
/// signed (or why it cannot be).
pub(super) type Staged = Result<StagedDoc, String>;

/// See [`Staged`].
pub(super) enum StagedDoc {
    Signed(Box<ParsedDoc>),
    Html(Box<Cleaned>),
}

/// The identities of a chunk's `html` lines (`None` for the others).
pub(super) type Identities = Vec<Option<crate::identity::Identity<'static>>>;

/// A chunk cleaned and identified, waiting to be signed.
type Identified = (lines::Chunk, Vec<Staged>, Identities);

/// A chunk's lines cleaned on every core, `text` lines signed in the same
/// pass (their identity is their text, and no template is involved).
pub(super) fn clean_stage(
    d: &Deduper<impl simcrawl_dedup::Store>,
    cleaner: &simcrawl_clean::Cleaner,
    chunk: &[(u64, String)],
) -> Vec<Staged> {
    let lines: Vec<&str> = chunk.iter().map(|(_, line)| line.as_str()).collect();
    largest_first(
        lines,
        |line| line.len(),
        |line| {
            let c = clean(cleaner, line)?;
            Ok(match c.html {
                Some(_) => StagedDoc::Html(Box::new(c)),
                None => StagedDoc::Signed(Box::new(signed(d, &c, None))),
            })
        },
    )
}

/// `f` of each item on every core, the largest items (by `size`) started
/// first, the results in the items' order. A chunk's stage ends with its
/// slowest line: in input order, a page of 200 KB met late (the labelled
/// set has ten such) kept one core busy for milliseconds while the other
/// had nothing left, and that core idled 6% of the run's wall time
/// (perf's samples a thread, issue 37). Started first, the large items run
/// beside the small ones, which fill what is left. Each item's result is
/// its own, whatever the order: the stages after take them in input order.
pub(super) fn largest_first<T: Send, R: Send>(
    items: Vec<T>,
    size: impl Fn(&T) -> usize,
    f: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    let mut order: Vec<(usize, T)> = items.into_iter().enumerate().collect();
    // Stable: items of one size keep their input order.
    order.sort_by_key(|(_, item)| std::cmp::Reverse(size(item)));
    let mut done: Vec<(usize, R)> = order
        .into_par_iter()
        .with_max_len(1)
        .map(|(i, item)| (i, f(item)))
        .collect();
    done.sort_unstable_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The identities of a chunk's `html` lines, in input order, each host's
/// template learnt from the lines before (as [`sign_all`] learns it).
pub(super) fn identify_stage(templates: &Templates, staged: &[Staged]) -> Identities {
    crate::identity::identities_in_order(
        templates,
        staged.iter().map(|s| match s {
            Ok(StagedDoc::Html(c)) => c.in_order(),
            _ => None,
        }),
    )
}

/// A chunk's `html` lines signed on their identities, on every core.
pub(super) fn sign_stage(
    d: &Deduper<impl simcrawl_dedup::Store>,
    staged: Vec<Staged>,
    ids: Identities,
) -> Vec<Parsed> {
    let work: Vec<(Staged, Option<crate::identity::Identity<'static>>)> =
        staged.into_iter().zip(ids).collect();
    // Only `html` lines are signed here (the others were, when cleaned).
    let cost = |(s, _): &(Staged, _)| match s {
        Ok(StagedDoc::Html(c)) => c.text.len(),
        _ => 0,
    };
    largest_first(work, cost, |(s, id)| match s? {
        StagedDoc::Signed(doc) => Ok(*doc),
        StagedDoc::Html(c) => Ok(signed(d, &c, id.as_ref())),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::{BatchProgress, clean_all, sign_all};
    use super::*;
    use crate::output::sinks::{Offsets, Outputs};

    /// A read error ends an in-memory run's input: the chunks read before
    /// it go through every stage and are written, then the error is
    /// returned; and with no error, every chunk is written in input order,
    /// the chunks that skip stages (`text` lines only) and those that do
    /// not mixed.
    #[test]
    fn the_pipeline_writes_every_chunk_read_then_the_read_error() {
        for (chunks_read, error) in [
            (1, true),
            (5, true),
            (5, false),
            (0, true),
            (8, false),
            (3, false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let d = Deduper::in_memory().unwrap();
            let mut run = Run {
                outputs: Outputs::open(dir.path(), Offsets::default()).unwrap(),
                p: BatchProgress::default(),
                cleaner: simcrawl_clean::Cleaner::new(simcrawl_clean::CleanConfig::default()).unwrap(),
                templates: Templates::load(&crate::template::TemplateSettings::default(), None).unwrap(),
                lang: crate::lang::SiteLanguages::default(),
                write_normalized: false,
            };
            // Every third chunk holds an `html` line, which waits for its
            // identity: the `text` chunks after it, signed at once, must
            // not be judged before it.
            let chunk = |k: u64| {
                lines::Chunk {
                lines: (2 * k + 1..2 * k + 3)
                    .map(|n| {
                        let doc = if k % 3 == 1 && n % 2 == 0 {
                            let html = format!("<html><body><main><p>Page {n}: a report of the run, number {n}.</p></main></body></html>");
                            serde_json::json!({"url": format!("http://a.test/{n}"), "html": html})
                        } else {
                            serde_json::json!({"url": format!("http://a.test/{n}"), "text": format!("第{n}篇 text number {n} of the run")})
                        };
                        (n, doc.to_string())
                    })
                    .collect(),
                bytes: 100,
            }
            };
            let input = (0..chunks_read)
                .map(|k| Ok(chunk(k)))
                .chain(error.then(|| Err(anyhow::anyhow!("disk gone"))))
                .chain([Ok(chunk(99))]);
            let input: Box<dyn Iterator<Item = Result<lines::Chunk>>> = if error {
                Box::new(input)
            } else {
                Box::new(input.take(chunks_read as usize))
            };
            let r = judge_overlapped(&d, &mut run, input, &Progress::bytes(0, "test"), "test");
            assert_eq!(
                r.map_err(|e| e.to_string()).err().as_deref(),
                error.then_some("disk gone")
            );
            run.outputs.flush().unwrap();
            assert_eq!(run.p.lines, 2 * chunks_read);
            let kept = std::fs::read_to_string(dir.path().join("kept.jsonl")).unwrap();
            let lines: Vec<(String, String)> = kept
                .lines()
                .map(|l| {
                    let v = serde_json::from_str::<serde_json::Value>(l).unwrap();
                    (
                        v["url"].as_str().unwrap().to_string(),
                        v["basis"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            // An `html` line is judged on its identity (these short pages:
            // `thin`, their own text), never as a `text` line: it went
            // through every stage.
            let expected: Vec<(String, String)> = (1..=2 * chunks_read)
                .map(|n| {
                    let html = (n - 1) / 2 % 3 == 1 && n % 2 == 0;
                    let basis = if html { "thin" } else { "text" };
                    (format!("http://a.test/{n}"), basis.to_string())
                })
                .collect();
            assert_eq!(lines, expected);
        }
    }

    /// The overlapped run's stages sign every line as the two passes do
    /// (clean all, then sign all): `text` and `html` lines of one host
    /// mixed, whose identities depend on the pages before them, an empty
    /// line and a line that is no JSON.
    #[test]
    fn stages_sign_as_clean_then_sign() {
        let body = |i: usize| {
            format!(
                "<html><body><nav>Home | News | About | Contact</nav><main><p>Report {i}: the city council \
                 approved the new budget, and spending on parks rises by {i} percent.</p></main>\
                 <footer>Copyright City Paper</footer></body></html>"
            )
        };
        let lines: Vec<(u64, String)> = (0..40)
            .map(|i| {
                let line = match i % 5 {
                    0 => serde_json::json!({"url": format!("http://a.test/t/{i}"), "text": format!("第{i}篇 长江流域今年夏季降雨偏多 text {i}")}).to_string(),
                    1 => String::new(),
                    2 => "{not json".to_string(),
                    _ => serde_json::json!({"url": format!("http://a.test/p/{i}.html"), "html": body(i)}).to_string(),
                };
                (i as u64, line)
            })
            .collect();
        let cleaner = simcrawl_clean::Cleaner::new(simcrawl_clean::CleanConfig::default()).unwrap();
        let signed = |fused: bool| -> Vec<String> {
            let d = Deduper::in_memory().unwrap();
            let templates = Templates::load(&crate::template::TemplateSettings::default(), None).unwrap();
            let lang = crate::lang::SiteLanguages::default();
            // Two chunks: the template learnt in the first serves the second.
            let mut out = Vec::new();
            for chunk in lines.chunks(20) {
                let mut parsed = if fused {
                    let staged = clean_stage(&d, &cleaner, chunk);
                    let ids = identify_stage(&templates, &staged);
                    sign_stage(&d, staged, ids)
                } else {
                    sign_all(&d, &templates, clean_all(&cleaner, chunk))
                };
                tell_languages(&mut parsed, &lang);
                out.extend(parsed.iter().map(|p| match p {
                    Ok(p) => format!(
                        "{} {:?} {:?} {:?}",
                        p.url,
                        p.sig.fingerprint,
                        p.lang,
                        p.judged().basis
                    ),
                    Err(e) => format!("error {e}"),
                }));
            }
            out
        };
        let two_passes = signed(false);
        assert_eq!(two_passes.iter().filter(|l| l.starts_with("error")).count(), 16);
        assert_eq!(signed(true), two_passes);
    }

    /// Each item's result comes back at the item's place, whatever order
    /// the items ran in, every item runs once, and on one thread they start
    /// largest first, items of one size in input order.
    #[test]
    fn largest_first_starts_the_largest_and_keeps_the_input_order() {
        use std::sync::Mutex;
        let sizes = [3usize, 250, 7, 250, 0, 90_000, 12, 7, 1];
        let started = Mutex::new(Vec::new());
        let run = |threads: usize| {
            started.lock().unwrap().clear();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let items: Vec<(usize, usize)> = sizes.iter().copied().enumerate().collect();
            pool.install(|| {
                largest_first(
                    items,
                    |&(_, size)| size,
                    |(i, size)| {
                        started.lock().unwrap().push(i);
                        format!("{i}:{size}")
                    },
                )
            })
        };
        let expected: Vec<String> = sizes
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{i}:{s}"))
            .collect();
        assert_eq!(run(1), expected);
        assert_eq!(*started.lock().unwrap(), [5, 1, 3, 6, 2, 7, 0, 8, 4]);
        for _ in 0..20 {
            assert_eq!(run(4), expected);
            let mut each = started.lock().unwrap().clone();
            each.sort_unstable();
            assert_eq!(each, (0..sizes.len()).collect::<Vec<_>>());
        }
        assert!(largest_first(Vec::<u8>::new(), |_| 0, |b| b).is_empty());
    }
}
