-- ritmo: give back a reservation's permits, only if no later call changed the state since it was
-- made (the state still holds what the reservation wrote): the tail rule of ritmo's limiter.
--
-- KEYS[1]  the state key
-- ARGV[1]  now in microseconds, or "" to read the server's TIME
-- ARGV[2]  the tat the reservation wrote, as the acquire script replied it
-- ARGV[3]  its increment (k * T)
-- ARGV[4]  expiry margin in ms, as for the acquire script
-- Reply: 1 given back, 0 left unused
local MAX = 9007199254740991
local written = tonumber(ARGV[2])
if written >= MAX or written <= 0 then return 0 end
if redis.call('GET', KEYS[1]) ~= string.format('%d', written) then return 0 end
local now
if ARGV[1] == '' then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local back = written - tonumber(ARGV[3])
-- Written back even when it is already in the past (the key then says what a missing one would,
-- until it expires): a reservation made before this one can still be given back after it.
local ms = math.ceil((back - now) / 1000)
if ms < 1 then ms = 1 end
ms = ms + tonumber(ARGV[4])
redis.call('SET', KEYS[1], string.format('%d', back), 'PX', string.format('%d', ms))
return 1
