package pgstore

import (
	"strconv"
	"strings"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// statements are the SQL texts of a store, for its schema. pgx prepares
// and caches each on every connection it runs on.
type statements struct {
	enqueue, seqs, cancel       string
	requeue                     string
	claim, expired              string
	leases, extend, retry, kill string
	get, stats                  string
	seriesLock, seriesCreate    string
	seriesUpdate, seriesGet     string
	seriesList, seriesDelete    string
	setPaused                   string
	list                        [store.Dead + 1][2]string // by state: first page, after a cursor
}

func newStatements(n names) statements {
	st := statements{
		enqueue: n.expand(enqueueSQL),
		seqs:    n.expand(seqsSQL),
		cancel:  n.expand(cancelSQL),
		requeue: n.expand(requeueSQL),
		claim:   n.expand(claimSQL),
		expired: n.expand(expiredSQL),
		leases:  n.expand(leasesSQL),
		extend:  n.expand(extendSQL),
		retry:   n.expand(retrySQL),
		kill:    n.expand(killSQL),
		get:     n.expand(getSQL),
		stats:   n.expand(statsSQL),

		seriesLock:   n.expand(seriesLockSQL),
		seriesCreate: n.expand(seriesCreateSQL),
		seriesUpdate: n.expand(seriesUpdateSQL),
		seriesGet:    n.expand(seriesGetSQL),
		seriesList:   n.expand(seriesListSQL),
		seriesDelete: n.expand(seriesDeleteSQL),
		setPaused:    n.expand(setPausedSQL),
	}
	for state, col := range map[store.State]string{store.Pending: "due", store.InFlight: "deadline", store.Dead: "died_at"} {
		r := strings.NewReplacer("{COL}", col, "{STATE}", strconv.Itoa(int(state)))
		st.list[state][0] = n.expand(r.Replace(strings.Replace(listSQL, "{AFTER}", "", 1)))
		st.list[state][1] = n.expand(r.Replace(strings.Replace(listSQL, "{AFTER}", listAfterSQL, 1)))
	}
	return st
}
