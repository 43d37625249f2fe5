-- KEYS: job hash. ARGV: job_id, head.
-- Only the claimed run's own job: a hash since finished or re-sent is not written (nor created).
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'head', ARGV[2])
return 1
