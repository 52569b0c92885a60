package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// The series of durable.Queue.Schedule: one hash, tw:{queue}:series, in
// the queue's hash tag, and the scripts seriesStepScript and
// seriesDeleteScript (see scripts.go).

// ErrSeriesSharded is returned by the series methods of a store of more
// than one shard (WithShards) on Redis Cluster: a series' step writes its
// state, a message of one shard and cancels one of another in one
// script, which a cluster runs only on keys of one slot. A queue of one
// shard keeps them all in its slot; on a single node, a script may use
// keys of any slot.
var ErrSeriesSharded = fmt.Errorf("redisstore: schedules on Redis Cluster need a queue of one shard: %w", store.ErrSeriesUnsupported)

// seriesKey is the hash of a queue's series.
func seriesKey(queue string) string {
	return keyPrefix + "{" + queue + "}:series"
}

// seriesKeys are the KEYS of the series scripts: the shard of id (a
// message to write), the series hash, and the shard of cancel (a message
// to cancel); the shard of the message written is the one the script
// runs for (see runKeys).
func (s *Store) seriesKeys(id, cancel string) (keys []string, sh int, err error) {
	if s.cluster && len(s.shards) > 1 {
		return nil, 0, ErrSeriesSharded
	}
	sh = shardOf(id, len(s.shards))
	keys = make([]string, 0, 2*numKeys+1)
	keys = append(keys, s.shards[sh].keys...)
	keys = append(keys, seriesKey(s.queue))
	keys = append(keys, s.shards[shardOf(cancel, len(s.shards))].keys...)
	return keys, sh, nil
}

// storedSeries is a series as the hash keeps it.
type storedSeries struct {
	Fingerprint string `json:"fp"`
	Last        string `json:"last"`
	Next        string `json:"next"`
	Pending     string `json:"pending"`
}

// nanosArg is t in Unix nanoseconds, "" for the zero time.
func nanosArg(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func parseNanos(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	ns, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns), nil
}

// decodeSeries reads the JSON the scripts write; raw "" is no series.
func decodeSeries(name, raw string) (store.Series, error) {
	if raw == "" {
		return store.Series{}, nil
	}
	var st storedSeries
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return store.Series{}, fmt.Errorf("redisstore: series %q: %w", name, err)
	}
	last, err := parseNanos(st.Last)
	if err != nil {
		return store.Series{}, fmt.Errorf("redisstore: series %q: last: %w", name, err)
	}
	next, err := parseNanos(st.Next)
	if err != nil {
		return store.Series{}, fmt.Errorf("redisstore: series %q: next: %w", name, err)
	}
	return store.Series{Name: name, Fingerprint: st.Fingerprint, Last: last, Next: next, Pending: st.Pending}, nil
}

// AdvanceSeries implements store.Store: one script call, the check, the
// cancel, the message and the state together.
func (s *Store) AdvanceSeries(ctx context.Context, p store.SeriesStep) (store.Series, bool, error) {
	if p.Message.ID != "" {
		if err := p.Message.Validate(); err != nil {
			return store.Series{}, false, err
		}
	}
	keys, sh, err := s.seriesKeys(p.Message.ID, p.Cancel)
	if err != nil {
		return store.Series{}, false, err
	}
	score, sub := dueArgs(p.Message.Due)
	r, err := s.runKeys(ctx, seriesStepScript, sh, keys, p.Name, nanosArg(p.ExpectLast), p.ExpectFingerprint,
		p.Fingerprint, nanosArg(p.Last), nanosArg(p.Next), p.Cancel,
		p.Message.ID, p.Message.Payload, score, sub, fmt.Sprintf("%016x", rand.Uint64()), fieldsArg(&p.Message))
	if err != nil {
		return store.Series{}, false, wrap("advance series", err)
	}
	out, ok := r.([]any)
	if !ok || len(out) != 2 {
		return store.Series{}, false, fmt.Errorf("redisstore: advance series: unexpected reply %v", r)
	}
	applied, _ := out[0].(int64)
	raw, _ := out[1].(string)
	sr, err := decodeSeries(p.Name, raw)
	return sr, applied == 1 && err == nil, err
}

// Series implements store.Store.
func (s *Store) Series(ctx context.Context, name string) (store.Series, error) {
	if s.closed.Load() {
		return store.Series{}, store.ErrClosed
	}
	if _, _, err := s.seriesKeys("", ""); err != nil {
		return store.Series{}, err
	}
	raw, err := s.client.HGet(ctx, seriesKey(s.queue), name).Result()
	if errors.Is(err, redis.Nil) {
		return store.Series{}, fmt.Errorf("%w: no series %q", store.ErrNotFound, name)
	}
	if err != nil {
		return store.Series{}, wrap("series", err)
	}
	return decodeSeries(name, raw)
}

// ListSeries implements store.Store.
func (s *Store) ListSeries(ctx context.Context) ([]store.Series, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if _, _, err := s.seriesKeys("", ""); err != nil {
		return nil, err
	}
	all, err := s.client.HGetAll(ctx, seriesKey(s.queue)).Result()
	if err != nil {
		return nil, wrap("list series", err)
	}
	out := make([]store.Series, 0, len(all))
	for name, raw := range all {
		sr, err := decodeSeries(name, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, sr)
	}
	slices.SortFunc(out, func(a, b store.Series) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteSeries implements store.Store: it reads the series, to know the
// shard of its pending message, then deletes it with one script call,
// which reads again and is done over if the series stepped meanwhile.
func (s *Store) DeleteSeries(ctx context.Context, name string) (bool, error) {
	for {
		sr, err := s.Series(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		keys, sh, err := s.seriesKeys(sr.Pending, "")
		if err != nil {
			return false, err
		}
		r, err := s.runKeys(ctx, seriesDeleteScript, sh, keys[:numKeys+1], name, sr.Pending)
		if err != nil {
			return false, wrap("delete series", err)
		}
		switch n, _ := r.(int64); n {
		case 0:
			return false, nil
		case 1:
			return true, nil
		}
	}
}
