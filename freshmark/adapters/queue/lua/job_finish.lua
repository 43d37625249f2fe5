-- KEYS: job hash, parked hash, running set. ARGV: job_id, outcome, now, error, new_id,
-- job_key, failed_on ('' for a success), error_repeats.
local job = KEYS[1]
if redis.call('HGET', job, 'id') ~= ARGV[1] then return {'stale'} end
redis.call('ZREM', KEYS[3], ARGV[6])
if ARGV[4] ~= '' then redis.call('HSET', job, 'last_error', ARGV[4]) end
if ARGV[7] ~= '' then redis.call('HSET', job, 'failed_on', ARGV[7], 'error_repeats', ARGV[8]) end
if ARGV[2] == 'retry' then
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[3])
  return {'retry'}
end
if redis.call('HGET', job, 'rerun') == '1' then
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[3], 'id', ARGV[5],
             'rerun', '0', 'attempts', 0, 'error_repeats', 0)
  local f = redis.call('HMGET', job, 'kind', 'queue')
  return {'requeue', ARGV[5], f[1], f[2]}
end
if ARGV[2] == 'failed' then
  -- Parked, not dropped: reconcile then leaves the job alone until its branch moves.
  redis.call('HSET', job, 'parked_at', ARGV[3])
  redis.call('HSET', KEYS[2], ARGV[6], cjson.encode(redis.call('HGETALL', job)))
  redis.call('DEL', job)
  return {'parked'}
end
redis.call('DEL', job)
-- A success clears an earlier parked run of the same job: the trouble is over.
if ARGV[2] == 'done' then redis.call('HDEL', KEYS[2], ARGV[6]) end
return {'done'}
