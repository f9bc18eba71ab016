//! Optimistic transactions (see *Atomicity* in the module docs): a
//! transaction's reads, with the versions of their stripes, its queued
//! writes, and the commit script that validates and applies them.

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;

use redis::{Connection, Pipeline, Value};
use rustc_hash::{FxHashMap, FxHashSet};

use super::RedisStore;
use super::conn::backoff;
use super::layout::{Keys, decimal_id, pack, pack_bands, unpack, unpack_bands};
use crate::error::{Error, Result};
use crate::store::{BAND_POSTINGS, DocId, DocRecord, NEXT_ID_META, UrlRecord};

impl RedisStore {
    /// Runs `f` in optimistic transactions until one commits (see the
    /// module docs): `f` reads, recording the versions of what it read,
    /// and queues its writes; the commit script applies them only if
    /// those versions are unchanged, else `f` runs again.
    pub(super) fn run<R>(&self, mut f: impl FnMut(&mut Tx<'_>) -> Result<R>) -> Result<R> {
        let attempts = self.options.max_attempts.max(1);
        for attempt in 0..attempts {
            let mut tx = Tx::new(self.conn()?, self);
            let outcome = f(&mut tx);
            let value = match outcome {
                Ok(v) => v,
                Err(e) => {
                    self.round_trips
                        .fetch_add(tx.round_trips.get(), Ordering::Relaxed);
                    // A connection that failed is dropped, not pooled.
                    if !matches!(e, Error::Disconnected { .. }) {
                        self.pool.lock().push(tx.into_conn());
                    }
                    return Err(e);
                }
            };
            let committed = tx.commit();
            self.round_trips
                .fetch_add(tx.round_trips.get(), Ordering::Relaxed);
            match committed {
                Ok(true) => {
                    self.pool.lock().push(tx.into_conn());
                    return Ok(value);
                }
                Ok(false) => {
                    self.conflicts.fetch_add(1, Ordering::Relaxed);
                    self.pool.lock().push(tx.into_conn());
                    backoff(attempt);
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Contention {
            url: self.url.clone(),
            attempts,
        })
    }
}

pub(super) fn bulk(v: Value) -> Result<Option<Vec<u8>>> {
    match v {
        Value::Nil => Ok(None),
        Value::BulkString(b) => Ok(Some(b)),
        Value::SimpleString(s) => Ok(Some(s.into_bytes())),
        Value::Int(i) => Ok(Some(i.to_string().into_bytes())),
        other => Err(Error::Corrupt(format!("unexpected Redis reply {other:?}"))),
    }
}

pub(super) fn members(v: Value) -> Result<Vec<Vec<u8>>> {
    match v {
        Value::Nil => Ok(Vec::new()),
        Value::Array(items) | Value::Set(items) => items
            .into_iter()
            .map(|i| bulk(i)?.ok_or_else(|| Error::Corrupt("nil sorted set member".into())))
            .collect(),
        other => Err(Error::Corrupt(format!("unexpected Redis reply {other:?}"))),
    }
}

/// What a transaction reads, by table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum Key {
    Url(u128),
    Title(u128),
    /// A block table's list (`{NS}:k:T BUCKET2`), by table and block
    /// bucket ([`super::layout::block_bucket`]).
    Block(usize, u16),
    /// A band bucket (`{NS}:j:BUCKET3`), by number.
    Bucket(u32),
    Doc(DocId),
    Meta(String),
}

impl Key {
    /// Whether the key is a packed string (block list, band bucket),
    /// read with `MGET` and written whole with `MSET` at the commit.
    fn packed(&self) -> bool {
        matches!(self, Key::Block(..) | Key::Bucket(_))
    }
}

/// A key's value as this transaction sees it: as read, with its own
/// writes applied.
#[derive(Debug)]
pub(super) enum Val {
    Url(Option<UrlRecord>),
    /// The newest `limit` ids, newest first; `more`: older ones exist.
    Title {
        newest: Vec<DocId>,
        limit: usize,
        more: bool,
    },
    /// (fingerprint, id), in stored order.
    Block(Vec<(u64, DocId)>),
    /// (band tag, id), in stored order; at most [`BAND_POSTINGS`] per tag.
    Bucket(Vec<(u32, DocId)>),
    Doc(Option<Box<DocRecord>>),
    Meta(Option<Vec<u8>>),
}

/// The packed bytes of a block list or band bucket (empty: delete the key).
pub(super) fn encode_packed(val: &Val) -> Result<Vec<u8>> {
    encode_tail(val, packed_len(val))
}

/// The packed bytes of a value's last `n` entries: what a transaction that
/// only added `n` entries to a list appends to it (`APPENDX`).
fn encode_tail(val: &Val, n: usize) -> Result<Vec<u8>> {
    match val {
        Val::Block(entries) => pack(
            entries[entries.len().saturating_sub(n)..]
                .iter()
                .map(|&(fp, id)| (fp.to_be_bytes(), id)),
        ),
        Val::Bucket(entries) => pack_bands(entries[entries.len().saturating_sub(n)..].iter().copied()),
        _ => Err(Error::Corrupt("not a packed value".into())),
    }
}

/// Entries of a packed value ([`Val::Block`], [`Val::Bucket`]).
fn packed_len(val: &Val) -> usize {
    match val {
        Val::Block(e) => e.len(),
        Val::Bucket(e) => e.len(),
        _ => 0,
    }
}

/// A write of this transaction, replayed on a key read after it.
#[derive(Clone, Debug)]
pub(super) enum Op {
    PutUrl(UrlRecord),
    DelUrl,
    AddId(DocId),
    RemoveId(DocId),
    AddPosting(u64, DocId),
    RemovePosting(u64, DocId),
    AddTagged(u32, DocId),
    RemoveTagged(u32, DocId),
    PutDoc(Box<DocRecord>),
    DelDoc,
    SetMeta(Vec<u8>),
}

impl Val {
    /// Applies a write; false when the value can no longer be trusted
    /// (a title list that lost an entry from its window) and must be read
    /// again.
    fn apply(&mut self, op: &Op) -> bool {
        match (self, op) {
            (Val::Url(v), Op::PutUrl(r)) => *v = Some(r.clone()),
            (Val::Url(v), Op::DelUrl) => *v = None,
            (Val::Title { newest, .. }, Op::AddId(id)) => newest.insert(0, *id),
            (Val::Title { newest, more, .. }, Op::RemoveId(id)) => {
                let before = newest.len();
                newest.retain(|x| x != id);
                if newest.len() != before && *more {
                    return false;
                }
            }
            (Val::Block(v), Op::AddPosting(fp, id)) => v.push((*fp, *id)),
            (Val::Block(v), Op::RemovePosting(fp, id)) => v.retain(|e| *e != (*fp, *id)),
            (Val::Bucket(v), Op::AddTagged(tag, id)) => {
                v.push((*tag, *id));
                // The band's oldest entries beyond its cap go (counted
                // first: a bucket holds ~150 entries, rarely many of one
                // band).
                if v.iter().filter(|e| e.0 == *tag).count() > BAND_POSTINGS {
                    let mut same: Vec<DocId> = v.iter().filter(|e| e.0 == *tag).map(|e| e.1).collect();
                    same.sort_unstable();
                    let gone = &same[..same.len() - BAND_POSTINGS];
                    v.retain(|e| e.0 != *tag || !gone.contains(&e.1));
                }
            }
            (Val::Bucket(v), Op::RemoveTagged(tag, id)) => v.retain(|e| *e != (*tag, *id)),
            (Val::Doc(v), Op::PutDoc(r)) => *v = Some(r.clone()),
            (Val::Doc(v), Op::DelDoc) => *v = None,
            (Val::Meta(v), Op::SetMeta(b)) => *v = Some(b.clone()),
            _ => {}
        }
        true
    }
}

/// The commit script: see `lua/commit.lua` (its KEYS, ARGV and replies).
pub(super) const COMMIT: &str = include_str!("lua/commit.lua");

/// The script reading one record of a record bucket: see
/// `lua/read_record.lua`.
pub(super) const READ_RECORD: &str = include_str!("lua/read_record.lua");

/// Most items (members, keys, pairs) one merged command carries: the
/// commit script passes a command's arguments through Lua's stack, which
/// holds 8000.
const MERGE_ITEMS: usize = 2000;

/// Fewer, larger commands with the same effect: every write command names
/// one key (its second argument); per key, consecutive `ZADD`s (or
/// `ZREM`s) become one, in order; keys written by exactly one `SET` are
/// set together by `MSET`, keys only deleted by one `DEL`; consecutive
/// `RSETC`s (`RDELC`s) of one record bucket become one. Commands on
/// different keys are independent, so only each key's own order is kept.
/// A batch of 1000 new documents then costs a few `MSET`s for its ~14,000
/// block lists and band buckets, ~16 `RSETC`s for its records, and one
/// command per title, instead of ~15 commands per document.
fn merge_writes<'w>(writes: impl IntoIterator<Item = &'w Vec<Vec<u8>>>) -> Vec<Vec<Vec<u8>>> {
    let mut order: Vec<&[u8]> = Vec::new();
    let mut per_key: FxHashMap<&[u8], Vec<&Vec<Vec<u8>>>> = FxHashMap::default();
    for w in writes {
        let Some(key) = w.get(1) else { continue };
        per_key
            .entry(key.as_slice())
            .or_insert_with(|| {
                order.push(key.as_slice());
                Vec::new()
            })
            .push(w);
    }
    let mut out: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut mset: Vec<Vec<u8>> = Vec::new();
    let mut del: Vec<Vec<u8>> = Vec::new();
    for key in order {
        let cmds = &per_key[key];
        match cmds.as_slice() {
            [one] if one[0] == b"SET" && one.len() == 3 => {
                mset.push(one[1].clone());
                mset.push(one[2].clone());
                continue;
            }
            [one] if one[0] == b"DEL" && one.len() == 2 => {
                del.push(one[1].clone());
                continue;
            }
            _ => {}
        }
        let mut i = 0;
        while i < cmds.len() {
            let verb = &cmds[i][0];
            let mut merged = cmds[i].clone();
            let mut j = i + 1;
            // Arguments before the items, and arguments per item.
            let shape = match verb.as_slice() {
                b"ZADD" => Some((2, 2)),
                b"ZREM" => Some((2, 1)),
                b"RSETC" => Some((5, 2)),
                b"RDELC" => Some((5, 1)),
                _ => None,
            };
            if let Some((prefix, arity)) = shape {
                while j < cmds.len()
                    && cmds[j][0] == *verb
                    && cmds[j].len() > prefix
                    && (merged.len() - prefix) / arity < MERGE_ITEMS
                {
                    merged.extend_from_slice(&cmds[j][prefix..]);
                    j += 1;
                }
            }
            out.push(merged);
            i = j;
        }
    }
    for pairs in mset.chunks(2 * MERGE_ITEMS) {
        let mut c = vec![b"MSET".to_vec()];
        c.extend_from_slice(pairs);
        out.push(c);
    }
    for keys in del.chunks(MERGE_ITEMS) {
        let mut c = vec![b"DEL".to_vec()];
        c.extend_from_slice(keys);
        out.push(c);
    }
    out
}

/// Version stripes: every versioned key maps to one of these counters in
/// `{NS}:v`. More stripes, fewer false conflicts; 2^16 cost ~4 MB.
const STRIPES: u64 = 1 << 16;

/// A key's version stripe: FNV-1a of its name (the same in every process).
fn stripe(key: &[u8]) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in key {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % STRIPES) as u32
}

