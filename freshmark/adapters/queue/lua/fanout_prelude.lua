-- Helpers prepended to the fanout scripts that use them. KEYS[1]: the fan-out record.
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function current(id)
  return redis.call('HGET', KEYS[1], 'id') == id
    and redis.call('HGET', KEYS[1], 'state') == 'running'
end
local function touch()
  local ttl = redis.call('HGET', KEYS[1], 'ttl_ms')
  if ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
end
local function held_by(value, holder)
  return value and string.sub(value, 1, #holder + 1) == holder .. ' '
end
local function lease(holder, seconds)
  return holder .. ' ' .. string.format('%.3f', now() + tonumber(seconds))
end
