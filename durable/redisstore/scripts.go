package redisstore

import (
	"strconv"

	"github.com/seed64e23a5c/timingwheel/durable/store"

	"github.com/redis/go-redis/v9"
)

// Every script takes the same KEYS, those of one shard (see keys.go), which
// the prelude names once:
//
//	KEYS[1]  pending_key   sorted set: member prefix..ID, score due time (µs)
//	KEYS[2]  inflight_key  sorted set: member ID, score lease deadline (µs)
//	KEYS[3]  dead_key      sorted set: member prefix..ID, score time of death (µs)
//	KEYS[4]  meta_key      hash: ID -> "state|prefix|attempt|token|nonce";
//	                       and the empty field "" (no ID is empty) -> "1"
//	                       while the queue is paused (see pauseScript)
//	KEYS[5]  payload_key   hash: ID -> payload
//	KEYS[6]  seq_key       counter of the order in which messages became pending or died
//	KEYS[7]  token_key     counter of fencing tokens
//	KEYS[8]  wake_key      pub/sub channel (a shard channel on Redis 7)
//	KEYS[9]  error_key     hash: ID -> the text of its last failed attempt's error
//	KEYS[10] enqueued_key  hash: ID -> when it was first enqueued (µs, Redis's clock)
//	KEYS[11] fields_key    hash: ID -> "nonce|MaxAttempts|Timeout|Kind" of a message
//	                       enqueued with any of them (see fields_of)
//
// Each script's comment gives its ARGV, which the script names once at its
// top, and what it returns.
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
// and dead are the ID behind a prefix of memberPrefixLen (20) bytes, which orders members of
// equal score (Redis orders them bytewise): 4 decimal digits, the
// nanoseconds of the time within the microsecond that ends at the score
// (0001 to 1000, onMicro for a time on the microsecond), then 16 hex digits
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
// The fields hash, apart from meta for the same reason, keeps a message's
// Kind, MaxAttempts and Timeout (nanoseconds), only for a message that
// has one of them: "MaxAttempts|Timeout|Kind" as the client wrote it
// (fieldsArg), the Kind last since it may hold a '|', behind the nonce of
// the Enqueue call that wrote the message and a '|'. An entry counts only
// if its nonce is the one in the message's meta (fields_of): a message
// without an entry, written before the hash existed or without any of the
// fields, has the zero ones, and so has one that a process of an earlier
// version replaced, which leaves the former message's entry behind but
// writes another nonce. The scripts never read the fields themselves.
//
// Lua numbers are doubles: microseconds since 1970, seq and tokens are
// integers below 2^53, exact, and are written with %.0f, never tostring,
// which keeps only 14 digits. A script checks everything before its first
// write and cannot fail after it, since Redis does not roll a script back.
var prelude = `
if redis.replicate_commands then redis.replicate_commands() end
local pending_key, inflight_key, dead_key, meta_key, payload_key, seq_key, token_key, wake_key, error_key, enqueued_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local fields_key = KEYS[11]
local PUB = 'PUBLISH'
if ` + shardedTest + ` then PUB = 'SPUBLISH' end

-- A member of pending or dead is a prefix of PREFIX_LEN bytes, NS_DIGITS
-- digits of nanoseconds then the seq in hex, and the ID; ON_MICRO is the
-- nanoseconds of a time on the microsecond. TRIM_MAX (store.MaxTrim) is the most dead
-- messages trim_dead deletes in a call.
local PREFIX_LEN = ` + strconv.Itoa(memberPrefixLen) + `
local NS_DIGITS = ` + strconv.Itoa(nsDigits) + `
local ON_MICRO = '` + onMicro + `'
local TRIM_MAX = ` + strconv.Itoa(store.MaxTrim) + `

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
  return string.format('%s%016x', ns, seq)
end

-- member_id returns the ID of a member of pending or dead.
local function member_id(member)
  return string.sub(member, PREFIX_LEN + 1)
end

-- member_ns returns the nanoseconds digits of a member of pending or dead.
local function member_ns(member)
  return string.sub(member, 1, NS_DIGITS)
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

-- fields_of returns the fields of the message whose meta is m, from raw,
-- its entry in the fields hash (false or nil if none): the entry behind
-- the nonce, if the nonce is the message's, and otherwise ''.
local function fields_of(raw, m)
  if not raw or not m then return '' end
  local tag = m.nonce .. '|'
  if string.sub(raw, 1, #tag) ~= tag then return '' end
  return string.sub(raw, #tag + 1)
end

-- leased reports whether m is in flight (handed out or claimed ahead)
-- with the lease token tok.
local function leased(m, tok)
  return m and (m.st == 'f' or m.st == 'a') and m.tok == tok
end

-- metaof is the meta of a message in state st written by the call of
-- the given nonce; mkmeta is that of a message that keeps the nonce of m.
-- The enqueue script's loop writes a pending message's meta inline, in
-- this format.
local function metaof(st, pre, att, tok, nonce)
  return st .. '|' .. pre .. '|' .. att .. '|' .. tok .. '|' .. nonce
end

local function mkmeta(st, pre, att, tok, m)
  return metaof(st, pre, att, tok, m.nonce)
end

-- head returns the score of the first member of the sorted set key, or -1.
local function head(key)
  local h = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  if h[2] then return tonumber(h[2]) end
  return -1
end

-- trim_dead deletes the oldest dead messages beyond maxn (0: no limit)
-- and those that died before now - maxage microseconds (0: no limit), at
-- most TRIM_MAX a call, so that a call stays short; every death
-- calls it, which keeps up. It returns how many it deleted.
local function trim_dead(now, maxn, maxage)
  local gone = {}
  if maxn > 0 then
    local over = redis.call('ZCARD', dead_key) - maxn
    if over > 0 then
      gone = redis.call('ZRANGE', dead_key, 0, math.min(over, TRIM_MAX) - 1)
    end
  end
  if maxage > 0 and #gone < TRIM_MAX then
    -- The first #gone members are those above: skip them.
    local old = redis.call('ZRANGEBYSCORE', dead_key, '-inf', '(' .. num(now - maxage), 'LIMIT', #gone, TRIM_MAX - #gone)
    for i = 1, #old do gone[#gone + 1] = old[i] end
  end
  if #gone == 0 then return 0 end
  local ids = {}
  for i = 1, #gone do ids[i] = member_id(gone[i]) end
  redis.call('ZREM', dead_key, unpack(gone))
  redis.call('HDEL', meta_key, unpack(ids))
  redis.call('HDEL', payload_key, unpack(ids))
  redis.call('HDEL', error_key, unpack(ids))
  redis.call('HDEL', enqueued_key, unpack(ids))
  redis.call('HDEL', fields_key, unpack(ids))
  return #gone
end

-- notify publishes on the wake channel when the earliest pending message is
-- now earlier than before: other processes may have armed a later timer.
local function notify(before, after)
  if after >= 0 and (before < 0 or after < before) then
    redis.call(PUB, wake_key, num(after))
  end
end

-- unlist takes the message id, whose meta is m, out of the sorted set of
-- its state (pending, in flight or dead), and reports whether it was
-- pending.
local function unlist(id, m)
  if m.st == 'p' then
    redis.call('ZREM', pending_key, m.pre .. id)
    return true
  elseif m.st == 'f' or m.st == 'a' then
    redis.call('ZREM', inflight_key, id)
  else
    redis.call('ZREM', dead_key, m.pre .. id)
  end
  return false
end

-- put writes the message id as pending, due at score with the member
-- prefix pre, and the fields flds ('' for none), replacing what the shard
-- held under id (m, its meta, or nil) whatever its state; nonce is the
-- writing call's, now Redis's now.
local function put(id, body, score, pre, nonce, now, m, flds)
  if not m or redis.call('HEXISTS', enqueued_key, id) == 0 then
    redis.call('HSET', enqueued_key, id, num(now))
  end
  if m then unlist(id, m) end
  redis.call('ZADD', pending_key, score, pre .. id)
  redis.call('HSET', meta_key, id, metaof('p', pre, 0, 0, nonce))
  redis.call('HSET', payload_key, id, body)
  redis.call('HDEL', error_key, id)
  if flds ~= '' then
    redis.call('HSET', fields_key, id, nonce .. '|' .. flds)
  elseif m then
    redis.call('HDEL', fields_key, id)
  end
end

-- drop deletes the message id if it is pending, dead, or claimed ahead
-- and not confirmed: it returns 1 if it did, 0 if there was none, 2 if
-- the message is in flight and handed out (and left alone).
local function drop(id)
  local m = meta(redis.call('HGET', meta_key, id))
  if not m then return 0 end
  if m.st == 'f' then return 2 end
  unlist(id, m)
  redis.call('HDEL', meta_key, id)
  redis.call('HDEL', payload_key, id)
  redis.call('HDEL', error_key, id)
  redis.call('HDEL', enqueued_key, id)
  redis.call('HDEL', fields_key, id)
  return 1
end
`

