-- KEYS: fan-out record, job hash. ARGV: fanout_id, batch, result (JSON),
-- batches-done field (of the job hash), lexical documents ('' : none).
if not current(ARGV[1]) then return {'gone'} end
if redis.call('HSETNX', KEYS[1], 'result:' .. ARGV[2], ARGV[3]) == 0 then return {'duplicate'} end
-- Set with the result, never after: a coordinator that sees the result sees these too.
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'lexical:' .. ARGV[2], ARGV[5]) end
redis.call('HDEL', KEYS[1], 'claim:' .. ARGV[2], 'error:' .. ARGV[2])
local done = redis.call('HINCRBY', KEYS[1], 'done', 1)
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('HSET', KEYS[2], ARGV[4], done) end
touch()
return {'completed', done}
