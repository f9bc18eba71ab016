//! Snapshots: a replica rebuilt from the namespace's snapshot and the log
//! after it, and this process's state written as a new snapshot (dumped
//! under the replica's lock, uploaded and installed on a thread of its
//! own), which lets the log be trimmed.

use std::time::Instant;

use redis::{Connection, Value};

use super::log::Gap;
use super::{
    CHAIN0, CHUNK, COMPACT_MS, INSTALL, LAYOUT, LAYOUT_V1, RELEASE, Replica, ReplicatedStore, script_source,
};
use crate::error::{Error, Result};
use crate::store::RedisOptions;
use crate::store::memory::MemState;
use crate::store::oplog;
use crate::store::redis::{backoff, classify, connect_namespace};

impl ReplicatedStore {
    /// Rebuilds the replica from the snapshot and the log after it.
    pub(super) fn load(&self, r: &mut Replica) -> Result<()> {
        // A server that lost its data lost the marker too.
        let _: Value = self.query(
            r,
            redis::cmd("SET").arg(&self.keys.layout).arg(LAYOUT).arg("NX"),
            false,
        )?;
        let mut last_gap = None;
        let mut lost = 0;
        for attempt in 0..self.options.max_attempts.max(1) {
            r.valid = false;
            r.mem = MemState::default();
            type Head = (
                Option<u64>,
                Option<u64>,
                Option<u64>,
                Option<u64>,
                Option<String>,
                Option<String>,
            );
            let head: Head = self.query(
                r,
                redis::cmd("HMGET")
                    .arg(&self.keys.head)
                    .arg("snap_gen")
                    .arg("snap_pos")
                    .arg("snap_cb")
                    .arg("snap_n")
                    .arg("snap_chain")
                    .arg("bc"),
                false,
            )?;
            let (pos, cb, chain) = match head {
                (Some(generation), Some(pos), Some(cb), Some(n), chain, _) => {
                    let Some(chain) = chain else {
                        return Err(Error::Config(format!(
                            "the snapshot of Redis namespace {:?} at {} has no chain value: it was written by an \
                             older simcrawl (layout {LAYOUT_V1}) after this namespace was upgraded to {LAYOUT}; \
                             stop the older processes and clear the namespace (crawl --fresh) to start over",
                            self.options.namespace, self.url
                        )));
                    };
                    let mut complete = true;
                    for i in 0..n {
                        let key = format!("{}{generation}:{i}", self.keys.chunk_prefix);
                        let chunk: Option<Vec<u8>> = self.query(r, redis::cmd("GET").arg(&key), false)?;
                        let Some(chunk) = chunk else {
                            // Replaced by a newer snapshot while we read.
                            complete = false;
                            break;
                        };
                        oplog::apply(&chunk, &mut r.mem)?;
                    }
                    if !complete {
                        backoff(attempt);
                        continue;
                    }
                    (pos, cb, chain)
                }
                // No snapshot yet: the log starts at 0, with the chain
                // value of an empty state (or of a namespace upgraded
                // from the layout before the chain).
                (.., base_chain) => (0, 0, base_chain.unwrap_or_else(|| CHAIN0.to_string())),
            };
            r.pos = pos;
            r.cb = cb;
            r.chain = chain;
            r.refused = None;
            r.valid = true;
            match self.follow(r)? {
                None => return Ok(()),
                // A newer snapshot trimmed the log, or the server lost
                // data, while this one was read: read again.
                Some(gap) => {
                    if matches!(gap, Gap::Lost(_)) {
                        lost += 1;
                    }
                    last_gap = Some(gap);
                    r.valid = false;
                    if lost >= 3 {
                        // Not a loss racing the load: the snapshot itself
                        // is not the log's.
                        break;
                    }
                    backoff(attempt);
                }
            }
        }
        match last_gap {
            Some(Gap::Lost(d)) => Err(Error::Corrupt(format!(
                "the state of Redis namespace {:?} at {} loaded from its snapshot (or from the start of its log) \
                 does not match its log: at position {} the loaded state has chain value {}, the log {}",
                self.options.namespace, self.url, d.position, d.expected, d.found
            ))),
            _ => Err(Error::Contention {
                url: self.url.clone(),
                attempts: self.options.max_attempts,
            }),
        }
    }

