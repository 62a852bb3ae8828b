-- Writes one task's record unless the stored one is terminal (a task's
-- terminal status is final, whichever replica wrote it first), and tells
-- every replica.
--   KEYS[1]  the task: a hash of `status` and `record` (JSON)
--   KEYS[2]  its owner's index: task ids scored by creation time
--   ARGV[1]  the new status
--   ARGV[2]  the record
--   ARGV[3]  the ttl in ms for a new task; "0" for a change, which never
--            brings back a task that expired
--   ARGV[4]  the creation time (ms), ARGV[5] the task id
--   ARGV[6]  the channel that hears of changes
-- Returns 1 when written, 0 when not.
local current = redis.call('HGET', KEYS[1], 'status')
if current == 'completed' or current == 'failed' or current == 'cancelled' then
  return 0
end
local ttl = tonumber(ARGV[3])
if not current and ttl == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'record', ARGV[2])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('ZADD', KEYS[2], tonumber(ARGV[4]), ARGV[5])
  if redis.call('PTTL', KEYS[2]) < ttl then
    redis.call('PEXPIRE', KEYS[2], ttl)
  end
end
redis.call('PUBLISH', ARGV[6], ARGV[5])
return 1
