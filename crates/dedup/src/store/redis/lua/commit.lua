-- The commit of a RedisStore transaction (`Tx::commit` in ../tx.rs): checks
-- that every version the transaction read is unchanged (else returns 0,
-- having written nothing), sets the versions of the stripes it writes to a
-- new commit number (`INCR` of `{NS}:vc`, unique, so every write changes
-- its stripes' values), and runs its writes. Atomic, as every Redis
-- script. Versions are read and written with one `HMGET`/`HSET` per 2000
-- stripes (Lua passes at most 8000 values to a call): a script's cost is
-- mostly per `redis.call`.
--
-- KEYS[1]: the version hash, KEYS[2]: the commit counter.
-- ARGV: n, then n (stripe, version) pairs, then m, then m stripes to bump,
-- then the writes, each as its argument count followed by its arguments
-- (merged by `merge_writes` in ../tx.rs). Two writes are this script's
-- own: `HSETC hash order count bucket field value...` stores records in a
-- bucket hash, adds to the count what `HSET` says it added and lists the
-- bucket in the order index; `HDELC hash order count bucket field...`
-- removes them, subtracts what `HDEL` removed and unlists the bucket once
-- empty.
--
-- Returns 1 when the writes were applied, 0 when a version read had
-- changed (nothing written: the transaction runs again).

local v = KEYS[1]
local CH = 2000
local n = tonumber(ARGV[1])
local i = 2
while n > 0 do
  local c = math.min(n, CH)
  local fields = {}
  for j = 1, c do fields[j] = ARGV[i + 2 * (j - 1)] end
  local got = redis.call('HMGET', v, unpack(fields))
  for j = 1, c do
    if (got[j] or '0') ~= ARGV[i + 2 * (j - 1) + 1] then return 0 end
  end
  i = i + 2 * c
  n = n - c
end
local m = tonumber(ARGV[i])
i = i + 1
local token = 0
if m > 0 then token = redis.call('INCR', KEYS[2]) end
while m > 0 do
  local c = math.min(m, CH)
  local kv = {}
  for j = 1, c do
    kv[2 * j - 1] = ARGV[i + j - 1]
    kv[2 * j] = token
  end
  redis.call('HSET', v, unpack(kv))
  i = i + c
  m = m - c
end
local nargs = #ARGV
while i <= nargs do
  local argc = tonumber(ARGV[i])
  local verb = ARGV[i + 1]
  if verb == 'HSETC' then
    local h, o, c, b = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    local added = redis.call('HSET', h, unpack(ARGV, i + 6, i + argc))
    if added > 0 then redis.call('INCRBY', c, added) end
    redis.call('ZADD', o, b, b)
  elseif verb == 'HDELC' then
    local h, o, c, b = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    local gone = redis.call('HDEL', h, unpack(ARGV, i + 6, i + argc))
    if gone > 0 then redis.call('DECRBY', c, gone) end
    if redis.call('EXISTS', h) == 0 then redis.call('ZREM', o, b) end
  else
    redis.call(unpack(ARGV, i + 1, i + argc))
  end
  i = i + 1 + argc
end
return 1
