//! How the kernel schedules the crawl's threads: as a batch job by default.
//!
//! A crawl on a few cores runs more threads than it has cores: tokio's
//! workers fetch and parse HTTP, rayon's clean and sign pages, the writer
//! judges them. Under the kernel's default policy a thread that wakes
//! (a page handed to rayon, a response arriving) preempts the one running
//! at once: on the zh/en documentation mix (2 cores, 3,174 pages) the
//! crawl was switched out involuntarily 11,700 times against spider-rs's
//! 4,800. `SCHED_BATCH` (Linux) tells the kernel these threads are
//! throughput work: a woken thread waits for the running one's time slice
//! instead of preempting it. The crawl took 6.8% less CPU a site page at
//! the same pages a second (docs/BENCHMARKS.md, "Per-page tables written,
//! not calloc'ed, and threads scheduled as a batch"). Nothing but the order in which threads run changes:
//! every page's text, verdict and output are the same.
//!
//! `--scheduling normal` keeps the default policy (a crawl sharing its
//! machine with latency-sensitive services may prefer to preempt).

/// The scheduling policy the process's threads run under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Scheduling {
    /// `SCHED_BATCH`: woken threads do not preempt running ones.
    Batch,
    /// The kernel's default (`SCHED_OTHER`).
    Normal,
}

/// Puts the calling thread, and so every thread it starts afterwards, under
/// `policy`: called first in `main`, before the runtime's threads exist. A
/// kernel or sandbox that refuses is logged and the crawl goes on under
/// the default policy. Elsewhere than on Linux this does nothing.
pub(crate) fn set(policy: Scheduling) {
    #[cfg(target_os = "linux")]
    {
        if let Err(e) = set_on_linux(policy) {
            tracing::debug!(?policy, error = %e, "cannot set the scheduling policy; the default stays");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = policy;
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn set_on_linux(policy: Scheduling) -> std::io::Result<()> {
    let policy = match policy {
        Scheduling::Batch => libc::SCHED_BATCH,
        Scheduling::Normal => libc::SCHED_OTHER,
    };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid `sched_param` that outlives the call;
    // pid 0 is the calling thread; the call only changes its policy.
    let r = unsafe { libc::sched_setscheduler(0, policy, &raw const param) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The calling thread's policy, as `sched_getscheduler` reports it.
#[cfg(all(test, target_os = "linux"))]
#[allow(unsafe_code)]
fn current() -> libc::c_int {
    // SAFETY: no arguments but pid 0, the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// On a thread of its own (the harness's threads keep their policy):
    /// the policy is set, the threads it starts afterwards inherit it,
    /// and `normal` puts it back.
    #[test]
    fn batch_is_set_and_inherited_and_normal_undoes_it() {
        let seen = std::thread::spawn(|| {
            set(Scheduling::Batch);
            let here = current();
            let child = std::thread::spawn(current).join().unwrap_or(-1);
            set(Scheduling::Normal);
            (here, child, current())
        })
        .join()
        .unwrap_or((-1, -1, -1));
        assert_eq!(seen, (libc::SCHED_BATCH, libc::SCHED_BATCH, libc::SCHED_OTHER));
    }
}
