-- Admits a new session under the team's caps, atomically: every replica
-- counts the same sessions.
--   KEYS[1]  every live session: ids scored by when they expire (ms of
--            the Redis server's clock)
--   KEYS[2]  the sessions of the new one's owner, scored alike
--   ARGV[1]  the session id, ARGV[2] its ttl in ms
--   ARGV[3]  the cap on all sessions, ARGV[4] the cap per owner
-- Returns 0 when admitted, 1 when the team is full, 2 when the owner is.
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now_ms)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  return 2
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 1
end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now_ms + ttl, ARGV[1])
redis.call('ZADD', KEYS[2], now_ms + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[2], ttl)
return 0