// shardedTest is the Lua condition on which the scripts publish with
// SPUBLISH rather than PUBLISH: Redis 7.0 or later (REDIS_VERSION_NUM
// appeared in 7.0, and is nil before).
const shardedTest = `(redis.REDIS_VERSION_NUM ~= nil and redis.REDIS_VERSION_NUM >= 0x070000)`

// shardedScript tells whether the scripts publish with SPUBLISH on the
// server that runs it.
//
//	KEYS[1]  a wake channel, so that on a cluster it runs on the node that
//	         owns the channel's slot
//	returns  1 for SPUBLISH, 0 for PUBLISH
var shardedScript = redis.NewScript(`if ` + shardedTest + ` then return 1 end return 0`)

// enqueueScript writes messages as pending, replacing any message of the
// same ID whatever its state, except one that this Enqueue call wrote
// already (the same call sent again). No two messages of a call have the
// same ID.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  nonce  the random number of the round trip (of the Enqueue
//	                calls it carries)
//	ARGV[2]  n      how many messages follow
//	then 5 arguments a message, named at the top of the loop:
//	         id     its ID
//	         body   its payload
//	         due    its due score (µs; empty for Redis's now)
//	         ns     the NS_DIGITS digits of nanoseconds of its prefix
//	         flds   its fields (fieldsArg; empty for none)
//	returns  n
var enqueueScript = redis.NewScript(prelude + `
local nonce = ARGV[1]
local n = tonumber(ARGV[2])
local before = head(pending_key)
local now = now_us()
local nows = num(now)
local seq = redis.call('INCRBY', seq_key, n) - n
local ids = {}
for i = 1, n do ids[i] = ARGV[5 * i - 2] end
local metas = redis.call('HMGET', meta_key, unpack(ids))
-- The writes of all the messages, made together below, as one command
-- each: a command called from Lua costs more than its arguments. The loop
-- runs per message of a batch, so it keeps counts rather than taking #
-- of its tables, and calls neither prefix nor metaof, but does what they do.
local zadd, metas_new, bodies, enqueued, written, flds_new, flds_gone = {}, {}, {}, {}, {}, {}, {}
-- the lengths of zadd (and metas_new and bodies), enqueued, written,
-- flds_new, flds_gone
local z, e, w, f, g = 0, 0, 0, 0, 0
local least, moved = -1, false
for i = 1, n do
  local a = 5 * i - 2
  local id, body, due, ns, flds = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  seq = seq + 1
  local m = metas[i] and meta(metas[i])
  if not (m and nonce ~= '' and m.nonce == nonce) then
    local score = due
    if score == '' then score = nows end
    local pre = string.format('%s%016x', ns, seq) -- prefix(ns, seq)
    if not m or redis.call('HEXISTS', enqueued_key, id) == 0 then
      enqueued[e + 1], enqueued[e + 2] = id, nows
      e = e + 2
    end
    if m and unlist(id, m) then moved = true end
    zadd[z + 1], zadd[z + 2] = score, pre .. id
    metas_new[z + 1], metas_new[z + 2] = id, 'p|' .. pre .. '|0|0|' .. nonce -- metaof('p', pre, 0, 0, nonce)
    bodies[z + 1], bodies[z + 2] = id, body
    z = z + 2
    w = w + 1
    written[w] = id
    -- A new message's fields need no delete: an entry left by an earlier
    -- version has another nonce (see fields_of).
    if flds ~= '' then
      flds_new[f + 1], flds_new[f + 2] = id, nonce .. '|' .. flds
      f = f + 2
    elseif m then
      g = g + 1
      flds_gone[g] = id
    end
    local sc = tonumber(score)
    if least < 0 or sc < least then least = sc end
  end
end
if w > 0 then
  redis.call('ZADD', pending_key, unpack(zadd))
  redis.call('HSET', meta_key, unpack(metas_new))
  redis.call('HSET', payload_key, unpack(bodies))
  -- A process of an older version may have deleted a message without
  -- its error text.
  redis.call('HDEL', error_key, unpack(written))
end
if e > 0 then redis.call('HSET', enqueued_key, unpack(enqueued)) end
if f > 0 then redis.call('HSET', fields_key, unpack(flds_new)) end
if g > 0 then redis.call('HDEL', fields_key, unpack(flds_gone)) end
-- The earliest pending message: the one before or the earliest written,
-- unless a message replaced was pending, which may have been the earliest.
local after = before
if moved then
  after = head(pending_key)
elseif least >= 0 and (before < 0 or least < before) then
  after = least
end
notify(before, after)
return n
`)

