//! Converting a namespace written in layout 2 to layout 3 when it is opened
//! (see *Key layout* in the module docs): the index a crawl built keeps
//! working after the upgrade, with no rebuild.
//!
//! Layout 2 kept each block key's postings under its own key (`b:T KEY8`),
//! band buckets by the top 18 bits with 4-byte tags (`l:BUCKET3`) and
//! records in hashes (`d:BUCKET`). Each old key is converted by one script
//! call that appends its entries to the new key and deletes the old one,
//! atomically: a migration killed at any point leaves every old key either
//! converted or untouched, and the next open converts what is left. The
//! layout marker says `3` only when no old key is left.
//!
//! One process converts at a time, holding `{NS}:m:migrating` (renewed as
//! it goes; it expires 30 s after its holder dies). Another process opening
//! the namespace meanwhile waits for the marker. Stop every crawler of a
//! namespace before upgrading: a process of the old version that is still
//! running keeps writing old keys, which nothing would read.

use std::time::{Duration, Instant};

use redis::{Connection, Value};

use super::RedisStore;
use super::layout::{
    DOC_SLOTS, ID_BYTES, LAYOUT, band_tag, block_bucket, bucket_of, build_bucket, decimal_id, pack_bands,
    unpack,
};
use super::tx::{bulk, members};
use crate::error::{Error, Result};

/// Appends `ARGV[1]` to `KEYS[2]` (or sets it, with `ARGV[2]` = `set`) and
/// deletes `KEYS[1]`, if `KEYS[1]` still exists: one old key converted.
const CONVERT: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = false
if ARGV[2] ~= 'set' then cur = redis.call('GET', KEYS[2]) end
if cur then
  redis.call('SET', KEYS[2], cur .. ARGV[1])
else
  redis.call('SET', KEYS[2], ARGV[1])
end
redis.call('DEL', KEYS[1])
return 1
";

/// How long the migration lock lives without being renewed.
const LOCK_MS: u64 = 30_000;

/// How long a process waits for another one's migration to finish.
const WAIT: Duration = Duration::from_secs(30 * 60);

/// One old key, and what it becomes.
struct Conversion {
    old: Vec<u8>,
    new: Vec<u8>,
    bytes: Vec<u8>,
    set: bool,
}

