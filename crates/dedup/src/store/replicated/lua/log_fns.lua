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