// claimScript leases pending messages due by Redis's now plus a horizon,
// or nothing if the queue is paused (the field "" of meta, see
// pauseScript), earliest first. Each is leased until lease after its due
// time or now, whichever is later (its ready time), in state f (handed
// out) if due by now, and otherwise in state a (claimed ahead, waiting
// for Confirm); those in state a beyond the first first are held: until
// heldlease after their ready time (lease if heldlease is 0). It stops before the message whose payload would take the
// payloads leased over maxbytes (the first is always leased).
//
//	KEYS     the shard's (see above)
//	ARGV[1]  limit      the most messages to lease
//	ARGV[2]  lease      µs
//	ARGV[3]  maxbytes   the most payload bytes to lease
//	ARGV[4]  ahead      µs after now that the horizon is
//	ARGV[5]  first      how many of the leases, the first, are not held
//	                    (due ones never are)
//	ARGV[6]  heldlease  µs: the lease of the others (0: lease)
//	returns  {now, now+lease, next due, next deadline, {ID, payload,
//	         attempt, token, due score, nanoseconds, last error, 1 if in
//	         state a else 0, ready, deadline, fields, ...}, pending
//	         messages left due by the horizon, 1 if paused else 0}; a
//	         missing next due or deadline is -1 (next due is -1 when
//	         paused)
var claimScript = redis.NewScript(prelude + `
local limit = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local maxbytes = tonumber(ARGV[3])
local ahead = tonumber(ARGV[4])
local first = tonumber(ARGV[5])
local heldlease = tonumber(ARGV[6])
if heldlease <= 0 then heldlease = lease end
local now = now_us()
local deadline = now + lease
local horizon = now + ahead
local out = {}
if redis.call('HEXISTS', meta_key, '') == 1 then
  return {now, deadline, -1, head(inflight_key), out, 0, 1}
end
if limit > 0 then
  local due = redis.call('ZRANGEBYSCORE', pending_key, '-inf', num(horizon), 'WITHSCORES', 'LIMIT', 0, limit)
  local members, ids = {}, {}
  local bytes = 0
  for i = 1, #due / 2 do
    local member = due[2 * i - 1]
    local id = member_id(member)
    local size = redis.call('HSTRLEN', payload_key, id)
    if i > 1 and bytes + size > maxbytes then break end
    bytes = bytes + size
    members[i] = member
    ids[i] = id
  end
  local k = #members
  if k > 0 then
    local metas = redis.call('HMGET', meta_key, unpack(ids))
    local bodies = redis.call('HMGET', payload_key, unpack(ids))
    local errs = redis.call('HMGET', error_key, unpack(ids))
    local flds = redis.call('HMGET', fields_key, unpack(ids))
    redis.call('ZREM', pending_key, unpack(members))
    local tok = redis.call('INCRBY', token_key, k) - k
    local zargs, hargs = {}, {}
    local leased_n = 0
    for i = 1, k do
      local m = meta(metas[i])
      if m and m.st == 'p' then
        tok = tok + 1
        leased_n = leased_n + 1
        local ts = num(tok)
        local att = m.att + 1
        -- The claim's arithmetic, in one place: ready is the later of
        -- the due time and now, and the deadline ready + lease, or ready
        -- + heldlease for a lease claimed ahead beyond the first first,
        -- held. A message due by now is handed out wherever it comes.
        local ready = math.max(tonumber(due[2 * i]), now)
        local st, l = 'a', lease
        if tonumber(due[2 * i]) <= now then
          st = 'f'
        elseif leased_n > first then
          l = heldlease
        end
        zargs[#zargs + 1] = num(ready + l)
        zargs[#zargs + 1] = ids[i]
        hargs[#hargs + 1] = ids[i]
        hargs[#hargs + 1] = mkmeta(st, '-', att, ts, m)
        out[#out + 1] = ids[i]
        out[#out + 1] = bodies[i] or ''
        out[#out + 1] = att
        out[#out + 1] = ts
        out[#out + 1] = due[2 * i]
        out[#out + 1] = member_ns(members[i])
        out[#out + 1] = errs[i] or ''
        out[#out + 1] = (st == 'a') and 1 or 0
        out[#out + 1] = ready
        out[#out + 1] = ready + l
        out[#out + 1] = fields_of(flds[i], m)
      end
    end
    if #zargs > 0 then
      redis.call('ZADD', inflight_key, unpack(zargs))
      redis.call('HSET', meta_key, unpack(hargs))
    end
  end
end
return {now, deadline, head(pending_key), head(inflight_key), out, redis.call('ZCOUNT', pending_key, '-inf', num(horizon)), 0}
`)

