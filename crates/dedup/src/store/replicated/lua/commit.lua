-- The commit of a ReplicatedStore transaction (`ReplicatedStore::transact`
-- in ../../replicated.rs): appends the transaction's log entry to the log,
-- and its chain value to the chain list, if the log ends where the caller's
-- replica is, with the caller's chain value there, and no other process
-- holds the turn. Runs after log_fns.lua (`script_source`).
--
-- KEYS[1]: the log, KEYS[2]: the head hash, KEYS[3]: the turn,
-- KEYS[4]: the chain list.
-- ARGV[1]: the caller's position, ARGV[2]: its token (this process's
-- turn), ARGV[3]: the entry, ARGV[4], ARGV[5]: the bounds of a reply with
-- entries (entries, bytes), ARGV[6]: the caller's chain value at its
-- position, ARGV[7]: the chain value after the entry.
--
-- Returns:
--   {1, new end, cb, snap_cb, snap_bytes} when appended;
--   {0, end, entries, chain value after them} when the caller lacks
--     entries (at most ARGV[4], from its position on);
--   {2, end} when another process holds the turn;
--   {3, base} when the caller's position was trimmed (reload the snapshot);
--   {4, end} when the log is shorter than the caller's position, and
--   {5, end, chain value} when the log's chain value there is another (the
--     server lost entries the caller applied);
--   {6, log length, chain list length} when they differ.

local pos = tonumber(ARGV[1])
local refused, last = check_position(KEYS[1], KEYS[2], KEYS[4], pos, ARGV[6])
if refused then return refused end
if pos < last then
  return catch_up(KEYS[1], KEYS[4], pos, last, tonumber(ARGV[4]), tonumber(ARGV[5]))
end
local turn = redis.call('GET', KEYS[3])
if turn and turn ~= ARGV[2] then return {2, last} end
redis.call('RPUSH', KEYS[1], ARGV[3])
redis.call('RPUSH', KEYS[4], ARGV[7])
local cb = redis.call('HINCRBY', KEYS[2], 'cb', string.len(ARGV[3]))
if turn then redis.call('DEL', KEYS[3]) end
local snap = redis.call('HMGET', KEYS[2], 'snap_cb', 'snap_bytes')
return {1, last + 1, cb, tonumber(snap[1] or '0'), tonumber(snap[2] or '0')}
