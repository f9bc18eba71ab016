//! `crawl dedup`: the three tiers over a JSON-lines corpus, or over the
//! HTML responses of WARC files ([`warc`]).

mod lines;
mod pipeline;
mod warc;

use crate::daemon::worker::PageFacts;
use std::fs::File;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use simcrawl_dedup::{Commit, Deduper, Document, MemoryStore, RedbStore, Signature, Tier, UrlTier, Verdict};
use tracing::{info, warn};

use crate::backend::local::learn::RedbLearn;
use crate::backend::local::state;
use crate::config::Config;
use crate::output::lines::ErrorLine;
use crate::output::lines::{DuplicateLine, KeptLine};
use crate::output::sinks::{Offsets, Outputs, VerdictCounts};
use crate::progress::Progress;
use crate::template::{Save, Templates};

/// Lines per transaction and checkpoint (with `--data-dir`).
const CHUNK: usize = 2048;

/// Lines per chunk in memory, where a chunk is only a unit of work (the
/// verdicts do not depend on it): small, so that reading, signing and
/// judging overlap from the first lines on and fewer texts are held at
/// once; each chunk costs a hand-over between threads and a rayon split.
const CHUNK_MEMORY: usize = 256;

/// Input bytes per chunk in memory at most: the in-memory pipeline holds
/// about seven chunks at once (read ahead, cleaned, identified, signed,
/// judged), so lines of megabytes of HTML end a chunk early rather than
/// hold hundreds of megabytes.
const CHUNK_MEMORY_BYTES: u64 = 8 << 20;

/// One input line.
#[derive(Debug, Deserialize)]
struct InputDoc {
    url: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    html: Option<String>,
}

/// Progress of an interrupted run, committed with the dedup state.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub(super) struct BatchProgress {
    input: PathBuf,
    out: PathBuf,
    /// Input lines fully processed.
    lines: u64,
    /// Input bytes fully processed.
    bytes: u64,
    /// Bad lines.
    errors: u64,
    /// Kept documents and drops per tier (stored flat: `kept`, `dup_url`...).
    #[serde(flatten)]
    verdicts: VerdictCounts,
    offsets: Offsets,
    /// WARC input: the file being read (index in the sorted inputs) and
    /// the records of it done (whatever their type).
    #[serde(default, skip_serializing_if = "is_zero")]
    warc_file: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    warc_records: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

const PROGRESS_KEY: &str = "batch:progress";

/// Options of `crawl dedup`.
#[derive(Debug)]
pub struct BatchArgs {
    /// A JSON-lines corpus, or WARC files and directories of them.
    pub inputs: Vec<PathBuf>,
    pub out: PathBuf,
    pub data_dir: Option<PathBuf>,
}

enum Backend {
    Memory(Deduper<MemoryStore>),
    Redb(Deduper<RedbStore>),
}

struct Run {
    outputs: Outputs,
    p: BatchProgress,
    cleaner: simcrawl_clean::Cleaner,
    /// Learns the template of each host of the `html` lines.
    templates: Templates,
    /// The language of each document, as the crawl tells it (trusting a
    /// host's declared language once its pages have proven it).
    lang: crate::lang::SiteLanguages,
    /// `crawl.write_normalized`: kept lines also carry the normalized title.
    write_normalized: bool,
}

/// Runs `crawl dedup`; returns the summary printed on stderr.
pub fn run(cfg: &Config, args: &BatchArgs) -> Result<String> {
    if let Some(files) = warc::inputs(&args.inputs)? {
        return warc::run(cfg, args, &files);
    }
    let [input] = args.inputs.as_slice() else {
        bail!(
            "crawl dedup reads one JSON-lines corpus at a time ({} given); several inputs must be WARC \
             files (.warc, .warc.gz) or directories of them",
            args.inputs.len()
        );
    };
    run_lines(cfg, args, input)
}

/// The tiers and the template learner of a run (in memory, or in
/// `data_dir`), and its cleaner.
fn open(
    cfg: &Config,
    data_dir: Option<&std::path::Path>,
) -> Result<(Backend, Templates, simcrawl_clean::Cleaner)> {
    // An index of an earlier version keeps the profile it was built with:
    // the cleaner is built from the settings the index opened with.
    let mut cfg = cfg.clone();
    let backend = open_backend(&mut cfg, data_dir)?;
    // A batch reads no links' texts (nor follows the links).
    let cleaner = simcrawl_clean::Cleaner::new(cfg.clean.clone())
        .context("invalid [clean] settings")?
        .without_link_texts();
    let templates = open_templates(&cfg, &backend)?;
    Ok((backend, templates, cleaner))
}

