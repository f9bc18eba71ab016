//! Signals: SIGINT and SIGTERM stop the crawl (the dispatcher finishes the
//! pages in flight; a second one stops at once), SIGUSR1 logs the counters.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tracing::info;

use crate::stats::Stats;

/// A stop signal arrived. Read by work that blocks outside the dispatcher's
/// loop (the shared mode's retries while Redis is down), which would
/// otherwise hold the process past any number of signals.
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

/// Whether SIGINT or SIGTERM arrived.
pub fn stop_requested() -> bool {
    STOP_REQUESTED.load(Ordering::Relaxed)
}

/// Forwards stop signals to `stop` (by name) and answers SIGUSR1 with the
/// counters in `shared` and the hosts `fetcher` waits for. A signal that
/// cannot be registered is left at its default action.
pub fn spawn_signal_handlers(
    stop: mpsc::UnboundedSender<&'static str>,
    shared: Arc<Mutex<Stats>>,
    fetcher: simcrawl_fetch::Fetcher,
) {
    use tokio::signal::unix::{SignalKind, signal};
    for (kind, name) in [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
    ] {
        let stop = stop.clone();
        if let Ok(mut s) = signal(kind) {
            tokio::spawn(async move {
                while s.recv().await.is_some() {
                    STOP_REQUESTED.store(true, Ordering::Relaxed);
                    if stop.send(name).is_err() {
                        break;
                    }
                }
            });
        }
    }
    if let Ok(mut s) = signal(SignalKind::user_defined1()) {
        tokio::spawn(async move {
            while s.recv().await.is_some() {
                let waits = crate::progress::waiting_for(&fetcher.paused_hosts());
                info!("stats: {}{waits}", shared.lock());
            }
        });
    }
}
