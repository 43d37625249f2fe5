-- KEYS: job hash, parked hash, running set, held set. ARGV: job_id, now, max_attempts, job_key,
-- lock, lock_token.
local job = KEYS[1]
local state = redis.call('HGET', job, 'state')
if not state then return {'gone'} end
if redis.call('HGET', job, 'id') ~= ARGV[1] or state == 'waiting' then return {'stale'} end
-- From here the branch lock, not the message's hold, says whether the job's worker is alive.
redis.call('ZREM', KEYS[4], ARGV[4])
local attempts = redis.call('HINCRBY', job, 'attempts', 1)
if attempts > tonumber(ARGV[3]) then
  redis.call('HSET', job, 'parked_at', ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[4], cjson.encode(redis.call('HGETALL', job)))
  redis.call('DEL', job)
  redis.call('ZREM', KEYS[3], ARGV[4])
  return {'parked'}
end
redis.call('HSET', job, 'state', 'running', 'started_at', ARGV[2], 'lock', ARGV[5],
           'lock_token', ARGV[6])
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[3], ARGV[2], ARGV[4]) end
return {'claimed', unpack(redis.call('HGETALL', job))}
