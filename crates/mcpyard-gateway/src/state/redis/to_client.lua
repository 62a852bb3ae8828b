-- A message for the client of a session whose stream this replica does not
-- hold: published for the replica that holds it, or, while none does,
-- logged after what the stream wrote, for the client's reconnection.
--   KEYS[1]  the note of the replica holding the session's stream
--   KEYS[2]  the replay log of the session's GET stream (a stream)
--   ARGV[1]  the channel of messages for clients
--   ARGV[2]  the message as published (the session and the message)
--   ARGV[3]  the message (JSON), as logged
--   ARGV[4]  about how many entries the log keeps
-- Returns 1 when published, 2 when logged, 0 when neither (no stream ever
-- wrote an event for the session: there is no id to resume from).
local holder = redis.call('GET', KEYS[1])
if holder then
  redis.call('PUBLISH', ARGV[1], holder .. ' ' .. ARGV[2])
  return 1
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'm', ARGV[3])
  return 2
end
return 0
