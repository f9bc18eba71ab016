//! The tiers' tables ([`ReadTables`], [`Tables`]) over a Redis
//! transaction: reads through its cache, writes queued for its commit.

use redis::Value;

use super::layout::{
    DOC_BUCKET_BITS, DOC_SLOTS, band_tag, block_bucket, bucket_of, bucket_record, check_band_id, check_id,
    decimal_id, num,
};
use super::tx::{Key, Op, Tx, Val, bulk, members};
use crate::error::{Error, Result};
use crate::fingerprint::Fingerprint;
use crate::store::{BAND_POSTINGS, DocId, DocRecord, NEXT_ID_META, Prefetch, ReadTables, Tables, UrlRecord};

impl ReadTables for Tx<'_> {
    fn prefetch(&self, keys: &Prefetch) -> Result<()> {
        let mut wanted =
            Vec::with_capacity(keys.urls.len() + keys.titles.len() + keys.blocks.len() + keys.bands.len());
        wanted.extend(keys.urls.iter().map(|&d| Key::Url(d)));
        wanted.extend(keys.titles.iter().map(|&d| Key::Title(d)));
        wanted.extend(keys.blocks.iter().map(|&(t, k)| Key::Block(t, block_bucket(k))));
        wanted.extend(keys.bands.iter().map(|&b| Key::Bucket(bucket_of(b))));
        let (next, end) = self.ids.get();
        let reserve = (keys.documents as u64).saturating_sub(end - next);
        self.fetch(&wanted, crate::TITLE_CANDIDATES, reserve)
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.with(Key::Meta(key.to_string()), |v| match v {
            Val::Meta(m) => m.clone(),
            _ => None,
        })
    }

    fn url(&self, digest: u128) -> Result<Option<UrlRecord>> {
        self.with(Key::Url(digest), |v| match v {
            Val::Url(u) => u.clone(),
            _ => None,
        })
    }

    fn title_docs(&self, digest: u128, limit: usize, out: &mut Vec<DocId>) -> Result<()> {
        let key = Key::Title(digest);
        let enough = match self.cache.borrow().get(&key) {
            Some(Val::Title { limit: l, more, .. }) => *l >= limit || !*more,
            _ => false,
        };
        if !enough {
            self.cache.borrow_mut().remove(&key);
            self.fetch(std::slice::from_ref(&key), limit, 0)?;
        }
        self.with(key, |v| {
            if let Val::Title { newest, .. } = v {
                out.extend(newest.iter().take(limit));
            }
        })
    }

    fn candidates(&self, table: usize, key: u64, out: &mut Vec<(Fingerprint, DocId)>) -> Result<()> {
        // The whole list: postings of other block keys in the same bucket
        // too, which the caller's Hamming filter rejects.
        self.with(Key::Block(table, block_bucket(key)), |v| {
            if let Val::Block(list) = v {
                out.extend(list.iter().map(|&(fp, id)| (Fingerprint::new(fp), id)));
            }
        })
    }

    /// The bucket's entries of this band, oldest first, the newest
    /// [`BAND_POSTINGS`] (a bucket written blind by a bulk load may hold
    /// more until its next write).
    fn band_docs(&self, key: u64, out: &mut Vec<DocId>) -> Result<()> {
        let tag = band_tag(key);
        self.with(Key::Bucket(bucket_of(key)), |v| {
            if let Val::Bucket(entries) = v {
                let mut ids: Vec<DocId> = entries.iter().filter(|e| e.0 == tag).map(|e| e.1).collect();
                ids.sort_unstable();
                let excess = ids.len().saturating_sub(BAND_POSTINGS);
                out.extend_from_slice(&ids[excess..]);
            }
        })
    }

    fn doc(&self, id: DocId) -> Result<Option<DocRecord>> {
        self.with(Key::Doc(id), |v| match v {
            Val::Doc(d) => d.as_deref().cloned(),
            _ => None,
        })
    }

    /// The expired digests from `{NS}:ut` (not versioned: they only
    /// nominate; each URL key is then read with its version, so a URL
    /// recorded again meanwhile aborts the purge's transaction).
    fn urls_seen_before(&self, cutoff: u64, limit: usize, out: &mut Vec<u128>) -> Result<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("ZRANGE")
            .arg(self.keys().url_times())
            .arg("-inf")
            .arg(format!("({cutoff}"))
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(limit);
        let reply = self.query(&pipe)?.pop().unwrap_or(Value::Nil);
        let mut keys = Vec::new();
        for m in members(reply)? {
            let d: [u8; 16] = m
                .as_slice()
                .try_into()
                .map_err(|_| Error::Corrupt(format!("URL digest of {} bytes", m.len())))?;
            let d = u128::from_be_bytes(d);
            out.push(d);
            keys.push(Key::Url(d));
        }
        self.fetch(&keys, crate::TITLE_CANDIDATES, 0)
    }

    /// The oldest buckets from `{NS}:o`, then every record of each (the
    /// bucket's whole value), until `limit` documents are found. Records
    /// this transaction wrote or removed are seen as it left them. Two
    /// processes purging the same documents at once both remove them
    /// (harmlessly); the commit script counts only the slots it empties,
    /// so the document count stays exact.
    fn oldest_docs(&self, limit: usize, out: &mut Vec<(DocId, DocRecord)>) -> Result<()> {
        let per_bucket = DOC_SLOTS;
        let mut from = 0usize;
        let mut ids: Vec<DocId> = Vec::new();
        while ids.len() < limit {
            let want = (limit - ids.len()).div_ceil(per_bucket) + 1;
            let mut pipe = redis::pipe();
            pipe.cmd("ZRANGE")
                .arg(self.keys().order())
                .arg(from)
                .arg(from + want - 1);
            let reply = self.query(&pipe)?.pop().unwrap_or(Value::Nil);
            let buckets = members(reply)?
                .iter()
                .map(|m| decimal_id(m))
                .collect::<Result<Vec<_>>>()?;
            if buckets.is_empty() {
                break;
            }
            from += buckets.len();
            let mut pipe = redis::pipe();
            for &b in &buckets {
                pipe.cmd("GET").arg(self.keys().doc_bucket(b));
            }
            let replies = self.query(&pipe)?;
            let mut cache = self.cache.borrow_mut();
            for (&b, reply) in buckets.iter().zip(replies) {
                let Some(value) = bulk(reply)? else { continue };
                for slot in 0..DOC_SLOTS {
                    let Some(rec) = bucket_record(&value, slot)? else {
                        continue;
                    };
                    let id = (b << DOC_BUCKET_BITS) | slot as u64;
                    ids.push(id);
                    // This transaction's own view of a record wins.
                    if let std::collections::hash_map::Entry::Vacant(e) = cache.entry(Key::Doc(id)) {
                        e.insert(Val::Doc(Some(Box::new(DocRecord::decode(rec)?))));
                    }
                }
            }
            if buckets.len() < want {
                break;
            }
        }
        ids.sort_unstable();
        ids.truncate(limit);
        for id in ids {
            if let Some(rec) = self.doc(id)? {
                out.push((id, rec));
            }
        }
        Ok(())
    }

    fn doc_count(&self) -> Result<u64> {
        let mut pipe = redis::pipe();
        pipe.cmd("GET").arg(self.keys().count());
        match self.query(&pipe)?.pop() {
            None | Some(Value::Nil) => Ok(0),
            Some(v) => match bulk(v)? {
                Some(b) => Ok(decimal_id(&b).unwrap_or(0)),
                None => Ok(0),
            },
        }
    }
}