// firstLeaseScript gives leases that a Claim of several shards made held
// (beyond the first of their claimScript call) the lease of the first
// ones, when other shards had fewer messages than their share of those
// (see Store.Claim): it moves the deadline of each lease that is still
// current to the one given, Ready plus the claim's lease.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  n  how many leases follow (no ID twice)
//	then 3 arguments a lease:
//	         id        the message's ID
//	         tok       the token of the lease
//	         deadline  its new deadline (µs)
//	returns  for each lease in order, 1 if it moved the deadline, 0 if
//	         the lease is lost (nothing written for it)
var firstLeaseScript = redis.NewScript(prelude + `
local n = tonumber(ARGV[1])
local ids = {}
for i = 1, n do ids[i] = ARGV[3 * i - 1] end
local metas = redis.call('HMGET', meta_key, unpack(ids))
local out, zargs = {}, {}
for i = 1, n do
  if leased(meta(metas[i]), ARGV[3 * i]) then
    zargs[#zargs + 1] = ARGV[3 * i + 1]
    zargs[#zargs + 1] = ids[i]
    out[i] = 1
  else
    out[i] = 0
  end
end
if #zargs > 0 then redis.call('ZADD', inflight_key, 'XX', unpack(zargs)) end
return out
`)

// retryScript ends the lease of an in-flight message, as the caller
// decided (death, delay and error text are durable's rules, not the
// script's). It serves Retry.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  id            the message's ID
//	ARGV[2]  tok           the token of the lease
//	ARGV[3]  delay         µs: pending again that long from now
//	ARGV[4]  die           '1': the message dies instead (and the dead
//	                       letters are trimmed, see trim_dead)
//	ARGV[5]  maxdead       dead letters kept at most (0: no limit)
//	ARGV[6]  maxage        µs after which dead letters go (0: none)
//	ARGV[7]  errtext       error text, kept as the last error if not empty
//	ARGV[8]  only_expired  '1': end the lease only if its deadline has
//	                       passed
//	ARGV[9]  unhanded      '1': the message was not handled; its attempt
//	                       number goes down by one (not below zero)
//	returns  1 if the message died, 0 if it is pending, -1 if the lease is
//	         lost (or, with only_expired, has not expired): nothing
//	         written then
var retryScript = redis.NewScript(prelude + `
local id = ARGV[1]
local tok = ARGV[2]
local delay = tonumber(ARGV[3])
local die = ARGV[4] == '1'
local maxdead = tonumber(ARGV[5])
local maxage = tonumber(ARGV[6])
local errtext = ARGV[7]
local only_expired = ARGV[8] == '1'
local unhanded = ARGV[9] == '1'
local m = meta(redis.call('HGET', meta_key, id))
if not leased(m, tok) then return -1 end
local now = now_us()
if only_expired and tonumber(redis.call('ZSCORE', inflight_key, id) or 0) > now then return -1 end
if unhanded and m.att > 0 then m.att = m.att - 1 end
redis.call('ZREM', inflight_key, id)
if errtext ~= '' then redis.call('HSET', error_key, id, errtext) end
local pre = prefix(ON_MICRO, redis.call('INCR', seq_key))
if die then
  redis.call('ZADD', dead_key, num(now), pre .. id)
  redis.call('HSET', meta_key, id, mkmeta('d', pre, m.att, 0, m))
  trim_dead(now, maxdead, maxage)
  return 1
end
local before = head(pending_key)
redis.call('ZADD', pending_key, num(now + delay), pre .. id)
redis.call('HSET', meta_key, id, mkmeta('p', pre, m.att, 0, m))
notify(before, head(pending_key))
return 0
`)