/// The tiers of a run: in memory, or in `data_dir` (whose recorded
/// `[clean]` profile `cfg` may adopt, [`state::open_deduper`]).
fn open_backend(cfg: &mut Config, data_dir: Option<&std::path::Path>) -> Result<Backend> {
    Ok(match data_dir {
        None => Backend::Memory(with_clock_offset(state::open_deduper(MemoryStore::new(), cfg)?)?),
        Some(dir) => {
            let path = dir.join("index.redb");
            let options = cfg
                .store
                .redb_options(std::time::Duration::from_millis(cfg.store.sync_interval_ms))?;
            let store = RedbStore::open_opts(&path, options)
                .with_context(|| format!("cannot open the index in {}", dir.display()))?;
            Backend::Redb(with_clock_offset(state::open_deduper(store, cfg)?)?)
        }
    })
}

/// The template learner of a run, with what `backend` stored of it.
fn open_templates(cfg: &Config, backend: &Backend) -> Result<Templates> {
    Ok(match backend {
        Backend::Redb(d) => crate::backend::local::learn::with_store(d.store().database(), |store| {
            Templates::load(&cfg.template, Some(store))
        })?,
        Backend::Memory(_) => Templates::load(&cfg.template, None)?,
    })
}

/// The progress of this run of `input` into `out`: where an interrupted run
/// of the same input into the same output stopped, or the start.
fn resume(backend: &Backend, input: PathBuf, out: &std::path::Path) -> Result<BatchProgress> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let out_abs = std::fs::canonicalize(out)?;
    let mut p = BatchProgress {
        input,
        out: out_abs,
        ..Default::default()
    };
    if let Backend::Redb(d) = backend
        && let Some(prev) = state::read_json::<BatchProgress>(d.store().database(), PROGRESS_KEY)?
    {
        if prev.input == p.input && prev.out == p.out {
            info!(lines = prev.lines, "resuming an interrupted run");
            p = prev;
        } else {
            warn!(
                "an interrupted run of {} into {} is abandoned; its documents stay in the index",
                prev.input.display(),
                prev.out.display()
            );
        }
    }
    Ok(p)
}

