-- KEYS: job hash, held set, hold lease. ARGV: job_id, holder token, lease_ms, job_key, now.
-- Only a queued job's current message is worth a lease: a stale message holds nothing, and a
-- claimed job is covered by its branch lock.
local f = redis.call('HMGET', KEYS[1], 'state', 'id')
if f[1] ~= 'queued' or f[2] ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
redis.call('HSET', KEYS[1], 'held_id', ARGV[1])
redis.call('ZADD', KEYS[2], 'NX', ARGV[5], ARGV[4])
return 1
