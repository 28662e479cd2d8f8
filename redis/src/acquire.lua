-- ritmo: take k permits from one GCRA state, atomically (the same rule as ritmo's in-process
-- limiter). Integer arithmetic only, every value below 2^53 so that Lua's doubles stay exact.
--
-- KEYS[1]  the state: the instant the next permit arrives (tat), integer microseconds, as text
-- ARGV[1]  now in microseconds, or "" to read the server's TIME
-- ARGV[2]  increment  = k * T   (1 <= increment <= window)
-- ARGV[3]  window     = n * T
-- ARGV[4]  max_wait   (0: admit at once or reject)
-- ARGV[5]  expiry margin in ms (0 on Redis's own clock; more when the caller's clock may drift
--          from the server's, since a key must never expire before its burst is full again)
-- Reply: { status, now, a, b }
--   status 1: admitted now,           a = new tat, b = 0
--   status 2: reserved, must wait,    a = new tat, b = wait (the slot is now + wait)
--   status 0: rejected,               a = wait (MAX: never), b = tat, unchanged
local MAX = 9007199254740991 -- 2^53 - 1
local function sat_add(a, b)
  if a > MAX - b then return MAX end
  return a + b
end
local now
if ARGV[1] == '' then
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local inc = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])
local tat = 0
local stored = redis.call('GET', KEYS[1])
if stored then
  tat = tonumber(stored)
  if tat == nil then return redis.error_reply('ritmo: the state key holds no integer') end
  -- only this script writes the key; anything else is kept in range, never trusted past it
  tat = math.floor(tat)
  if tat > MAX then tat = MAX elseif tat < 0 then tat = 0 end
end
local start = tat
if now > start then start = now end
if start >= MAX then return { 0, now, MAX, tat } end
-- the instant the call's last permit arrives: start + inc - window, never below 0
local slot = start - (window - inc)
if slot < 0 then slot = 0 end
local status = 1
local wait = 0
if slot > now then
  wait = slot - now
  if wait > max_wait then return { 0, now, wait, tat } end
  status = 2
end
local new_tat = sat_add(start, inc)
-- expire when the burst is full again (tat <= now): then the key says nothing a fresh one does not
local ms = math.ceil((new_tat - now) / 1000) + tonumber(ARGV[5])
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', string.format('%d', ms))
return { status, now, new_tat, wait }
