package pgstore

import (
	"github.com/seed64e23a5c/timingwheel/durable/store"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the version of the tables this package reads and
// writes. New migrates older tables to it (unless WithoutMigrate) and
// refuses newer ones (ErrSchemaTooNew).
const SchemaVersion = 5

// The objects of a schema, shared by all the queues in it.
const (
	messagesTable = "timingwheel_messages"
	seriesTable   = "timingwheel_series"
	queuesTable   = "timingwheel_queues"
	versionTable  = "timingwheel_schema_version"
	seqSequence   = "timingwheel_seq"
	tokenSequence = "timingwheel_token"
)

// names are the quoted, schema-qualified names of a schema's objects, for
// SQL text.
type names struct {
	schema   string // quoted schema name
	messages string // quoted table names
	series   string
	queues   string
	version  string
	seq      string // the sequences, as string literals for nextval
	token    string
}

func newNames(schema string) names {
	q := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	return names{
		schema:   pgx.Identifier{schema}.Sanitize(),
		messages: q(messagesTable),
		series:   q(seriesTable),
		queues:   q(queuesTable),
		version:  q(versionTable),
		seq:      quoteLiteral(q(seqSequence)),
		token:    quoteLiteral(q(tokenSequence)),
	}
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// expand replaces the placeholders of an SQL template: {T} the messages
// table, {SER} the series table, {QUEUES} the table of the queues' flags,
// {V} the version table, {S} the schema,
// {SEQ} and {TOK} the sequences (as literals, for nextval), {MAXTRIM}
// store.MaxTrim.
func (n names) expand(sql string) string {
	return strings.NewReplacer("{T}", n.messages, "{SER}", n.series, "{QUEUES}", n.queues, "{V}", n.version, "{S}", n.schema,
		"{SEQ}", n.seq, "{TOK}", n.token, "{MAXTRIM}", strconv.Itoa(store.MaxTrim)).Replace(sql)
}

// migrations holds the statements of each version: migrations[v-1] takes
// the tables from version v-1 to v. Each ends by recording its version.
// Every statement may run again (IF NOT EXISTS), so that MigrationSQL's
// output can be applied by hand over a partial run.
var migrations = [][]string{
	// Version 1: one table for every queue of the schema.
	{
		// seq orders the messages of a state with equal times by the
		// order of the writes; token gives the fencing tokens, which only
		// grow, whatever happens to a message (deleted and enqueued again
		// included).
		`CREATE SEQUENCE IF NOT EXISTS {S}.` + seqSequence + ` AS bigint`,
		`CREATE SEQUENCE IF NOT EXISTS {S}.` + tokenSequence + ` AS bigint`,
		`CREATE TABLE IF NOT EXISTS {T} (
	queue       text        NOT NULL,
	id          bytea       NOT NULL,
	payload     bytea       NOT NULL,
	state       smallint    NOT NULL CHECK (state IN (1, 2, 3)),
	due         timestamptz NOT NULL,
	seq         bigint      NOT NULL,
	deadline    timestamptz,
	died_at     timestamptz,
	attempt     integer     NOT NULL DEFAULT 0,
	token       bigint      NOT NULL DEFAULT 0,
	held        boolean     NOT NULL DEFAULT false,
	last_error  bytea       NOT NULL DEFAULT '',
	enqueued_at timestamptz NOT NULL,
	PRIMARY KEY (queue, id)
)`,
		// The order of each state: claims, reaps and List walk them, each
		// an index range scan of the queue's messages in that state.
		`CREATE INDEX IF NOT EXISTS timingwheel_pending_idx ON {T} (queue, due, seq) WHERE state = 1`,
		`CREATE INDEX IF NOT EXISTS timingwheel_inflight_idx ON {T} (queue, deadline, seq) WHERE state = 2`,
		`CREATE INDEX IF NOT EXISTS timingwheel_dead_idx ON {T} (queue, died_at, seq) WHERE state = 3`,
	},
	// Version 2: the series of durable.Queue.Schedule, one row each. Their
	// times are the queues' (not the database's) and are compared to the
	// nanosecond, so they are kept as Unix nanoseconds (0: none).
	{
		`CREATE TABLE IF NOT EXISTS {SER} (
	queue       text   NOT NULL,
	name        bytea  NOT NULL,
	fingerprint bytea  NOT NULL,
	last_ns     bigint NOT NULL,
	next_ns     bigint NOT NULL,
	pending     bytea  NOT NULL,
	PRIMARY KEY (queue, name)
)`,
	},
	// Version 3: a row per queue that was ever paused, with its flag
	// (Queue.Pause), read by every claim and confirmation.
	{
		`CREATE TABLE IF NOT EXISTS {QUEUES} (
	queue  text    PRIMARY KEY,
	paused boolean NOT NULL
)`,
	},
	// Version 4: a message's Kind, MaxAttempts and Timeout (store.Message).
	// The kind is bytea, as the ID is, so that any UTF-8 makes one (text
	// refuses NUL, and converts to a database of another encoding); the
	// timeout is in nanoseconds, to keep it whole. Each column's default is
	// a constant: adding it rewrites no row (PostgreSQL 11 and later), and
	// the rows written before read as zero values: no kind, the queue's
	// attempts, no timeout. No index changes.
	{
		`ALTER TABLE {T}
	ADD COLUMN IF NOT EXISTS kind         bytea   NOT NULL DEFAULT '',
	ADD COLUMN IF NOT EXISTS max_attempts integer NOT NULL DEFAULT 0,
	ADD COLUMN IF NOT EXISTS timeout_ns   bigint  NOT NULL DEFAULT 0`,
	},
	// Version 5: the queue's name compared byte by byte (COLLATE "C") in
	// the messages' table and its indexes, every one of which starts with
	// it: the database's collation (en_US.UTF-8, or even C.UTF-8 before
	// PostgreSQL 17) compares text through the C library, on every index
	// step of every write. The type stays text: the rows are not
	// rewritten, the indexes are rebuilt, under an ACCESS EXCLUSIVE lock.
	{
		`ALTER TABLE {T} ALTER COLUMN queue TYPE text COLLATE "C"`,
	},
}

// versionTableSQL creates the table that records the versions applied.
const versionTableSQL = `CREATE TABLE IF NOT EXISTS {V} (
	version    integer     PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// recordVersionSQL records version $1 as applied.
const recordVersionSQL = `INSERT INTO {V} (version) VALUES ($1) ON CONFLICT (version) DO NOTHING`

// MigrationSQL returns the statements that create the tables of this
// version of the package (SchemaVersion) in schema, for teams that run
// their own migrations: run them in order, in one transaction, and give
// New WithoutMigrate. Every statement may run again. The schema itself
// must exist (CREATE SCHEMA), as must be granted to the application's
// user: SELECT, INSERT, UPDATE, DELETE on the tables and USAGE on the
// sequences.
func MigrationSQL(schema string) []string {
	n := newNames(schema)
	out := []string{n.expand(versionTableSQL)}
	for v, stmts := range migrations {
		for _, s := range stmts {
			out = append(out, n.expand(s))
		}
		out = append(out, n.expand(strings.Replace(recordVersionSQL, "$1", strconv.Itoa(v+1), 1)))
	}
	return out
}
