//! Following the log: the round trips to Redis (commands and the log
//! scripts, with their replies), applying the entries a replica lacks,
//! and getting past a gap (a snapshot that trimmed its position, or a log
//! that lost what it applied: see *Divergence* in the module docs).

use std::sync::atomic::Ordering;

use redis::{Connection, Value};

use super::{LAYOUT_V1, MAX_ENTRIES, MAX_REPLY_BYTES, Replica, ReplicatedStore};
use crate::error::{DivergedReplica, Error, Result};
use crate::store::oplog;
use crate::store::redis::{classify, connect_namespace};

/// Where a replica and the log part ways: the log ends before its
/// position or holds another history there.
#[derive(Clone, Debug)]
pub(super) struct Divergence {
    pub(super) position: u64,
    /// The replica's chain value at `position`.
    pub(super) expected: String,
    /// What the log has instead, as a phrase ("has chain value X there").
    pub(super) found: String,
}

/// Why a replica cannot follow the log from its position.
pub(super) enum Gap {
    /// A snapshot trimmed the entries after its position: it is behind,
    /// not wrong.
    Trimmed,
    /// The log lost entries it applied.
    Lost(Divergence),
}

/// A reply of the log scripts.
pub(super) enum Reply {
    Appended {
        end: u64,
        cb: u64,
        snap_cb: u64,
        snap_bytes: u64,
    },
    Entries {
        entries: Vec<Vec<u8>>,
        /// The chain value after the last of them.
        chain: String,
    },
    UpToDate,
    NotYourTurn,
    Trimmed,
    Shorter {
        end: u64,
    },
    /// The log's chain value at the caller's position is `found` (none:
    /// the chain list has no value there).
    OtherHistory {
        found: Option<String>,
    },
    /// The log and the chain list differ in length.
    Unchained {
        entries: u64,
        chains: u64,
    },
}

