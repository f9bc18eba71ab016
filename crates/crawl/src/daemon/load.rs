//! How busy the writer thread is (issue 37): it is the crawl's one serial
//! stage, and page tasks take over work that saves it time but costs more
//! in all only while it is what the crawl waits for. Its own module so that
//! page tasks (`worker`) and the writer's loop (`commit`) share it without
//! depending on each other.

/// The writer's busy share over which [`WriterLoad`] turns on, and under
/// which it turns off again: apart, so that the work page tasks take over
/// (which lowers the share) does not switch it back and forth.
const SATURATED_ON: f64 = 0.8;
const SATURATED_OFF: f64 = 0.6;

/// How often the writer's busy share is taken.
const LOAD_WINDOW: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether the writer thread, the crawl's one serial stage, is what the
/// crawl waits for. Page tasks then take over work that saves the writer
/// time but costs more in all (a read transaction per page to look up its
/// links, `PageStages::url_probe`): worth it when the writer bounds the
/// crawl (many cores: docs/BENCHMARKS.md, "By core count"), a loss when
/// the cores are the bound (2 cores, where the writer is busy ~half the
/// time).
#[derive(Debug, Default)]
pub struct WriterLoad {
    saturated: std::sync::atomic::AtomicBool,
    /// Saturated for good, whatever is measured (the end-to-end test).
    forced: bool,
}

/// Set by `crawl bench --writer-saturated`: the crawls of this process
/// start saturated and stay so ([`WriterLoad::new`]).
static FORCED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes the writer of every crawl this process starts count as saturated
/// for good: how `crawl bench` measures on few cores the writer many
/// cores would have (issue 37, target 1).
pub fn force_saturated() {
    FORCED.store(true, std::sync::atomic::Ordering::Relaxed);
}

impl WriterLoad {
    /// Not saturated until measured so, unless [`force_saturated`] was
    /// called; debug builds also read `SIMCRAWL_TEST_WRITER_SATURATED`
    /// to start saturated, for the end-to-end test of the work page tasks
    /// take over.
    pub fn new() -> WriterLoad {
        let forced = FORCED.load(std::sync::atomic::Ordering::Relaxed)
            || (cfg!(debug_assertions) && std::env::var_os("SIMCRAWL_TEST_WRITER_SATURATED").is_some());
        WriterLoad {
            saturated: std::sync::atomic::AtomicBool::new(forced),
            forced,
        }
    }

    /// Whether the writer was busy most of the last window.
    pub fn saturated(&self) -> bool {
        self.saturated.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The writer was busy `share` of the last window.
    fn update(&self, share: f64) {
        if self.forced {
            return;
        }
        let was = self.saturated();
        let now = if was {
            share >= SATURATED_OFF
        } else {
            share >= SATURATED_ON
        };
        if now != was {
            self.saturated.store(now, std::sync::atomic::Ordering::Relaxed);
            tracing::debug!(share, saturated = now, "writer load");
        }
    }
}

/// The writer's busy time since `start`, read into [`WriterLoad`] every
/// [`LOAD_WINDOW`].
pub(super) struct LoadWindow {
    start: std::time::Instant,
    pub(super) busy: std::time::Duration,
}

impl LoadWindow {
    pub(super) fn new() -> LoadWindow {
        LoadWindow {
            start: std::time::Instant::now(),
            busy: std::time::Duration::ZERO,
        }
    }

    /// Tells `load` the share of the window once it is over, and starts the next.
    pub(super) fn roll(&mut self, load: &WriterLoad) {
        let took = self.start.elapsed();
        if took >= LOAD_WINDOW {
            load.update(self.busy.as_secs_f64() / took.as_secs_f64());
            *self = LoadWindow::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writer_load_turns_on_when_busy_and_off_only_well_below() {
        let load = WriterLoad::default();
        assert!(!load.saturated());
        load.update(0.7);
        assert!(!load.saturated(), "0.7 is under the bar to turn on");
        load.update(0.85);
        assert!(load.saturated());
        load.update(0.7);
        assert!(load.saturated(), "0.7 is over the bar to turn off");
        load.update(0.5);
        assert!(!load.saturated());
    }

    #[test]
    fn a_window_reports_its_share_once_over() {
        let load = WriterLoad::default();
        let mut w = LoadWindow {
            start: std::time::Instant::now() - LOAD_WINDOW,
            busy: LOAD_WINDOW.mul_f64(0.9),
        };
        w.roll(&load);
        assert!(load.saturated(), "busy 90% of a window");
        assert_eq!(w.busy, std::time::Duration::ZERO, "the next window starts empty");
        let mut w = LoadWindow {
            start: std::time::Instant::now(),
            busy: LOAD_WINDOW,
        };
        w.roll(&WriterLoad::default());
        assert_eq!(w.busy, LOAD_WINDOW, "a window not over yet is kept");
    }
}
