-- Installs a snapshot (`SnapshotJob::upload` in ../../replicated.rs):
-- makes its chunks permanent, trims the log entries it covers (and their
-- chain values), records it and deletes the previous snapshot. Runs after
-- log_fns.lua (`script_source`).
--
-- KEYS[1]: the log, KEYS[2]: the head hash, KEYS[3]: the chain list.
-- ARGV[1]: the snapshot's generation GEN, ARGV[2]: its position,
-- ARGV[3]: the log's cumulative bytes there, ARGV[4]: its number of chunks,
-- named ARGV[6]..GEN..':'..I, ARGV[5]: its bytes, ARGV[7]: the chain value
-- at its position.
--
-- Returns 1 when installed; 0 when a snapshot as new exists or the
-- position is not in the log; -1 when a chunk expired; -2 when the log's
-- chain value at the position is another (the snapshot's state is not the
-- log's: its writer diverged) or the chain list is out of step.

local base, last, nlc = bounds(KEYS[1], KEYS[2], KEYS[3])
if last - base ~= nlc then return -2 end
local pos = tonumber(ARGV[2])
local cur = tonumber(redis.call('HGET', KEYS[2], 'snap_pos') or '-1')
if pos <= cur or pos < base or pos > last then return 0 end
if chain_at(KEYS[2], KEYS[3], pos, base, last) ~= ARGV[7] then return -2 end
local n = tonumber(ARGV[4])
for i = 0, n - 1 do
  local k = ARGV[6] .. ARGV[1] .. ':' .. i
  if redis.call('PERSIST', k) == 0 and redis.call('EXISTS', k) == 0 then return -1 end
end
local old = redis.call('HMGET', KEYS[2], 'snap_gen', 'snap_n')
if pos > base then
  redis.call('LTRIM', KEYS[1], pos - base, -1)
  redis.call('LTRIM', KEYS[3], pos - base, -1)
end
redis.call('HSET', KEYS[2], 'base', pos, 'bc', ARGV[7], 'snap_gen', ARGV[1], 'snap_pos', pos,
  'snap_cb', ARGV[3], 'snap_n', n, 'snap_bytes', ARGV[5], 'snap_chain', ARGV[7])
if old[1] then
  for i = 0, tonumber(old[2]) - 1 do redis.call('UNLINK', ARGV[6] .. old[1] .. ':' .. i) end
end
return 1