// extendScript moves the deadline of a current lease.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  id     the message's ID
//	ARGV[2]  tok    the token of the lease
//	ARGV[3]  lease  µs: the new deadline is that long from now
//	returns  1, or 0 if the lease is lost
var extendScript = redis.NewScript(prelude + `
local id = ARGV[1]
local tok = ARGV[2]
local lease = tonumber(ARGV[3])
local m = meta(redis.call('HGET', meta_key, id))
if not leased(m, tok) then return 0 end
redis.call('ZADD', inflight_key, 'XX', num(now_us() + lease), id)
return 1
`)

// leasesScript acks and confirms leases, many at once: an ack deletes
// the in-flight message of a current lease; a confirmation hands out a
// lease claimed ahead (state a becomes f), and with a positive by also
// moves the lease's deadline to by after Redis's now, in the same write
// (store.ConfirmParams.By); a confirmation of a lease handed out already
// moves its deadline too.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  n    how many leases follow (no ID twice)
//	then 4 arguments a lease:
//	         id    the message's ID
//	         tok   the token of the lease
//	         kind  'a' to ack it, 'c' to confirm it
//	         by    µs: a confirmation's new deadline from now (0: the
//	               deadline stays; always 0 for an ack)
//	returns  for each lease in order, 1 if it is current (acked, or
//	         confirmed now or already), 0 if it is lost, 2 for a
//	         confirmation of a lease claimed ahead while the queue is
//	         paused (changing nothing)
var leasesScript = redis.NewScript(prelude + `
local n = tonumber(ARGV[1])
local ids = {}
for i = 1, n do ids[i] = ARGV[4 * i - 2] end
local metas = redis.call('HMGET', meta_key, unpack(ids))
local paused = nil -- asked once, if a confirmation needs it
local now = nil -- asked once, if a confirmation moves its deadline
local out, gone, hargs, zargs = {}, {}, {}, {}
for i = 1, n do
  local a = 4 * i - 2
  local m = meta(metas[i])
  if not leased(m, ARGV[a + 1]) then
    out[i] = 0
  elseif ARGV[a + 2] == 'a' then
    gone[#gone + 1] = ids[i]
    out[i] = 1
  else
    if m.st == 'a' then
      if paused == nil then paused = redis.call('HEXISTS', meta_key, '') == 1 end
      if paused then
        out[i] = 2
      else
        hargs[#hargs + 1] = ids[i]
        hargs[#hargs + 1] = mkmeta('f', m.pre, m.att, m.tok, m)
      end
    end
    if out[i] == nil then
      out[i] = 1
      local by = tonumber(ARGV[a + 3])
      if by > 0 then
        if now == nil then now = now_us() end
        zargs[#zargs + 1] = num(now + by)
        zargs[#zargs + 1] = ids[i]
      end
    end
  end
end
if #gone > 0 then
  redis.call('ZREM', inflight_key, unpack(gone))
  redis.call('HDEL', meta_key, unpack(gone))
  redis.call('HDEL', payload_key, unpack(gone))
  redis.call('HDEL', error_key, unpack(gone))
  redis.call('HDEL', enqueued_key, unpack(gone))
  redis.call('HDEL', fields_key, unpack(gone))
end
if #hargs > 0 then redis.call('HSET', meta_key, unpack(hargs)) end
if #zargs > 0 then redis.call('ZADD', inflight_key, 'XX', unpack(zargs)) end
return out
`)