impl RedisStore {
    /// Converts this namespace from layout 2 to [`LAYOUT`], or waits for
    /// the process that is converting it.
    pub(super) fn migrate_from_2(&self, conn: &mut Connection) -> Result<()> {
        let k = &self.keys;
        let lock = k.meta("migrating");
        let token = lock_token();
        let started = Instant::now();
        loop {
            let layout: Option<String> = redis::cmd("GET")
                .arg(k.meta("layout"))
                .query(conn)
                .map_err(|e| self.fail(e, false))?;
            if layout.as_deref() == Some(LAYOUT) {
                return Ok(());
            }
            let got: Value = redis::cmd("SET")
                .arg(&lock)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(LOCK_MS)
                .query(conn)
                .map_err(|e| self.fail(e, false))?;
            if got != Value::Nil {
                break;
            }
            if started.elapsed() > WAIT {
                return Err(Error::Config(format!(
                    "Redis namespace {:?} at {} is being converted to store layout {LAYOUT} by another process \
                     (key {}), still after {} s",
                    self.options.namespace,
                    self.url,
                    String::from_utf8_lossy(&lock),
                    WAIT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        tracing::info!(
            namespace = %self.options.namespace,
            url = %self.url,
            "converting the Redis namespace from store layout 2 to {LAYOUT}"
        );
        let convert = redis::Script::new(CONVERT);
        let prefix = k.prefix.clone();
        let mut converted = 0u64;
        let mut result = Ok(());
        super::conn::for_each_key(conn, &self.options.namespace, |conn, keys| {
            // Each key named once: what it was in layout 2, if anything.
            let old: Vec<(Vec<u8>, Old)> = keys
                .into_iter()
                .filter_map(|key| {
                    let kind = old_kind(key.get(prefix.len()..)?)?;
                    Some((key, kind))
                })
                .collect();
            if old.is_empty() {
                return Ok(());
            }
            let mut pipe = redis::pipe();
            for (key, kind) in &old {
                match kind {
                    Old::Records(_) => pipe.cmd("HGETALL").arg(key),
                    _ => pipe.cmd("GET").arg(key),
                };
            }
            let replies: Vec<Value> = pipe.query(conn)?;
            let mut pipe = redis::pipe();
            pipe.cmd("SCRIPT").arg("LOAD").arg(CONVERT).ignore();
            for ((key, kind), reply) in old.iter().zip(replies) {
                let c = match self.convert(kind, key, reply) {
                    Ok(c) => c,
                    Err(e) => {
                        result = Err(e);
                        return Ok(());
                    }
                };
                pipe.cmd("EVALSHA")
                    .arg(convert.get_hash())
                    .arg(2)
                    .arg(&c.old)
                    .arg(&c.new)
                    .arg(&c.bytes)
                    .arg(if c.set { "set" } else { "append" })
                    .ignore();
            }
            pipe.query::<()>(conn)?;
            converted += old.len() as u64;
            // Still ours: renew the lock for the next round.
            redis::cmd("PEXPIRE")
                .arg(&lock)
                .arg(LOCK_MS)
                .query::<Value>(conn)?;
            Ok(())
        })
        .map_err(|e| self.fail(e, false))?;
        result?;
        redis::pipe()
            .cmd("SET")
            .arg(k.meta("layout"))
            .arg(LAYOUT)
            .cmd("DEL")
            .arg(&lock)
            .query::<Value>(conn)
            .map_err(|e| self.fail(e, false))?;
        tracing::info!(namespace = %self.options.namespace, keys = converted, "Redis namespace converted");
        Ok(())
    }

    /// What old key `key`, of kind `kind`, becomes. An old band bucket
    /// (18 bits) feeds one new one (its top 16), and each band key's
    /// entries all come from one old bucket, so their order (oldest first,
    /// which the cap relies on) is kept.
    fn convert(&self, kind: &Old, key: &[u8], reply: Value) -> Result<Conversion> {
        let k = &self.keys;
        let bad = |what: &str| Error::Corrupt(format!("layout 2 {what} {:?}", String::from_utf8_lossy(key)));
        Ok(match *kind {
            Old::Records(bucket) => {
                let mut records: [Option<Vec<u8>>; DOC_SLOTS] = std::array::from_fn(|_| None);
                let mut fields = members(reply)?.into_iter();
                while let (Some(f), Some(v)) = (fields.next(), fields.next()) {
                    let slot = decimal_id(&f)? as usize;
                    *records.get_mut(slot).ok_or_else(|| bad("record field"))? = Some(v);
                }
                Conversion {
                    old: key.to_vec(),
                    new: k.doc_bucket(bucket),
                    bytes: build_bucket(&records),
                    set: true,
                }
            }
            Old::Block(table, block_key) => {
                let bytes = bulk(reply)?.unwrap_or_default();
                if !bytes.len().is_multiple_of(8 + ID_BYTES) {
                    return Err(bad("block list"));
                }
                Conversion {
                    old: key.to_vec(),
                    new: k.block(table, block_bucket(block_key)),
                    bytes,
                    set: false,
                }
            }
            Old::Bands(old_bucket) => {
                let bytes = bulk(reply)?.unwrap_or_default();
                // The band key's top 48 bits: 18 from the bucket, 32 from
                // the tag (bits 16 to 47), overlapping in 2.
                let top = u64::from(old_bucket) >> 2 << 48;
                let entries = unpack(&bytes, 4, "layout 2 band bucket")?;
                Conversion {
                    old: key.to_vec(),
                    new: k.band_bucket(bucket_of(top)),
                    bytes: pack_bands(
                        entries
                            .into_iter()
                            .map(|(tag, id)| (band_tag(top | tag << 16), id)),
                    )?,
                    set: false,
                }
            }
        })
    }
}

/// A key of layout 2 that layout 3 replaces, from its name after `{NS}:`.
enum Old {
    /// `d:BUCKET`
    Records(u64),
    /// `b:T KEY8`
    Block(usize, u64),
    /// `l:BUCKET3` (18 bits)
    Bands(u32),
}

fn old_kind(rest: &[u8]) -> Option<Old> {
    match rest {
        [b'd', b':', n @ ..] => decimal_id(n).ok().map(Old::Records),
        [b'b', b':', t, key @ ..] if key.len() == 8 => {
            let k: [u8; 8] = key.try_into().ok()?;
            Some(Old::Block(usize::from(*t), u64::from_be_bytes(k)))
        }
        [b'l', b':', a, b, c] => Some(Old::Bands(u32::from_be_bytes([0, *a, *b, *c]))),
        _ => None,
    }
}

/// A value telling this migration's lock from another process's: the
/// process id and the time.
fn lock_token() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{t}", std::process::id())
}