/// The end of a run: the progress record goes (the next run starts anew)
/// and with it the WARC input's revisit originals (they belong to the run),
/// the templates are saved.
fn finish(backend: &Backend, run: &mut Run) -> Result<()> {
    match backend {
        Backend::Memory(_) => {
            run.outputs.flush()?;
        }
        Backend::Redb(d) => {
            run.outputs.sync()?;
            d.store().write_with(Commit::Durable, |txn, _| {
                run.templates.save_if_due(&mut RedbLearn::new(txn), Save::Now)?;
                let mut t = state::open(txn)?;
                t.remove(PROGRESS_KEY)?;
                warc::forget_originals(txn)?;
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// The summary line of a run.
fn summary(p: &BatchProgress, docs: u64, secs: f64, what: &str, resumed: Option<String>) -> String {
    format!(
        "documents: {}  kept: {}  dropped: url {} / title {} / content {}  {what}: {}  ({:.0} docs/s{})",
        p.lines,
        p.verdicts.kept,
        p.verdicts.dup_url,
        p.verdicts.dup_title,
        p.verdicts.dup_content,
        p.errors,
        docs as f64 / secs.max(1e-9),
        resumed.map(|r| format!(", {r}")).unwrap_or_default()
    )
}

/// `crawl dedup` of a JSON-lines corpus.
fn run_lines(cfg: &Config, args: &BatchArgs, input: &std::path::Path) -> Result<String> {
    let started = Instant::now();
    let input_name = input.display().to_string();
    // In memory a run starts at the first line: reading starts before the
    // tiers are set up.
    let read_early = match (&args.data_dir, File::open(input)) {
        (None, Ok(file)) => Some(lines::spawn(
            file,
            input_name.clone(),
            (0, 0),
            (CHUNK_MEMORY, CHUNK_MEMORY_BYTES),
        )?),
        _ => None,
    };
    let (backend, templates, cleaner) = open(cfg, args.data_dir.as_deref())?;
    let input_abs =
        std::fs::canonicalize(input).with_context(|| format!("cannot read input {}", input.display()))?;
    // Resume an interrupted run of the same input into the same output.
    let p = resume(&backend, input_abs, &args.out)?;
    let outputs = Outputs::open(&args.out, p.offsets)?;
    let mut run = Run {
        outputs,
        p,
        cleaner,
        templates,
        lang: crate::lang::SiteLanguages::default(),
        write_normalized: cfg.crawl.write_normalized,
    };

    let file = File::open(input).with_context(|| format!("cannot read input {}", input.display()))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let progress = Progress::bytes(total, "dedup");
    progress.set(run.p.bytes);
    let resumed_lines = run.p.lines;
    let chunks = match read_early {
        Some(chunks) => chunks,
        None => lines::spawn(
            file,
            input_name.clone(),
            (run.p.bytes, run.p.lines),
            (CHUNK, u64::MAX),
        )?,
    };
    match &backend {
        Backend::Memory(d) => pipeline::judge_overlapped(d, &mut run, chunks.iter(), &progress, &input_name)?,
        Backend::Redb(_) => {
            for chunk in chunks {
                let chunk = chunk?;
                process(&backend, &mut run, &chunk.lines, chunk.bytes, &input_name)?;
                progress.set(run.p.bytes);
            }
        }
    }
    // Done: forget the progress record so the next run starts anew.
    finish(&backend, &mut run)?;
    progress.finish();
    let p = &run.p;
    Ok(summary(
        p,
        p.lines - resumed_lines,
        started.elapsed().as_secs_f64(),
        "bad lines",
        (resumed_lines > 0).then(|| format!("resumed at line {resumed_lines}")),
    ))
}

/// `CRAWL_CLOCK_OFFSET_SECS`: seconds added to the clock the tiers stamp
/// and expire entries with (`dedup.window`). For replaying a corpus as of a
/// later time, and for testing windows without waiting for them.
fn with_clock_offset<S: simcrawl_dedup::Store>(d: Deduper<S>) -> Result<Deduper<S>> {
    let Ok(v) = std::env::var("CRAWL_CLOCK_OFFSET_SECS") else {
        return Ok(d);
    };
    let offset: i64 = v
        .trim()
        .parse()
        .with_context(|| format!("CRAWL_CLOCK_OFFSET_SECS={v:?} is not a whole number of seconds"))?;
    Ok(d.with_clock(move || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        now.saturating_add_signed(offset)
    }))
}

/// A parsed line, ready for the tiers, or why it was skipped.
pub(crate) type Parsed = Result<ParsedDoc, String>;

/// A document signed, with what its verdict line says of it.
#[derive(Debug)]
pub(crate) struct ParsedDoc {
    pub url: String,
    /// As the input line or the page wrote it, whitespace collapsed: what
    /// the kept line shows.
    pub title: String,
    /// Normalized (width, case, traditional to simplified Chinese): what
    /// the title tier compared (with `crawl.write_normalized`).
    pub title_normalized: String,
    pub sig: Signature,
    /// What it was judged on and its language (written with its verdict,
    /// as the crawl's lines are: `basis`, `chars`, `features`, `excerpt`,
    /// `lang`).
    pub facts: PageFacts,
    pub lang: Option<&'static str>,
    /// What telling the language of a line in a site's section needs:
    /// told in input order after the parallel signing
    /// ([`ParsedDoc::tell_language`]).
    ask: Option<LangAsk>,
}

/// A line's section (host, path, declared language) and the start of its
/// text: what [`crate::lang::SiteLanguages::detect`] reads.
#[derive(Debug)]
struct LangAsk {
    host: String,
    path: String,
    hint: Option<String>,
    sample: String,
}

impl ParsedDoc {
    /// Its verdict line's `basis`, `chars`, `features`, `excerpt`, `lang`.
    pub fn judged(&self) -> crate::output::lines::Judged<'_> {
        self.facts.judged(self.lang)
    }

    /// Tells the language of a line in a site's section (one in no site is
    /// told when it is signed). A site's pages share what `lang` learns of
    /// its sections, so they are told one after the other in input order:
    /// told in the parallel signing, a page's `lang` depended on which
    /// pages another thread had read first (21 of 2,450 API reference
    /// lines changed between two runs).
    fn tell_language(&mut self, lang: &crate::lang::SiteLanguages) {
        if let Some(ask) = self.ask.take() {
            self.lang = lang.detect((&ask.host, &ask.path), ask.hint.as_deref(), &ask.sample, &[]);
        }
    }
}

/// A title given in an input line, as written but on one line: its
/// whitespace runs collapsed to one space (as the cleaner does to a page's
/// `<title>`), nothing else changed.
fn tidy_title(title: &str) -> String {
    title.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn parse_line(
    d: &Deduper<impl simcrawl_dedup::Store>,
    cleaner: &simcrawl_clean::Cleaner,
    line: &str,
) -> Parsed {
    let c = clean_line(cleaner, line)?;
    // An `html` line is judged on its identity (no template learnt here).
    let id = c.html.as_ref().map(|h| {
        crate::identity::identity_of(
            &crate::template::Templates::default(),
            (&c.url, &h.host),
            &c.text,
            h.judged_own(&c.text),
        )
    });
    let mut doc = signed(d, &c, id.as_ref());
    doc.tell_language(&crate::lang::SiteLanguages::default());
    Ok(doc)
}

/// `c` signed on its identity `id` (its text and basis, and its article;
/// `None`: a `text` line, judged on its text as given).
fn signed(
    d: &Deduper<impl simcrawl_dedup::Store>,
    c: &Cleaned,
    id: Option<&crate::identity::Identity<'_>>,
) -> ParsedDoc {
    let (text, basis) = id.map_or((c.text.as_str(), crate::identity::Basis::Text), |id| {
        (id.text.as_ref(), id.basis)
    });
    let sig = match (id, &c.html) {
        (Some(id), Some(h)) => crate::identity::sign_page(d, (&c.url, &c.title), id, h.judged_own(&c.text).0),
        _ => d.sign(&Document::new(&c.url, &c.title, text)),
    };
    let chars = c
        .html
        .as_ref()
        .map_or_else(|| simcrawl_clean::visible_chars(&c.text), |h| h.visible_chars);
    // Its section: an `html` line's host, path and declared language; a
    // `text` line's URL's host and path, as for a crawled page that
    // declares no language (a corpus of many sites keeps them apart, and
    // whatlang is spared on the lines of a site once they have proven one
    // language, `crate::lang`).
    let section = match &c.html {
        Some(h) => Some((h.host.clone(), h.path.clone(), h.lang_hint.clone())),
        None => url::Url::parse(&c.url)
            .ok()
            .filter(|u| u.host_str().is_some())
            .map(|u| (crate::template::host_of(&u).to_owned(), u.path().to_owned(), None)),
    };
    let (lang, ask) = match section {
        Some((host, path, hint)) => (
            None,
            Some(LangAsk {
                host,
                path,
                hint,
                sample: crate::lang::sample_of(&c.text, crate::lang::SAMPLE_BYTES).to_owned(),
            }),
        ),
        // A text in no site: told from itself alone, here in parallel.
        None => (crate::lang::detect(&c.text), None),
    };
    let facts = PageFacts::judged_on(basis, text, &sig, chars);
    ParsedDoc {
        url: c.url.clone(),
        title: c.raw_title.clone(),
        title_normalized: c.title.clone(),
        sig,
        facts,
        lang,
        ask,
    }
}

/// A line cleaned, not signed yet.
struct Cleaned {
    url: String,
    /// Normalized: what the title tier compares.
    title: String,
    /// As written: what the kept line shows.
    raw_title: String,
    text: String,
    /// An `html` line: its host (whose template is learnt) and own text
    /// (`crate::identity`).
    html: Option<HtmlTexts>,
}

impl Cleaned {
    /// What telling its identity in input order needs (`html` lines only).
    fn in_order(&self) -> Option<crate::identity::InOrder<'_>> {
        let h = self.html.as_ref()?;
        Some(crate::identity::InOrder {
            url: &self.url,
            host: &h.host,
            main: &self.text,
            own: &h.own,
            judged_own: h.judged_own(&self.text),
        })
    }
}

#[derive(Debug)]
struct HtmlTexts {
    host: String,
    /// The path of its URL (languages are told by site section,
    /// `crate::lang::SiteLanguages`).
    path: String,
    own: String,
    /// The page's declared language (`<html lang>`, `Content-Language`).
    lang_hint: Option<String>,
    /// Characters (not whitespace) of its whole visible text.
    visible_chars: usize,
    /// Characters of `own` that are link text (`crate::identity`).
    own_link_chars: usize,
    /// Its main text is a message in an archive's frame
    /// (`simcrawl_clean::Page::framed`).
    framed: bool,
}

impl HtmlTexts {
    /// `simcrawl_clean::Page::judged_own` of the page whose main text is
    /// `main`.
    fn judged_own<'a>(&'a self, main: &'a str) -> (&'a str, usize) {
        simcrawl_clean::judged_own(self.framed, main, (&self.own, self.own_link_chars))
    }
}

fn clean_line(cleaner: &simcrawl_clean::Cleaner, line: &str) -> Result<Cleaned, String> {
    let doc: InputDoc = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    if doc.url.trim().is_empty() {
        return Err("empty \"url\"".into());
    }
    let given = doc
        .title
        .as_deref()
        .map(|t| (tidy_title(t), cleaner.normalize_title(t)));
    let (title, raw_title, text, html) = match (doc.text, doc.html) {
        (Some(text), _) => {
            let (raw, title) = given.unwrap_or_default();
            (title, raw, cleaner.normalize_text(&text), None)
        }
        (None, Some(html)) => {
            let base =
                url::Url::parse(&doc.url).map_err(|e| format!("invalid \"url\" {:?}: {e}", doc.url))?;
            let page = cleaner
                .parse_str(&html, &base)
                .map_err(|e| format!("cannot clean \"html\": {e}"))?;
            let (raw_title, title) = given.unwrap_or((page.raw_title, page.title));
            let host = crate::template::host_of(&base).to_owned();
            let texts = HtmlTexts {
                host,
                path: base.path().to_owned(),
                own: page.own_text,
                lang_hint: page.lang_hint,
                visible_chars: page.visible_chars,
                own_link_chars: page.own_link_chars,
                framed: page.framed,
            };
            (title, raw_title, page.text, Some(texts))
        }
        (None, None) => return Err("neither \"text\" nor \"html\" is present".into()),
    };
    Ok(Cleaned {
        url: doc.url,
        title,
        raw_title,
        text,
        html,
    })
}

fn process(backend: &Backend, run: &mut Run, chunk: &[(u64, String)], bytes: u64, input: &str) -> Result<()> {
    let cleaned = clean_all(&run.cleaner, chunk);
    judge_chunk(backend, run, cleaned, |run, parsed, verdicts, _| {
        let to = (&mut run.outputs, &mut run.p, run.write_normalized);
        emit(to, (chunk, bytes), parsed, verdicts, input)
    })
}

/// Signs a chunk's cleaned documents, judges them in order and hands the
/// verdicts to `record` (their lines, the progress), the same for JSON
/// lines and WARC records: in memory, or in one durable transaction that
/// also stores the outputs' offsets, the templates and the progress, so a
/// killed run resumes after the last committed chunk. `record` is given
/// that transaction (`None` in memory) to store what belongs to the same
/// progress (the WARC input's revisit originals).
fn judge_chunk(
    backend: &Backend,
    run: &mut Run,
    cleaned: Vec<Result<Cleaned, String>>,
    mut record: impl FnMut(&mut Run, &[Parsed], Vec<Verdict>, Option<&redb::WriteTransaction>) -> Result<()>,
) -> Result<()> {
    match backend {
        Backend::Memory(d) => {
            let mut parsed = sign_all(d, &run.templates, cleaned);
            tell_languages(&mut parsed, &run.lang);
            let verdicts = verdicts_in_memory(d, &parsed)?;
            record(run, &parsed, verdicts, None)?;
        }
        Backend::Redb(d) => {
            let mut parsed = sign_all(d, &run.templates, cleaned);
            tell_languages(&mut parsed, &run.lang);
            // Checked inside our own transaction: purge expired entries
            // (dedup.window) between chunks.
            d.purge_if_due()?;
            d.store().write_with(Commit::Durable, |txn, tables| {
                let mut verdicts = Vec::with_capacity(parsed.len());
                for ParsedDoc { sig, .. } in parsed.iter().flatten() {
                    verdicts.push(d.check_in(tables, sig, UrlTier::Check)?);
                }
                record(run, &parsed, verdicts, Some(txn)).map_err(state::caller_err)?;
                run.p.offsets = run.outputs.sync().map_err(state::caller_err)?;
                // A failed commit ends the run; the next one resumes from the
                // last committed progress, so the counters need no rollback.
                run.templates.save_if_due(&mut RedbLearn::new(txn), Save::IfDue)?;
                let mut t = state::open(txn)?;
                state::put_json(&mut t, PROGRESS_KEY, &run.p)
            })?;
        }
    }
    Ok(())
}

/// The lines of a chunk cleaned (in parallel), not signed yet.
fn clean_all(cleaner: &simcrawl_clean::Cleaner, chunk: &[(u64, String)]) -> Vec<Result<Cleaned, String>> {
    let lines: Vec<&str> = chunk.iter().map(|(_, line)| line.as_str()).collect();
    pipeline::largest_first(lines, |line| line.len(), |line| clean(cleaner, line))
}

/// One line cleaned, or why it cannot be.
fn clean(cleaner: &simcrawl_clean::Cleaner, line: &str) -> Result<Cleaned, String> {
    if line.trim().is_empty() {
        Err("empty line".into())
    } else {
        clean_line(cleaner, line)
    }
}

/// Cleaned documents signed: `html` documents, in input order, judged on
/// their identity with their host's template as learnt from the documents
/// before, then observed (crate::identity). Their languages are told
/// after, in input order ([`tell_languages`]).
fn sign_all(
    d: &Deduper<impl simcrawl_dedup::Store>,
    templates: &Templates,
    cleaned: Vec<Result<Cleaned, String>>,
) -> Vec<Parsed> {
    let identities =
        crate::identity::identities_in_order(templates, cleaned.iter().map(|c| c.as_ref().ok()?.in_order()));
    let work: Vec<_> = cleaned.into_iter().zip(identities).collect();
    let cost = |(c, _): &(Result<Cleaned, String>, _)| c.as_ref().map_or(0, |c| c.text.len());
    pipeline::largest_first(work, cost, |(c, id)| {
        let c = c?;
        Ok(signed(d, &c, id.as_ref()))
    })
}

/// The languages of signed documents, told in input order: a site's pages
/// share what `lang` learns of its sections ([`ParsedDoc::tell_language`]).
/// Serial, so the overlapped run tells them on the side that judges, while
/// the next chunk is signed on the other cores: on the signing side the
/// cores waited for it at the end of every chunk (a tenth of the wall time
/// on two cores, issue 37).
fn tell_languages(parsed: &mut [Parsed], lang: &crate::lang::SiteLanguages) {
    for doc in parsed.iter_mut().flatten() {
        doc.tell_language(lang);
    }
}

/// The verdicts of a chunk's signed documents against the in-memory
/// tiers, in order (a document is judged against those before it in the
/// chunk too).
fn verdicts_in_memory(d: &Deduper<MemoryStore>, parsed: &[Parsed]) -> Result<Vec<Verdict>> {
    let sigs: Vec<Signature> = parsed
        .iter()
        .filter_map(|p| p.as_ref().ok().map(|x| x.sig.clone()))
        .collect();
    Ok(d.check_batch(&sigs, UrlTier::Check)?)
}

/// The lines of a chunk's documents, written to the outputs, and the chunk
/// (its lines and input bytes) counted in the progress (`write_normalized`:
/// `crawl.write_normalized`).
fn emit(
    (outputs, progress, write_normalized): (&mut Outputs, &mut BatchProgress, bool),
    (chunk, bytes): (&[(u64, String)], u64),
    parsed: &[Parsed],
    verdicts: Vec<Verdict>,
    input: &str,
) -> Result<()> {
    let mut verdicts = verdicts.into_iter();
    for ((line, _), p) in chunk.iter().zip(parsed) {
        match p {
            Err(e) => {
                warn!("{input}:{line}: {e}; line skipped");
                progress.errors += 1;
                outputs.errors.write(&ErrorLine::input_line(*line, e))?;
            }
            Ok(doc) => match verdicts.next() {
                Some(v) => {
                    progress.verdicts.record(&v);
                    document(outputs, v, doc, write_normalized, *line)?;
                }
                None => bail!("internal error: fewer verdicts than documents"),
            },
        }
    }
    progress.lines += chunk.len() as u64;
    progress.bytes += bytes;
    Ok(())
}

/// The line of one document of `crawl dedup` (input line `line`): its
/// `title` as written, and the normalized one when asked for
/// (`crawl.write_normalized`), with what it was judged on.
fn document(
    outputs: &mut Outputs,
    v: Verdict,
    doc: &ParsedDoc,
    write_normalized: bool,
    line: u64,
) -> Result<()> {
    let judged = Some(doc.judged());
    match v {
        Verdict::Unique { fingerprint, .. } => outputs.kept.write(&KeptLine {
            line: Some(line),
            judged,
            title_normalized: write_normalized.then_some(doc.title_normalized.as_str()),
            ..KeptLine::new(&doc.url, &doc.title, fingerprint)
        }),
        Verdict::Duplicate(d) => outputs.duplicates.write(&DuplicateLine {
            line: Some(line),
            judged: judged.filter(|_| d.tier != Tier::Url),
            ..DuplicateLine::new(&doc.url, &d)
        }),
        _ => Ok(()), // non_exhaustive in simcrawl-dedup
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A site's `html` lines get the languages that telling them one by
    /// one in input order gives, however the signing is spread over
    /// threads: the pages of one section share what `lang` learns of it
    /// (trust once proven, a recheck every few pages), so told in the
    /// parallel signing a page's `lang` moved between runs.
    #[test]
    fn html_lines_are_told_their_language_in_input_order() {
        let en = "The city council approved the new budget on Tuesday. Spending on parks, libraries and \
                  roads will rise, while the property tax stays the same for another year.";
        let nl = "De gemeenteraad heeft dinsdag de nieuwe begroting goedgekeurd. De uitgaven voor parken, \
                  bibliotheken en wegen stijgen, terwijl de onroerendezaakbelasting nog een jaar gelijk blijft.";
        // English pages prove the section; Dutch pages written in ASCII,
        // declared English, then take its answer on trust or are read,
        // depending on which pages came before them.
        let lines: Vec<(u64, String)> = (0..96)
            .map(|i| {
                let text = if i >= 24 && i % 3 == 0 { nl } else { en };
                let html = format!(
                    "<html lang=\"en\"><head><title>Page {i}</title></head><body><main><p>{text} Page {i}.</p></main></body></html>"
                );
                let line = serde_json::json!({"url": format!("http://site.test/news/{i}.html"), "html": html});
                (i, line.to_string())
            })
            .collect();
        let cleaner = simcrawl_clean::Cleaner::new(simcrawl_clean::CleanConfig::default()).unwrap();
        let told = |parsed: &[Parsed]| -> Vec<Option<&'static str>> {
            parsed.iter().map(|p| p.as_ref().unwrap().lang).collect()
        };
        // One by one, in input order: the reference.
        let expected: Vec<Option<&'static str>> = {
            let lang = crate::lang::SiteLanguages::default();
            lines
                .iter()
                .map(|(_, l)| {
                    let c = clean_line(&cleaner, l).unwrap();
                    let h = c.html.as_ref().unwrap();
                    lang.detect((&h.host, &h.path), h.lang_hint.as_deref(), &c.text, &[])
                })
                .collect()
        };
        assert!(
            expected.contains(&Some("nl")) && expected.contains(&Some("en")),
            "{expected:?}"
        );
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        for _ in 0..5 {
            let d = Deduper::in_memory().unwrap();
            let templates = Templates::load(&crate::template::TemplateSettings::default(), None).unwrap();
            let lang = crate::lang::SiteLanguages::default();
            let mut parsed = pool.install(|| sign_all(&d, &templates, clean_all(&cleaner, &lines)));
            tell_languages(&mut parsed, &lang);
            assert_eq!(told(&parsed), expected);
            // The overlapped run's pass, from a fresh start: the same
            // documents, the same languages.
            let d = Deduper::in_memory().unwrap();
            let templates = Templates::load(&crate::template::TemplateSettings::default(), None).unwrap();
            let lang = crate::lang::SiteLanguages::default();
            let mut fused = pool.install(|| {
                let staged = pipeline::clean_stage(&d, &cleaner, &lines);
                let ids = pipeline::identify_stage(&templates, &staged);
                pipeline::sign_stage(&d, staged, ids)
            });
            tell_languages(&mut fused, &lang);
            assert_eq!(told(&fused), expected);
        }
    }
}
