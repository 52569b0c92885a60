package main

import (
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// A target is the queue named on the command line: a file, or a queue on
// Redis, PostgreSQL or MySQL.
type target struct {
	path string // the queue file, if not on Redis nor PostgreSQL

	redis *redis.Options  // the Redis to connect to, if on Redis
	pg    *pgxpool.Config // the PostgreSQL to connect to, if on PostgreSQL
	my    *mysql.Config   // the MySQL or MariaDB to connect to, if on MySQL
	// schema is the schema of pgstore's tables (pgstore.DefaultSchema
	// unless ?schema=).
	schema string
	queue  string // the queue's name on Redis or PostgreSQL
	shown  string // the URL, without its password, for messages
}

// onRedis reports whether the queue is on Redis.
func (t target) onRedis() bool { return t.redis != nil }

// onPostgres reports whether the queue is on PostgreSQL.
func (t target) onPostgres() bool { return t.pg != nil }

// onMySQL reports whether the queue is on MySQL or MariaDB.
func (t target) onMySQL() bool { return t.my != nil }

// parseTarget reads the <queue> argument: a file path, or a redis://,
// rediss://, unix://, postgres:// or mysql:// URL whose query names the queue
// (?queue=NAME).
func parseTarget(s string) (target, error) {
	if s == "" {
		return target{}, usagef("the queue is an empty string: give a file path or a redis:// URL")
	}
	scheme, _, isURL := strings.Cut(s, "://")
	if !isURL {
		return target{path: s}, nil
	}
	switch scheme {
	case "redis", "rediss", "unix":
	case "postgres", "postgresql":
		return parsePostgresTarget(s)
	case "mysql":
		return parseMySQLTarget(s)
	default:
		return target{}, usagef("unknown scheme %q in %s: give a file path, or a redis://, rediss://, unix://, postgres:// or mysql:// URL", scheme, redact(s))
	}
	u, err := url.Parse(s)
	if err != nil {
		return target{}, usagef("bad Redis URL %s: %v", redact(s), err)
	}
	q := u.Query()
	name := q.Get("queue")
	if name == "" {
		return target{}, usagef("the URL %s names no queue: add ?queue=NAME", u.Redacted())
	}
	shown := u.Redacted()
	q.Del("queue")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return target{}, usagef("bad Redis URL %s: %v", u.Redacted(), err)
	}
	return target{redis: opts, queue: name, shown: shown}, nil
}

// String names the target in messages.
func (t target) String() string {
	if t.onRedis() || t.onPostgres() || t.onMySQL() {
		return t.shown
	}
	return t.path
}

// redact returns s with the password of its URL, if any, hidden.
func redact(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "(an unparsable URL)"
	case u.User == nil:
		return s
	}
	return u.Redacted()
}
