//! The dispatcher: an async loop that takes due entries from the frontier
//! window, runs a page task for each within the concurrency limits, tells
//! the window what the writer committed, and stops on the page budget or a
//! signal (finishing the pages in flight).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::{info, warn};

use super::signals::spawn_signal_handlers;
use super::worker::{Outcome, PageStages, process_entry};
use crate::backend::Committed;
use crate::backend::Source;
use crate::progress::Progress;
use crate::stats::{Ended, Stats};

/// Page tasks of one host at once, per connection the fetcher allows it
/// (`fetch.per_host_concurrency`): while some of a host's tasks clean and
/// sign their page on the CPU pool, as many wait for its connections,
/// so they stay busy; more would only queue inside the fetcher.
pub const TASKS_PER_HOST_CONNECTION: usize = 2;

/// Entries in flight (fetching, or fetched and waiting for the writer) per
/// page task slot. Backpressure: a writer slower than the network bounds
/// memory at this many results per slot instead of queueing without limit,
/// while leaving it enough ready results to commit in large groups.
pub const IN_FLIGHT_PER_TASK: usize = 8;

/// How often the dispatcher refreshes the progress line and checks the
/// stop deadline: often enough for a live display, rare enough to cost
/// nothing.
pub const TICK: Duration = Duration::from_millis(500);

/// How long a stopped crawl (first SIGINT/SIGTERM) waits for its pages in
/// flight: longer than a fetch with its retries under the default
/// timeouts, short enough for a service manager's stop timeout.
pub const STOP_GRACE: Duration = Duration::from_secs(30);

/// How often the progress line is logged when stderr is not a terminal
/// (logs are kept; a line every tick would flood them).
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// The dispatcher's limits, from the settings.
pub struct Dispatch {
    /// `crawl.metrics`: where to serve the counters (empty: nowhere).
    pub metrics: String,
    /// Page tasks at once (`crawl.concurrency`).
    pub concurrency: usize,
    /// Pages fetched by earlier runs (for the rate of this one).
    pub base_fetched: u64,
    /// How often the loop wakes without an event: [`TICK`] for the local
    /// frontier; shorter for a shared one, which other workers fill.
    pub tick: Duration,
}

/// Runs page tasks from the frontier window until the frontier is done, the
/// page budget is spent, or a signal stops the crawl; then waits for the
/// writer's last commits. Returns which of the three ended it.
pub async fn dispatch<S: Source>(
    stages: Arc<PageStages>,
    window: S,
    s: Dispatch,
    out_tx: std_mpsc::Sender<Outcome>,
    mut done_rx: mpsc::UnboundedReceiver<Result<Committed, anyhow::Error>>,
    shared: Arc<Mutex<Stats>>,
) -> Result<Ended> {
    let mut window = window;
    let mut signal: Option<&'static str> = None;
    let mut tasks: JoinSet<()> = JoinSet::new();
    let mut task_seq: HashMap<tokio::task::Id, u64> = HashMap::new();
    let mut stopping = false;
    let progress = Progress::spinner("crawl");
    let mut last_log = Instant::now();
    let started = Instant::now();
    let (stop_tx, mut stop_rx) = mpsc::unbounded_channel::<&'static str>();
    spawn_signal_handlers(stop_tx, shared.clone(), stages.fetcher.clone());
    if !s.metrics.is_empty() {
        crate::metrics::serve(&s.metrics, shared.clone(), Some(stages.fetcher.clone())).await?;
    }
    let mut tick = tokio::time::interval(s.tick);
    let mut stop_deadline: Option<tokio::time::Instant> = None;
    loop {
        if !stopping {
            if window.wants_refill() {
                window = refilled(window).await?;
            }
            spawn_tasks(
                &mut window,
                &mut tasks,
                &mut task_seq,
                (&stages, &out_tx),
                s.concurrency,
            );
        }
        if window.in_flight() == 0 && (stopping || window.is_finished()) {
            break;
        }
        tokio::select! {
            Some(joined) = tasks.join_next_with_id(), if !tasks.is_empty() => {
                task_ended(&mut window, &mut task_seq, joined);
            }
            msg = done_rx.recv() => match msg {
                Some(Ok(c)) => committed(&mut window, c),
                Some(Err(e)) => return Err(e),
                None => bail!("the writer stopped unexpectedly"),
            },
            Some(sig) = stop_rx.recv() => {
                if stopping {
                    warn!("second {sig}: stopping now; unfinished pages stay in the frontier");
                    break;
                }
                info!("{sig}: finishing {} pages in flight, then stopping (the rest stays in the frontier)", window.in_flight());
                stopping = true;
                signal = Some(sig);
                stop_deadline = Some(tokio::time::Instant::now() + STOP_GRACE);
            }
            _ = tick.tick() => {
                if stop_deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    warn!("in-flight pages did not finish in time; they stay in the frontier");
                    break;
                }
                let st = shared.lock().clone();
                let line = progress_line(&st, &s, started, &stages, &window);
                if progress.is_bar() {
                    progress.message(line);
                } else if last_log.elapsed() >= LOG_EVERY {
                    info!("{line}");
                    last_log = Instant::now();
                }
            }
        }
    }
    progress.finish();
    let ended = match signal {
        Some(sig) => Ended::Signal(sig),
        None if window.budget_spent() => Ended::MaxPages,
        None => Ended::Finished,
    };
    wind_down(&stages, window, tasks, out_tx, done_rx).await?;
    Ok(ended)
}

