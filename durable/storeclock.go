package durable

import (
	"reflect"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A store measures due times and deadlines on its own clock (see Store),
// and the queue converts them to its clock with the two clocks' nows: the
// store's, which a result carries, and the queue's, read after the call
// returns. An instant then comes out later by the time between the two
// readings, never earlier. A store on the queue's own clock, as the file
// of Open is, needs no conversion, and gets none: otherwise a claim whose
// readings fall on either side of a step of a mock clock would hold its
// message for the length of the step after its due time.

var realClockType = reflect.TypeOf(clock.New())

// sameClock reports whether a and b are one clock: both the system's, or
// one mock. For other clocks it cannot tell, and says no.
func sameClock(a, b clock.Clock) bool {
	if reflect.TypeOf(a) == realClockType && reflect.TypeOf(b) == realClockType {
		return true
	}
	ma, ok := a.(*clock.Mock)
	mb, okb := b.(*clock.Mock)
	return ok && okb && ma == mb
}

// onStoreClock reports whether s measures time on c.
func onStoreClock(s Store, c clock.Clock) bool {
	lc, ok := s.(store.LocalClock)
	return ok && sameClock(lc.Clock(), c)
}

// local converts t, an instant on the store's clock whose now was
// storeNow, to the queue's clock, whose now is now. On one clock t stays
// the instant it is, with now's monotonic reading.
func (q *Queue) local(now, storeNow, t time.Time) time.Time {
	if q.storeClock {
		return now.Add(t.Sub(now))
	}
	return now.Add(t.Sub(storeNow))
}
