-- KEYS: fan-out record. ARGV: fanout_id, then the batches whose lexical documents the
-- coordinator has taken (dropped, so the record holds only those not yet taken).
if redis.call('HGET', KEYS[1], 'id') ~= ARGV[1] then return 0 end
for i = 2, #ARGV do redis.call('HDEL', KEYS[1], 'lexical:' .. ARGV[i]) end
return 1
