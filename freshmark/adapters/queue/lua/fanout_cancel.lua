-- KEYS: fan-out record, job hash. ARGV: fanout_id ('' for whichever is there),
-- batches-total field, batches-done field (of the job hash).
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' and redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'cancelled')
redis.call('HDEL', KEYS[2], ARGV[2], ARGV[3])
return 1
