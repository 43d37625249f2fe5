-- KEYS: job hash, parked hash, running set. ARGV: job_id, outcome, now, error, new_id,
-- job_key.
local job = KEYS[1]
if redis.call('HGET', job, 'id') ~= ARGV[1] then return {'stale'} end
redis.call('ZREM', KEYS[3], ARGV[6])
if ARGV[4] ~= '' then redis.call('HSET', job, 'last_error', ARGV[4]) end
if ARGV[2] == 'retry' then
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[3])
  return {'retry'}
end
if redis.call('HGET', job, 'rerun') == '1' then
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[3], 'id', ARGV[5],
             'rerun', '0', 'attempts', 0)
  local f = redis.call('HMGET', job, 'kind', 'queue')
  return {'requeue', ARGV[5], f[1], f[2]}
end
redis.call('DEL', job)
-- A success clears an earlier parked run of the same job: the trouble is over.
if ARGV[2] == 'done' then redis.call('HDEL', KEYS[2], ARGV[6]) end
return {'done'}