// cancelScript deletes a message if it is pending, dead, or claimed ahead
// and not confirmed.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  id  the message's ID
//	returns  1 if it did, 0 if there was none, 2 if the message is in
//	         flight and handed out
var cancelScript = redis.NewScript(prelude + `
local id = ARGV[1]
return drop(id)
`)

// requeueScript makes a dead message pending again, attempt 0.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  id   the message's ID
//	ARGV[2]  due  its due score (µs; empty for Redis's now)
//	ARGV[3]  ns   the NS_DIGITS digits of nanoseconds of its prefix
//	returns  1, or 0 if no dead message has that ID
var requeueScript = redis.NewScript(prelude + `
local id = ARGV[1]
local due = ARGV[2]
local ns = ARGV[3]
local m = meta(redis.call('HGET', meta_key, id))
if not m or m.st ~= 'd' then return 0 end
local score = due
if score == '' then score = num(now_us()) end
local before = head(pending_key)
redis.call('ZREM', dead_key, m.pre .. id)
local pre = prefix(ns, redis.call('INCR', seq_key))
redis.call('ZADD', pending_key, score, pre .. id)
redis.call('HSET', meta_key, id, mkmeta('p', pre, 0, 0, m))
redis.call('HDEL', error_key, id)
notify(before, head(pending_key))
return 1
`)

// expiredScript reads the leases whose deadline has passed, earliest
// first; it only reads (a reap then ends each with retryScript).
//
//	KEYS     the shard's (see above)
//	ARGV[1]  limit  the most leases to return (0 or more)
//	ARGV[2]  skip   how many expired leases to skip first (a later page)
//	returns  {now, next due, next deadline, {ID, deadline, attempt, token,
//	         held (1: claimed ahead, not confirmed; else 0), fields (see
//	         fields_of), ...}, leases
//	         read}, times in µs, a missing next due or
//	         deadline -1; a lease whose meta is not in flight is read
//	         (counted) but left out
var expiredScript = redis.NewScript(prelude + `
local limit = tonumber(ARGV[1])
local skip = tonumber(ARGV[2])
local now = now_us()
local out = {}
local n = 0
if limit > 0 then
  local r = redis.call('ZRANGEBYSCORE', inflight_key, '-inf', num(now), 'WITHSCORES', 'LIMIT', skip, limit)
  n = #r / 2
  local ids = {}
  for i = 1, #r / 2 do ids[i] = r[2 * i - 1] end
  if #ids > 0 then
    local metas = redis.call('HMGET', meta_key, unpack(ids))
    local flds = redis.call('HMGET', fields_key, unpack(ids))
    for i = 1, #ids do
      local m = meta(metas[i])
      if m and (m.st == 'f' or m.st == 'a') then
        out[#out + 1] = ids[i]
        out[#out + 1] = r[2 * i]
        out[#out + 1] = m.att
        out[#out + 1] = m.tok
        if m.st == 'a' then out[#out + 1] = 1 else out[#out + 1] = 0 end
        out[#out + 1] = fields_of(flds[i], m)
      end
    end
  end
end
return {now, head(pending_key), head(inflight_key), out, n}
`)

