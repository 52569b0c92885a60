package redisstore

import "github.com/redis/go-redis/v9"

// Every script takes the same KEYS, those of one shard (see keys.go):
//
//	KEYS[1] pending   sorted set: member prefix..ID, score due time (µs)
//	KEYS[2] inflight  sorted set: member ID, score lease deadline (µs)
//	KEYS[3] dead      sorted set: member prefix..ID, score time of death (µs)
//	KEYS[4] meta      hash: ID -> "state|prefix|attempt|token"
//	KEYS[5] payload   hash: ID -> payload
//	KEYS[6] seq       counter of the order in which messages became pending or died
//	KEYS[7] token     counter of fencing tokens
//	KEYS[8] wake      pub/sub channel (a shard channel on Redis 7)
//
// A script never builds a key name, so all of them hash to the slot of the
// shard's tag, and a script is atomic on Redis Cluster too.
//
// A score is a time in microseconds, rounded up. The members of pending
// and dead are the ID behind a prefix of 20 bytes, which orders members of
// equal score (Redis orders them bytewise): 4 decimal digits, the
// nanoseconds of the time within the microsecond that ends at the score
// (0001 to 1000, 1000 for a time on the microsecond), then 16 hex digits
// of the seq counter, the order in which messages were written. So
// pending messages come out by due time to the nanosecond, then in the
// order they became pending. In meta, state is p (pending), f (in flight)
// or d (dead); prefix is the member's prefix in pending or dead, and - in
// flight; token is the current lease's fencing token (0 if none).
//
// Lua numbers are doubles: microseconds since 1970, seq and tokens are
// integers below 2^53, exact, and are written with %.0f, never tostring,
// which keeps only 14 digits. A script checks everything before its first
// write and cannot fail after it, since Redis does not roll a script back.
const prelude = `
if redis.replicate_commands then redis.replicate_commands() end
local P, F, D, M, B, S, T, W = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]

local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function num(n)
  return string.format('%.0f', n)
end

-- prefix returns the member prefix of a time with the given nanoseconds
-- within its microsecond, written at seq.
local function prefix(ns, seq)
  return ns .. string.format('%016x', seq)
end

local function meta(raw)
  if not raw then return nil end
  local st, pre, att, tok = string.match(raw, '^(%a)|([^|]*)|(%d+)|(%d+)$')
  if not st then return nil end
  return {st = st, pre = pre, att = tonumber(att), tok = tok}
end

-- head returns the score of the first member of the sorted set key, or -1.
local function head(key)
  local h = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if h[2] then return tonumber(h[2]) end
  return -1
end

-- notify publishes on the wake channel when the earliest pending message is
-- now earlier than before: other processes may have armed a later timer.
local function notify(cmd, before, after)
  if cmd ~= '' and after >= 0 and (before < 0 or after < before) then
    redis.call(cmd, W, num(after))
  end
end
`

// enqueueScript writes ARGV[2] messages as pending, replacing any message
// of the same ID whatever its state. ARGV[1] is the publish command (or
// empty), then each message is 4 arguments: ID, payload, due score (empty
// for Redis's now) and the 4 digits of nanoseconds of the prefix.
var enqueueScript = redis.NewScript(prelude + `
local n = tonumber(ARGV[2])
local before = head(P)
local now = -1
local seq = redis.call('INCRBY', S, n) - n
for i = 0, n - 1 do
  local a = 3 + 4 * i
  local id = ARGV[a]
  local score = ARGV[a + 2]
  if score == '' then
    if now < 0 then now = now_us() end
    score = num(now)
  end
  local m = meta(redis.call('HGET', M, id))
  if m then
    if m.st == 'p' then
      redis.call('ZREM', P, m.pre .. id)
    elseif m.st == 'f' then
      redis.call('ZREM', F, id)
    else
      redis.call('ZREM', D, m.pre .. id)
    end
  end
  seq = seq + 1
  local pre = prefix(ARGV[a + 3], seq)
  redis.call('ZADD', P, score, pre .. id)
  redis.call('HSET', M, id, 'p|' .. pre .. '|0|0')
  redis.call('HSET', B, id, ARGV[a + 1])
end
notify(ARGV[1], before, head(P))
return n
`)

