//! A worker's identity and its output directory: its id, the state it
//! records with each acknowledged batch ([`WorkerState`]), the lock that
//! tells a live worker's directory from a gone one's, and the cutting of
//! gone workers' outputs back to what they had acknowledged.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use tracing::warn;

use super::frontier::{RedisFrontier, retry};
use crate::output::sinks::Offsets;
use crate::stats::Stats;

/// What a worker records with each acknowledged batch, so that a restart
/// under the same id resumes its outputs and counters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct WorkerState {
    pub(super) offsets: Offsets,
    pub(super) stats: Stats,
}

/// `HOSTNAME-PID` when no id is given; an id is kept to the characters
/// that are safe in a directory name and a Redis key.
pub fn worker_id(configured: &str) -> Result<String> {
    if !configured.is_empty() {
        if configured
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !configured.starts_with('.')
        {
            return Ok(configured.to_string());
        }
        bail!("worker id {configured:?}: use letters, digits, '-', '_' and '.' (not first)");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let host: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let host = if host.is_empty() || host.starts_with('.') {
        "worker".to_string()
    } else {
        host
    };
    Ok(format!("{host}-{}", std::process::id()))
}

/// The lock file in a worker's output directory: held (`flock`, exclusive)
/// by the live process writing there, released by the kernel when it exits
/// however it exits, so that another worker tells a gone worker's outputs
/// from a live one's without asking it.
const LOCK_FILE: &str = ".worker.lock";

/// How long a starting worker waits for its directory's lock: another
/// worker cutting this one's outputs after a crash holds it for well under
/// a second (a kill -9 test met that moment when both started at once).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// This process's hold on its output directory ([`LOCK_FILE`]).
#[derive(Debug)]
pub(super) struct DirLock {
    _file: std::fs::File,
}

impl DirLock {
    /// Takes the lock of `dir`, or says which live process holds it.
    pub(super) fn take(dir: &std::path::Path, worker: &str) -> Result<DirLock> {
        use std::io::{Read, Seek, Write};
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        // Another worker that found this one gone holds the lock for the
        // moment it cuts the gone worker's outputs back (`lock_if_gone`):
        // a restart waits that out; a live worker holds it for good.
        let until = std::time::Instant::now() + LOCK_WAIT;
        let mut tried = file.try_lock();
        while matches!(tried, Err(std::fs::TryLockError::WouldBlock)) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(50));
            tried = file.try_lock();
        }
        match tried {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                bail!(
                    "worker id {worker:?} is in use: process {} writes {} (it holds {}); give each \
                     worker its own --worker-id",
                    holder.trim(),
                    dir.display(),
                    path.display()
                );
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(anyhow::Error::new(e).context(format!("cannot lock {}", path.display())));
            }
        }
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(pid.as_bytes()))
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(DirLock { _file: file })
    }
}

/// Whether the worker writing `dir` is gone: its lock is free. Returns the
/// lock, held, so that the worker cannot restart while its outputs are cut.
fn lock_if_gone(dir: &std::path::Path) -> Option<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join(LOCK_FILE))
        .ok()?;
    file.try_lock().ok()?;
    Some(file)
}

/// Cuts the outputs of gone workers under the outputs' root `root` back to
/// their last acknowledged offsets. A worker killed after writing a batch's
/// lines and before their acknowledgement leaves them behind, and another
/// worker takes the pages back and writes them too; with the default id
/// (`HOSTNAME-PID`) nobody restarts under its id to cut them. A worker is
/// gone when the lock of its directory is free (see [`LOCK_FILE`]): a dead
/// process writes and acknowledges nothing more, so its acknowledged
/// offsets in Redis are final; a paused one still holds its lock and is
/// left alone.
pub(super) fn cut_gone_workers(
    frontier: &RedisFrontier,
    root: &std::path::Path,
    warc: &crate::output::warc::WarcSettings,
    me: &str,
) -> Result<()> {
    let Ok(dir) = std::fs::read_dir(root) else {
        return Ok(());
    };
    for e in dir.flatten() {
        let Ok(name) = e.file_name().into_string() else {
            continue;
        };
        if name == me || !e.file_type().is_ok_and(|t| t.is_dir()) || worker_id(&name).is_err() {
            continue;
        }
        let Some(_held) = lock_if_gone(&e.path()) else {
            continue;
        };
        let (_, state) = retry("read a gone worker's state", frontier.url(), || {
            frontier.worker_state(&name)
        })?;
        if state.is_empty() {
            continue;
        }
        let ws: WorkerState = serde_json::from_str(&state)
            .with_context(|| format!("unreadable state of worker {name:?} in Redis"))?;
        let (mut cut, short) = crate::output::sinks::cut_gone_outputs(&e.path(), ws.offsets)?;
        if warc.enabled() {
            cut += crate::output::warc::cut_gone(
                &warc.warc_dir.join(&name),
                &warc.warc_prefix,
                ws.offsets.warc,
            )?;
        }
        if cut > 0 {
            warn!(
                worker = %name,
                bytes = cut,
                "a gone worker's outputs cut to its last acknowledged batch (another worker took \
                 those pages back and wrote them)"
            );
        }
        for p in short {
            warn!(
                file = %p.display(),
                "a gone worker's output is shorter than its last acknowledged offset: changed outside the crawl"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn worker_ids_are_safe_names() {
        assert_eq!(worker_id("w-1.a_b").unwrap(), "w-1.a_b");
        assert!(worker_id("../x").is_err());
        assert!(worker_id("a b").is_err());
        let auto = worker_id("").unwrap();
        assert!(auto.ends_with(&format!("-{}", std::process::id())), "{auto}");
        assert!(!auto.contains('/'));
    }
}
