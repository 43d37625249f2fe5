-- KEYS: job hash, due set. ARGV: now, due_at, stale_seconds, max_wait_seconds, new_id,
-- job_key, queued_stale_factor, then (field, value) pairs of the job spec.
local now, due_at, stale = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local max_wait, new_id, job_key = tonumber(ARGV[4]), ARGV[5], ARGV[6]
local queued_stale = stale * tonumber(ARGV[7])
local first_field = 8  -- then (name, value) pairs; empty values keep what the hash has
local job = KEYS[1]
local state = redis.call('HGET', job, 'state')
local function update()
  for i = first_field, #ARGV, 2 do
    if ARGV[i + 1] ~= '' then redis.call('HSET', job, ARGV[i], ARGV[i + 1]) end
  end
  redis.call('HSET', job, 'updated_at', ARGV[1])
end
local function requeue(id)
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[1], 'id', id, 'rerun', '0')
end
if not state then
  redis.call('HSET', job, 'id', new_id, 'key', job_key, 'attempts', 0, 'created_at', ARGV[1],
             'rerun', '0')
  update()
  if due_at > now then
    redis.call('HSET', job, 'state', 'waiting')
    redis.call('ZADD', KEYS[2], math.min(due_at, now + max_wait), job_key)
    return {'waiting', new_id}
  end
  requeue(new_id)
  return {'new', new_id}
end
local id = redis.call('HGET', job, 'id')
update()
if state == 'waiting' then
  if due_at <= now then
    redis.call('ZREM', KEYS[2], job_key)
    requeue(id)
    return {'new', id}
  end
  local created = tonumber(redis.call('HGET', job, 'created_at'))
  redis.call('ZADD', KEYS[2], math.min(due_at, created + max_wait), job_key)
  return {'coalesced', id}
end
-- A running job past its limits died silently; a queued one may just sit in a long backlog
-- (resending moves it to the back), so it gets QUEUED_STALE_FACTOR times longer.
local since = tonumber(redis.call('HGET', job, state == 'running' and 'started_at' or 'queued_at'))
local limit = state == 'running' and stale or queued_stale
if since and now - since > limit then
  requeue(new_id)
  return {'resend', new_id}
end
if state == 'running' then redis.call('HSET', job, 'rerun', '1') end
return {'coalesced', id}
