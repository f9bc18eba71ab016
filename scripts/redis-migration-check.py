#!/usr/bin/env python3
"""Checks a Redis namespace conversion from store layout 2 to 3 (issue 37):
  redis-migration-check.py before PORT   # on the layout 2 namespace "bench": saves what layout 3 must hold
  (open it with a layout 3 RedisStore, which converts it)
  redis-migration-check.py after PORT    # compares: records byte for byte, block postings, band entries in order
Needs redis-py (pip install redis). Writes /tmp/mig_before.pkl."""
import collections
import pickle
import struct
import sys

import redis

r = redis.Redis(port=int(sys.argv[2]))
P = b"{bench}:"
mode = sys.argv[1]
def scan(pat):
    return list(r.scan_iter(match=P + pat, count=5000))
if mode == "before":
    recs = {}
    for k in scan(b"d:*"):
        b = int(k[len(P)+2:])
        for f, v in r.hgetall(k).items():
            recs[b * 64 + int(f)] = v
    blocks = collections.Counter()
    for k in scan(b"b:*"):
        rest = k[len(P)+2:]
        t = rest[0]; key = int.from_bytes(rest[1:9], "big")
        v = r.get(k)
        for i in range(0, len(v), 13):
            blocks[(t, key & 0x3fff, v[i:i+13])] += 1
    bands = collections.defaultdict(list)
    for k in scan(b"l:*"):
        b18 = int.from_bytes(k[len(P)+2:], "big")
        v = r.get(k)
        for i in range(0, len(v), 9):
            tag = int.from_bytes(v[i:i+4], "big"); id_ = int.from_bytes(v[i+4:i+9], "big")
            key = ((b18 >> 2) << 48) | (tag << 16)
            nb = key >> 48; t20 = ((key << 16) & (2**64 - 1)) >> 44
            bands[(nb, t20)].append(id_)
    pickle.dump((recs, blocks, dict(bands)), open("/tmp/mig_before.pkl", "wb"))
    print("records", len(recs), "block entries", sum(blocks.values()), "band entries", sum(len(v) for v in bands.values()))
else:
    recs, blocks, bands = pickle.load(open("/tmp/mig_before.pkl", "rb"))
    assert not scan(b"d:*") and not scan(b"b:*") and not scan(b"l:*"), "old keys left"
    assert r.get(P + b"m:layout") == b"3"
    got = {}
    for k in scan(b"r:*"):
        b = int(k[len(P)+2:]); v = r.get(k)
        prev = 0
        for s in range(64):
            e = struct.unpack(">I", v[4*s:4*s+4])[0]
            if e > prev: got[b*64+s] = v[256+prev:256+e]
            prev = e
        assert 256 + prev == len(v)
    assert got == recs, ("records differ", len(got), len(recs))
    nblocks = collections.Counter()
    for k in scan(b"k:*"):
        rest = k[len(P)+2:]; t = rest[0]; b = int.from_bytes(rest[1:3], "big")
        v = r.get(k)
        for i in range(0, len(v), 13): nblocks[(t, b, v[i:i+13])] += 1
    assert nblocks == blocks, "block entries differ"
    nbands = collections.defaultdict(list)
    for k in scan(b"j:*"):
        b = int.from_bytes(k[len(P)+2:], "big"); v = r.get(k)
        for i in range(0, len(v), 7):
            w = int.from_bytes(v[i:i+7], "big")
            nbands[(b, w >> 36)].append(w & (2**36 - 1))
    assert dict(nbands) == bands, "band entries differ (or their order)"
    print("ok: records", len(got), "block entries", sum(nblocks.values()), "band entries", sum(len(v) for v in nbands.values()), "count", r.get(P + b"c"))