pub(super) fn text(v: &Value) -> Result<String> {
    match v {
        Value::BulkString(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        other => Err(Error::Corrupt(format!(
            "log script replied {other:?} for a chain value"
        ))),
    }
}

pub(super) fn int(v: &Value) -> Result<u64> {
    match v {
        Value::Int(n) if *n >= 0 => Ok(*n as u64),
        other => Err(Error::Corrupt(format!("log script replied {other:?}"))),
    }
}

pub(super) fn parse(v: Value) -> Result<Reply> {
    let Value::Array(items) = v else {
        return Err(Error::Corrupt(format!("log script replied {v:?}")));
    };
    let num = |i: usize| {
        items
            .get(i)
            .map_or(Err(Error::Corrupt("short log script reply".into())), int)
    };
    Ok(match num(0)? {
        1 if items.len() == 5 => Reply::Appended {
            end: num(1)?,
            cb: num(2)?,
            snap_cb: num(3)?,
            snap_bytes: num(4)?,
        },
        1 => Reply::UpToDate,
        0 => {
            let entries = match items.get(2) {
                Some(Value::Array(e)) => e
                    .iter()
                    .map(|x| match x {
                        Value::BulkString(b) => Ok(b.clone()),
                        other => Err(Error::Corrupt(format!("log entry {other:?}"))),
                    })
                    .collect::<Result<Vec<_>>>()?,
                other => return Err(Error::Corrupt(format!("log entries {other:?}"))),
            };
            let chain = items.get(3).map_or(
                Err(Error::Corrupt("log entries without a chain value".into())),
                text,
            )?;
            Reply::Entries { entries, chain }
        }
        2 => Reply::NotYourTurn,
        3 => Reply::Trimmed,
        4 => Reply::Shorter { end: num(1)? },
        5 => Reply::OtherHistory {
            found: match items.get(2) {
                None | Some(Value::Nil) => None,
                Some(v) => Some(text(v)?),
            },
        },
        6 => Reply::Unchained {
            entries: num(1)?,
            chains: num(2)?,
        },
        other => return Err(Error::Corrupt(format!("log script code {other}"))),
    })
}

impl ReplicatedStore {
    /// The error of a replica that diverged (see the module docs).
    pub(super) fn diverged(&self, d: &Divergence) -> Error {
        Error::Diverged(Box::new(DivergedReplica {
            url: self.url.clone(),
            namespace: self.options.namespace.clone(),
            replica: self.token.clone(),
            position: d.position,
            expected: d.expected.clone(),
            found: d.found.clone(),
        }))
    }

    /// The refusal of a log whose chain list is out of step with it.
    pub(super) fn unchained(&self, entries: u64, chains: u64) -> Error {
        Error::Config(format!(
            "the log of Redis namespace {:?} at {} has {entries} entries but {chains} chain values: a process of an \
             older simcrawl (store layout {LAYOUT_V1}) appends to it, or the server dropped some of its keys \
             (maxmemory with an eviction policy); stop the older processes and restart this one, set \
             maxmemory-policy noeviction, or clear the namespace (crawl --fresh) to start over",
            self.options.namespace, self.url
        ))
    }

    /// Runs one command on the replica's connection (connecting first if
    /// it has none). A failed connection is dropped.
    pub(super) fn query<T: redis::FromRedisValue>(
        &self,
        r: &mut Replica,
        cmd: &redis::Cmd,
        maybe_applied: bool,
    ) -> Result<T> {
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let conn = self.conn(r)?;
        cmd.query(conn).map_err(|e| self.lose(r, e, maybe_applied))
    }

    pub(super) fn conn<'r>(&self, r: &'r mut Replica) -> Result<&'r mut Connection> {
        if r.conn.is_none() {
            let c = connect_namespace(&self.client, &self.options, &self.url)
                .map_err(|e| classify(&self.url, e, false).0)?;
            r.conn = Some(c);
        }
        r.conn
            .as_mut()
            .ok_or_else(|| Error::Corrupt("no connection".into()))
    }

    pub(super) fn lose(&self, r: &mut Replica, e: redis::RedisError, maybe_applied: bool) -> Error {
        let (error, reroute) = classify(&self.url, e, maybe_applied);
        if reroute || matches!(error, Error::Disconnected { .. }) {
            r.conn = None;
        }
        error
    }

    pub(super) fn script(
        &self,
        r: &mut Replica,
        script: &redis::Script,
        args: &[&[u8]],
        maybe_applied: bool,
    ) -> Result<Reply> {
        let mut inv = script.key(&self.keys.log);
        inv.key(&self.keys.head);
        inv.key(&self.keys.turn);
        inv.key(&self.keys.chain);
        for a in args {
            inv.arg(*a);
        }
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let conn = self.conn(r)?;
        let v: Value = match inv.invoke(conn) {
            Ok(v) => v,
            Err(e) => {
                let sent = !e.is_connection_refusal();
                return Err(self.lose(r, e, maybe_applied && sent));
            }
        };
        parse(v)
    }

    /// Applies `entries` (the log from `r.pos` on) to the replica; `chain`
    /// is the log's chain value after the last of them.
    pub(super) fn apply(&self, r: &mut Replica, entries: Vec<Vec<u8>>, chain: String) -> Result<()> {
        for e in entries {
            if let Err(err) = oplog::apply(&e, &mut r.mem) {
                r.valid = false;
                return Err(err);
            }
            r.pos += 1;
            r.cb += e.len() as u64;
        }
        r.chain = chain;
        Ok(())
    }

    /// Applies the log's entries after `r.pos` until none is left;
    /// reloads when the replica is invalid, its position was trimmed or
    /// the log lost entries it applied (or refuses, see
    /// [`ReplicatedStore::resync_diverged`]).
    pub(super) fn catch_up(&self, r: &mut Replica) -> Result<()> {
        if let Some(d) = &r.refused {
            return Err(self.diverged(d));
        }
        if !r.valid {
            return self.load(r);
        }
        match self.follow(r)? {
            None => Ok(()),
            Some(gap) => self.recover(r, gap),
        }
    }

    /// Applies the log's entries after `r.pos` until none is left, or
    /// says why the replica cannot follow the log from where it is.
    pub(super) fn follow(&self, r: &mut Replica) -> Result<Option<Gap>> {
        loop {
            let pos = r.pos.to_string();
            let (max, bytes) = (MAX_ENTRIES.to_string(), MAX_REPLY_BYTES.to_string());
            let chain = r.chain.clone();
            match self.script(
                r,
                &self.since,
                &[pos.as_bytes(), max.as_bytes(), bytes.as_bytes(), chain.as_bytes()],
                false,
            )? {
                Reply::Entries { entries, chain } => self.apply(r, entries, chain)?,
                Reply::UpToDate | Reply::Appended { .. } | Reply::NotYourTurn => return Ok(None),
                Reply::Trimmed => return Ok(Some(Gap::Trimmed)),
                Reply::Shorter { end } => return Ok(Some(Gap::Lost(shorter(r, end)))),
                Reply::OtherHistory { found } => return Ok(Some(Gap::Lost(other_history(r, found)))),
                Reply::Unchained { entries, chains } => return Err(self.unchained(entries, chains)),
            }
        }
    }

    /// Gets past a [`Gap`]: reloads a replica that is behind a snapshot;
    /// one that diverged is reloaded too (counted and logged) or refused,
    /// as [`ReplicatedStore::resync_diverged`] says.
    pub(super) fn recover(&self, r: &mut Replica, gap: Gap) -> Result<()> {
        match gap {
            Gap::Trimmed => self.load(r),
            Gap::Lost(d) => {
                if !self.resync {
                    let e = self.diverged(&d);
                    tracing::error!(url = %self.url, "{e}");
                    r.refused = Some(d);
                    return Err(e);
                }
                tracing::warn!(
                    url = %self.url,
                    "replica {} of Redis namespace {:?} at {} has diverged from the shared log: at position {} its \
                     history has chain value {}, while the log {}; resyncing (this replica drops its state and \
                     loads the log's; what the log lost is lost for every process)",
                    self.token,
                    self.options.namespace,
                    self.url,
                    d.position,
                    d.expected,
                    d.found
                );
                self.resyncs.fetch_add(1, Ordering::Relaxed);
                self.load(r)
            }
        }
    }

    /// Takes `key` for this process for `ms` unless another holds it.
    pub(super) fn lease(&self, r: &mut Replica, key: &str, ms: u64) -> Result<bool> {
        let taken: Option<String> = self.query(
            r,
            redis::cmd("SET")
                .arg(key)
                .arg(&self.token)
                .arg("NX")
                .arg("PX")
                .arg(ms),
            false,
        )?;
        Ok(taken.is_some())
    }

    pub(super) fn release_lease(&self, r: &mut Replica, key: &str) -> Result<()> {
        let mut inv = self.release.key(key);
        inv.arg(&self.token);
        self.round_trips.fetch_add(1, Ordering::Relaxed);
        let conn = self.conn(r)?;
        let _: i64 = inv.invoke(conn).map_err(|e| self.lose(r, e, false))?;
        Ok(())
    }
}

