-- One record of a record bucket (`{NS}:r:BUCKET`, see `bucket_record` in
-- ../layout.rs), read on the server so that a check fetches the record it
-- needs, not the 64 of its bucket: two `GETRANGE`s, the slot's bounds from
-- the header, then the record. Runs in the read pipeline (`Tx::fetch` in
-- ../tx.rs), after a `SCRIPT LOAD` of itself.
--
-- KEYS[1]: the bucket, ARGV[1]: the slot (0 to 63). Returns the record,
-- or false (nil) for an empty slot or a missing bucket.

local HEADER = 256
local s = tonumber(ARGV[1])
local from = 0
if s > 0 then from = 4 * (s - 1) end
local h = redis.call('GETRANGE', KEYS[1], from, 4 * s + 3)
local start, stop = 0, 0
if s == 0 then
  if #h < 4 then return false end
  stop = struct.unpack('>I4', h, 1)
else
  if #h < 8 then return false end
  start = struct.unpack('>I4', h, 1)
  stop = struct.unpack('>I4', h, 5)
end
if stop <= start then return false end
return redis.call('GETRANGE', KEYS[1], HEADER + start, HEADER + stop - 1)
