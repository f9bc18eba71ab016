//! The writer thread's loop, the same for both backends: it takes the
//! results of page tasks as they come, in groups (whatever is ready, at most
//! [`MAX_GROUP`]; a small group waits a few ms for more, [`GATHER_WAIT`]),
//! hands each group to the backend's [`Commits`], tells the
//! dispatcher what was committed, and makes commits durable when the
//! backend says they are due.

use std::sync::mpsc as std_mpsc;

use anyhow::Result;
use tokio::sync::mpsc;

use super::load::{LoadWindow, WriterLoad};
use super::worker::Outcome;
use crate::backend::{Commits, Committed};

/// Results committed in one transaction at most: a group is whatever is
/// ready, capped so that one commit (and the time its results wait for the
/// dispatcher to learn they are done) stays short under a burst.
pub const MAX_GROUP: usize = 4096;

/// A group smaller than this waits up to [`GATHER_WAIT`] for more results
/// before it is committed. Results arrive a page at a time, so the writer,
/// faster than the workers, used to commit about 2 at once: 4,000
/// transactions for an 8,230-page crawl. Waiting 3 ms gathers ~12 per
/// commit and cut the CPU per page by 8-10% (docs/BENCHMARKS.md, "Against
/// spider-rs"); 3 ms is nothing next to a fetch, and a crawl that has gone
/// quiet still commits its last results within it.
const GATHER_GROUP: usize = 32;
const GATHER_WAIT: std::time::Duration = std::time::Duration::from_millis(3);

/// Time the writer threads of this process spent working (commits, purges,
/// making commits durable), not waiting for results, in nanoseconds. The
/// writer is the crawl's one serial stage: `crawl bench` prints this over
/// the wall time, and a share near 100% means more cores cannot help
/// (issue 37; by Amdahl, 2 cores at share `s` give at most `2 / s` times
/// as many pages on many).
pub static WRITER_BUSY_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Adds the time since `since` to [`WRITER_BUSY_NS`] and to `window`.
fn busy_since(since: std::time::Instant, window: &mut LoadWindow) {
    let took = since.elapsed();
    let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
    WRITER_BUSY_NS.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
    window.busy += took;
}

/// The writer thread: group commits until every sender is gone, then the
/// last learnt templates and a final durable commit.
pub fn writer_loop<W: Commits>(
    mut w: W,
    rx: std_mpsc::Receiver<Outcome>,
    tx: mpsc::UnboundedSender<Result<Committed, anyhow::Error>>,
    load: &WriterLoad,
) {
    let mut window = LoadWindow::new();
    loop {
        window.roll(load);
        // `--forever`: the pages due for a revisit join the frontier.
        if w.tick_in().is_some_and(|d| d.is_zero()) {
            match w.tick() {
                Ok(0) => {}
                Ok(added) => {
                    let tick = Committed {
                        seqs: Vec::new(),
                        added,
                        requeued: 0,
                    };
                    if tx.send(Ok(tick)).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        // Lines already visible become durable within `DURABLE_EVERY`, even
        // when no further result comes (a kill -9 must not cut lines that
        // consumers may have read).
        let durable = w.durable_due_in();
        let next = match (durable, w.tick_in()) {
            (None, None) => rx.recv().map_err(|_| std_mpsc::RecvTimeoutError::Disconnected),
            (a, b) => rx.recv_timeout(a.into_iter().chain(b).min().unwrap_or_default()),
        };
        let first = match next {
            Ok(o) => o,
            Err(std_mpsc::RecvTimeoutError::Timeout) => {
                let t = std::time::Instant::now();
                if w.durable_due_in().is_some_and(|d| d.is_zero())
                    && let Err(e) = w.make_durable()
                {
                    let _ = tx.send(Err(e));
                    return;
                }
                busy_since(t, &mut window);
                continue;
            }
            Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut batch = vec![first];
        while batch.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(o) => batch.push(o),
                Err(_) => break,
            }
        }
        // A small group waits a moment for more: each commit is a redb
        // transaction (page allocation, checksums), and with 2 results per
        // commit they were a tenth of a crawl's CPU.
        if batch.len() < GATHER_GROUP {
            let until = std::time::Instant::now() + GATHER_WAIT;
            while batch.len() < GATHER_GROUP {
                let left = until.saturating_duration_since(std::time::Instant::now());
                match rx.recv_timeout(left) {
                    Ok(o) => batch.push(o),
                    Err(_) => break,
                }
            }
        }
        let t = std::time::Instant::now();
        if let Err(e) = w.between_commits() {
            let _ = tx.send(Err(e));
            return;
        }
        let r = w.commit(batch);
        busy_since(t, &mut window);
        let failed = r.is_err();
        if tx.send(r).is_err() || failed {
            return;
        }
    }
    // Debug builds only, for the end-to-end tests: a panic while the last
    // commits are made durable, when nothing else would notice it.
    #[cfg(debug_assertions)]
    if std::env::var_os("SIMCRAWL_TEST_WRITER_PANIC").is_some() {
        panic!("injected writer panic (SIMCRAWL_TEST_WRITER_PANIC)");
    }
    if let Err(e) = w.finish() {
        let _ = tx.send(Err(e));
    }
}

/// Waits for the writer thread. A panic there is a failure of the crawl
/// (exit non-zero), never a silent success: the store is left as of its
/// last durable commit, so running the same command again resumes.
pub fn join_writer(handle: std::thread::JoinHandle<()>) -> Result<()> {
    handle.join().map_err(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        anyhow::anyhow!(
            "the writer thread panicked ({msg}); outputs and state are kept as of the last \
             durable commit: run the same command again to resume"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writer_panic_is_an_error_naming_it() {
        let h = std::thread::spawn(|| panic!("disk on fire"));
        let e = format!(
            "{:#}",
            join_writer(h)
                .err()
                .unwrap_or_else(|| anyhow::anyhow!("no error"))
        );
        assert!(e.contains("writer thread panicked (disk on fire)"), "{e}");
        assert!(join_writer(std::thread::spawn(|| ())).is_ok());
    }
}
