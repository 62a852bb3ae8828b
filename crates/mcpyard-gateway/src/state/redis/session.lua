-- Renews (ARGV[2] > 0) or ends (ARGV[2] == 0) session ARGV[1]: its record
-- and its place among the team's counted sessions.
--   KEYS[1]  the record (JSON, with `identity_kind` and `identity_name`)
--   KEYS[2]  every live session, scored by expiry
--   KEYS[3]  the replay log of its GET stream (a stream), which lives and
--            ends with it
--   ARGV[3]  the prefix of owners' keys (`<prefix>:sessions-of:`)
--   ARGV[4]  the channel that hears of ended sessions
local ttl = tonumber(ARGV[2])
local record = redis.call('GET', KEYS[1])
local owner = nil
if record then
  local ok, decoded = pcall(cjson.decode, record)
  if ok then
    owner = ARGV[3] .. decoded['identity_kind'] .. ':' .. decoded['identity_name']
  end
end
if ttl > 0 then
  if not record then
    return 0
  end
  local now = redis.call('TIME')
  local expires = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + ttl
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('PEXPIRE', KEYS[3], ttl)
  redis.call('ZADD', KEYS[2], 'XX', expires, ARGV[1])
  if owner then
    redis.call('ZADD', owner, 'XX', expires, ARGV[1])
    redis.call('PEXPIRE', owner, ttl)
  end
  return 1
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('ZREM', KEYS[2], ARGV[1])
if owner then
  redis.call('ZREM', owner, ARGV[1])
end
redis.call('PUBLISH', ARGV[4], ARGV[1])
return 1