// statsScript counts the shard's messages. It only reads.
//
//	KEYS     the shard's (see above)
//	returns  {pending, in flight, dead, next due (-1 if none), 1 if
//	         paused else 0}
var statsScript = redis.NewScript(prelude + `
return {redis.call('ZCARD', pending_key), redis.call('ZCARD', inflight_key), redis.call('ZCARD', dead_key), head(pending_key),
  redis.call('HEXISTS', meta_key, '')}
`)

// pauseScript pauses the queue's shard or resumes it: the field "" of
// meta (never an ID, which is not empty) holds "1" while it is paused.
// A resume publishes on the wake channel, as an Enqueue of a new earliest
// message does, so that receivers of every process claim again.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  paused  1 to pause, 0 to resume
//	returns  1 if it changed the state, 0 if it was so already
var pauseScript = redis.NewScript(prelude + `
if ARGV[1] == '1' then
  return redis.call('HSET', meta_key, '', '1')
end
local n = redis.call('HDEL', meta_key, '')
if n == 1 then
  redis.call(PUB, wake_key, num(now_us()))
end
return n
`)

// getScript reads what the shard holds under one ID. It only reads.
//
//	KEYS     the shard's (see above)
//	ARGV[1]  id  the message's ID
//	returns  {state letter, member, score, attempt, enqueued, payload,
//	         last error, fields} (see inspectItem), or 0 if it holds no
//	         such message
var getScript = redis.NewScript(prelude + `
local id = ARGV[1]
local m = meta(redis.call('HGET', meta_key, id))
if not m then return 0 end
local key, member = inflight_key, id
if m.st == 'p' then
  key, member = pending_key, m.pre .. id
elseif m.st == 'd' then
  key, member = dead_key, m.pre .. id
end
return {m.st, member, redis.call('ZSCORE', key, member) or '-1', m.att, redis.call('HGET', enqueued_key, id) or '',
  redis.call('HGET', payload_key, id) or '', redis.call('HGET', error_key, id) or '',
  fields_of(redis.call('HGET', fields_key, id), m)}
`)

// listScript reads a page of the messages of one state, in order, after a
// cursor, stopping before the message whose payload would take the
// payloads returned over maxbytes (the first is always returned). It only
// reads, and its cost is O(log N) to find the position, plus the messages
// it returns: if the cursor's member is still there at its score, its
// rank; otherwise a binary search, by rank, among the members of the
// cursor's score, for the first that Redis orders after the cursor's
// member (bytewise, as Redis orders members of equal score).
//
//	KEYS     the shard's (see above)
//	ARGV[1]  state          p, f or d: the sorted set to read
//	ARGV[2]  cursor_score   the cursor's score (empty: from the first)
//	ARGV[3]  cursor_member  the cursor's member
//	ARGV[4]  count          the most messages to return
//	ARGV[5]  maxbytes       the most payload bytes to return
//	returns  {ended, {member, score, attempt, enqueued, payload, last
//	         error, fields, ...}}, ended being 1 if no message follows the ones
//	         returned
var listScript = redis.NewScript(prelude + `
local state = ARGV[1]
local cursor_score = ARGV[2]
local cursor_member = ARGV[3]
local count = tonumber(ARGV[4])
local maxbytes = tonumber(ARGV[5])
local set = pending_key
if state == 'f' then set = inflight_key elseif state == 'd' then set = dead_key end

local function before_or_equal(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end

local start = 0
if cursor_score ~= '' then
  local sc = redis.call('ZSCORE', set, cursor_member)
  if sc and tonumber(sc) == tonumber(cursor_score) then
    start = redis.call('ZRANK', set, cursor_member) + 1
  else
    local lo = redis.call('ZCOUNT', set, '-inf', '(' .. cursor_score)
    local hi = redis.call('ZCOUNT', set, '-inf', cursor_score)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if before_or_equal(redis.call('ZRANGE', set, mid, mid)[1], cursor_member) then
        lo = mid + 1
      else
        hi = mid
      end
    end
    start = lo
  end
end
local r = redis.call('ZRANGE', set, start, start + count - 1, 'WITHSCORES')
local out = {}
local bytes = 0
local n = #r / 2
for i = 1, n do
  local member = r[2 * i - 1]
  local id = member
  if set ~= inflight_key then id = member_id(member) end
  local size = redis.call('HSTRLEN', payload_key, id)
  if i > 1 and bytes + size > maxbytes then return {0, out} end
  bytes = bytes + size
  local m = meta(redis.call('HGET', meta_key, id))
  local att = 0
  if m then att = m.att end
  out[#out + 1] = member
  out[#out + 1] = r[2 * i]
  out[#out + 1] = att
  out[#out + 1] = redis.call('HGET', enqueued_key, id) or ''
  out[#out + 1] = redis.call('HGET', payload_key, id) or ''
  out[#out + 1] = redis.call('HGET', error_key, id) or ''
  out[#out + 1] = fields_of(redis.call('HGET', fields_key, id), m)
end
if start + n >= redis.call('ZCARD', set) then return {1, out} end
return {0, out}
`)

