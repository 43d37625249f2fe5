-- KEYS: the lock to take, then the locks that must be free for it. ARGV: token, lease_ms.
-- Returns {'taken'}, or {'busy', the lock in the way, its holder} (holder '' if it just left).
for i = 2, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if holder then return {'busy', KEYS[i], holder} end
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'taken'} end
return {'busy', KEYS[1], redis.call('GET', KEYS[1]) or ''}
