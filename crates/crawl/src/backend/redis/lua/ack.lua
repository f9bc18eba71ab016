-- ARGV: prefix, cap, worker, batch number (0: not numbered), worker
-- state, once token ('' for none), then counted lists: acks (id, requeued
-- entry or '', requeue delay ms, uncount 0/1), the bound on listing
-- entries queued per host (0: none), links (host, entry),
-- counters (field, increment), Crawl-delays (host, ms), then the DUST
-- record bound and the learners' writes (kind, a, b, c; see below).
-- Returns -1 when
-- the batch (or the ack with this once token) was already applied,
-- {'applied', N} when it is applied now (N: how many times the shared
-- DUST rules changed so far, so that a worker takes up the others' rules
-- at its next batch instead of on a timer), and the ids of the leases no
-- longer held (taken back meanwhile) when it names any: then nothing is
-- applied.
local worker = ARGV[3]
local batch = tonumber(ARGV[4])
local wkey = p .. 'w:' .. worker
if batch > 0 and tonumber(redis.call('HGET', wkey, 'ack') or '0') >= batch then
  return -1
end
local once = ARGV[6]
if once ~= '' and redis.call('EXISTS', p .. 'once:' .. once) == 1 then
  return -1
end
local i = 7
local nacks = tonumber(ARGV[i]); i = i + 1
local lost = {}
for k = 0, nacks - 1 do
  if redis.call('HEXISTS', p .. 'lease', ARGV[i + 4 * k]) == 0 then
    lost[#lost + 1] = tonumber(ARGV[i + 4 * k])
  end
end
if #lost > 0 then
  redis.call('HINCRBY', p .. 'stats', 'stale_acks', #lost)
  return lost
end
for _ = 1, nacks do
  local id, again, wait, uncount = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3]
  i = i + 4
  local rec = redis.call('HGET', p .. 'lease', id)
  if rec then
    redis.call('HDEL', p .. 'lease', id)
    redis.call('ZREM', p .. 'leases', id)
    local host = split(rec)
    release(host)
    if again ~= '' then
      redis.call('ZADD', p .. 'later', now + wait, host .. '\t' .. again)
    end
    if uncount == '1' then redis.call('HINCRBY', p .. 'stats', 'leased', -1) end
    schedule(host)
  end
end
local maxl = tonumber(ARGV[i]); i = i + 1
local nlinks = tonumber(ARGV[i]); i = i + 1
local skipped = 0
for _ = 1, nlinks do
  local host, entry = ARGV[i], ARGV[i + 1]
  -- A sitemap or feed (flag `cl`, `nl`, `clN`, `nlN`) counts against its
  -- host's listing bound, for all workers together.
  if maxl > 0 and string.sub(entry, 2, 2) == 'l'
      and redis.call('HINCRBY', p .. 'lhosts', host, 1) > maxl then
    skipped = skipped + 1
  else
    redis.call('RPUSH', p .. 'q:' .. host, entry)
    schedule(host)
  end
  i = i + 2
end
if skipped > 0 then redis.call('HINCRBY', p .. 'stats', 'listings_skipped', skipped) end
local nstats = tonumber(ARGV[i]); i = i + 1
for _ = 1, nstats do
  redis.call('HINCRBY', p .. 'stats', ARGV[i], ARGV[i + 1])
  i = i + 2
end
if nstats > 0 then redis.call('HSET', p .. 'stats', 'last_ms', now) end
local ndelays = tonumber(ARGV[i]); i = i + 1
for _ = 1, ndelays do
  redis.call('HSET', p .. 'delay', ARGV[i], ARGV[i + 1])
  i = i + 2
end
-- The learners' writes (src/shared/learn.rs), in the order they were made:
-- tpl / tpl- / tpl0 (a host's template set, removed, all removed), dust /
-- dust- / dust0 (a rule's state; `blocked` is never overwritten by
-- `learnt`, and what a rule blocked over `learnt` rewrote is queued
-- again), ex (a rule, an example's URL digest, the examples that learn
-- it: pooled among the workers), img (a rule in force, the image of a
-- kept URL under it: for the others to fold), blob- (a blob removed), hint (URL, a sitemap's hints for it as
-- JSON), listing (a sitemap or feed URL read, its kind), rec (rule, URL, `HOST \t ENTRY`:
-- recorded within the bound, or queued again at once if the rule is
-- blocked: it was withdrawn, its records given back already), back (rule,
-- the other rules of its host joined by newlines: its records removed and
-- queued again, each URL once, and forgotten under the other rules).
local maxrec = tonumber(ARGV[i] or '0'); i = i + 1
local nlearn = tonumber(ARGV[i] or '0'); i = i + 1
local given = {}
local restored, unrecorded = 0, 0
local function give(url, rec)
  if given[url] then return end
  given[url] = true
  local host, entry = split(rec)
  redis.call('RPUSH', p .. 'q:' .. host, entry)
  schedule(host)
  restored = restored + 1
end
local rules_changed = false
for _ = 1, nlearn do
  local kind, a, b, c = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 4
  if kind == 'tpl' then
    redis.call('HSET', p .. 'tpl', a, b)
  elseif kind == 'tpl-' then
    redis.call('HDEL', p .. 'tpl', a)
  elseif kind == 'tpl0' then
    redis.call('DEL', p .. 'tpl')
  elseif kind == 'dust' then
    local was = redis.call('HGET', p .. 'dust', a)
    if was ~= b and (b == 'blocked' or was ~= 'blocked') then
      redis.call('HSET', p .. 'dust', a, b)
      rules_changed = true
      if b == 'blocked' then
        redis.call('DEL', p .. 'ex:' .. a)
        -- Learnt by another worker (or from pooled examples) and blocked
        -- by this one, which never applied it and so gives nothing back
        -- itself: what the rule rewrote is queued again here.
        local rk = p .. 'rw:' .. a
        local rows = redis.call('HGETALL', rk)
        redis.call('DEL', rk)
        for j = 1, #rows, 2 do give(rows[j], rows[j + 1]) end
      end
    end
  elseif kind == 'img' then
    redis.call('RPUSH', p .. 'imgs', a .. ' ' .. b)
    rules_changed = true
  elseif kind == 'ex' then
    -- An example of a candidate rule (a URL digest), pooled: the rule is
    -- learnt once the workers together saw `c` distinct ones.
    if not redis.call('HGET', p .. 'dust', a) then
      local ek = p .. 'ex:' .. a
      redis.call('SADD', ek, b)
      local n = redis.call('SCARD', ek)
      if n >= tonumber(c) then
        redis.call('HSET', p .. 'dust', a, 'learnt ' .. n)
        redis.call('DEL', ek)
        rules_changed = true
      end
    end
  elseif kind == 'dust-' then
    if redis.call('HDEL', p .. 'dust', a) == 1 then rules_changed = true end
  elseif kind == 'dust0' then
    if redis.call('DEL', p .. 'dust') == 1 then rules_changed = true end
  elseif kind == 'blob-' then
    redis.call('HDEL', p .. 'learn', a)
  elseif kind == 'hint' then
    redis.call('HSET', p .. 'hints', a, b)
  elseif kind == 'listing' then
    redis.call('HSET', p .. 'listings', a, b)
  elseif kind == 'rec' then
    local rk = p .. 'rw:' .. a
    if redis.call('HGET', p .. 'dust', a) == 'blocked' then
      give(b, c)
    elseif redis.call('HEXISTS', rk, b) == 1 or redis.call('HLEN', rk) < maxrec then
      redis.call('HSET', rk, b, c)
    else
      unrecorded = unrecorded + 1
    end
  elseif kind == 'back' then
    local rk = p .. 'rw:' .. a
    local rows = redis.call('HGETALL', rk)
    redis.call('DEL', rk)
    for j = 1, #rows, 2 do
      local url = rows[j]
      if not given[url] then
        for o in string.gmatch(b, '[^\n]+') do
          if o ~= a then redis.call('HDEL', p .. 'rw:' .. o, url) end
        end
      end
      give(url, rows[j + 1])
    end
  end
end
if restored > 0 then redis.call('HINCRBY', p .. 'stats', 'dust_restored', restored) end
if unrecorded > 0 then redis.call('HINCRBY', p .. 'stats', 'dust_unrecorded', unrecorded) end
if batch > 0 then
  redis.call('HSET', wkey, 'ack', batch, 'state', ARGV[5])
end
if once ~= '' then
  redis.call('SET', p .. 'once:' .. once, 1, 'PX', ONCE_MS)
end
redis.call('HSET', p .. 'workers', worker, now)
local rules = 0
if rules_changed then
  rules = redis.call('INCR', p .. 'dustv')
else
  rules = tonumber(redis.call('GET', p .. 'dustv') or '0')
end
return {'applied', rules}