/// The divergence of a replica whose position is past the log's `end`.
pub(super) fn shorter(r: &Replica, end: u64) -> Divergence {
    Divergence {
        position: r.pos,
        expected: r.chain.clone(),
        found: format!("ends at position {end}, before it (the server lost entries)"),
    }
}

/// The divergence of a replica whose chain value is not the log's.
pub(super) fn other_history(r: &Replica, found: Option<String>) -> Divergence {
    Divergence {
        position: r.pos,
        expected: r.chain.clone(),
        found: match found {
            Some(c) => format!("has chain value {c} there (another history: the server lost entries)"),
            None => "has no chain value there".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::{CHAIN0, SINCE, script_source};
    use super::*;

    /// The replies that say a replica diverged or the chain list is out
    /// of step parse into their own variants; entries carry their chain.
    #[test]
    fn replies_of_a_lost_history_are_told_apart() {
        let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        match parse(Value::Array(vec![Value::Int(5), Value::Int(7), bulk("abc")])).unwrap() {
            Reply::OtherHistory { found } => assert_eq!(found.as_deref(), Some("abc")),
            _ => panic!("not OtherHistory"),
        }
        match parse(Value::Array(vec![Value::Int(5), Value::Int(7), Value::Nil])).unwrap() {
            Reply::OtherHistory { found } => assert_eq!(found, None),
            _ => panic!("not OtherHistory"),
        }
        match parse(Value::Array(vec![Value::Int(6), Value::Int(9), Value::Int(8)])).unwrap() {
            Reply::Unchained { entries, chains } => assert_eq!((entries, chains), (9, 8)),
            _ => panic!("not Unchained"),
        }
        let entries = Value::Array(vec![bulk("e1"), bulk("e2")]);
        match parse(Value::Array(vec![
            Value::Int(0),
            Value::Int(9),
            entries,
            bulk("c2"),
        ]))
        .unwrap()
        {
            Reply::Entries { entries, chain } => assert_eq!((entries.len(), chain.as_str()), (2, "c2")),
            _ => panic!("not Entries"),
        }
        // Entries without their chain value are a broken reply, not a
        // position to go on from.
        let entries = Value::Array(vec![bulk("e1")]);
        assert!(parse(Value::Array(vec![Value::Int(0), Value::Int(9), entries])).is_err());
        assert!(script_source(SINCE).starts_with(&format!("local CHAIN0 = '{CHAIN0}'")));
    }
}
