-- KEYS: running set. ARGV: now, job key prefix, new id prefix (a count is appended).
-- A running job whose run no longer holds its lock lost its worker (the lease lapsed): queue it
-- under a new id, so the dead run's message, if kombu ever restores it, is stale. Members that
-- are no longer running (finished, resent by a request, deleted) just leave the set.
local out, sent = {}, 0
for _, job_key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local job = ARGV[2] .. job_key
  local f = redis.call('HMGET', job, 'state', 'lock', 'lock_token', 'kind', 'queue')
  if f[1] ~= 'running' or not f[2] or f[2] == '' then
    redis.call('ZREM', KEYS[1], job_key)
  elseif redis.call('GET', f[2]) ~= f[3] then
    sent = sent + 1
    local id = ARGV[3] .. sent
    redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[1], 'id', id, 'rerun', '0')
    redis.call('ZREM', KEYS[1], job_key)
    for _, value in ipairs({job_key, id, f[4], f[5]}) do table.insert(out, value) end
  end
end
return out
