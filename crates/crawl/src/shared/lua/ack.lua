-- ARGV: prefix, cap, worker, batch number (0: not numbered), worker
-- state, once token ('' for none), then counted lists: acks (id, requeued
-- entry or '', requeue delay ms, uncount 0/1), links (host, entry),
-- counters (field, increment), Crawl-delays (host, ms). Returns -1 when
-- the batch (or the ack with this once token) was already applied, 0 when
-- it is applied now, and the ids of the leases no longer held (taken back meanwhile) when it
-- names any: then nothing is applied.
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
local nlinks = tonumber(ARGV[i]); i = i + 1
for _ = 1, nlinks do
  local host = ARGV[i]
  redis.call('RPUSH', p .. 'q:' .. host, ARGV[i + 1])
  schedule(host)
  i = i + 2
end
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
if batch > 0 then
  redis.call('HSET', wkey, 'ack', batch, 'state', ARGV[5])
end
if once ~= '' then
  redis.call('SET', p .. 'once:' .. once, 1, 'PX', ONCE_MS)
end
redis.call('HSET', p .. 'workers', worker, now)
return 0
