package mysqlstore

import (
	"fmt"
	"time"
)

// An Option configures a Store (see New).
type Option func(*options)

type options struct {
	migrate bool
	poll    time.Duration
}

func defaultOptions() options {
	return options{migrate: true, poll: DefaultPoll}
}

func (o *options) check() error {
	if o.poll < 0 {
		return fmt.Errorf("mysqlstore: WithPoll(%v): negative interval", o.poll)
	}
	return nil
}

// DefaultPoll is the interval of the wake-up poll (see WithPoll and the
// package doc's Wake-ups).
const DefaultPoll = 40 * time.Millisecond

// WithPoll sets the interval at which a store whose Wakeups are in use
// reads the earliest due time of its queue and the paused flag (one
// statement, an index lookup), to wake its receivers when another process
// enqueued an earlier message or resumed the queue: the most a message
// enqueued elsewhere waits beyond its due time, plus a claim. 0 turns the
// poll off: a queue then learns of other processes' messages only from
// its own claims and timers.
func WithPoll(d time.Duration) Option { return func(o *options) { o.poll = d } }

// WithoutMigrate makes New check the tables' version instead of creating
// or migrating them, for teams that run MigrationSQL's statements
// themselves; New returns ErrSchemaTooOld if they are absent or older.
func WithoutMigrate() Option { return func(o *options) { o.migrate = false } }
