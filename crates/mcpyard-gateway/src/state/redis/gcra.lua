-- One call from a GCRA bucket (the algorithm of the `governor` crate),
-- atomically: every replica draws from the same bucket.
--   KEYS[1]  the bucket: the theoretical arrival time of the next call,
--            in microseconds of the Redis server's clock
--   ARGV[1]  the emission interval (µs): one call back per interval
--   ARGV[2]  the burst: calls that may come at once after a quiet spell
-- Returns 0 when the call may go, else the microseconds until one may.
local now = redis.call('TIME')
local now_us = tonumber(now[1]) * 1000000 + tonumber(now[2])
local interval = tonumber(ARGV[1])
local tolerance = interval * tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now_us
if tat < now_us then
  tat = now_us
end
local next_tat = tat + interval
local allowed_at = next_tat - tolerance
if allowed_at > now_us then
  return math.max(1, allowed_at - now_us)
end
-- A bucket back to full is the same as none: it expires then.
redis.call('SET', KEYS[1], string.format('%.0f', next_tat), 'PX',
  math.ceil((next_tat - now_us) / 1000) + 1)
return 0
