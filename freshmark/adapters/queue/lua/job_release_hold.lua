-- KEYS: hold lease, held set. ARGV: holder token, job_key.
-- Only our own lease: another worker may have taken a newer message of the job since.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
