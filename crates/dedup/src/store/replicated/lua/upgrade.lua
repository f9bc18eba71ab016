-- Upgrades a namespace of layout ARGV[1] (`replicated-1`, before the hash
-- chain) to ARGV[2] (`ReplicatedStore::upgrade` in ../../replicated.rs):
-- gives each entry of the log a chain value in the chain list, derived
-- from the chain value at the log's base (itself derived from the base
-- position) and the entry's position, and records the base's in the head
-- and the snapshot's. Runs alone (without log_fns.lua).
--
-- KEYS[1]: the layout marker, KEYS[2]: the log, KEYS[3]: the head hash,
-- KEYS[4]: the chain list.
-- ARGV[1]: the layout to upgrade from, ARGV[2]: the layout to upgrade to.
--
-- Returns 1 when upgraded, 0 when the marker says something else by now
-- (another process upgraded it), -1 when the snapshot is not at the log's
-- base (a namespace the older layout cannot have written).

if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local base = redis.call('HGET', KEYS[3], 'base') or '0'
local snap = redis.call('HGET', KEYS[3], 'snap_pos')
if snap and tonumber(snap) ~= tonumber(base) then return -1 end
local c = string.sub(redis.sha1hex(ARGV[1] .. ':' .. base), 1, 32)
redis.call('HSET', KEYS[3], 'bc', c)
if snap then redis.call('HSET', KEYS[3], 'snap_chain', c) end
redis.call('DEL', KEYS[4])
local n, batch = redis.call('LLEN', KEYS[2]), {}
for i = 1, n do
  c = string.sub(redis.sha1hex(c .. ':' .. (tonumber(base) + i)), 1, 32)
  batch[#batch + 1] = c
  if #batch == 1000 or i == n then
    redis.call('RPUSH', KEYS[4], unpack(batch))
    batch = {}
  end
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
