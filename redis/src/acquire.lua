-- ritmo: take k permits from GCRA states, atomically (the same rule as ritmo's in-process
-- limiter). Integer arithmetic only, every value below 2^53 so that Lua's doubles stay exact.
--
-- One call decides for one or more requests of one limiter (the async client gathers the
-- requests that wait at the same moment into one call): request i is KEYS[i] with ARGV[4 + 2i - 1]
-- and ARGV[4 + 2i], decided in order at one `now`, each on the state the ones before it left:
-- exactly the decisions of the same requests made one by one at that instant.
--
-- KEYS[i]  a state: the instant the next permit arrives (tat), integer microseconds, as text
-- ARGV[1]  now in microseconds, or "" to read the server's TIME
-- ARGV[2]  window     = n * T
-- ARGV[3]  expiry margin in ms (0 on Redis's own clock; more when the caller's clock may drift
--          from the server's, since a key must never expire before its burst is full again)
-- ARGV[2 + 2i]  request i's increment = k * T   (1 <= increment <= window)
-- ARGV[3 + 2i]  request i's max_wait  (0: admit at once or reject)
-- Reply: { status, now, a, b } for each request, one after the other
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
local window = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])

-- one request: its reply's four values
local function acquire(key, inc, max_wait)
  local tat = 0
  local stored = redis.call('GET', key)
  if stored then
    tat = tonumber(stored)
    if tat == nil then return nil end
    -- only this script writes the key; anything else is kept in range, never trusted past it
    tat = math.floor(tat)
    if tat > MAX then tat = MAX elseif tat < 0 then tat = 0 end
  end
  local start = tat
  if now > start then start = now end
  if start >= MAX then return 0, now, MAX, tat end
  -- the instant the call's last permit arrives: start + inc - window, never below 0
  local slot = start - (window - inc)
  if slot < 0 then slot = 0 end
  local status = 1
  local wait = 0
  if slot > now then
    wait = slot - now
    if wait > max_wait then return 0, now, wait, tat end
    status = 2
  end
  local new_tat = sat_add(start, inc)
  -- expire when the burst is full again (tat <= now): then the key says nothing a fresh one does
  -- not
  local ms = math.ceil((new_tat - now) / 1000) + margin
  redis.call('SET', key, string.format('%d', new_tat), 'PX', string.format('%d', ms))
  return status, now, new_tat, wait
end

local reply = {}
for i = 1, #KEYS do
  local status, t, a, b = acquire(KEYS[i], tonumber(ARGV[2 + 2 * i]), tonumber(ARGV[3 + 2 * i]))
  if status == nil then return redis.error_reply('ritmo: the state key holds no integer') end
  local j = 4 * (i - 1)
  reply[j + 1] = status
  reply[j + 2] = t
  reply[j + 3] = a
  reply[j + 4] = b
end
return reply
