//! [`LearnStore`] over Redis, for the workers of a shared crawl: what the
//! learners (DUST rules, site templates) learnt is shared by all workers.
//!
//! Reads go to the server at once (at start, and when a worker takes up the
//! rules the others published). Writes are not sent on their own: they are
//! collected ([`RedisLearn::take_ops`]) and carried by the worker's next
//! acknowledgement, whose `ack` script applies them with the pages' leases,
//! links and counters, at most once. So a rewrite is recorded exactly when
//! the links it changed are queued, and a withdrawn rule's records are
//! removed and queued again by one script run: given back exactly once,
//! whichever worker withdraws it, however often the ack is retried.
//!
//! Keys (see the key layout in [`crate::backend::redis::frontier`]): `{NS}:f:tpl` (host ->
//! template JSON), `{NS}:f:dust` ("HOST RULE" -> `learnt N` | `blocked`),
//! `{NS}:f:rw:HOST RULE` (URL -> `HOST \t ENTRY`, the queue entry that gives
//! it back), `{NS}:f:ex:HOST RULE` (a candidate rule's examples, pooled),
//! `{NS}:f:imgs` (images of kept URLs under rules in force),
//! `{NS}:f:learn` (blobs).

use std::sync::Arc;

use redis::Value;

use super::frontier::{Claim, LearnOp, RedisFrontier, Tokens, encode_entry, host_key};
use crate::learn::{LearnError, LearnStore, Map, Restored};

/// The learners' store of one worker of a shared crawl (see the module
/// documentation).
pub struct RedisLearn {
    frontier: Arc<RedisFrontier>,
    ops: Vec<LearnOp>,
    /// `crawl.dust.max_recorded`, as the last record asked.
    max_recorded: u64,
    /// Claim tokens of the links a give-back queues.
    tokens: Tokens,
}

impl std::fmt::Debug for RedisLearn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLearn")
            .field("ops", &self.ops.len())
            .finish_non_exhaustive()
    }
}

fn op(kind: &str, a: &[u8], b: &[u8], c: &[u8]) -> LearnOp {
    [kind.as_bytes().to_vec(), a.to_vec(), b.to_vec(), c.to_vec()]
}

fn hash_of(map: Map) -> &'static str {
    match map {
        Map::TemplateHosts => "tpl",
        Map::DustRules => "dust",
    }
}

impl RedisLearn {
    pub fn new(frontier: Arc<RedisFrontier>) -> RedisLearn {
        RedisLearn {
            frontier,
            ops: Vec::new(),
            max_recorded: u64::MAX,
            tokens: Tokens::new(),
        }
    }

    /// The writes collected since the last call, for the next ack, and the
    /// bound of records per rule.
    pub fn take_ops(&mut self) -> (Vec<LearnOp>, u64) {
        (std::mem::take(&mut self.ops), self.max_recorded)
    }

    /// An example of a candidate DUST rule (`rule`: its key as stored), pooled
    /// with the other workers' by the `ack` script, which learns the rule
    /// once `min_examples` distinct URLs (`digest`) were seen among all.
    pub fn example(&mut self, rule: &str, digest: u64, min_examples: usize) {
        self.ops.push(op(
            "ex",
            rule.as_bytes(),
            format!("{digest:016x}").as_bytes(),
            min_examples.to_string().as_bytes(),
        ));
    }

    /// The image of a kept URL under a DUST rule in force (`rule`: its key
    /// as stored), appended by the `ack` script to the log all workers
    /// read ([`Self::images_since`]).
    pub fn image(&mut self, rule: &str, digest: u64) {
        self.ops.push(op(
            "img",
            rule.as_bytes(),
            format!("{digest:016x}").as_bytes(),
            b"",
        ));
    }

