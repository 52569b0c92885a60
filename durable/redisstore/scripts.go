package redisstore

import "github.com/redis/go-redis/v9"

// Every script takes the same KEYS, those of one shard (see keys.go):
//
//	KEYS[1] pending   sorted set: member prefix..ID, score due time (µs)
//	KEYS[2] inflight  sorted set: member ID, score lease deadline (µs)
//	KEYS[3] dead      sorted set: member prefix..ID, score time of death (µs)
//	KEYS[4] meta      hash: ID -> "state|prefix|attempt|token|nonce"
//	KEYS[5] payload   hash: ID -> payload
//	KEYS[6] seq       counter of the order in which messages became pending or died
//	KEYS[7] token     counter of fencing tokens
//	KEYS[8] wake      pub/sub channel (a shard channel on Redis 7)
//	KEYS[9] error     hash: ID -> the text of its last failed attempt's error
//	KEYS[10] enqueued hash: ID -> when it was first enqueued (µs, Redis's clock)
//
// The scripts publish with SPUBLISH if Redis is 7.0 or later, PUBLISH
// otherwise, and decide it themselves (shardedTest), on the server: a
// subscriber asks the server the same question (shardedScript) before it
// subscribes, so publishers and subscribers always agree, whatever the
// permissions of their Redis users.
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
// order they became pending. In meta, state is p (pending), f (in flight
// and handed out), a (in flight, claimed ahead of its due time and not
// confirmed yet: an Enqueue or a Cancel takes it back) or d (dead); prefix is the member's prefix in pending or dead, and - in
// flight; token is the current lease's fencing token (0 if none); nonce
// is the random number of the Enqueue call that wrote the message, kept
// whatever happens to it, so that the same call sent again (go-redis
// retries a command whose reply was lost) finds its messages written and
// leaves them alone. A meta without nonce (written before it existed)
// reads as one with an empty nonce. The error and enqueued hashes are
// apart from meta so that processes of the version before them, which
// parse meta strictly, keep working on the same queue during an upgrade;
// a message without an enqueued time has no EnqueuedAt until an Enqueue
// replaces it.
//
// Lua numbers are doubles: microseconds since 1970, seq and tokens are
// integers below 2^53, exact, and are written with %.0f, never tostring,
// which keeps only 14 digits. A script checks everything before its first
// write and cannot fail after it, since Redis does not roll a script back.
const prelude = `
if redis.replicate_commands then redis.replicate_commands() end
local P, F, D, M, B, S, T, W, E, Q = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local PUB = 'PUBLISH'
if ` + shardedTest + ` then PUB = 'SPUBLISH' end

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
  local st, pre, att, tok, rest = string.match(raw, '^(%a)|([^|]*)|(%d+)|(%d+)(.*)$')
  if not st then return nil end
  local nonce = ''
  if rest ~= '' then
    nonce = string.match(rest, '^|(%x*)$')
    if not nonce then return nil end
  end
  return {st = st, pre = pre, att = tonumber(att), tok = tok, nonce = nonce}
end

-- leased reports whether m is in flight (handed out or claimed ahead)
-- with the lease token tok.
local function leased(m, tok)
  return m and (m.st == 'f' or m.st == 'a') and m.tok == tok
end

-- mkmeta is the meta of a message in state st, keeping the nonce of m.
local function mkmeta(st, pre, att, tok, m)
  return st .. '|' .. pre .. '|' .. att .. '|' .. tok .. '|' .. m.nonce
end

-- head returns the score of the first member of the sorted set key, or -1.
local function head(key)
  local h = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if h[2] then return tonumber(h[2]) end
  return -1
end

-- trim_dead deletes the oldest dead messages beyond maxn (0: no limit)
-- and those that died before now - maxage microseconds (0: no limit), at
-- most 100 a call, so that a call stays short; every death
-- calls it, which keeps up. It returns how many it deleted.
local function trim_dead(now, maxn, maxage)
  local gone = {}
  if maxn > 0 then
    local over = redis.call('ZCARD', D) - maxn
    if over > 0 then
      gone = redis.call('ZRANGE', D, 0, math.min(over, 100) - 1)
    end
  end
  if maxage > 0 and #gone < 100 then
    -- The first #gone members are those above: skip them.
    local old = redis.call('ZRANGEBYSCORE', D, '-inf', '(' .. num(now - maxage), 'LIMIT', #gone, 100 - #gone)
    for i = 1, #old do gone[#gone + 1] = old[i] end
  end
  if #gone == 0 then return 0 end
  local ids = {}
  for i = 1, #gone do ids[i] = string.sub(gone[i], 21) end
  redis.call('ZREM', D, unpack(gone))
  redis.call('HDEL', M, unpack(ids))
  redis.call('HDEL', B, unpack(ids))
  redis.call('HDEL', E, unpack(ids))
  redis.call('HDEL', Q, unpack(ids))
  return #gone
end

-- notify publishes on the wake channel when the earliest pending message is
-- now earlier than before: other processes may have armed a later timer.
local function notify(before, after)
  if after >= 0 and (before < 0 or after < before) then
    redis.call(PUB, W, num(after))
  end
end
`