// The scripts of the series of durable.Queue.Schedule take the KEYS of a
// shard, then:
//
//	KEYS[12]     series_key  hash: series name -> JSON {"fp", "last",
//	                         "next", "pending"}, the times in Unix
//	                         nanoseconds as decimal strings ("" for the
//	                         zero time)
//	KEYS[13..23] the KEYS of the shard of the message to cancel (the same
//	             as KEYS[1..11] for a queue of one shard)
//
// series_key carries the queue's tag ({queue}), the slot of the shard of
// a queue of one shard: so a step and its messages are one script on a
// cluster too. A queue of several shards keeps its series on a single
// node only, where a script may use keys of any slot (see series.go).

// seriesPrelude names the series' keys, and use_shard makes the prelude's
// functions work on the shard whose KEYS start after KEYS[base].
var seriesPrelude = prelude + `
local series_key = KEYS[12]
local function use_shard(base)
  pending_key, inflight_key, dead_key, meta_key, payload_key = KEYS[base + 1], KEYS[base + 2], KEYS[base + 3], KEYS[base + 4], KEYS[base + 5]
  seq_key, token_key, wake_key, error_key, enqueued_key = KEYS[base + 6], KEYS[base + 7], KEYS[base + 8], KEYS[base + 9], KEYS[base + 10]
  fields_key = KEYS[base + 11]
end
`

// seriesStepScript is AdvanceSeries: if the series is as expected, it
// cancels a message, writes one, and sets the series' state.
//
//	KEYS     the message's shard's, series_key, the cancelled message's
//	         shard's (see above)
//	ARGV[1]  name         the series' name
//	ARGV[2]  expect_last  the Last the caller read ("" for none)
//	ARGV[3]  expect_fp    the Fingerprint the caller read ("" for none)
//	ARGV[4]  fp           the new Fingerprint
//	ARGV[5]  last         the new Last
//	ARGV[6]  next         the new Next
//	ARGV[7]  cancel       the ID of a message to cancel ("" for none)
//	ARGV[8]  id           the ID of the message to write ("" for none)
//	ARGV[9]  body         its payload
//	ARGV[10] due          its due score (µs; empty for Redis's now)
//	ARGV[11] ns           the NS_DIGITS digits of nanoseconds of its prefix
//	ARGV[12] nonce        the random number of the call
//	ARGV[13] flds         the message's fields (fieldsArg; empty for none)
//	returns  {1 if applied else 0, the series' JSON after the call ("" for
//	         none)}
var seriesStepScript = redis.NewScript(seriesPrelude + `
local name, expect_last, expect_fp = ARGV[1], ARGV[2], ARGV[3]
local fp, last, nxt, cancel = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local id, body, due, ns, nonce, flds = ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13]
local raw = redis.call('HGET', series_key, name)
local old = {fp = '', last = '', pending = ''}
if raw then old = cjson.decode(raw) end
if old.fp ~= expect_fp or old.last ~= expect_last then
  return {0, raw or ''}
end
if cancel ~= '' then
  use_shard(12)
  drop(cancel)
  use_shard(0)
end
local pending = old.pending or ''
if id ~= '' then
  local before = head(pending_key)
  local seq = redis.call('INCR', seq_key)
  local now = now_us()
  if due == '' then due = num(now) end
  put(id, body, due, prefix(ns, seq), nonce, now, meta(redis.call('HGET', meta_key, id)), flds)
  notify(before, head(pending_key))
  pending = id
end
local new = cjson.encode({fp = fp, last = last, next = nxt, pending = pending})
redis.call('HSET', series_key, name, new)
return {1, new}
`)

// seriesDeleteScript is DeleteSeries: it deletes the series and cancels
// its pending message, if that is the one the caller read.
//
//	KEYS     the pending message's shard's, series_key (see above)
//	ARGV[1]  name     the series' name
//	ARGV[2]  pending  the series' Pending the caller read
//	returns  1 if it deleted the series, 0 if there was none, 2 if its
//	         Pending is not the one read (nothing changed)
var seriesDeleteScript = redis.NewScript(seriesPrelude + `
local name, expect_pending = ARGV[1], ARGV[2]
local raw = redis.call('HGET', series_key, name)
if not raw then return 0 end
local old = cjson.decode(raw)
local pending = old.pending or ''
if pending ~= expect_pending then return 2 end
if pending ~= '' then drop(pending) end
redis.call('HDEL', series_key, name)
return 1
`)
