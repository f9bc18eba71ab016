//! `crawl check URL`: why a page is (or would be) kept or dropped. It runs
//! the crawl's own page stages on the URL (robots.txt, fetch, clean, the
//! host's learnt template, identity, signature) against a crawl's state,
//! and asks the tiers to explain (`Deduper::explain`) without writing to
//! the index: the tool to reach for when a page is missing from
//! kept.jsonl. The state is opened read-only ([`RedbReadOnlyStore`]): not
//! a byte of it changes, and a read-only copy can be checked.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use serde::Serialize;
use simcrawl_dedup::{Nominated, RedbReadOnlyStore, Tier};
use url::Url;

use crate::config::Config;
use crate::daemon::worker::{Outcome, PageResult, Signer, process_entry};
use crate::dust::Dust;
use crate::frontier::Entry;
use crate::template::Templates;

/// What `crawl check` found, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct Report {
    pub url: String,
    pub robots: &'static str,
    pub canonical_url: String,
    /// MD5 of the canonical URL (the URL tier's key), hex.
    pub url_digest: String,
    /// The URL tier knows it (linked or fetched by the crawl).
    pub url_seen: bool,
    /// The learnt URL rewrite rule that maps it elsewhere, if any.
    pub dust_rule: Option<String>,
    pub status: Option<u16>,
    pub final_url: Option<String>,
    pub title: Option<String>,
    pub title_digest: Option<String>,
    pub basis: Option<&'static str>,
    pub text_preview: Option<String>,
    pub features: Option<usize>,
    pub fingerprint: Option<String>,
    pub lang: Option<&'static str>,
    pub candidates: Vec<CandidateLine>,
    pub verdict: VerdictLine,
    /// What the crawl wrote about this URL (its line in duplicates.jsonl
    /// or kept.jsonl in `crawl.out_dir`), when it wrote one: the verdict
    /// above is computed afresh, on the page as it is now and the
    /// template learnt since, and may differ.
    pub recorded: Option<Recorded>,
    /// Why the fresh verdict may differ from the recorded one (empty when
    /// they agree or nothing was recorded).
    pub differs: Vec<String>,
}

/// The crawl's own verdict on the page, from its output line.
#[derive(Debug, Serialize, PartialEq)]
pub struct Recorded {
    /// `kept` or `duplicate`.
    pub kind: &'static str,
    pub tier: Option<String>,
    pub of: Option<String>,
    pub distance: Option<u64>,
    pub similarity: Option<f64>,
    /// Features of the text it was signed with then.
    pub features: Option<u64>,
    /// The file it was read from.
    pub file: String,
}

/// The last line about `url` in the crawl's kept.jsonl or
/// duplicates.jsonl under `out_dirs` (a crawl writes one per verdict; a
/// revisit may write another, and the last is the one in force; a shared
/// crawl's workers each write under their own folder, and a page has one
/// line in one of them).
fn recorded(out_dirs: &[std::path::PathBuf], url: &str) -> Option<Recorded> {
    use std::io::BufRead;
    let mut found = None;
    let files = out_dirs.iter().flat_map(|dir| {
        [("kept.jsonl", "kept"), ("duplicates.jsonl", "duplicate")].map(|(name, kind)| (dir.join(name), kind))
    });
    for (path, kind) in files {
        let Ok(file) = std::fs::File::open(&path) else {
            continue;
        };
        let needle = serde_json::to_string(url).ok()?;
        for line in std::io::BufReader::new(file)
            .lines()
            .map_while(std::result::Result::ok)
        {
            if !line.contains(&needle) {
                continue;
            }
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if v.get("url").and_then(|u| u.as_str()) != Some(url) {
                continue;
            }
            found = Some(Recorded {
                kind,
                tier: v.get("tier").and_then(|t| t.as_str()).map(str::to_string),
                of: v.get("duplicate_of").and_then(|t| t.as_str()).map(str::to_string),
                distance: v.get("distance").and_then(serde_json::Value::as_u64),
                similarity: v.get("similarity").and_then(serde_json::Value::as_f64),
                features: v.get("features").and_then(serde_json::Value::as_u64),
                file: path.display().to_string(),
            });
        }
    }
    found
}