// shardedTest is the Lua condition on which the scripts publish with
// SPUBLISH rather than PUBLISH: Redis 7.0 or later (REDIS_VERSION_NUM
// appeared in 7.0, and is nil before).
const shardedTest = `(redis.REDIS_VERSION_NUM ~= nil and redis.REDIS_VERSION_NUM >= 0x070000)`

// shardedScript returns 1 if the scripts publish with SPUBLISH on the
// server that runs it, 0 if with PUBLISH. Its one key is a wake channel,
// so that on a cluster it runs on the node that owns the channel's slot.
var shardedScript = redis.NewScript(`if ` + shardedTest + ` then return 1 end return 0`)

// enqueueScript writes ARGV[2] messages as pending, replacing any message
// of the same ID whatever its state, except one that ARGV[1], the nonce of
// the Enqueue call, wrote already: this is the same call sent again. Each
// message is 4 arguments: ID, payload, due score (empty for Redis's now)
// and the 4 digits of nanoseconds of the prefix. No two messages of a call
// have the same ID.
var enqueueScript = redis.NewScript(prelude + `
local nonce = ARGV[1]
local n = tonumber(ARGV[2])
local before = head(P)
local now = -1
local seq = redis.call('INCRBY', S, n) - n
for i = 0, n - 1 do
  local a = 3 + 4 * i
  local id = ARGV[a]
  seq = seq + 1
  local m = meta(redis.call('HGET', M, id))
  if not (m and nonce ~= '' and m.nonce == nonce) then
    if now < 0 then now = now_us() end
    local score = ARGV[a + 2]
    if score == '' then score = num(now) end
    local new = {nonce = nonce}
    if not m or redis.call('HEXISTS', Q, id) == 0 then
      redis.call('HSET', Q, id, num(now))
    end
    if m then
      if m.st == 'p' then
        redis.call('ZREM', P, m.pre .. id)
      elseif m.st == 'f' or m.st == 'a' then
        redis.call('ZREM', F, id)
      else
        redis.call('ZREM', D, m.pre .. id)
      end
    end
    local pre = prefix(ARGV[a + 3], seq)
    redis.call('ZADD', P, score, pre .. id)
    redis.call('HSET', M, id, mkmeta('p', pre, 0, 0, new))
    redis.call('HSET', B, id, ARGV[a + 1])
    redis.call('HDEL', E, id)
  end
end
notify(before, head(P))
return n
`)

