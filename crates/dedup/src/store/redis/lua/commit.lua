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
-- (merged by `merge_writes` in ../tx.rs). Three writes are this script's
-- own: `RSETC key order count bucket slot record...` stores records in a
-- record bucket (see `bucket_record` in ../layout.rs: a header of 64
-- 4-byte big-endian ends, then the records in slot order), adds to the
-- count the slots it filled and lists the bucket in the order index;
-- `RDELC key order count bucket slot...` empties slots, subtracts those
-- that held a record and deletes and unlists the bucket once empty;
-- `APPENDX key bytes` appends to a packed list. Each rebuilds its value
-- and `SET`s it whole: Redis' own `APPEND` and `SETRANGE` grow a string
-- to twice what it needs, and these values only ever grow a little.
--
-- Returns 1 when the writes were applied, 0 when a version read had
-- changed (nothing written: the transaction runs again).

local HEADER = 256

-- The records of a bucket value (false: none), by slot 0 to 63.
local function split(value)
  local recs = {}
  if not value then return recs end
  local prev = 0
  for s = 0, 63 do
    local e = struct.unpack('>I4', value, 4 * s + 1)
    if e > prev then recs[s] = string.sub(value, HEADER + prev + 1, HEADER + e) end
    prev = e
  end
  return recs
end

-- The bucket value of records by slot; nil when there are none.
local function join(recs)
  local head, body, len = {}, {}, 0
  for s = 0, 63 do
    local r = recs[s]
    if r then
      body[#body + 1] = r
      len = len + #r
    end
    head[s + 1] = struct.pack('>I4', len)
  end
  if len == 0 then return nil end
  return table.concat(head) .. table.concat(body)
end

-- Whether the (slot, record) pairs ARGV[from..to] all go after every
-- record of the bucket value, in ascending slots: then they are appended.
local function appends(value, args, from, to)
  local first = tonumber(args[from])
  local prev = first - 1
  for j = from, to, 2 do
    local s = tonumber(args[j])
    if s <= prev then return false end
    prev = s
  end
  if not value then return true end
  local total = #value - HEADER
  if first == 0 then return total == 0 end
  return struct.unpack('>I4', value, 4 * (first - 1) + 1) == total
end

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
  if verb == 'RSETC' then
    local k, o, c, b = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    local value = redis.call('GET', k)
    local added = 0
    if appends(value, ARGV, i + 6, i + argc) then
      -- Ids come in ascending order, so new records usually go after
      -- every record of their bucket: appended, the header's ends from
      -- the first new slot on rewritten, nothing split.
      value = value or string.rep('\0', HEADER)
      local total = #value - HEADER
      local body = {string.sub(value, HEADER + 1)}
      -- The header up to the first new slot stays; from there the ends go
      -- in runs: each new slot's end repeated up to the next new slot (one
      -- `struct.pack` a record, not a slot).
      local head = {string.sub(value, 1, 4 * tonumber(ARGV[i + 6]))}
      for j = i + 6, i + argc, 2 do
        local s = tonumber(ARGV[j])
        local next_slot = 64
        if j + 2 <= i + argc then next_slot = tonumber(ARGV[j + 2]) end
        total = total + #ARGV[j + 1]
        body[#body + 1] = ARGV[j + 1]
        head[#head + 1] = string.rep(struct.pack('>I4', total), next_slot - s)
        added = added + 1
      end
      redis.call('SET', k, table.concat(head) .. table.concat(body))
    else
      local recs = split(value)
      for j = i + 6, i + argc, 2 do
        local s = tonumber(ARGV[j])
        if not recs[s] then added = added + 1 end
        recs[s] = ARGV[j + 1]
      end
      redis.call('SET', k, join(recs))
    end
    if added > 0 then redis.call('INCRBY', c, added) end
    redis.call('ZADD', o, b, b)
  elseif verb == 'RDELC' then
    local k, o, c, b = ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
    local recs = split(redis.call('GET', k))
    local gone = 0
    for j = i + 6, i + argc do
      local s = tonumber(ARGV[j])
      if recs[s] then gone = gone + 1 end
      recs[s] = nil
    end
    if gone > 0 then redis.call('DECRBY', c, gone) end
    local left = join(recs)
    if left then
      if gone > 0 then redis.call('SET', k, left) end
    else
      redis.call('DEL', k)
      redis.call('ZREM', o, b)
    end
  elseif verb == 'APPENDX' then
    local k = ARGV[i + 2]
    local cur = redis.call('GET', k)
    if cur then
      redis.call('SET', k, cur .. ARGV[i + 3])
    else
      redis.call('SET', k, ARGV[i + 3])
    end
  else
    redis.call(unpack(ARGV, i + 1, i + argc))
  end
  i = i + 1 + argc
end
return 1
