-- KEYS: lock. ARGV: token, lease_ms.
-- Extend our own lease; one that lapsed (a stalled renewal) and that nobody took is ours again.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 'renewed'
end
if not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 'retaken'
end
return 'lost'