    /// The images the workers published from the `from`-th on (rule key,
    /// image digest), and where the log ends now.
    pub fn images_since(&mut self, from: u64) -> Result<(Vec<(String, u64)>, u64), LearnError> {
        let key = format!("{}imgs", self.frontier.prefix);
        let rows: Vec<String> = self
            .frontier
            .with_conn(|c| redis::cmd("LRANGE").arg(&key).arg(from).arg(-1).query(c))
            .map_err(LearnError::store)?;
        let end = from + rows.len() as u64;
        let images = rows
            .iter()
            .filter_map(|row| {
                let (rule, digest) = row.rsplit_once(' ')?;
                Some((rule.to_string(), u64::from_str_radix(digest, 16).ok()?))
            })
            .collect();
        Ok((images, end))
    }

    /// Forgets the writes collected since the last [`Self::take_ops`] (an
    /// ack written again without some pages).
    pub fn discard_ops(&mut self) {
        self.ops.clear();
    }
}

impl LearnStore for RedisLearn {
    fn get(&mut self, name: &str) -> Result<Option<Vec<u8>>, LearnError> {
        let key = format!("{}learn", self.frontier.prefix);
        self.frontier
            .with_conn(|c| redis::cmd("HGET").arg(&key).arg(name).query(c))
            .map_err(LearnError::store)
    }

    fn remove(&mut self, name: &str) -> Result<(), LearnError> {
        self.ops.push(op("blob-", name.as_bytes(), b"", b""));
        Ok(())
    }

    fn entries(&mut self, map: Map) -> Result<Vec<(String, Vec<u8>)>, LearnError> {
        let key = format!("{}{}", self.frontier.prefix, hash_of(map));
        let v: Value = self
            .frontier
            .with_conn(|c| redis::cmd("HGETALL").arg(&key).query(c))
            .map_err(LearnError::store)?;
        let items: Vec<Value> = match v {
            Value::Array(items) => items,
            Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
            other => return Err(LearnError::store(format!("unexpected HGETALL reply: {other:?}"))),
        };
        let mut out = Vec::with_capacity(items.len() / 2);
        for pair in items.chunks(2) {
            if let [Value::BulkString(k), Value::BulkString(v)] = pair {
                out.push((String::from_utf8_lossy(k).into_owned(), v.clone()));
            }
        }
        Ok(out)
    }

    fn put_entry(&mut self, map: Map, key: &str, value: &[u8]) -> Result<(), LearnError> {
        self.ops.push(op(hash_of(map), key.as_bytes(), value, b""));
        Ok(())
    }

    fn remove_entry(&mut self, map: Map, key: &str) -> Result<bool, LearnError> {
        self.ops
            .push(op(&format!("{}-", hash_of(map)), key.as_bytes(), b"", b""));
        Ok(true)
    }

    fn clear(&mut self, map: Map) -> Result<(), LearnError> {
        self.ops.push(op(&format!("{}0", hash_of(map)), b"", b"", b""));
        Ok(())
    }

    /// Recorded by the `ack` script within the bound (a record past it is
    /// counted there as `dust_unrecorded`), or queued again at once if the
    /// rule was withdrawn meanwhile (by another worker): so this says
    /// `true`.
    fn record(&mut self, rule: &str, r: &Restored, max_per_rule: u64) -> Result<bool, LearnError> {
        self.max_recorded = max_per_rule;
        // An entry was claimed by this worker's lease: it goes back claimed.
        // A link was never claimed: it goes back to be claimed like any.
        let claim = if r.was_queued {
            Claim::Held
        } else {
            Claim::Pending(self.tokens.next())
        };
        let back = format!(
            "{}\t{}",
            host_key(&r.url),
            encode_entry(&claim, 0, r.depth, &r.url)
        );
        self.ops.push(op(
            "rec",
            rule.as_bytes(),
            r.url.as_str().as_bytes(),
            back.as_bytes(),
        ));
        Ok(true)
    }

    /// The `ack` script gives them back (removed and queued in one run):
    /// none are returned here.
    fn give_back(&mut self, withdrawn: &[String], others: &[String]) -> Result<Vec<Restored>, LearnError> {
        let others = others.join("\n");
        for w in withdrawn {
            self.ops.push(op("back", w.as_bytes(), others.as_bytes(), b""));
        }
        Ok(Vec::new())
    }
}