    /// Starts writing the replica as a new snapshot, unless another
    /// process (or this one) is writing one: the state is dumped here,
    /// under the replica's lock (~1 s at 1M documents); the upload and the
    /// install run in a thread of their own, on a connection of their own,
    /// so checks go on meanwhile.
    pub(super) fn compact(&self, r: &mut Replica) -> Result<()> {
        let mut running = self.snapshot.lock();
        if running.as_ref().is_some_and(|h| !h.is_finished()) {
            return Ok(());
        }
        if let Some(done) = running.take() {
            log_snapshot(&self.url, done);
        }
        if !self.lease(r, &self.keys.compacting, COMPACT_MS)? {
            // Another process is writing one: ask again in a while.
            r.last_compaction = Some(Instant::now());
            return Ok(());
        }
        let generation: u64 = self.query(
            r,
            redis::cmd("HINCRBY").arg(&self.keys.head).arg("gen").arg(1),
            false,
        )?;
        let started = Instant::now();
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        r.mem.dump(CHUNK, &mut |c| {
            chunks.push(c);
            Ok(())
        })?;
        let job = SnapshotJob {
            client: self.client.clone(),
            options: self.options.clone(),
            url: self.url.clone(),
            log: self.keys.log.clone(),
            chain_key: self.keys.chain.clone(),
            head: self.keys.head.clone(),
            chunk_prefix: self.keys.chunk_prefix.clone(),
            compacting: self.keys.compacting.clone(),
            token: self.token.clone(),
            generation,
            pos: r.pos,
            cb: r.cb,
            chain: r.chain.clone(),
            chunks,
            started,
        };
        let handle = std::thread::Builder::new()
            .name("simcrawl-snapshot".into())
            .spawn(move || job.run())
            .map_err(Error::storage)?;
        *running = Some(handle);
        Ok(())
    }
}

/// A snapshot being written: the dumped state, and what the upload needs.
pub(super) struct SnapshotJob {
    client: redis::Client,
    options: RedisOptions,
    url: String,
    log: String,
    chain_key: String,
    head: String,
    chunk_prefix: String,
    compacting: String,
    token: String,
    generation: u64,
    pos: u64,
    cb: u64,
    /// The chain value at `pos`: the install checks the log has it there.
    chain: String,
    chunks: Vec<Vec<u8>>,
    started: Instant,
}

/// What a finished snapshot thread did: (generation, position, chunks,
/// bytes, the install script's reply (see [`INSTALL`]), seconds).
pub(super) type SnapshotDone = (u64, u64, usize, u64, i64, f64);

impl SnapshotJob {
    /// Uploads the chunks (expiring until installed), installs them, and
    /// releases the lease whatever happened.
    pub(super) fn run(self) -> Result<SnapshotDone> {
        let fail = |e: redis::RedisError| classify(&self.url, e, false).0;
        let mut conn = connect_namespace(&self.client, &self.options, &self.url).map_err(fail)?;
        let outcome = self.upload(&mut conn);
        let released = redis::Script::new(RELEASE)
            .key(&self.compacting)
            .arg(&self.token)
            .invoke::<i64>(&mut conn)
            .map_err(fail);
        let done = outcome?;
        released?;
        Ok(done)
    }

    pub(super) fn upload(&self, conn: &mut Connection) -> Result<SnapshotDone> {
        let fail = |e: redis::RedisError| classify(&self.url, e, false).0;
        let key = |i: usize| format!("{}{}:{i}", self.chunk_prefix, self.generation);
        let bytes: u64 = self.chunks.iter().map(|c| c.len() as u64).sum();
        for (i, c) in self.chunks.iter().enumerate() {
            redis::cmd("SET")
                .arg(key(i))
                .arg(c)
                .arg("PX")
                .arg(COMPACT_MS)
                .query::<Value>(conn)
                .map_err(fail)?;
        }
        let installed: i64 = redis::Script::new(&script_source(INSTALL))
            .key(&self.log)
            .key(&self.head)
            .key(&self.chain_key)
            .arg(self.generation)
            .arg(self.pos)
            .arg(self.cb)
            .arg(self.chunks.len())
            .arg(bytes)
            .arg(&self.chunk_prefix)
            .arg(&self.chain)
            .invoke(conn)
            .map_err(fail)?;
        if installed != 1 {
            // A newer snapshot got in first: this one is not needed.
            for i in 0..self.chunks.len() {
                redis::cmd("UNLINK")
                    .arg(key(i))
                    .query::<Value>(conn)
                    .map_err(fail)?;
            }
        }
        Ok((
            self.generation,
            self.pos,
            self.chunks.len(),
            bytes,
            installed,
            self.started.elapsed().as_secs_f64(),
        ))
    }
}

pub(super) fn log_snapshot(url: &str, done: std::thread::JoinHandle<Result<SnapshotDone>>) {
    match done.join() {
        Ok(Ok((generation, pos, chunks, bytes, installed, secs))) => tracing::info!(
            url,
            "snapshot {generation} at log position {pos}: {chunks} chunks, {:.1} MB, {} in {secs:.1} s",
            bytes as f64 / 1e6,
            match installed {
                1 => "installed",
                -2 => "not installed, the log has another history at its position (this replica diverged)",
                -1 => "not installed, a chunk expired before the install",
                _ => "superseded by a newer one",
            }
        ),
        Ok(Err(e)) => tracing::warn!(url, "writing a snapshot failed: {e}"),
        Err(_) => tracing::warn!(url, "the snapshot thread panicked"),
    }
}