/// The window with more entries loaded (or leased), off the reactor.
async fn refilled<S: Source>(window: S) -> Result<S> {
    tokio::task::spawn_blocking(move || {
        let mut w = window;
        w.refill().map(|()| w)
    })
    .await
    .context("frontier reader failed")?
}

/// Starts a page task for each entry the window hands out, within the
/// concurrency limit. Backpressure: results waiting for the writer count
/// too, so a writer slower than the network bounds memory instead of
/// queueing without limit.
fn spawn_tasks<S: Source>(
    window: &mut S,
    tasks: &mut JoinSet<()>,
    task_seq: &mut HashMap<tokio::task::Id, u64>,
    (stages, out_tx): (&Arc<PageStages>, &std_mpsc::Sender<Outcome>),
    concurrency: usize,
) {
    while tasks.len() < concurrency
        && window.in_flight() < concurrency * IN_FLIGHT_PER_TASK
        && let Some(entry) = window.next()
    {
        let (stages, tx) = (stages.clone(), out_tx.clone());
        let seq = entry.seq;
        let handle = tasks.spawn(async move {
            let o = process_entry(stages, entry).await;
            let _ = tx.send(o);
        });
        task_seq.insert(handle.id(), seq);
    }
}

/// A page task ended: its entry's fetch is over.
fn task_ended<S: Source>(
    window: &mut S,
    task_seq: &mut HashMap<tokio::task::Id, u64>,
    joined: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
) {
    let (id, failed) = match joined {
        Ok((id, ())) => (id, None),
        Err(e) => (e.id(), Some(e)),
    };
    if let Some(seq) = task_seq.remove(&id) {
        window.released(seq);
        if let Some(e) = failed {
            // No outcome will reach the writer: let the page go
            // for this run (it stays in the stored frontier and
            // is fetched again by the next one).
            warn!(seq, "page task failed: {e}");
            window.done(seq);
        }
    }
}

/// The writer committed `c`.
fn committed<S: Source>(window: &mut S, c: Committed) {
    for seq in c.seqs {
        window.done(seq);
    }
    // A requeued page comes back under a new seq; its first
    // attempt does not count against the page budget.
    window.requeued(c.requeued);
    if c.added > 0 || c.requeued > 0 {
        window.poke();
    }
}

/// The progress line: the counters, this run's rate, the window and what
/// pages wait for.
fn progress_line<S: Source>(
    st: &Stats,
    s: &Dispatch,
    started: Instant,
    stages: &PageStages,
    window: &S,
) -> String {
    let rate = (st.fetched - s.base_fetched) as f64 / started.elapsed().as_secs_f64().max(1e-9);
    let mut waits = crate::progress::waiting_for(&stages.fetcher.paused_hosts());
    waits.push_str(&stages.retry_waits.describe());
    format!(
        "{}  ({rate:.0} pages/s this run, {} queued in memory, {} in flight){waits}",
        st,
        window.pending(),
        window.in_flight()
    )
}

/// After the loop: stops the tasks left, waits for the writer's last
/// commits and closes the window.
async fn wind_down<S: Source>(
    stages: &PageStages,
    window: S,
    mut tasks: JoinSet<()>,
    out_tx: std_mpsc::Sender<Outcome>,
    mut done_rx: mpsc::UnboundedReceiver<Result<Committed, anyhow::Error>>,
) -> Result<()> {
    // Requeued pages whose retry was not due yet: the process that would
    // have tried them is about to exit, so say where they are.
    let waiting = stages.retry_waits.len();
    if waiting > 0 {
        info!(
            "{waiting} {} queued for a later attempt: left in the frontier for the next run",
            if waiting == 1 { "URL was" } else { "URLs were" }
        );
    }
    tasks.abort_all();
    drop(out_tx);
    // Drain the writer's last commits.
    while let Some(msg) = done_rx.recv().await {
        msg?;
    }
    tokio::task::spawn_blocking(move || {
        let mut w = window;
        w.close()
    })
    .await
    .context("frontier closer failed")??;
    Ok(())
}
