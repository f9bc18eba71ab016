-- Helpers of the replicated store's log scripts (commit.lua, since.lua,
-- install.lua): `script_source` in ../../replicated.rs puts them before each
-- script's body, after a line `local CHAIN0 = '<32 zeros>'` (the chain
-- value at position 0 of every log).
--
-- bounds(log, head, lc): the absolute positions of the log's first entry
--   and of its end, and the length of the chain list (equal to the log's
--   unless a process of the layout before the chain appended).
-- chain_at(head, lc, pos, base, last): the chain value at absolute
--   position pos (base <= pos <= last).
-- since(log, pos, last, maxn, maxb): the entries from absolute position
--   pos on (the log ends at last), at least one: read 8 entries at a time,
--   stopping past maxn entries or about maxb bytes.
-- check_position(log, head, lc, pos, chain): nil and the log's end when
--   a caller at absolute position pos with chain value chain can go on;
--   else the reply that says why not: {6, log length, chain list length}
--   (the lists disagree), {3, base} (pos was trimmed), {4, end} (the log is
--   shorter than pos), {5, end, chain value at pos} (entries the caller
--   applied were lost). Shared by commit.lua and since.lua.
-- catch_up(log, lc, pos, last, maxn, maxb): the reply {0, end, entries,
--   chain value after them} for a caller behind the end.
--
-- No KEYS or ARGV of their own, no reply: the scripts pass the keys.

local function bounds(log, head, lc)
  local base = tonumber(redis.call('HGET', head, 'base') or '0')
  return base, base + redis.call('LLEN', log), redis.call('LLEN', lc)
end
local function chain_at(head, lc, pos, base, last)
  if pos == base then return redis.call('HGET', head, 'bc') or CHAIN0 end
  return redis.call('LINDEX', lc, pos - last - 1)
end
local function since(log, pos, last, maxn, maxb)
  local out, bytes, s = {}, 0, pos - last
  while s < 0 and #out < maxn do
    local e = math.min(s + 7, -1)
    for _, v in ipairs(redis.call('LRANGE', log, s, e)) do
      if #out > 0 and (bytes + #v > maxb or #out >= maxn) then return out end
      out[#out + 1] = v
      bytes = bytes + #v
    end
    s = e + 1
  end
  return out
end
local function check_position(log, head, lc, pos, chain)
  local base, last, nlc = bounds(log, head, lc)
  if last - base ~= nlc then return {6, last - base, nlc} end
  if pos < base then return {3, base} end
  if pos > last then return {4, last} end
  local at = chain_at(head, lc, pos, base, last)
  if at ~= chain then return {5, last, at} end
  return nil, last
end
local function catch_up(log, lc, pos, last, maxn, maxb)
  local out = since(log, pos, last, maxn, maxb)
  return {0, last, out, redis.call('LINDEX', lc, pos + #out - last - 1)}
end
