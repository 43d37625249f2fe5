-- KEYS: lock, then the locks that exclude it (as taken). ARGV: token, lease_ms.
-- Extend our own lease; one that lapsed (a stalled renewal) and that nobody took is ours again,
-- unless a lock that excludes it was taken meanwhile (that run may be writing now).
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 'renewed'
end
if holder then return 'lost' end
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return 'lost' end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 'retaken'
