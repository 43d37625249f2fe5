-- KEYS: running set, held set. ARGV: now, job key prefix, new id prefix (a count is appended),
-- hold lease prefix.
-- A running job whose run no longer holds its lock lost its worker (the lease lapsed); so did a
-- queued job whose message's holder let its hold lease lapse (a prefetched message, or a retry
-- held until its countdown, in a worker killed whole). Either is queued under a new id, so the
-- dead worker's message, if kombu ever restores it, is stale. Members that are no longer in
-- that state (claimed, finished, resent by a request, deleted) just leave their set.
local out, sent = {}, 0
local function resend(set, job_key, job, kind, queue)
  sent = sent + 1
  local id = ARGV[3] .. sent
  redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[1], 'id', id, 'rerun', '0')
  redis.call('ZREM', set, job_key)
  for _, value in ipairs({job_key, id, kind, queue}) do table.insert(out, value) end
end
for _, job_key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local job = ARGV[2] .. job_key
  local f = redis.call('HMGET', job, 'state', 'lock', 'lock_token', 'kind', 'queue')
  if f[1] ~= 'running' or not f[2] or f[2] == '' then
    redis.call('ZREM', KEYS[1], job_key)
  elseif redis.call('GET', f[2]) ~= f[3] then
    resend(KEYS[1], job_key, job, f[4], f[5])
  end
end
for _, job_key in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local job = ARGV[2] .. job_key
  local f = redis.call('HMGET', job, 'state', 'id', 'held_id', 'kind', 'queue')
  if f[1] ~= 'queued' or f[2] ~= f[3] then
    redis.call('ZREM', KEYS[2], job_key)
  elseif redis.call('EXISTS', ARGV[4] .. job_key) == 0 then
    resend(KEYS[2], job_key, job, f[4], f[5])
  end
end
return out
