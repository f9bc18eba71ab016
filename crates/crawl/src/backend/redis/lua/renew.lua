-- ARGV: prefix, cap, lease ms, ids. Returns the ids no longer held.
local lease_ms = tonumber(ARGV[3])
local lost = {}
for i = 4, #ARGV do
  if redis.call('ZSCORE', p .. 'leases', ARGV[i]) then
    redis.call('ZADD', p .. 'leases', now + lease_ms, ARGV[i])
  else
    lost[#lost + 1] = tonumber(ARGV[i])
  end
end
return lost
