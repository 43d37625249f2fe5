-- KEYS: fan-out record, job hash. ARGV: fanout_id, job_key, head, total, ttl_ms,
-- batches-total field, batches-done field (of the job hash).
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'job', ARGV[2], 'head', ARGV[3], 'total', ARGV[4],
           'done', 0, 'state', 'running', 'ttl_ms', ARGV[5])
touch()
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[6], ARGV[4], ARGV[7], 0)
end
return 1
