-- KEYS: fan-out record, job hash. ARGV: fanout_id, batch, result (JSON),
-- batches-done field (of the job hash).
if not current(ARGV[1]) then return {'gone'} end
if redis.call('HSETNX', KEYS[1], 'result:' .. ARGV[2], ARGV[3]) == 0 then return {'duplicate'} end
redis.call('HDEL', KEYS[1], 'claim:' .. ARGV[2], 'error:' .. ARGV[2])
local done = redis.call('HINCRBY', KEYS[1], 'done', 1)
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], ARGV[4], done) end
touch()
return {'completed', done}
