-- KEYS: fan-out record. ARGV: fanout_id, batch, holder, lease_seconds, take_over_from.
if not current(ARGV[1]) then return {'gone'} end
if redis.call('HEXISTS', KEYS[1], 'result:' .. ARGV[2]) == 1 then return {'done'} end
local held = redis.call('HGET', KEYS[1], 'claim:' .. ARGV[2])
if held then
  local holder, lease_until = string.match(held, '^(%S+) (%S+)$')
  if holder ~= ARGV[3] and holder ~= ARGV[5] and tonumber(lease_until) > now() then
    return {'busy', holder}
  end
end
redis.call('HSET', KEYS[1], 'claim:' .. ARGV[2], lease(ARGV[3], ARGV[4]))
touch()
return {'claimed'}
