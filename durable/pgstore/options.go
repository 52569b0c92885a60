package pgstore

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// DefaultSchema is the schema of the tables unless WithSchema.
const DefaultSchema = "public"

// DefaultSafetyPoll is the longest interval between two wake-ups of the
// safety poll (see WithSafetyPoll).
const DefaultSafetyPoll = 5 * time.Second

// An Option configures a Store.
type Option func(*options)

type options struct {
	schema     string
	migrate    bool
	listener   *pgx.ConnConfig
	safetyPoll time.Duration
	logger     *slog.Logger
}

func defaultOptions() options {
	return options{
		schema:     DefaultSchema,
		migrate:    true,
		safetyPoll: DefaultSafetyPoll,
		logger:     slog.Default(),
	}
}

func (o *options) check() error {
	switch {
	case o.schema == "" || strings.ContainsRune(o.schema, 0) || !utf8.ValidString(o.schema) || len(o.schema) > 63:
		return fmt.Errorf("pgstore: WithSchema(%q): a schema name is 1 to 63 bytes of UTF-8 without NUL", o.schema)
	case o.safetyPoll < 0:
		return fmt.Errorf("pgstore: WithSafetyPoll(%v): negative interval", o.safetyPoll)
	}
	return nil
}

// WithSchema puts the tables in the schema named name (created if it is
// absent) instead of DefaultSchema. The name is used as it is, quoted:
// "Jobs" and "jobs" are two schemas.
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// WithoutMigrate makes New check the schema's version instead of creating
// or migrating the tables: it returns ErrSchemaTooOld if they are absent or
// older than this version of the package (run Migrate, or MigrationSQL in
// your own migrations, first), and ErrSchemaTooNew if they are newer. Use
// it where the application's database user may not create tables.
func WithoutMigrate() Option {
	return func(o *options) { o.migrate = false }
}

// WithDeadLetterRetention bounded the dead letters of the queue before the
// queue decided it: it does nothing now.
//
// Deprecated: use durable.WithDeadLetterRetention on the queue, which
// gives the bound to the store with each death (store.Retention). A
// letter that another transaction holds at a death is skipped, and
// deleted at a later one.
func WithDeadLetterRetention(maxCount int, maxAge time.Duration) Option {
	return func(*options) {}
}

// WithListenerConfig makes the store open its listening connection (see
// Store.Wakeups) with pgx.ConnectConfig(cfg) instead of taking one from the
// pool: for a pool that goes through PgBouncer in transaction mode, or
// another pooler that cannot LISTEN, give it a direct connection to
// PostgreSQL. It must reach the same database as the pool: notifications
// do not cross databases. The store does not modify cfg.
func WithListenerConfig(cfg *pgx.ConnConfig) Option {
	return func(o *options) { o.listener = cfg }
}

// WithSafetyPoll sets the longest interval of the safety poll: Wakeups
// receives at random intervals between d/2 and d, whether or not a
// notification came, to make up for notifications lost (while the
// listening connection was down, for example). The default is
// DefaultSafetyPoll; 0 turns the safety poll off.
func WithSafetyPoll(d time.Duration) Option {
	return func(o *options) { o.safetyPoll = d }
}

// WithLogger sets the logger for what the store cannot return as an error:
// a listening connection that failed and is being opened again. The
// default is slog.Default(), read when the store is created; a logger
// with slog.DiscardHandler silences it.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Default dead-letter retention: the queue decides it now
// (durable.WithDeadLetterRetention) and passes it with each death.
//
// Deprecated: use durable.DefaultDeadLetterCount and
// durable.DefaultDeadLetterAge.
const (
	DefaultDeadLetterCount = store.DefaultDeadLetterCount
	DefaultDeadLetterAge   = store.DefaultDeadLetterAge
)
