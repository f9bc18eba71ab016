-- The log's entries a replica lacks (`ReplicatedStore::follow` in
-- ../../replicated.rs), for a caller whose chain value at its position is
-- ARGV[4]. Runs after log_fns.lua (`script_source`).
--
-- KEYS as for commit.lua: KEYS[1]: the log, KEYS[2]: the head hash,
-- KEYS[3]: the turn (unused), KEYS[4]: the chain list.
-- ARGV[1]: the caller's position, ARGV[2]: at most this many entries,
-- ARGV[3]: about this many bytes, ARGV[4]: the caller's chain value there.
--
-- Returns {0, end, entries, chain value after them}, or {1, end} when
-- there are none; {3, base}, {4, end}, {5, end, chain value}, {6, ..} as
-- commit.lua.

local base, last, nlc = bounds(KEYS[1], KEYS[2], KEYS[4])
if last - base ~= nlc then return {6, last - base, nlc} end
local pos = tonumber(ARGV[1])
if pos < base then return {3, base} end
if pos > last then return {4, last} end
local at = chain_at(KEYS[2], KEYS[4], pos, base, last)
if at ~= ARGV[4] then return {5, last, at} end
if pos == last then return {1, last} end
local out = since(KEYS[1], pos, last, tonumber(ARGV[2]), tonumber(ARGV[3]))
return {0, last, out, redis.call('LINDEX', KEYS[4], pos + #out - last - 1)}
