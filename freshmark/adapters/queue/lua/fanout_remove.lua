-- KEYS: fan-out record, job hash. ARGV: fanout_id, batches-total field,
-- batches-done field (of the job hash).
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HDEL', KEYS[2], ARGV[2], ARGV[3])
return 1