// claimScript leases up to ARGV[1] pending messages due by Redis's now,
// earliest first, for ARGV[2] microseconds. It returns {now, deadline,
// next due, next deadline, {ID, payload, attempt, token, due score,
// nanoseconds, ...}}; a missing next due or deadline is -1.
var claimScript = redis.NewScript(prelude + `
local now = now_us()
local limit = tonumber(ARGV[1])
local deadline = now + tonumber(ARGV[2])
local out = {}
if limit > 0 then
  local due = redis.call('ZRANGEBYSCORE', P, '-inf', num(now), 'WITHSCORES', 'LIMIT', 0, limit)
  local k = #due / 2
  if k > 0 then
    local members, ids = {}, {}
    for i = 1, k do
      members[i] = due[2 * i - 1]
      ids[i] = string.sub(members[i], 21)
    end
    local metas = redis.call('HMGET', M, unpack(ids))
    local bodies = redis.call('HMGET', B, unpack(ids))
    redis.call('ZREM', P, unpack(members))
    local tok = redis.call('INCRBY', T, k) - k
    local dl = num(deadline)
    local zargs, hargs = {}, {}
    for i = 1, k do
      local m = meta(metas[i])
      if m and m.st == 'p' then
        tok = tok + 1
        local ts = num(tok)
        local att = m.att + 1
        zargs[#zargs + 1] = dl
        zargs[#zargs + 1] = ids[i]
        hargs[#hargs + 1] = ids[i]
        hargs[#hargs + 1] = 'f|-|' .. att .. '|' .. ts
        out[#out + 1] = ids[i]
        out[#out + 1] = bodies[i] or ''
        out[#out + 1] = att
        out[#out + 1] = ts
        out[#out + 1] = due[2 * i]
        out[#out + 1] = string.sub(members[i], 1, 4)
      end
    end
    if #zargs > 0 then
      redis.call('ZADD', F, unpack(zargs))
      redis.call('HSET', M, unpack(hargs))
    end
  end
end
return {now, deadline, head(P), head(F), out}
`)

// ackScript deletes the in-flight message ARGV[1] if ARGV[2] is its token.
// It returns 1, or 0 if the lease is lost.
var ackScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not m or m.st ~= 'f' or m.tok ~= ARGV[2] then return 0 end
redis.call('ZREM', F, id)
redis.call('HDEL', M, id)
redis.call('HDEL', B, id)
return 1
`)

// retryScript ends the lease ARGV[3] of the in-flight message ARGV[2]: it
// dies if its attempt is ARGV[5] or more, and is otherwise pending again
// ARGV[4] microseconds from now. ARGV[1] is the publish command. It
// returns 1 if the message died, 0 if it is pending, -1 if the lease is
// lost.
var retryScript = redis.NewScript(prelude + `
local id = ARGV[2]
local m = meta(redis.call('HGET', M, id))
if not m or m.st ~= 'f' or m.tok ~= ARGV[3] then return -1 end
local now = now_us()
redis.call('ZREM', F, id)
local pre = prefix('1000', redis.call('INCR', S))
if m.att >= tonumber(ARGV[5]) then
  redis.call('ZADD', D, num(now), pre .. id)
  redis.call('HSET', M, id, 'd|' .. pre .. '|' .. m.att .. '|0')
  return 1
end
local before = head(P)
redis.call('ZADD', P, num(now + tonumber(ARGV[4])), pre .. id)
redis.call('HSET', M, id, 'p|' .. pre .. '|' .. m.att .. '|0')
notify(ARGV[1], before, head(P))
return 0
`)

// extendScript moves the deadline of lease ARGV[2] on ARGV[1] to ARGV[3]
// microseconds from now. It returns 1, or 0 if the lease is lost.
var extendScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not m or m.st ~= 'f' or m.tok ~= ARGV[2] then return 0 end
redis.call('ZADD', F, 'XX', num(now_us() + tonumber(ARGV[3])), id)
return 1
`)

// cancelScript deletes the pending or dead message ARGV[1]. It returns 1
// if it did, 0 if there was none, 2 if the message is in flight.
var cancelScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not m then return 0 end
if m.st == 'f' then return 2 end
if m.st == 'p' then
  redis.call('ZREM', P, m.pre .. id)
