-- KEYS: fan-out record. ARGV: fanout_id, batch, holder, error ('' for none).
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
local field = 'claim:' .. ARGV[2]
if not held_by(redis.call('HGET', KEYS[1], field), ARGV[3]) then return 0 end
redis.call('HDEL', KEYS[1], field)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'error:' .. ARGV[2], ARGV[4]) end
return 1
