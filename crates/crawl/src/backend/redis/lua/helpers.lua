-- Lua shared by the scripts: the server's time, record splitting, and
-- `schedule`, which puts a host in `ready` exactly when it has queued
-- entries and a free slot (the invariant every script keeps).
local p = ARGV[1]
local cap = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function split(rec)
  local i = string.find(rec, '\t', 1, true)
  return string.sub(rec, 1, i - 1), string.sub(rec, i + 1)
end
local function release(host)
  if redis.call('HINCRBY', p .. 'busy', host, -1) <= 0 then
    redis.call('HDEL', p .. 'busy', host)
  end
end
local function schedule(host)
  if redis.call('LLEN', p .. 'q:' .. host) == 0 then
    redis.call('ZREM', p .. 'ready', host)
    return
  end
  local busy = tonumber(redis.call('HGET', p .. 'busy', host) or '0')
  if busy >= cap then
    redis.call('ZREM', p .. 'ready', host)
    return
  end
  local nxt = tonumber(redis.call('HGET', p .. 'next', host) or '0')
  redis.call('ZADD', p .. 'ready', nxt, host)
end