// claimScript leases up to ARGV[1] pending messages due by Redis's now
// plus ARGV[4] microseconds, earliest first (in state f, handed out, for
// the first ARGV[5] due by now, and in state a, waiting for Confirm,
// otherwise), each until ARGV[2]
// microseconds after its due time or now, whichever is later, stopping
// before the message whose payload would take the payloads leased over
// ARGV[3] bytes (the first is always leased). It returns {now, now+lease,
// next due, next deadline, {ID, payload, attempt, token, due score,
// nanoseconds, last error, 1 if in state a else 0, ...}, pending messages
// left due by the horizon}; a missing next due or deadline is -1.
var claimScript = redis.NewScript(prelude + `
local now = now_us()
local limit = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local deadline = now + lease
local maxbytes = tonumber(ARGV[3])
local horizon = now + tonumber(ARGV[4])
local handout = tonumber(ARGV[5])
local out = {}
if limit > 0 then
  local due = redis.call('ZRANGEBYSCORE', P, '-inf', num(horizon), 'WITHSCORES', 'LIMIT', 0, limit)
  local members, ids = {}, {}
  local bytes = 0
  for i = 1, #due / 2 do
    local member = due[2 * i - 1]
    local id = string.sub(member, 21)
    local size = redis.call('HSTRLEN', B, id)
    if i > 1 and bytes + size > maxbytes then break end
    bytes = bytes + size
    members[i] = member
    ids[i] = id
  end
  local k = #members
  if k > 0 then
    local metas = redis.call('HMGET', M, unpack(ids))
    local bodies = redis.call('HMGET', B, unpack(ids))
    local errs = redis.call('HMGET', E, unpack(ids))
    redis.call('ZREM', P, unpack(members))
    local tok = redis.call('INCRBY', T, k) - k
    local zargs, hargs = {}, {}
    for i = 1, k do
      local m = meta(metas[i])
      if m and m.st == 'p' then
        tok = tok + 1
        local ts = num(tok)
        local att = m.att + 1
        zargs[#zargs + 1] = num(math.max(tonumber(due[2 * i]), now) + lease)
        zargs[#zargs + 1] = ids[i]
        hargs[#hargs + 1] = ids[i]
        local st = 'f'
        if tonumber(due[2 * i]) > now or handout <= 0 then
          st = 'a'
        else
          handout = handout - 1
        end
        hargs[#hargs + 1] = mkmeta(st, '-', att, ts, m)
        out[#out + 1] = ids[i]
        out[#out + 1] = bodies[i] or ''
        out[#out + 1] = att
        out[#out + 1] = ts
        out[#out + 1] = due[2 * i]
        out[#out + 1] = string.sub(members[i], 1, 4)
        out[#out + 1] = errs[i] or ''
        out[#out + 1] = (st == 'a') and 1 or 0
      end
    end
    if #zargs > 0 then
      redis.call('ZADD', F, unpack(zargs))
      redis.call('HSET', M, unpack(hargs))
    end
  end
end
return {now, deadline, head(P), head(F), out, redis.call('ZCOUNT', P, '-inf', num(horizon))}
`)

// ackScript deletes the in-flight message ARGV[1] if ARGV[2] is its token.
// It returns 1, or 0 if the lease is lost.
var ackScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not leased(m, ARGV[2]) then return 0 end
redis.call('ZREM', F, id)
redis.call('HDEL', M, id)
redis.call('HDEL', B, id)
redis.call('HDEL', E, id)
redis.call('HDEL', Q, id)
return 1
`)

// retryScript ends the lease of an in-flight message, as the caller
// decided (death, delay and error text are durable's rules, not the
// script's). It serves Retry and Release.
//
//	KEYS    the shard's (see above)
//	ARGV[1] ID
//	ARGV[2] token of the lease
//	ARGV[3] delay in microseconds: pending again that long from now
//	ARGV[4] '1': the message dies instead (and the dead letters are
//	        trimmed, see trim_dead)
//	ARGV[5] dead letters kept at most (0: no limit)
//	ARGV[6] age in microseconds after which dead letters go (0: none)
//	ARGV[7] error text, kept as the last error if not empty
//	ARGV[8] '1': end the lease only if its deadline has passed
//	returns 1 if the message died, 0 if it is pending, -1 if the lease is
//	        lost (or, with ARGV[8], has not expired): nothing written then
var retryScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not leased(m, ARGV[2]) then return -1 end
local now = now_us()
if ARGV[8] == '1' and tonumber(redis.call('ZSCORE', F, id) or 0) > now then return -1 end
redis.call('ZREM', F, id)
if ARGV[7] ~= '' then redis.call('HSET', E, id, ARGV[7]) end
local pre = prefix('1000', redis.call('INCR', S))
if ARGV[4] == '1' then
  redis.call('ZADD', D, num(now), pre .. id)
  redis.call('HSET', M, id, mkmeta('d', pre, m.att, 0, m))
  trim_dead(now, tonumber(ARGV[5]), tonumber(ARGV[6]))
  return 1
end
local before = head(P)
redis.call('ZADD', P, num(now + tonumber(ARGV[3])), pre .. id)
redis.call('HSET', M, id, mkmeta('p', pre, m.att, 0, m))
notify(before, head(P))
return 0
`)

