package mysqlstore

import (
	"strconv"
	"strings"
)

// SchemaVersion is the version of the tables this package reads and
// writes. New migrates older tables to it (unless WithoutMigrate) and
// refuses newer ones (ErrSchemaTooNew). Version 2 added each message's
// kind, max_attempts and timeout_ns.
const SchemaVersion = 2

// The tables, in the database of the connections, shared by every queue
// of the database.
const (
	messagesTable = "timingwheel_messages"
	seriesTable   = "timingwheel_series"
	queuesTable   = "timingwheel_queues"
	versionTable  = "timingwheel_schema_version"
)

// expand replaces the placeholders of an SQL template: {T} the messages
// table, {SER} the series table, {Q} the table of the queues' flags, {V}
// the version table; {NOW} the database's clock (the one source of every
// instant the store compares), {SEQ} the seq of a write made now (see
// seqNowSQL), and US(x), which reads the DATETIME x as microseconds since
// 1970 (see the package doc's Time).
func expand(sql string) string {
	sql = strings.NewReplacer("{T}", messagesTable, "{SER}", seriesTable, "{Q}", queuesTable,
		"{V}", versionTable, "{SEQ}", seqNowSQL, "{NOW}", nowSQL).Replace(sql)
	for {
		i := strings.Index(sql, "US(")
		if i < 0 {
			return sql
		}
		j, depth := i+3, 1
		for ; depth > 0; j++ {
			switch sql[j] {
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		sql = sql[:i] + "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " + sql[i+3:j-1] + ")" + sql[j:]
	}
}

// nowSQL is the database's clock, in UTC: constant within a statement
// (its start), and so shared by every row the statement writes.
const nowSQL = `UTC_TIMESTAMP(6)`

// seqNowSQL is the seq of the first row a statement writes: microseconds
// since 2000 on the database's clock, times 4096; the statement adds each
// row's place in its call (see seqRows). Seqs order the rows of equal
// times by the order of their writes, and give the fencing tokens (see
// the package doc's Layout).
const seqNowSQL = `(TIMESTAMPDIFF(MICROSECOND, '2000-01-01 00:00:00', ` + nowSQL + `) * 4096)`

// seqRows is how many rows one statement numbers within one microsecond
// of seqNowSQL.
const seqRows = 4096

// migrations holds the statements of each version: migrations[v-1] takes
// the tables from version v-1 to v. Every statement may run again (IF NOT
// EXISTS), so that MigrationSQL's output can be applied by hand over a
// partial run; but an ALTER TABLE that adds columns (MySQL has no ADD
// COLUMN IF NOT EXISTS) answers error 1060, a duplicate column, once it
// was done: see addedColumns.
var migrations = [][]string{
	// Version 1.
	{
		// One row per message. ts is the instant the row's state orders
		// by: the due time of a pending message, the lease deadline of one
		// in flight, the time of death of a dead one; seq orders equal
		// instants. The index timingwheel_order is each state's order:
		// claims, reaps, List and the earliest due time and deadline are
		// range scans of it.
		`CREATE TABLE IF NOT EXISTS {T} (
	queue       VARBINARY(255)  NOT NULL,
	id          VARBINARY(512)  NOT NULL,
	payload     MEDIUMBLOB      NOT NULL,
	state       TINYINT         NOT NULL,
	ts          DATETIME(6)     NOT NULL,
	seq         BIGINT UNSIGNED NOT NULL,
	attempt     INT             NOT NULL DEFAULT 0,
	token       BIGINT UNSIGNED NOT NULL,
	held        TINYINT(1)      NOT NULL DEFAULT 0,
	last_error  BLOB            NOT NULL,
	enqueued_at DATETIME(6)     NOT NULL,
	PRIMARY KEY (queue, id),
	KEY timingwheel_order (queue, state, ts, seq)
) ENGINE=InnoDB`,
		// One row per series of durable.Queue.Schedule. Its times are the
		// queues' and compared to the nanosecond: Unix nanoseconds as
		// store.SeriesNanos keeps them, 0 for none and the least BIGINT for
		// the Unix epoch.
		`CREATE TABLE IF NOT EXISTS {SER} (
	queue       VARBINARY(255) NOT NULL,
	name        VARBINARY(512) NOT NULL,
	fingerprint BLOB           NOT NULL,
	last_ns     BIGINT         NOT NULL,
	next_ns     BIGINT         NOT NULL,
	pending     VARBINARY(512) NOT NULL,
	PRIMARY KEY (queue, name)
) ENGINE=InnoDB`,
		// One row per queue that was ever paused, read by every claim and
		// confirmation of a lease claimed ahead.
		`CREATE TABLE IF NOT EXISTS {Q} (
	queue  VARBINARY(255) NOT NULL PRIMARY KEY,
	paused TINYINT(1)     NOT NULL
) ENGINE=InnoDB`,
	},
	// Version 2.
	{
		// A message's Kind (1 to 128 bytes, '' for none), MaxAttempts (0
		// for the queue's) and Timeout in nanoseconds (0 for none), which
		// the rows of version 1 read as their defaults: none. One
		// statement, so that the three are added together or not at all;
		// at the end of the table with constant defaults, the server adds
		// them without copying the table (ALGORITHM=INSTANT on MySQL
		// 8.0.12 and later and on MariaDB 10.3 and later).
		`ALTER TABLE {T}
	ADD COLUMN kind         VARBINARY(128) NOT NULL DEFAULT '',
	ADD COLUMN max_attempts INT            NOT NULL DEFAULT 0,
	ADD COLUMN timeout_ns   BIGINT         NOT NULL DEFAULT 0`,
	},
}

// addedColumns are the columns of the messages table that each version's
// ALTER TABLE adds. A migration that finds the columns there (error 1060)
// takes the ALTER as done if they are all there: done by an earlier run,
// cut before it recorded its version.
var addedColumns = map[int][]string{2: {"kind", "max_attempts", "timeout_ns"}}

// versionTableSQL creates the table that records the versions applied.
const versionTableSQL = `CREATE TABLE IF NOT EXISTS {V} (
	version    INT         NOT NULL PRIMARY KEY,
	applied_at DATETIME(6) NOT NULL
) ENGINE=InnoDB`

// recordVersionSQL records version ? as applied.
const recordVersionSQL = `INSERT IGNORE INTO {V} (version, applied_at) VALUES (?, {NOW})`

// MigrationSQL returns the statements that create the tables of this
// version of the package (SchemaVersion), for teams that run their own
// migrations: run them in order and give New WithoutMigrate. Tables of an
// older version take the statements from its INSERT INTO
// timingwheel_schema_version on (version 2's: an ALTER TABLE that adds
// three columns). Every statement may run again, but an ALTER TABLE that
// was done: a second run of it fails with error 1060 (Duplicate column
// name), and is skipped. The application's user needs SELECT, INSERT,
// UPDATE and DELETE on the tables.
func MigrationSQL() []string {
	out := []string{expand(versionTableSQL)}
	for v, stmts := range migrations {
		for _, s := range stmts {
			out = append(out, expand(s))
		}
		out = append(out, expand(strings.Replace(recordVersionSQL, "?", strconv.Itoa(v+1), 1)))
	}
	return out
}