else
  redis.call('ZREM', D, m.pre .. id)
end
redis.call('HDEL', M, id)
redis.call('HDEL', B, id)
return 1
`)

// requeueScript makes the dead message ARGV[2] pending, due at score
// ARGV[3] (empty for now) with the nanoseconds ARGV[4], attempt 0. ARGV[1]
// is the publish command. It returns 1, or 0 if no dead message has that
// ID.
var requeueScript = redis.NewScript(prelude + `
local id = ARGV[2]
local m = meta(redis.call('HGET', M, id))
if not m or m.st ~= 'd' then return 0 end
local score = ARGV[3]
if score == '' then score = num(now_us()) end
local before = head(P)
redis.call('ZREM', D, m.pre .. id)
local pre = prefix(ARGV[4], redis.call('INCR', S))
redis.call('ZADD', P, score, pre .. id)
redis.call('HSET', M, id, 'p|' .. pre .. '|0|0')
notify(ARGV[1], before, head(P))
return 1
`)

// reapScript ends up to ARGV[2] leases whose deadline has passed, earliest
// first: a message whose attempt is ARGV[3] or more dies, the others are
// pending again after ARGV[3+attempt] microseconds (the table's last entry
// for a later attempt). ARGV[1] is the publish command. It returns {now,
// returned, dead, next due, next deadline}.
var reapScript = redis.NewScript(prelude + `
local now = now_us()
local limit = tonumber(ARGV[2])
local maxa = tonumber(ARGV[3])
local ntab = #ARGV - 3
local returned, died = 0, 0
local before = head(P)
if limit > 0 then
  local ids = redis.call('ZRANGEBYSCORE', F, '-inf', num(now), 'LIMIT', 0, limit)
  local k = #ids
  if k > 0 then
    local metas = redis.call('HMGET', M, unpack(ids))
    redis.call('ZREM', F, unpack(ids))
    local seq = redis.call('INCRBY', S, k) - k
    local pargs, dargs, hargs = {}, {}, {}
    local snow = num(now)
    for i = 1, k do
      local m = meta(metas[i])
      seq = seq + 1
      if m and m.st == 'f' then
        local pre = prefix('1000', seq)
        if m.att >= maxa then
          dargs[#dargs + 1] = snow
          dargs[#dargs + 1] = pre .. ids[i]
          hargs[#hargs + 1] = ids[i]
          hargs[#hargs + 1] = 'd|' .. pre .. '|' .. m.att .. '|0'
          died = died + 1
        else
          local delay = 0
          if ntab > 0 then
            local idx = m.att
            if idx > ntab then idx = ntab end
            if idx < 1 then idx = 1 end
            delay = tonumber(ARGV[3 + idx])
          end
          pargs[#pargs + 1] = num(now + delay)
          pargs[#pargs + 1] = pre .. ids[i]
          hargs[#hargs + 1] = ids[i]
          hargs[#hargs + 1] = 'p|' .. pre .. '|' .. m.att .. '|0'
          returned = returned + 1
        end
      end
    end
    if #pargs > 0 then redis.call('ZADD', P, unpack(pargs)) end
    if #dargs > 0 then redis.call('ZADD', D, unpack(dargs)) end
    if #hargs > 0 then redis.call('HSET', M, unpack(hargs)) end
  end
end
notify(ARGV[1], before, head(P))
return {now, returned, died, head(P), head(F)}
`)

// deadScript returns up to ARGV[2] dead messages from rank ARGV[1], in the
// order they died: {ID, payload, time of death, ...}. It only reads.
var deadScript = redis.NewScript(prelude + `
local from = tonumber(ARGV[1])
local r = redis.call('ZRANGE', D, from, from + tonumber(ARGV[2]) - 1, 'WITHSCORES')
local out = {}
for i = 1, #r / 2 do
  local id = string.sub(r[2 * i - 1], 21)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', B, id) or ''
  out[#out + 1] = r[2 * i]
end
return out
`)

// statsScript returns {pending, in flight, dead, next due (-1 if none)}.
// It only reads.
var statsScript = redis.NewScript(prelude + `
return {redis.call('ZCARD', P), redis.call('ZCARD', F), redis.call('ZCARD', D), head(P)}
`)