// extendScript moves the deadline of lease ARGV[2] on ARGV[1] to ARGV[3]
// microseconds from now. It returns 1, or 0 if the lease is lost.
var extendScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not leased(m, ARGV[2]) then return 0 end
redis.call('ZADD', F, 'XX', num(now_us() + tonumber(ARGV[3])), id)
return 1
`)

// confirmScript hands out the lease ARGV[2] of ARGV[1], claimed ahead:
// state a becomes f. It returns 1 if the lease is current (whether it was
// confirmed already or not), 0 if it is lost.
var confirmScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not leased(m, ARGV[2]) then return 0 end
if m.st == 'a' then
  redis.call('HSET', M, id, mkmeta('f', m.pre, m.att, m.tok, m))
end
return 1
`)

// cancelScript deletes the message ARGV[1] if it is pending, dead, or
// claimed ahead and not confirmed. It returns 1 if it did, 0 if there was
// none, 2 if the message is in flight and handed out.
var cancelScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not m then return 0 end
if m.st == 'f' then return 2 end
if m.st == 'p' then
  redis.call('ZREM', P, m.pre .. id)
elseif m.st == 'a' then
  redis.call('ZREM', F, id)
else
  redis.call('ZREM', D, m.pre .. id)
end
redis.call('HDEL', M, id)
redis.call('HDEL', B, id)
redis.call('HDEL', E, id)
redis.call('HDEL', Q, id)
return 1
`)

// requeueScript makes the dead message ARGV[1] pending, due at score
// ARGV[2] (empty for now) with the nanoseconds ARGV[3], attempt 0. It
// returns 1, or 0 if no dead message has that ID.
var requeueScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not m or m.st ~= 'd' then return 0 end
local score = ARGV[2]
if score == '' then score = num(now_us()) end
local before = head(P)
redis.call('ZREM', D, m.pre .. id)
local pre = prefix(ARGV[3], redis.call('INCR', S))
redis.call('ZADD', P, score, pre .. id)
redis.call('HSET', M, id, mkmeta('p', pre, 0, 0, m))
redis.call('HDEL', E, id)
notify(before, head(P))
return 1
`)

// expiredScript reads the leases whose deadline has passed, earliest
// first; it only reads (a reap then ends each with retryScript).
//
//	KEYS    the shard's (see above)
//	ARGV[1] the most leases to return (0 or more)
//	ARGV[2] how many expired leases to skip first (a later page)
//	returns {now, next due, next deadline, {ID, deadline, attempt, token,
//	        ...}, leases read}, times in microseconds, a missing next due
//	        or deadline -1; a lease whose meta is not in flight is read
//	        (counted) but left out
var expiredScript = redis.NewScript(prelude + `
local now = now_us()
local limit = tonumber(ARGV[1])
local out = {}
local n = 0
if limit > 0 then
  local r = redis.call('ZRANGEBYSCORE', F, '-inf', num(now), 'WITHSCORES', 'LIMIT', tonumber(ARGV[2]), limit)
  n = #r / 2
  local ids = {}
  for i = 1, #r / 2 do ids[i] = r[2 * i - 1] end
  if #ids > 0 then
    local metas = redis.call('HMGET', M, unpack(ids))
    for i = 1, #ids do
      local m = meta(metas[i])
      if m and (m.st == 'f' or m.st == 'a') then
        out[#out + 1] = ids[i]
        out[#out + 1] = r[2 * i]
        out[#out + 1] = m.att
        out[#out + 1] = m.tok
      end
    end
  end
end
return {now, head(P), head(F), out, n}
`)

