package redisstore

import "github.com/redis/go-redis/v9"

// The scripts of the group commit (see groupcommit.go): each does the work
// of several calls, Enqueue, Ack or Confirm, one after the other as if
// each were a script call of its own, and reads and writes each key once
// for all of them (HMGET, then one ZADD, HSET or HDEL of many fields), so
// that a batch costs about the commands of one call.

// enqueueScript writes ARGV[1] messages as pending, in order, replacing
// any message of the same ID whatever its state, except one that the
// Enqueue call that writes it now wrote already: this is the same script
// call sent again. Each message is 5 arguments: the nonce of its Enqueue
// call, ID, payload, due score (empty for Redis's now) and the 4 digits
// of nanoseconds of the prefix. No two messages have the same ID. It
// publishes a wake-up if the earliest message written is earlier than
// every message pending before. It returns the count.
var enqueueScript = redis.NewScript(prelude + `
local n = tonumber(ARGV[1])
local ids = {}
for i = 1, n do ids[i] = ARGV[5 * i - 2] end
local metas = redis.call('HMGET', M, unpack(ids))
local before = head(P)
local now = -1
local seq = redis.call('INCRBY', S, n) - n
local zadd, hmeta, hbody, henq, written = {}, {}, {}, {}, {}
local oldp, oldf, oldd, replaced = {}, {}, {}, {}
local earliest = -1
for i = 1, n do
  local a = 5 * i - 3
  local nonce, id = ARGV[a], ids[i]
  seq = seq + 1
  local m = meta(metas[i])
  if not (m and nonce ~= '' and m.nonce == nonce) then
    if now < 0 then now = now_us() end
    local score = ARGV[a + 3]
    if score == '' then score = num(now) end
    if m then
      replaced[#replaced + 1] = id
      if m.st == 'p' then
        oldp[#oldp + 1] = m.pre .. id
      elseif m.st == 'f' or m.st == 'a' then
        oldf[#oldf + 1] = id
      else
        oldd[#oldd + 1] = m.pre .. id
      end
    else
      henq[#henq + 1] = id
      henq[#henq + 1] = num(now)
    end
    local pre = prefix(ARGV[a + 4], seq)
    zadd[#zadd + 1] = score
    zadd[#zadd + 1] = pre .. id
    hmeta[#hmeta + 1] = id
    hmeta[#hmeta + 1] = mkmeta('p', pre, 0, 0, {nonce = nonce})
    hbody[#hbody + 1] = id
    hbody[#hbody + 1] = ARGV[a + 2]
    written[#written + 1] = id
    local sc = tonumber(score)
    if earliest < 0 or sc < earliest then earliest = sc end
  end
end
if #written == 0 then return n end
-- A message replaced keeps its enqueued time, if it has one.
if #replaced > 0 then
  local q = redis.call('HMGET', Q, unpack(replaced))
  for i = 1, #replaced do
    if not q[i] then
      henq[#henq + 1] = replaced[i]
      henq[#henq + 1] = num(now)
    end
  end
end
if #oldp > 0 then redis.call('ZREM', P, unpack(oldp)) end
if #oldf > 0 then redis.call('ZREM', F, unpack(oldf)) end
if #oldd > 0 then redis.call('ZREM', D, unpack(oldd)) end
redis.call('ZADD', P, unpack(zadd))
redis.call('HSET', M, unpack(hmeta))
redis.call('HSET', B, unpack(hbody))
redis.call('HDEL', E, unpack(written))
if #henq > 0 then redis.call('HSET', Q, unpack(henq)) end
-- The messages left are due no earlier than before, so the earliest
-- pending message is now the earliest written if that is earlier.
notify(before, earliest)
return n
`)

// leaseArgs is the Lua that reads the ARGV of ackScript and confirmScript:
// pairs of an ID and a lease token, and the meta of each ID.
const leaseArgs = `
local n = #ARGV / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 * i - 1] end
local metas = redis.call('HMGET', M, unpack(ids))
`

// ackScript deletes, for each pair of ARGV (an ID and a token), the
// in-flight message ID if the token is its lease's. It returns, for each
// pair, 1, or 0 if the lease is lost (an ID acked by an earlier pair is
// lost for the later ones).
var ackScript = redis.NewScript(prelude + leaseArgs + `
local out, gone, acked = {}, {}, {}
for i = 1, n do
  local id = ids[i]
  if not acked[id] and leased(meta(metas[i]), ARGV[2 * i]) then
    acked[id] = true
    gone[#gone + 1] = id
    out[i] = 1
  else
    out[i] = 0
  end
end
if #gone > 0 then
  redis.call('ZREM', F, unpack(gone))
  redis.call('HDEL', M, unpack(gone))
  redis.call('HDEL', B, unpack(gone))
  redis.call('HDEL', E, unpack(gone))
  redis.call('HDEL', Q, unpack(gone))
end
return out
`)

// confirmScript hands out, for each pair of ARGV (an ID and a token), the
// lease of that token on the ID, claimed ahead: state a becomes f. It
// returns, for each pair, 1 if the lease is current (whether it was
// confirmed already or not), 0 if it is lost.
var confirmScript = redis.NewScript(prelude + leaseArgs + `
local out, hargs, confirmed = {}, {}, {}
for i = 1, n do
  local id = ids[i]
  local m = meta(metas[i])
  if leased(m, ARGV[2 * i]) then
    out[i] = 1
    if m.st == 'a' and not confirmed[id] then
      confirmed[id] = true
      hargs[#hargs + 1] = id
      hargs[#hargs + 1] = mkmeta('f', m.pre, m.att, m.tok, m)
    end
  else
    out[i] = 0
  end
end
if #hargs > 0 then redis.call('HSET', M, unpack(hargs)) end
return out
`)