/// A candidate the tiers nominated.
#[derive(Debug, Serialize)]
pub struct CandidateLine {
    pub url: String,
    pub tier: &'static str,
    pub distance: Option<u32>,
    pub similarity: Option<f64>,
    /// How alike the two pages are by all they show (their outlines), when
    /// both carry one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown: Option<f64>,
    /// Why it cannot be this page's partner though alike enough for a
    /// tier (`simcrawl_dedup::Refusal`): pages of one host too far apart
    /// in size, an article matched only from another site, a story the
    /// partner does not carry, a page with too little text of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// The verdict and why.
#[derive(Debug, Serialize)]
pub struct VerdictLine {
    /// `unique`, `duplicate`, `kept_as_itself`, `not_fetched`.
    pub kind: &'static str,
    pub tier: Option<&'static str>,
    pub of: Option<String>,
    pub similarity: Option<f64>,
    pub reason: String,
}

/// Runs `crawl check URL` against the crawl state in `cfg.store.data_dir`,
/// or, with `--redis`, against the crawl shared in Redis (its tiers, its
/// learnt templates and rules, its workers' outputs under `--out`).
pub fn run(cfg: &Config, url: &str) -> Result<Report> {
    let url = Url::parse(url).with_context(|| format!("{url:?} is not a URL"))?;
    if !cfg.redis.url.is_empty() {
        return run_shared(cfg, url);
    }
    let data_dir = &cfg.store.data_dir;
    let db_path = data_dir.join("index.redb");
    if !db_path.exists() {
        bail!(
            "no crawl state in {} (index.redb): give the --data-dir of a crawl, or the --redis of a shared one",
            data_dir.display()
        );
    }
    // Read-only: a check changes no byte of the state it explains (a
    // read-write open commits on open and marks the file in use), and
    // works on a read-only copy. A running crawl holds the file's lock and
    // rewrites its pages: redb refuses a reader beside it, and so do we,
    // saying so, rather than wait or read pages it is reusing.
    let store = RedbReadOnlyStore::open(&db_path).map_err(|e| {
        let why = match &e {
            simcrawl_dedup::Error::Locked { .. } => {
                " (a crawl running on it holds it: check after it, or on a copy of the data directory)"
            }
            simcrawl_dedup::Error::NeedsRepair { .. } => {
                " (its crawl was stopped without closing it: resume that crawl once, or check a copy)"
            }
            _ => "",
        };
        anyhow::Error::new(e).context(format!(
            "cannot open the crawl state in {}{why}",
            data_dir.display()
        ))
    })?;
    let job = crate::backend::local::job::Job::load(store.database())?;
    // Opening may put back the profile the crawl was built with.
    let mut cfg = cfg.clone();
    let deduper = Arc::new(
        crate::backend::local::state::open_deduper(store, &mut cfg)
            .map_err(|e| crate::backend::local::job::explain_refusal(e, job.as_ref(), &cfg))?,
    );
    let cfg = &cfg;
    let canon = deduper.canonicalizer().clone();
    let (templates, dust) =
        crate::backend::local::learn::with_snapshot(deduper.store().database(), |store| {
            let templates = Templates::load(&cfg.template, Some(&mut *store))?;
            let dust = Dust::load(&cfg.crawl.dust, Some(store), canon.clone())
                .context("invalid [crawl.dust] settings")?;
            Ok((templates, dust))
        })?;
    let recorded = recorded(std::slice::from_ref(&cfg.crawl.out_dir), url.as_str());
    explain(cfg, url, &deduper, (templates, dust), recorded)
}

/// [`run`] against a crawl shared in Redis: nothing is written there (the
/// learners' loads queue no write, and none is sent), and its workers'
/// lines are read from every folder under `--out`.
fn run_shared(cfg: &Config, url: Url) -> Result<Report> {
    use crate::backend::redis::{frontier::RedisFrontier, learn::RedisLearn};
    let r = &cfg.redis;
    let shown = crate::backend::redis::frontier::redact(&r.url);
    let store = crate::backend::redis::SharedStore::open(&r.url, &r.namespace, r.tiers)
        .map_err(anyhow::Error::new)
        .with_context(|| format!("cannot open the shared crawl state in Redis at {shown}"))?;
    let mut cfg = cfg.clone();
    let deduper = Arc::new(crate::backend::local::state::open_deduper(store, &mut cfg)?);
    let cfg = &cfg;
    let frontier = Arc::new(
        RedisFrontier::open(&r.url, &r.namespace)
            .with_context(|| format!("Redis at {shown} is unreachable: cannot read the shared crawl"))?,
    );
    let mut learn = RedisLearn::new(frontier);
    let templates = Templates::load(&cfg.template, Some(&mut learn))?;
    let dust = Dust::load(&cfg.crawl.dust, Some(&mut learn), deduper.canonicalizer().clone())
        .context("invalid [crawl.dust] settings")?;
    learn.discard_ops();
    let mut workers: Vec<std::path::PathBuf> = std::fs::read_dir(&cfg.crawl.out_dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    workers.sort();
    let recorded = recorded(&workers, url.as_str());
    explain(cfg, url, &deduper, (templates, dust), recorded)
}

/// The page at `url` fetched and judged as the crawl would, against
/// `deduper` (read only), the learnt `templates` and `dust` rules, beside
/// the line the crawl `recorded` for it.
fn explain<S: simcrawl_dedup::Store + 'static>(
    cfg: &Config,
    url: Url,
    deduper: &Arc<simcrawl_dedup::Deduper<S>>,
    (templates, dust): (Templates, Dust),
    recorded: Option<Recorded>,
) -> Result<Report> {
    let canon = deduper.canonicalizer().clone();
    let canonical = canon
        .from_url(url.clone())
        .map_err(|e| anyhow::anyhow!("{url} has no canonical form: {e}"))?;
    let digest = canonical.digest();
    let url_seen = {
        let key = u128::from_be_bytes(digest);
        deduper.store().read(|t| Ok(t.url(key)?.is_some()))?
    };
    let dust_rule = dust.fold_by(&url).map(|(_, by)| {
        by.iter()
            .map(|(host, rule)| format!("{host} {rule}"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let outcome = fetch_as_crawl(cfg, &url, deduper, &templates, canon)?;
    let mut report = Report {
        url: url.to_string(),
        robots: "allowed",
        canonical_url: canonical.as_str().to_string(),
        url_digest: digest.iter().map(|b| format!("{b:02x}")).collect(),
        url_seen,
        dust_rule,
        status: None,
        final_url: None,
        title: None,
        title_digest: None,
        basis: None,
        text_preview: None,
        features: None,
        fingerprint: None,
        lang: None,
        candidates: Vec::new(),
        verdict: VerdictLine {
            kind: "not_fetched",
            tier: None,
            of: None,
            similarity: None,
            reason: String::new(),
        },
        recorded,
        differs: Vec::new(),
    };
    let p = match outcome {
        Outcome::Page(p) => p,
        other => {
            not_a_page(other, &mut report);
            return Ok(report);
        }
    };
    fill_page_facts(&mut report, &p);
    let e = deduper.explain(&p.sig)?;
    report.candidates = e.candidates.iter().map(candidate_line).collect();
    let k = deduper.config().max_distance;
    let min = p.sig.min_similarity.unwrap_or(deduper.config().min_similarity);
    report.verdict = verdict_line(e.verdict, &p, &report.candidates, k, min);
    report.differs = differences(&report, &p, &templates);
    Ok(report)
}

/// Runs the crawl's own page stages on `url` (robots.txt, fetch, clean,
/// template, signature), signing with `deduper` and writing nothing.
fn fetch_as_crawl<S: simcrawl_dedup::Store + 'static>(
    cfg: &Config,
    url: &Url,
    deduper: &Arc<simcrawl_dedup::Deduper<S>>,
    templates: &Templates,
    canon: simcrawl_dedup::Canonicalizer,
) -> Result<Outcome> {
    let signer: Signer = {
        let d = deduper.clone();
        Arc::new(move |page, id, own| crate::identity::sign_page(&d, page, id, own))
    };
    let stages = crate::daemon::page_stages(
        cfg,
        std::slice::from_ref(url),
        signer,
        canon,
        templates.clone(),
        Arc::new(Mutex::new(Dust::load(
            &cfg.crawl.dust,
            None,
            deduper.canonicalizer().clone(),
        )?)),
    )?;
    let entry = Entry::new(0, url.clone(), 0);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    Ok(runtime.block_on(process_entry(stages, entry)))
}

/// Why an outcome that is not a page has no verdict, in `report` (a page
/// is [`explain`]'s to judge: nothing here).
fn not_a_page(outcome: Outcome, report: &mut Report) {
    match outcome {
        Outcome::Page(_) => {}
        Outcome::Failed { kind, error, .. } => {
            if kind == "robots_disallowed" {
                report.robots = "disallowed";
            }
            report.verdict.reason = format!("{kind}: {error}");
        }
        Outcome::Rewritten { .. } | Outcome::NotModified { .. } => {
            report.verdict.reason = "not fetched: a learnt URL rewrite rule maps it elsewhere".into();
        }
        Outcome::Listing { pages, .. } => {
            report.verdict.reason = format!("a sitemap or feed listing {} pages, not a page", pages.len());
        }
    }
}

/// The fetched page's facts in `report`: status, title, text, signature.
fn fill_page_facts(report: &mut Report, p: &PageResult) {
    report.status = Some(p.status);
    report.final_url = Some(p.final_url.to_string());
    report.title = Some(p.title.clone());
    report.title_digest = p.sig.title_digest.map(|d| format!("{d:032x}"));
    report.basis = Some(p.facts.basis.as_str());
    report.text_preview = Some(crate::identity::excerpt(&p.text, 300));
    report.features = Some(p.sig.features);
    report.fingerprint = p.sig.fingerprint.map(|f| f.to_string());
    report.lang = p.lang;
}

/// A candidate as the report lists it.
fn candidate_line(c: &simcrawl_dedup::Candidate) -> CandidateLine {
    CandidateLine {
        url: c.url.clone(),
        tier: match c.nominated {
            Nominated::Title => "title",
            Nominated::Fingerprint => "simhash",
            Nominated::Band => "band",
        },
        distance: c.distance,
        similarity: c.similarity.map(|s| (s * 1000.0).round() / 1000.0),
        shown: c.shown.map(|s| (s * 1000.0).round() / 1000.0),
        refused: c.refused.map(|r| r.to_string()),
    }
}

/// The verdict line: the tiers' `verdict` on page `p`, told with its tier
/// and resemblance, or why it is unique (the best of `candidates`; `k` and
/// `min`: the distance and resemblance the content tier needs).
fn verdict_line(
    verdict: Option<simcrawl_dedup::Duplicate>,
    p: &PageResult,
    candidates: &[CandidateLine],
    k: u32,
    min: f64,
) -> VerdictLine {
    match verdict {
        _ if p.noindex => VerdictLine {
            kind: "unique",
            tier: None,
            of: None,
            similarity: None,
            reason: "<meta name=robots content=noindex>: not kept, not indexed".into(),
        },
        Some(d) if d.of == p.entry.url.as_str() || d.of == p.final_url.as_str() => VerdictLine {
            kind: "kept_as_itself",
            tier: None,
            of: Some(d.of),
            similarity: d.similarity,
            reason: "the index holds this page itself (it was kept)".into(),
        },
        Some(d) => {
            let tier = match d.tier {
                Tier::Url => "url",
                Tier::Title => "title",
                Tier::Content => "content",
                other => other.as_str(), // non_exhaustive in simcrawl-dedup
            };
            // Only the content tier's bar is `min`: the title tier's
            // depends on the title policy and on how many pages of the host
            // share the title, which the deduper decides and does not
            // report, so none is named for it.
            let (same, needed) = match d.tier {
                Tier::Content => ("", format!(" >= {min}")),
                Tier::Title => ("the same title, ", String::new()),
                _ => ("", String::new()),
            };
            let reason = format!(
                "{tier} tier: {same}distance {}, resemblance {}{needed}",
                d.distance.map_or("-".into(), |x| x.to_string()),
                d.similarity.map_or("-".into(), |x| format!("{x:.3}"))
            );
            VerdictLine {
                kind: "duplicate",
                tier: Some(tier),
                of: Some(d.of),
                similarity: d.similarity,
                reason,
            }
        }
        None => {
            let best = candidates
                .first()
                .map(|c| {
                    format!(
                        "best: {}, {}{}",
                        c.url,
                        c.similarity.map_or("-".into(), |s| format!("{s:.3}")),
                        c.refused
                            .as_ref()
                            .map_or(String::new(), |r| format!(", refused: {r}"))
                    )
                })
                .unwrap_or_else(|| "no candidate".into());
            VerdictLine {
                kind: "unique",
                tier: None,
                of: None,
                similarity: None,
                reason: format!("no kept page within distance {k} and resemblance >= {min} ({best})"),
            }
        }
    }
}

/// Why the fresh verdict of `r` may not be the one the crawl recorded:
/// `crawl check` judges the page as it is now, with the host's template
/// as learnt now, against the index as it is now; the crawl judged it once,
/// maybe before the template was learnt (its partners' signatures too).
fn differences(r: &Report, p: &crate::daemon::worker::PageResult, templates: &Templates) -> Vec<String> {
    let Some(rec) = &r.recorded else {
        return Vec::new();
    };
    let v = &r.verdict;
    let fresh_distance = r
        .candidates
        .iter()
        .find(|c| v.of.as_deref() == Some(c.url.as_str()))
        .and_then(|c| c.distance)
        .map(u64::from);
    let same_kind = matches!(
        (rec.kind, v.kind),
        ("kept", "kept_as_itself" | "unique") | ("duplicate", "duplicate")
    );
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() < 0.0005,
        (None, None) => true,
        _ => false,
    };
    let agree = same_kind
        && (rec.kind == "kept"
            || (rec.of == v.of && close(rec.similarity, v.similarity) && rec.distance == fresh_distance));
    if agree {
        return Vec::new();
    }
    let mut out = vec![
        "the crawl judged this page once, on the page and the template of that time; this check \
         judges it again now"
            .to_string(),
    ];
    let host = crate::template::host_of(&p.final_url);
    // The template is learnt from normalized own texts (the page's `text`
    // is as the page wrote it).
    let removed = templates.own_lines(host, &p.own_text).map_or(0, |own| {
        p.own_text.lines().count().saturating_sub(own.lines().count())
    });
    if removed > 0 {
        out.push(format!(
            "a template learnt for {host} removes {removed} {} from this page now; the crawl may \
             have judged it (or its partner) before that template was learnt",
            if removed == 1 { "line" } else { "lines" }
        ));
    } else if let Some(then) = rec.features
        && then != p.sig.features as u64
    {
        out.push(format!(
            "it was signed with {then} features then, {} now: the page (or the part of it that is \
             judged) changed since",
            p.sig.features
        ));
    }
    out
}

/// The report for a person.
pub fn human(r: &Report) -> String {
    let mut out = String::new();
    let mut line = |k: &str, v: &str| out.push_str(&format!("{k:<13} {v}\n"));
    line("url", &r.url);
    line("robots", r.robots);
    line(
        "canonical",
        &format!("{} (md5 {})", r.canonical_url, r.url_digest),
    );
    line(
        "url tier",
        if r.url_seen {
            "known to the crawl (linked or fetched)"
        } else {
            "new to the crawl"
        },
    );
    line("dust rule", r.dust_rule.as_deref().unwrap_or("none"));
    if let Some(s) = r.status {
        line(
            "fetched",
            &format!("{s} {}", r.final_url.as_deref().unwrap_or("")),
        );
        line(
            "title",
            &format!(
                "{} (md5 {})",
                r.title.as_deref().unwrap_or(""),
                r.title_digest.as_deref().unwrap_or("-")
            ),
        );
        line("judged on", r.basis.unwrap_or("-"));
        line("lang", r.lang.unwrap_or("-"));
        line(
            "signature",
            &format!(
                "{} features, simhash {}",
                r.features.unwrap_or(0),
                r.fingerprint.as_deref().unwrap_or("-")
            ),
        );
        line(
            "text",
            &format!("\"{}\"", r.text_preview.as_deref().unwrap_or("")),
        );
        line("candidates", &r.candidates.len().to_string());
        for c in r.candidates.iter().take(10) {
            line(
                "",
                &format!(
                    "{:<8} distance {:<3} resemblance {:<6} as shown {:<6} {}{}",
                    c.tier,
                    c.distance.map_or("-".into(), |d| d.to_string()),
                    c.similarity.map_or("-".into(), |s| format!("{s:.3}")),
                    c.shown.map_or("-".into(), |s| format!("{s:.3}")),
                    c.url,
                    c.refused
                        .as_ref()
                        .map_or(String::new(), |r| format!(" (refused: {r})"))
                ),
            );
        }
    }
    let v = &r.verdict;
    let what = match (v.kind, &v.of) {
        ("duplicate", Some(of)) => format!("duplicate of {of} ({})", v.reason),
        ("kept_as_itself", _) => format!("kept ({})", v.reason),
        ("unique", _) => format!("unique ({})", v.reason),
        _ => format!("not judged ({})", v.reason),
    };
    line("verdict", &what);
    if let Some(rec) = &r.recorded {
        let then = match (rec.kind, &rec.of) {
            ("duplicate", Some(of)) => format!(
                "duplicate of {of} ({} tier: distance {}, resemblance {})",
                rec.tier.as_deref().unwrap_or("-"),
                rec.distance.map_or("-".into(), |d| d.to_string()),
                rec.similarity.map_or("-".into(), |s| format!("{s:.3}"))
            ),
            _ => "kept".to_string(),
        };
        line("recorded", &format!("{then} (the crawl's line in {})", rec.file));
        for d in &r.differs {
            line("differs", d);
        }
    }
    out
}

/// Whether a report's page could not be judged (exit status 1).
pub fn failed(r: &Report) -> bool {
    r.verdict.kind == "not_fetched"
}