impl Tables for Tx<'_> {
    fn set_meta(&mut self, key: &str, value: &[u8]) -> Result<()> {
        let cmd = if key == NEXT_ID_META {
            let next = u64::from_le_bytes(
                value
                    .try_into()
                    .map_err(|_| Error::Corrupt(format!("next_id of {} bytes", value.len())))?,
            );
            vec![b"SET".to_vec(), self.keys().counter(), num(next)]
        } else {
            vec![b"SET".to_vec(), self.keys().meta(key), value.to_vec()]
        };
        self.record(Key::Meta(key.to_string()), Op::SetMeta(value.to_vec()), cmd);
        Ok(())
    }

    fn put_url(&mut self, digest: u128, rec: &UrlRecord) -> Result<()> {
        let cmd = vec![b"SET".to_vec(), self.keys().url(digest), rec.encode()];
        self.record(Key::Url(digest), Op::PutUrl(rec.clone()), cmd);
        let times = vec![
            b"ZADD".to_vec(),
            self.keys().url_times(),
            num(rec.first_seen),
            digest.to_be_bytes().to_vec(),
        ];
        self.also(times);
        Ok(())
    }

    fn remove_url(&mut self, digest: u128) -> Result<bool> {
        if self.url(digest)?.is_none() {
            return Ok(false);
        }
        let cmd = vec![b"DEL".to_vec(), self.keys().url(digest)];
        self.record(Key::Url(digest), Op::DelUrl, cmd);
        let times = vec![
            b"ZREM".to_vec(),
            self.keys().url_times(),
            digest.to_be_bytes().to_vec(),
        ];
        self.also(times);
        Ok(true)
    }

    fn add_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        let cmd = vec![b"ZADD".to_vec(), self.keys().title(digest), num(id), num(id)];
        self.record(Key::Title(digest), Op::AddId(id), cmd);
        Ok(())
    }

    fn remove_title(&mut self, digest: u128, id: DocId) -> Result<()> {
        let cmd = vec![b"ZREM".to_vec(), self.keys().title(digest), num(id)];
        self.record(Key::Title(digest), Op::RemoveId(id), cmd);
        Ok(())
    }

    fn add_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        check_id(id)?;
        self.record_packed(Key::Block(table, block_bucket(key)), Op::AddPosting(fp.low(), id));
        Ok(())
    }

    fn remove_block(&mut self, table: usize, key: u64, fp: Fingerprint, id: DocId) -> Result<()> {
        self.record_packed(
            Key::Block(table, block_bucket(key)),
            Op::RemovePosting(fp.low(), id),
        );
        Ok(())
    }

    /// Adds the entry to the band's bucket, dropping the band's oldest
    /// entries beyond [`BAND_POSTINGS`] (the commit rewrites the bucket
    /// from its validated value, so the cap holds however it was written).
    fn add_band(&mut self, key: u64, id: DocId) -> Result<()> {
        check_band_id(id)?;
        let tag = band_tag(key);
        self.record_packed(Key::Bucket(bucket_of(key)), Op::AddTagged(tag, id));
        Ok(())
    }

    fn remove_band(&mut self, key: u64, id: DocId) -> Result<()> {
        let tag = band_tag(key);
        self.record_packed(Key::Bucket(bucket_of(key)), Op::RemoveTagged(tag, id));
        Ok(())
    }

    fn put_doc(&mut self, id: DocId, rec: DocRecord) -> Result<()> {
        let (bucket, slot) = self.keys().doc(id);
        let cmd = vec![
            b"RSETC".to_vec(),
            bucket,
            self.keys().order(),
            self.keys().count(),
            num(id >> DOC_BUCKET_BITS),
            num(slot),
            rec.encode(),
        ];
        self.record(Key::Doc(id), Op::PutDoc(Box::new(rec.clone())), cmd);
        Ok(())
    }

    fn remove_doc(&mut self, id: DocId) -> Result<()> {
        let (bucket, slot) = self.keys().doc(id);
        let cmd = vec![
            b"RDELC".to_vec(),
            bucket,
            self.keys().order(),
            self.keys().count(),
            num(id >> DOC_BUCKET_BITS),
            num(slot),
        ];
        self.record(Key::Doc(id), Op::DelDoc, cmd);
        Ok(())
    }

    /// Hands out an id reserved with `INCRBY {NS}:n` outside the
    /// transaction (by [`ReadTables::prefetch`] in the same round trip as
    /// the reads, or here, doubling the reservation each time): concurrent
    /// inserts do not conflict on the counter, and ids an aborted attempt
    /// or a duplicate leaves unused are only gaps.
    fn next_doc_id(&mut self) -> Result<DocId> {
        let (next, end) = self.ids.get();
        if next < end {
            self.ids.set((next + 1, end));
            return Ok(next);
        }
        let chunk = self.chunk.get();
        self.chunk.set((chunk * 2).min(1024));
        self.fetch(&[], crate::TITLE_CANDIDATES, chunk)?;
        let (next, end) = self.ids.get();
        if next >= end {
            return Err(Error::Corrupt("empty document id reservation".into()));
        }
        self.ids.set((next + 1, end));
        Ok(next)
    }
}