/// One attempt of a transaction on one connection.
pub(super) struct Tx<'a> {
    conn: RefCell<Connection>,
    store: &'a RedisStore,
    pub(super) cache: RefCell<FxHashMap<Key, Val>>,
    /// Every write so far, per key, to replay on a later read of the key.
    ops: FxHashMap<Key, Vec<Op>>,
    /// Version of each stripe as first read (`0` when never bumped).
    versions: RefCell<FxHashMap<u32, Vec<u8>>>,
    /// Stripes this transaction writes.
    written: FxHashSet<u32>,
    /// Queued write commands, run by the commit script.
    writes: RefCell<Vec<Vec<Vec<u8>>>>,
    /// Packed keys written: set whole at the commit, or appended to when
    /// this transaction only added entries.
    dirty: FxHashSet<Key>,
    /// Entries of each packed key as read, before this transaction's own
    /// writes were applied.
    read_len: RefCell<FxHashMap<Key, usize>>,
    /// Document ids reserved and not yet handed out: [next, end).
    pub(super) ids: Cell<(DocId, DocId)>,
    /// Ids the next reservation takes (doubling, for transactions that
    /// did not announce how many documents they may insert).
    pub(super) chunk: Cell<u64>,
    round_trips: Cell<u64>,
}

impl<'a> Tx<'a> {
    fn new(conn: Connection, store: &'a RedisStore) -> Tx<'a> {
        Tx {
            conn: RefCell::new(conn),
            store,
            cache: RefCell::new(FxHashMap::default()),
            ops: FxHashMap::default(),
            versions: RefCell::new(FxHashMap::default()),
            written: FxHashSet::default(),
            writes: RefCell::new(Vec::new()),
            dirty: FxHashSet::default(),
            read_len: RefCell::new(FxHashMap::default()),
            ids: Cell::new((0, 0)),
            chunk: Cell::new(1),
            round_trips: Cell::new(0),
        }
    }

    fn into_conn(self) -> Connection {
        self.conn.into_inner()
    }

    pub(super) fn keys(&self) -> &Keys {
        &self.store.keys
    }

    pub(super) fn query(&self, pipe: &Pipeline) -> Result<Vec<Value>> {
        self.round_trips.set(self.round_trips.get() + 1);
        let mut conn = self.conn.borrow_mut();
        pipe.query::<Vec<Value>>(&mut *conn)
            .map_err(|e| self.store.fail(e, false))
    }

    /// Runs the commit script; false when a version changed (nothing was
    /// written). A transaction that read no versioned key and wrote nothing
    /// has nothing to check.
    fn commit(&self) -> Result<bool> {
        // Packed keys written without being read (purges, bulk loads) are
        // read now, with their versions, so that their new values are
        // built on what the script validates.
        let missing: Vec<Key> = {
            let cache = self.cache.borrow();
            self.dirty
                .iter()
                .filter(|k| !cache.contains_key(*k))
                .cloned()
                .collect()
        };
        self.fetch(&missing, crate::TITLE_CANDIDATES, 0)?;
        let mut packed = Vec::with_capacity(self.dirty.len());
        {
            let cache = self.cache.borrow();
            for k in &self.dirty {
                let val = cache
                    .get(k)
                    .ok_or_else(|| Error::Corrupt("a written key is missing".into()))?;
                let rk = self.redis_key(k);
                // Only added to: the new entries are appended on the
                // server, which holds the value read (its stripe is
                // validated), rather than the whole list sent back.
                let ops = self.ops.get(k).map_or(&[][..], Vec::as_slice);
                let adds = ops
                    .iter()
                    .filter(|op| matches!(op, Op::AddPosting(..) | Op::AddTagged(..)))
                    .count();
                let read = self.read_len.borrow().get(k).copied();
                if adds == ops.len() && adds > 0 && read.is_some_and(|r| r + adds == packed_len(val)) {
                    packed.push(vec![b"APPENDX".to_vec(), rk, encode_tail(val, adds)?]);
                    continue;
                }
                let bytes = encode_packed(val)?;
                packed.push(if bytes.is_empty() {
                    vec![b"DEL".to_vec(), rk]
                } else {
                    vec![b"SET".to_vec(), rk, bytes]
                });
            }
        }
        let versions = self.versions.borrow();
        let writes = self.writes.borrow();
        let nothing_written = writes.is_empty() && packed.is_empty();
        if nothing_written && versions.is_empty() {
            return Ok(true);
        }
        let script = &self.store.commit;
        let mut inv = script.key(self.keys().versions());
        inv.key(self.keys().commits());
        inv.arg(versions.len());
        for (s, v) in versions.iter() {
            inv.arg(*s).arg(v.as_slice());
        }
        inv.arg(self.written.len());
        for s in &self.written {
            inv.arg(*s);
        }
        for w in merge_writes(writes.iter().chain(&packed)) {
            inv.arg(w.len());
            for a in &w {
                inv.arg(a.as_slice());
            }
        }
        self.round_trips.set(self.round_trips.get() + 1);
        let mut conn = self.conn.borrow_mut();
        match inv.invoke::<i64>(&mut *conn) {
            Ok(r) => Ok(r == 1),
            Err(e) => {
                let sent = !e.is_connection_refusal();
                Err(self.store.fail(e, sent && !nothing_written))
            }
        }
    }

    /// The Redis key behind a logical key.
    fn redis_key(&self, key: &Key) -> Vec<u8> {
        let k = self.keys();
        match key {
            Key::Url(d) => k.url(*d),
            Key::Title(d) => k.title(*d),
            Key::Block(t, b) => k.block(*t, *b),
            Key::Bucket(b) => k.band_bucket(*b),
            Key::Doc(id) => k.doc(*id).0,
            Key::Meta(name) if name == NEXT_ID_META => k.counter(),
            Key::Meta(name) => k.meta(name),
        }
    }

    /// Reads every key of `wanted` not yet known, and the versions of
    /// their stripes not yet known (first, in the same pipeline, so any
    /// write after the version was read shows at the commit), in one round
    /// trip; applies this transaction's own writes to what was read.
    /// Documents are not versioned: a record never changes once written,
    /// and a check learns of a document only from an index key, which is.
    /// `reserve`: document ids to reserve in the same round trip.
    pub(super) fn fetch(&self, wanted: &[Key], title_limit: usize, reserve: u64) -> Result<()> {
        let mut todo: Vec<&Key> = Vec::new();
        {
            let cache = self.cache.borrow();
            let mut seen = FxHashSet::default();
            for k in wanted {
                if !cache.contains_key(k) && seen.insert(k) {
                    todo.push(k);
                }
            }
        }
        if todo.is_empty() && reserve == 0 {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        let stripes = self.unread_stripes(&todo);
        if !stripes.is_empty() {
            pipe.cmd("HMGET").arg(self.keys().versions()).arg(&stripes);
        }
        // Packed keys: all in one `MGET` (one command, however many keys).
        let (packed, todo): (Vec<&Key>, Vec<&Key>) = todo.into_iter().partition(|k| k.packed());
        if !packed.is_empty() {
            let mut mget = redis::cmd("MGET");
            for k in &packed {
                mget.arg(self.redis_key(k));
            }
            pipe.add_command(mget);
        }
        // Records are read by a script (one record, not its bucket), loaded
        // first in the same pipeline: a restarted server has none.
        let reads_docs = todo.iter().any(|k| matches!(k, Key::Doc(_)));
        if reads_docs {
            pipe.cmd("SCRIPT").arg("LOAD").arg(READ_RECORD);
        }
        for k in &todo {
            self.queue_read(&mut pipe, k, title_limit);
        }
        if reserve > 0 {
            pipe.cmd("INCRBY").arg(self.keys().counter()).arg(reserve);
        }
        let mut replies = self.query(&pipe)?.into_iter();
        let mut next = || {
            replies
                .next()
                .ok_or_else(|| Error::Corrupt("missing Redis reply".into()))
        };
        if !stripes.is_empty() {
            let got = match next()? {
                Value::Array(items) => items,
                other => return Err(Error::Corrupt(format!("HMGET replied {other:?}"))),
            };
            if got.len() != stripes.len() {
                return Err(Error::Corrupt("HMGET reply of another length".into()));
            }
            let mut versions = self.versions.borrow_mut();
            for (s, v) in stripes.iter().zip(got) {
                versions.insert(*s, bulk(v)?.unwrap_or_else(|| b"0".to_vec()));
            }
        }
        let mut fetched = Vec::with_capacity(todo.len() + packed.len());
        let mut values = Vec::new();
        if !packed.is_empty() {
            values = match next()? {
                Value::Array(items) if items.len() == packed.len() => items,
                other => return Err(Error::Corrupt(format!("MGET replied {other:?}"))),
            };
        }
        if reads_docs {
            next()?;
        }
        let mut pairs: Vec<(&Key, Value)> = packed.iter().copied().zip(values).collect();
        for k in &todo {
            pairs.push((*k, next()?));
        }
        for (k, reply) in pairs {
            let mut val = self.decode(k, reply, title_limit)?;
            if k.packed() {
                self.read_len.borrow_mut().insert(k.clone(), packed_len(&val));
            }
            for op in self.ops.get(k).into_iter().flatten() {
                val.apply(op);
            }
            if let Val::Title { newest, .. } = &mut val {
                newest.truncate(title_limit);
            }
            fetched.push((k.clone(), val));
        }
        if reserve > 0 {
            let end = match next()? {
                Value::Int(n) if n >= 0 => n as u64,
                other => return Err(Error::Corrupt(format!("INCRBY replied {other:?}"))),
            };
            self.ids.set((end.saturating_sub(reserve), end));
        }
        self.cache.borrow_mut().extend(fetched);
        Ok(())
    }

    /// The version stripes of `keys` this transaction has not read yet
    /// (records have none), each once.
    fn unread_stripes(&self, keys: &[&Key]) -> Vec<u32> {
        let versions = self.versions.borrow();
        let mut seen = FxHashSet::default();
        let mut stripes = Vec::new();
        for k in keys {
            if !matches!(k, Key::Doc(_)) {
                let s = stripe(&self.redis_key(k));
                if !versions.contains_key(&s) && seen.insert(s) {
                    stripes.push(s);
                }
            }
        }
        stripes
    }

    /// Queues the read of one key that is not a packed list (those go in
    /// one `MGET`): one reply each, in the order queued.
    fn queue_read(&self, pipe: &mut Pipeline, key: &Key, title_limit: usize) {
        let rk = self.redis_key(key);
        match key {
            Key::Block(..) | Key::Bucket(_) => {}
            Key::Url(_) | Key::Meta(_) => {
                pipe.cmd("GET").arg(rk);
            }
            Key::Doc(id) => {
                pipe.cmd("EVALSHA")
                    .arg(self.store.read_record.get_hash())
                    .arg(1)
                    .arg(rk)
                    .arg(self.keys().doc(*id).1);
            }
            Key::Title(_) => {
                // One more than wanted (and than this transaction removes),
                // to learn whether older ids exist.
                pipe.cmd("ZRANGE")
                    .arg(rk)
                    .arg(0)
                    .arg(title_limit + self.removes(key))
                    .arg("REV");
            }
        }
    }

    /// Removals this transaction made from `key` (a title list fetches that
    /// many more ids, to still fill its window).
    fn removes(&self, key: &Key) -> usize {
        self.ops
            .get(key)
            .map_or(0, |o| o.iter().filter(|op| matches!(op, Op::RemoveId(_))).count())
    }

    fn decode(&self, key: &Key, reply: Value, title_limit: usize) -> Result<Val> {
        Ok(match key {
            Key::Url(_) => Val::Url(bulk(reply)?.map(|b| UrlRecord::decode(&b)).transpose()?),
            Key::Doc(_) => Val::Doc(
                bulk(reply)?
                    .map(|b| DocRecord::decode(&b).map(Box::new))
                    .transpose()?,
            ),
            Key::Meta(name) if name == NEXT_ID_META => Val::Meta(
                bulk(reply)?
                    .map(|b| decimal_id(&b).map(|id| id.to_le_bytes().to_vec()))
                    .transpose()?,
            ),
            Key::Meta(_) => Val::Meta(bulk(reply)?),
            Key::Title(_) => {
                let ids = members(reply)?
                    .iter()
                    .map(|m| decimal_id(m))
                    .collect::<Result<Vec<_>>>()?;
                Val::Title {
                    more: ids.len() > title_limit + self.removes(key),
                    newest: ids,
                    limit: title_limit,
                }
            }
            Key::Block(..) => {
                let bytes = bulk(reply)?.unwrap_or_default();
                Val::Block(unpack(&bytes, 8, "block list")?)
            }
            Key::Bucket(_) => {
                let bytes = bulk(reply)?.unwrap_or_default();
                Val::Bucket(unpack_bands(&bytes)?)
            }
        })
    }

    /// Runs `read` on the value of `key`, fetching it first if needed.
    pub(super) fn with<T>(&self, key: Key, read: impl FnOnce(&Val) -> T) -> Result<T> {
        if !self.cache.borrow().contains_key(&key) {
            self.fetch(std::slice::from_ref(&key), crate::TITLE_CANDIDATES, 0)?;
        }
        let cache = self.cache.borrow();
        let val = cache
            .get(&key)
            .ok_or_else(|| Error::Corrupt("a fetched key is missing".into()))?;
        Ok(read(val))
    }

    /// Records a write of `key`: replayed on later reads, applied to the
    /// cached value if any, its stripe bumped at commit (documents are not
    /// versioned), and `cmd` queued.
    pub(super) fn record(&mut self, key: Key, op: Op, cmd: Vec<Vec<u8>>) {
        if !matches!(key, Key::Doc(_)) {
            self.written.insert(stripe(&self.redis_key(&key)));
        }
        self.writes.get_mut().push(cmd);
        let cache = self.cache.get_mut();
        match cache.get_mut(&key) {
            Some(v) => {
                if !v.apply(&op) {
                    cache.remove(&key);
                }
            }
            // A whole new value needs no read to be known (a batch then
            // reads its own new documents without a round trip).
            None => {
                let whole = match &op {
                    Op::PutDoc(r) => Some(Val::Doc(Some(r.clone()))),
                    Op::DelDoc => Some(Val::Doc(None)),
                    _ => None,
                };
                if let Some(v) = whole {
                    cache.insert(key.clone(), v);
                }
            }
        }
        self.ops.entry(key).or_default().push(op);
    }

    /// Records a write of a packed key: replayed on later reads, applied to
    /// the cached value if any, its stripe bumped and its whole new value
    /// set at the commit.
    pub(super) fn record_packed(&mut self, key: Key, op: Op) {
        self.written.insert(stripe(&self.redis_key(&key)));
        if let Some(v) = self.cache.get_mut().get_mut(&key) {
            v.apply(&op);
        }
        self.ops.entry(key.clone()).or_default().push(op);
        self.dirty.insert(key);
    }

    /// Queues a command that goes with a recorded write (index entries
    /// beside the main key).
    pub(super) fn also(&mut self, cmd: Vec<Vec<u8>>) {
        self.writes.get_mut().push(cmd);
    }
}

#[cfg(test)]
mod tests {
    use super::super::layout::{BAND_ENTRY, ID_BYTES, check_band_id, check_id};
    use super::*;

    #[test]
    fn a_bucket_keeps_the_newest_entries_of_each_band() {
        let mut v = Val::Bucket(Vec::new());
        for id in 0..(BAND_POSTINGS as u64 + 3) {
            v.apply(&Op::AddTagged(1, id));
            v.apply(&Op::AddTagged(2, 1000 + id));
        }
        v.apply(&Op::RemoveTagged(2, 1000 + BAND_POSTINGS as u64 + 2));
        let Val::Bucket(entries) = v else { unreachable!() };
        let of = |tag: u32| {
            entries
                .iter()
                .filter(|e| e.0 == tag)
                .map(|e| e.1)
                .collect::<Vec<_>>()
        };
        assert_eq!(of(1), (3..BAND_POSTINGS as u64 + 3).collect::<Vec<_>>());
        assert_eq!(of(2), (1003..1000 + BAND_POSTINGS as u64 + 2).collect::<Vec<_>>());
    }

    #[test]
    fn merged_writes_keep_each_keys_order() {
        let c = |parts: &[&str]| parts.iter().map(|p| p.as_bytes().to_vec()).collect::<Vec<_>>();
        let writes = vec![
            c(&["ZADD", "a", "1", "x"]),
            c(&["SET", "d1", "r1"]),
            c(&["ZADD", "b", "1", "y"]),
            c(&["ZADD", "a", "2", "z"]),
            c(&["ZREM", "a", "x"]),
            c(&["ZADD", "a", "3", "x"]),
            c(&["SET", "d2", "r2"]),
            c(&["DEL", "d3"]),
            c(&["SET", "d1", "r1b"]),
        ];
        assert_eq!(
            merge_writes(&writes),
            vec![
                c(&["ZADD", "a", "1", "x", "2", "z"]),
                c(&["ZREM", "a", "x"]),
                c(&["ZADD", "a", "3", "x"]),
                c(&["SET", "d1", "r1"]),
                c(&["SET", "d1", "r1b"]),
                c(&["ZADD", "b", "1", "y"]),
                c(&["MSET", "d2", "r2"]),
                c(&["DEL", "d3"]),
            ]
        );
    }

    #[test]
    fn packed_values_round_trip_and_refuse_what_does_not_fit() -> Result<()> {
        let block = Val::Block(vec![
            (u64::MAX, 0),
            (1, (1 << 40) - 1),
            (0x0102_0304_0506_0708, 300),
        ]);
        let bytes = encode_packed(&block)?;
        assert_eq!(bytes.len(), 3 * (8 + ID_BYTES));
        let Val::Block(want) = &block else { unreachable!() };
        assert_eq!(&unpack(&bytes, 8, "block")?, want);
        let bucket = Val::Bucket(vec![((1 << 20) - 1, 7), (0, (1 << 36) - 1), (0x5_4321, 1 << 20)]);
        let bytes = encode_packed(&bucket)?;
        assert_eq!(bytes.len(), 3 * BAND_ENTRY);
        let Val::Bucket(want) = &bucket else {
            unreachable!()
        };
        assert_eq!(&unpack_bands(&bytes)?, want);
        assert!(unpack_bands(&bytes[1..]).is_err());
        assert!(encode_packed(&Val::Bucket(vec![(1, 1 << 36)])).is_err());
        assert!(encode_packed(&Val::Block(vec![(1, 1 << 40)])).is_err());
        assert!(check_id(1 << 40).is_err() && check_id((1 << 40) - 1).is_ok());
        assert!(check_band_id(1 << 36).is_err() && check_band_id((1 << 36) - 1).is_ok());
        Ok(())
    }
}