// deadScript returns up to ARGV[2] dead messages from rank ARGV[1], in the
// order they died, stopping before the message whose payload would take
// the payloads returned over ARGV[3] bytes (the first is always
// returned). It returns {ended, {ID, payload, time of death, ...}}, ended
// being 1 if no dead message follows the ones returned. It only reads.
var deadScript = redis.NewScript(prelude + `
local from = tonumber(ARGV[1])
local count = tonumber(ARGV[2])
local maxbytes = tonumber(ARGV[3])
local r = redis.call('ZRANGE', D, from, from + count - 1, 'WITHSCORES')
local out = {}
local bytes = 0
local n = #r / 2
for i = 1, n do
  local id = string.sub(r[2 * i - 1], 21)
  local size = redis.call('HSTRLEN', B, id)
  if i > 1 and bytes + size > maxbytes then return {0, out} end
  bytes = bytes + size
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', B, id) or ''
  out[#out + 1] = r[2 * i]
end
if n < count then return {1, out} end
return {0, out}
`)

// statsScript returns {pending, in flight, dead, next due (-1 if none)}.
// It only reads.
var statsScript = redis.NewScript(prelude + `
return {redis.call('ZCARD', P), redis.call('ZCARD', F), redis.call('ZCARD', D), head(P)}
`)

// getScript returns what the shard holds under ID ARGV[1]: {state letter,
// member, score, attempt, enqueued, payload, last error} (see
// inspectItem), or 0 if it holds no such message. It only reads.
var getScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', M, id))
if not m then return 0 end
local key, member = F, id
if m.st == 'p' then
  key, member = P, m.pre .. id
elseif m.st == 'd' then
  key, member = D, m.pre .. id
end
return {m.st, member, redis.call('ZSCORE', key, member) or '-1', m.att, redis.call('HGET', Q, id) or '',
  redis.call('HGET', B, id) or '', redis.call('HGET', E, id) or ''}
`)

// listScript returns up to ARGV[4] messages of the sorted set of state
// ARGV[1] (p, f or d), in order, after the position of score ARGV[2] and
// member ARGV[3] (from the first if ARGV[2] is empty), stopping before the
// message whose payload would take the payloads returned over ARGV[5]
// bytes (the first is always returned). It returns {ended, {member,
// score, attempt, enqueued, payload, last error, ...}}, ended being 1 if
// no message follows the ones returned. It only reads, and its cost is
// O(log N) to find the position, plus the messages it returns: if the
// cursor's member is still there at its score, its rank; otherwise a
// binary search, by rank, among the members of the cursor's score, for
// the first that Redis orders after the cursor's member (bytewise, as
// Redis orders members of equal score).
var listScript = redis.NewScript(prelude + `
local K = P
if ARGV[1] == 'f' then K = F elseif ARGV[1] == 'd' then K = D end
local count = tonumber(ARGV[4])
local maxbytes = tonumber(ARGV[5])

local function before_or_equal(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end

local start = 0
if ARGV[2] ~= '' then
  local member = ARGV[3]
  local sc = redis.call('ZSCORE', K, member)
  if sc and tonumber(sc) == tonumber(ARGV[2]) then
    start = redis.call('ZRANK', K, member) + 1
  else
    local lo = redis.call('ZCOUNT', K, '-inf', '(' .. ARGV[2])
    local hi = redis.call('ZCOUNT', K, '-inf', ARGV[2])
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if before_or_equal(redis.call('ZRANGE', K, mid, mid)[1], member) then
        lo = mid + 1
      else
        hi = mid
      end
    end
    start = lo
  end
end
local r = redis.call('ZRANGE', K, start, start + count - 1, 'WITHSCORES')
local out = {}
local bytes = 0
local n = #r / 2
for i = 1, n do
  local member = r[2 * i - 1]
  local id = member
  if K ~= F then id = string.sub(member, 21) end
  local size = redis.call('HSTRLEN', B, id)
  if i > 1 and bytes + size > maxbytes then return {0, out} end
  bytes = bytes + size
  local m = meta(redis.call('HGET', M, id))
  local att = 0
  if m then att = m.att end
  out[#out + 1] = member
  out[#out + 1] = r[2 * i]
  out[#out + 1] = att
  out[#out + 1] = redis.call('HGET', Q, id) or ''
  out[#out + 1] = redis.call('HGET', B, id) or ''
  out[#out + 1] = redis.call('HGET', E, id) or ''
end
if start + n >= redis.call('ZCARD', K) then return {1, out} end
return {0, out}
`)
