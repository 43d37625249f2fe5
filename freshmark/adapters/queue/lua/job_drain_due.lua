-- KEYS: due set. ARGV: now, limit, job key prefix.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, job_key in ipairs(due) do
  redis.call('ZREM', KEYS[1], job_key)
  local job = ARGV[3] .. job_key
  if redis.call('HGET', job, 'state') == 'waiting' then
    redis.call('HSET', job, 'state', 'queued', 'queued_at', ARGV[1])
    local f = redis.call('HMGET', job, 'id', 'kind', 'queue')
    table.insert(out, job_key); table.insert(out, f[1])
    table.insert(out, f[2]); table.insert(out, f[3])
  end
end
return out
