//! The pool a page's CPU stages run on: rayon's, a thread per core, off the
//! reactor threads.
//!
//! Why not tokio's blocking pool, which the pages used before (issue 37):
//! every task handed to it takes its mutex and signals its condition
//! variable, and every thread that finishes one takes the mutex again to
//! look for the next. On the zh/en documentation mix (3,174 pages, 2
//! cores) that was about 17,000 of the crawl's 26,600 futex calls, 5.4 a
//! page. rayon's queue takes no lock and its idle threads yield a few
//! times before they sleep: 12,500 futex calls in all (and 16,100
//! `sched_yield`, cheaper), 3% less CPU a page and 19% more pages a second,
//! the pages waiting less for a thread (docs/BENCHMARKS.md, "Pages on
//! rayon's pool"). How many pages are parsed at once is still bounded by
//! the daemon's parsing semaphore, not by this pool.

/// Runs `f` on the pool and waits for it without holding a reactor thread.
/// A panic in `f` is caught and returned as its message (rayon would abort
/// the process on a panic in a spawned job): the page fails, the crawl
/// goes on, as it did on tokio's blocking pool.
pub(crate) async fn on_cpu_pool<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        // The waiting task may be gone (the crawl stopping): nothing to tell.
        let _ = tx.send(done.map_err(|payload| panic_message(payload.as_ref())));
    });
    rx.await.map_err(|_| "the CPU pool dropped the job".to_string())?
}

/// The message a panic carried (`no message` for a payload that is not text).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_job_returns_its_value_from_another_thread() {
        let here = std::thread::current().id();
        let (value, there) = on_cpu_pool(|| (6 * 7, std::thread::current().id()))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(value, 42);
        assert_ne!(there, here);
    }

    #[tokio::test]
    async fn a_panicking_job_is_an_error_with_its_message_and_the_pool_lives_on() {
        let failed = on_cpu_pool(|| -> u32 { panic!("page {} broke the parser", 7) }).await;
        assert_eq!(failed, Err("page 7 broke the parser".to_string()));
        let failed = on_cpu_pool(|| -> u32 { std::panic::panic_any(5u8) }).await;
        assert_eq!(failed, Err("no message".to_string()));
        // The pool still runs jobs after them.
        assert_eq!(on_cpu_pool(|| 1 + 1).await, Ok(2));
    }
}
