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

/// The slice of [`GATHER_WAIT`] the writer sleeps before it looks for
/// more results. Waiting on the channel itself woke the writer for every
/// result that came (a futex wait on its side, a futex wake on the
/// sender's): on `crawl bench` the writer's waits were a third of its
/// samples (issue 37, docs/BENCHMARKS.md "A group gathered asleep").
/// Asleep, it is registered with no channel, so a result sent costs its
/// sender no wake, and the writer wakes once a slice.
const GATHER_SLICE: std::time::Duration = std::time::Duration::from_millis(1);

/// Adds to `batch` the results that come within [`GATHER_WAIT`], looking
/// once a [`GATHER_SLICE`], until it holds [`GATHER_GROUP`] or more (at
/// most [`MAX_GROUP`]) or the channel is closed.
fn gather<T>(rx: &std_mpsc::Receiver<T>, batch: &mut Vec<T>) {
    let until = std::time::Instant::now() + GATHER_WAIT;
    loop {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(GATHER_SLICE));
        loop {
            if batch.len() >= MAX_GROUP {
                return;
            }
            match rx.try_recv() {
                Ok(o) => batch.push(o),
                Err(std_mpsc::TryRecvError::Empty) => break,
                Err(std_mpsc::TryRecvError::Disconnected) => return,
            }
        }
        if batch.len() >= GATHER_GROUP {
            return;
        }
    }
}

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
            gather(&rx, &mut batch);
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
        let msg = super::cpu::panic_message(payload.as_ref());
        anyhow::anyhow!(
            "the writer thread panicked ({msg}); outputs and state are kept as of the last \
             durable commit: run the same command again to resume"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group gathers what is queued and what comes while it waits, up
    /// to [`MAX_GROUP`]; a quiet channel leaves it as it was after
    /// [`GATHER_WAIT`]; a closed one gives what was queued before it closed.
    #[test]
    fn a_group_gathers_what_comes_while_the_writer_sleeps() {
        let (tx, rx) = std_mpsc::channel();
        let mut batch = vec![0u32];
        let sender = std::thread::spawn(move || {
            for i in 1..=5 {
                tx.send(i).unwrap_or_default();
            }
            std::thread::sleep(std::time::Duration::from_micros(300));
            for i in 6..=40 {
                tx.send(i).unwrap_or_default();
            }
            tx
        });
        gather(&rx, &mut batch);
        let tx = sender.join().unwrap_or_else(|_| panic!("sender"));
        // Every result sent came in order, none lost, whatever the slices.
        let mut rest: Vec<u32> = rx.try_iter().collect();
        batch.append(&mut rest);
        assert_eq!(batch, (0..=40).collect::<Vec<_>>());

        let mut quiet = vec![7u32];
        let t = std::time::Instant::now();
        gather(&rx, &mut quiet);
        assert!(t.elapsed() >= GATHER_WAIT, "{:?}", t.elapsed());
        assert_eq!(quiet, [7]);

        for i in 0..(MAX_GROUP as u32 + 10) {
            tx.send(i).unwrap_or_default();
        }
        drop(tx);
        let mut full = Vec::new();
        gather(&rx, &mut full);
        assert_eq!(full.len(), MAX_GROUP);
        let mut closed = Vec::new();
        gather(&rx, &mut closed);
        assert_eq!(
            closed,
            (MAX_GROUP as u32..MAX_GROUP as u32 + 10).collect::<Vec<_>>()
        );
    }

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
