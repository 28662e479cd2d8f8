-- ritmo: read one GCRA state without changing it. KEYS[1] the state key; ARGV[1] now in
-- microseconds, or "" to read the server's TIME. Reply: { now, tat } (tat 0 when the key is absent).
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local stored = redis.call('GET', KEYS[1])
if not stored then return { now, 0 } end
local tat = tonumber(stored)
if tat == nil then return redis.error_reply('ritmo: the state key holds no integer') end
tat = math.floor(tat)
if tat > 9007199254740991 then tat = 9007199254740991 elseif tat < 0 then tat = 0 end
return { now, tat }
