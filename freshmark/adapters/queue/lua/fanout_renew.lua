-- KEYS: fan-out record. ARGV: fanout_id, batch, holder, lease_seconds.
if not current(ARGV[1]) then return 'gone' end
local field = 'claim:' .. ARGV[2]
if not held_by(redis.call('HGET', KEYS[1], field), ARGV[3]) then return 'lost' end
redis.call('HSET', KEYS[1], field, lease(ARGV[3], ARGV[4]))
touch()
return 'ok'
