-- ARGV: prefix, cap, n, lease ms, delay ms, budget, worker, then a
-- counted list of (host, leases the worker holds there). Returns leases in
-- flight, ready hosts, waiting requeues, budget spent (0/1), leases taken
-- back, then lease id and entry for each new lease.
local n = tonumber(ARGV[3])
local lease_ms = tonumber(ARGV[4])
local delay = tonumber(ARGV[5])
local budget = tonumber(ARGV[6])
local worker = ARGV[7]
local mine = {}
local j = 9
for _ = 1, tonumber(ARGV[8]) do
  mine[ARGV[j]] = tonumber(ARGV[j + 1])
  j = j + 2
end
-- The workers that asked for work within ASKING_MS share each host's
-- slots: a worker takes at most ceil(cap / asking) leases of one host, so
-- one that acknowledges and asks again at once does not keep every slot
-- from the others.
redis.call('HSET', p .. 'asking', worker, now)
local asking = 0
local seen = redis.call('HGETALL', p .. 'asking')
for k = 1, #seen, 2 do
  if now - tonumber(seen[k + 1]) <= ASKING_MS then
    asking = asking + 1
  else
    redis.call('HDEL', p .. 'asking', seen[k])
  end
end
local share = math.max(1, math.ceil(cap / asking))
local reclaimed = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', p .. 'leases', '-inf', now, 'LIMIT', 0, 1000)) do
  redis.call('ZREM', p .. 'leases', id)
  local rec = redis.call('HGET', p .. 'lease', id)
  if rec then
    redis.call('HDEL', p .. 'lease', id)
    local host, entry = split(rec)
    -- An entry with a claim token keeps it (its next worker tells its own
    -- earlier claim from another's); an older one counts as claimed.
    local _, spaces = string.gsub(entry, ' ', ' ')
    if spaces < 4 then entry = 'c' .. string.sub(entry, 2) end
    redis.call('LPUSH', p .. 'q:' .. host, entry)
    release(host)
    redis.call('HINCRBY', p .. 'stats', 'reclaimed', 1)
    redis.call('HINCRBY', p .. 'stats', 'leased', -1)
    schedule(host)
    reclaimed = reclaimed + 1
  end
end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', p .. 'later', '-inf', now, 'LIMIT', 0, 1000)) do
  redis.call('ZREM', p .. 'later', m)
  local host, entry = split(m)
  redis.call('RPUSH', p .. 'q:' .. host, entry)
  schedule(host)
end
local leased = tonumber(redis.call('HGET', p .. 'stats', 'leased') or '0')
local out = {}
local got = 0
if n > 0 and (budget == 0 or leased < budget) then
  for _, host in ipairs(redis.call('ZRANGEBYSCORE', p .. 'ready', '-inf', now, 'LIMIT', 0, n)) do
    local hdelay = tonumber(redis.call('HGET', p .. 'delay', host) or '0')
    if hdelay < delay then hdelay = delay end
    while got < n and (budget == 0 or leased < budget) do
      local busy = tonumber(redis.call('HGET', p .. 'busy', host) or '0')
      if busy >= cap or (mine[host] or 0) >= share then break end
      local entry = redis.call('LPOP', p .. 'q:' .. host)
      if not entry then break end
      local id = redis.call('INCR', p .. 'seq')
      redis.call('HSET', p .. 'lease', id, host .. '\t' .. entry)
      redis.call('ZADD', p .. 'leases', now + lease_ms, id)
      redis.call('HINCRBY', p .. 'busy', host, 1)
      redis.call('HSET', p .. 'next', host, now + hdelay)
      mine[host] = (mine[host] or 0) + 1
      leased = leased + 1
      got = got + 1
      out[#out + 1] = id
      out[#out + 1] = entry
      if hdelay > 0 then break end
    end
    schedule(host)
    if got >= n then break end
  end
  if got > 0 then
    redis.call('HINCRBY', p .. 'stats', 'leased', got)
    redis.call('HSETNX', p .. 'stats', 'started_ms', now)
  end
end
local spent = 0
if budget > 0 and leased >= budget then spent = 1 end
local head = {redis.call('ZCARD', p .. 'leases'), redis.call('ZCARD', p .. 'ready'),
  redis.call('ZCARD', p .. 'later'), spent, reclaimed}
for _, v in ipairs(out) do head[#head + 1] = v end
return head
