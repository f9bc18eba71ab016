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

local pos = tonumber(ARGV[1])
local refused, last = check_position(KEYS[1], KEYS[2], KEYS[4], pos, ARGV[4])
if refused then return refused end
if pos == last then return {1, last} end
return catch_up(KEYS[1], KEYS[4], pos, last, tonumber(ARGV[2]), tonumber(ARGV[3]))
