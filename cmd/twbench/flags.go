package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed64e23a5c/timingwheel"
)

// options holds the settings of one run, from the command line.
type options struct {
	// scenarios are the scenarios to run, in order.
	scenarios []scenario
	// quick reduces every size that was not set explicitly.
	quick bool

	// ns are the pending counts of startstop (-n).
	ns []int
	// ops is the number of AfterFunc+Stop pairs timed per engine and N.
	ops int
	// pending is the number of timers preloaded by memory, idle and
	// parallel.
	pending int
	// fireN timers fire across window in the fire scenario.
	fireN  int
	window time.Duration
	// rates makes fire run the rate sweep instead (see runRates).
	rates bool
	// leadPerTimer is how much later than the first AfterFunc fire's
	// window starts, per timer, beyond 100ms: the time to schedule them
	// all before the first is due.
	leadPerTimer time.Duration
	// rounds is how many times fire measures each engine (see runFire),
	// and river and asynq their rates (see riverRates, asynqRates).
	rounds int
	// idleFor is how long idle measures CPU.
	idleFor time.Duration
	// goroutines run the parallel scenario for parallelFor.
	goroutines  int
	parallelFor time.Duration

	// store is where the durable scenario keeps its messages: storeBolt,
	// a redis:// URL, a postgres:// URL or a mysql:// URL (-store).
	store string
	// pgDatabase, if set, is the database that pools on the PostgreSQL
	// of store connect to instead of the DSN's: the scratch database of
	// the scenario running (see newPgScratch), set on a copy of the
	// options. pgMeter, if set, counts their statements, and pgWarm
	// makes them, and the *sql.DBs on a MySQL, open their connections
	// before they are used (see pgPool and myDB).
	pgDatabase string
	pgMeter    *pgMeter
	pgWarm     bool
	// pgPool, if set, is the pool that pgstore stores open on, and that
	// outlives them: the river scenario keeps one for the run, as River's
	// side keeps its client's, so that each side's connections have
	// planned and cached its statements when the figures after the first
	// are measured, as a service's long-lived pool has.
	pgPool *pgxpool.Pool
	// pgUnsafe starts the PostgreSQL of -store postgres with fsync off
	// (-pg-unsafe). pgSettings and pgDurable are what the server of
	// -store said of its fsync and synchronous_commit (see checkPostgres),
	// for the note under the table.
	pgUnsafe   bool
	pgSettings string
	pgDurable  bool
	// myDatabase, if set, is the database that the connections to the
	// MySQL of store use instead of the URL's: the scratch database of
	// the durable scenario (see newMyScratch).
	myDatabase string

	// The wheel's configuration.
	tick      time.Duration
	wheelSize int
	executor  string

	// jsonPath and plotPath are where to write results, if set.
	jsonPath string
	plotPath string
}

// Executors accepted by -executor.
const (
	executorGoroutine = "goroutine"
	executorInline    = "inline"
)

// quickValues are the values -quick gives to the flags not set
// explicitly, so that every scenario runs in well under a minute on two
// cores, but river, which takes about one (its three rounds, and River's
// default fetching, which waits for its 5s scheduler).
var quickValues = []struct{ flag, value string }{
	{"n", "100k,1M"},
	{"ops", "500k"},
	{"pending", "500k"},
	{"fire-n", "200k"},
	{"window", "1s"},
	{"idle-for", "1s"},
	{"for", "1s"},
}

// memPerTimer is the estimated cost of one pending timer in one engine,
// handle and bookkeeping included, for the memory check.
const memPerTimer = 200

// maxCount bounds the counts that flags accept; larger runs are refused
// anyway by the memory check.
const maxCount = 1e12

// usageError is an error in the command line: run prints it on one line,
// with a line pointing at -h, and exits with status 2.
type usageError struct{ msg string }

// Error returns the message, which run prints after "twbench: ".
func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// countValue is a flag.Value for a positive count written as 2000, 500k,
// 1M or 1.5G.
type countValue int

// String formats the count as parseCount reads it.
func (c *countValue) String() string { return formatCount(int(*c)) }

// Set parses s with parseCount.
func (c *countValue) Set(s string) error {
	n, err := parseCount(s)
	if err != nil {
		return err
	}
	*c = countValue(n)
	return nil
}

// countList is a flag.Value for a comma-separated list of counts.
type countList []int

// String formats the list as Set reads it.
func (l *countList) String() string {
	parts := make([]string, len(*l))
	for i, n := range *l {
		parts[i] = formatCount(n)
	}
	return strings.Join(parts, ",")
}

// Set parses a comma-separated list of counts, replacing the list.
func (l *countList) Set(s string) error {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := parseCount(part)
		if err != nil {
			return err
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

// countRE matches a count: digits, an optional fraction and an optional
// suffix k, M or G (either case).
var countRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)([kKmMgG]?)$`)

// parseCount parses a positive whole count such as 2000, 500k, 1M, 1.5M
// or 2G. The suffixes are decimal: k is 1e3, M 1e6, G 1e9.
func parseCount(s string) (int, error) {
	m := countRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("bad count %q: want a whole number like 2000, 500k or 1M", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("bad count %q: %v", s, err)
	}
	switch strings.ToLower(m[2]) {
	case "k":
		v *= 1e3
	case "m":
		v *= 1e6
	case "g":
		v *= 1e9
	}
	v = math.Round(v*1e6) / 1e6 // 1.1k is 1100, not 1100.0000000000002
	switch {
	case v != math.Trunc(v):
		return 0, fmt.Errorf("bad count %q: not a whole number", s)
	case v < 1:
		return 0, fmt.Errorf("bad count %q: must be at least 1", s)
	case v > maxCount:
		return 0, fmt.Errorf("bad count %q: must be at most %s", s, formatCount(maxCount))
	}
	return int(v), nil
}

// formatCount writes n with the largest suffix that keeps it whole:
// 1000000 is 1M, 500000 is 500k, 2500 is 2500.
func formatCount(n int) string {
	switch {
	case n != 0 && n%1_000_000_000 == 0:
		return strconv.Itoa(n/1_000_000_000) + "G"
	case n != 0 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n != 0 && n%1_000 == 0:
		return strconv.Itoa(n/1_000) + "k"
	}
	return strconv.Itoa(n)
}

// defaultOptions returns the full-size defaults.
func defaultOptions() *options {
	return &options{
		ns:           []int{1_000_000, 5_000_000, 10_000_000},
		ops:          2_000_000,
		pending:      1_000_000,
		fireN:        1_000_000,
		leadPerTimer: time.Microsecond,
		window:       2 * time.Second,
		rounds:       3,
		idleFor:      5 * time.Second,
		goroutines:   8, // more goroutines than cores, as in a busy service
		parallelFor:  2 * time.Second,
		tick:         timingwheel.DefaultTick,
		wheelSize:    timingwheel.DefaultWheelSize,
		executor:     executorGoroutine,
		store:        storeBolt,
	}
}

// newFlagSet returns the flag set that fills o. It prints nothing itself:
// run reports errors and usage.
func newFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("twbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}

	fs.BoolVar(&o.quick, "quick", false, "run at reduced size: "+quickSummary()+" (flags given explicitly win)")
	fs.Var((*countList)(&o.ns), "n", "startstop: comma-separated `counts` of pending timers (forms like 1M,500k,2000)")
	fs.Var((*countValue)(&o.ops), "ops", "startstop: `count` of AfterFunc+Stop pairs timed per engine and N")
	fs.Var((*countValue)(&o.pending), "pending", "memory, idle, parallel, queue: `count` of timers pending, due in 1-2h; durable: messages pending for reopen and memory, due in a day (and -pending/200 sizes its other figures); asynq, river: -pending/50 messages per figure")
	fs.Var((*countValue)(&o.fireN), "fire-n", "fire: `count` of timers that fire")
	fs.DurationVar(&o.window, "window", o.window, "fire: the timers' deadlines spread over this window (queue: at most 1s, durable: at most 2s)")
	fs.IntVar(&o.rounds, "rounds", o.rounds, "fire: rounds, each measuring every engine once, in a rotated order; each figure is the median of its rounds, early firings their sum. "+
		"river and asynq: rounds of the enqueue, jobs-worked and receive+ack rates (and their statements, calls or commands per message; River's default fetching once), ours and the other's side by side, alternating which goes first; each figure is the median of its rounds, and each round's rates go to stderr")
	fs.BoolVar(&o.rates, "rates", false, "fire: sweep the rates services run at instead (2k, 10k, 50k and 200k timers over 1s, 1M over 2s), the wheel with New's defaults against runtime timers, each measurement in a fresh process, 5 rounds unless -rounds says otherwise, alternating which side goes first: CPU, lateness p50 and p99, context switches per second")
	fs.DurationVar(&o.idleFor, "idle-for", o.idleFor, "idle: how long to measure the process's CPU")
	fs.IntVar(&o.goroutines, "g", o.goroutines, "parallel: goroutines doing AfterFunc+Stop")
	fs.DurationVar(&o.parallelFor, "for", o.parallelFor, "parallel: how long each measurement runs")
	fs.DurationVar(&o.tick, "tick", o.tick, "the wheel's tick (WithTick)")
	fs.IntVar(&o.wheelSize, "wheel-size", o.wheelSize, "the wheel's buckets per level (WithWheelSize)")
	fs.StringVar(&o.executor, "executor", o.executor, "the wheel's executor: goroutine (one per task, the default) or inline; fire always measures both")
	fs.BoolVar(&o.pgUnsafe, "pg-unsafe", false, "with -store postgres: start PostgreSQL with fsync off, the fast unsafe mode (commits do not wait for the disk: not what users run; the note under the table says which mode the figures are of)")
	fs.StringVar(&o.store, "store", o.store, "durable: where the durable queue's messages are kept: bolt (a file in a temp dir), postgres (a PostgreSQL that twbench starts in a temp dir, as users run it: fsync and synchronous_commit on; -pg-unsafe for fsync off; needs initdb and pg_ctl, as the user postgres when root), a redis:// URL, a postgres:// pgx DSN (e.g. postgres:///postgres?host=/tmp&user=postgres; its user needs CREATEDB: each scenario works in a scratch database it drops; pools of 16 connections unless the DSN sets pool_max_conns) or a mysql:// URL of MySQL or MariaDB (mysql://user:pw@host:3306/, or mysql://root@/?socket=/path/mysqld.sock; its user needs CREATE and DROP: the scenario works in a scratch database it drops; 16 connections); asynq: the Redis both queues use (redis:// only); river: the PostgreSQL both use (postgres:// only)")
	fs.StringVar(&o.jsonPath, "json", "", "write the results as JSON to `file` (- for stdout, which then carries only the JSON; the table goes to stderr)")
	fs.StringVar(&o.plotPath, "plot", "", "draw fire's lateness CDF and startstop's ns/op against N side by side into `file` (.png or .svg); needs fire or startstop")
	return fs
}

// quickSummary describes the -quick values for the usage message.
func quickSummary() string {
	parts := make([]string, len(quickValues))
	for i, q := range quickValues {
		parts[i] = "-" + q.flag + " " + q.value
	}
	return strings.Join(parts, " ")
}

// parseArgs parses the command line: flags and scenario names, in any
// order. It returns flag.ErrHelp for -h or -help, a *usageError for
// anything wrong, and the options otherwise.
func parseArgs(args []string) (*options, error) {
	o := defaultOptions()
	fs := newFlagSet(o)
	var names []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		left := fs.Args()
		// Parse stops at a scenario name, or after "--": after "--"
		// everything is a name.
		if n := len(rest) - len(left); n > 0 && rest[n-1] == "--" {
			names = append(names, left...)
			break
		}
		if len(left) == 0 {
			break
		}
		names = append(names, left[0])
		rest = left[1:]
	}

	if o.rates {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["rounds"] {
			o.rounds = 5
		}
	}
	if o.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for _, q := range quickValues {
			if !set[q.flag] {
				if err := fs.Set(q.flag, q.value); err != nil {
					panic("twbench: bad quick value: " + err.Error())
				}
			}
		}
	}

	if err := o.resolveScenarios(names); err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// resolveScenarios sets o.scenarios from the names given, expanding "all"
// and dropping repeats. No name means all; all leaves out the scenarios
// that need a Redis when -store names none. They run in the registry's
// order, whatever order they are named in, so that a scenario always
// finds the process in the same state (see the memory scenario).
func (o *options) resolveScenarios(names []string) error {
	if len(names) == 0 {
		names = []string{"all"}
	}
	seen := map[string]bool{}
	add := func(s scenario) {
		if !seen[s.name] {
			seen[s.name] = true
			o.scenarios = append(o.scenarios, s)
		}
	}
	for _, name := range names {
		if name == "all" {
			for _, s := range registry {
				if (!s.needsRedis || isRedisURL(o.store)) && (!s.needsPostgres || isPostgresURL(o.store)) {
					add(s)
				}
			}
			continue
		}
		s, ok := lookup(name)
		if !ok {
			return usagef("unknown scenario %q (known: %s, all)", name, strings.Join(scenarioNames(), ", "))
		}
		add(s)
	}
	sort.SliceStable(o.scenarios, func(i, j int) bool { return o.scenarios[i].order < o.scenarios[j].order })
	return nil
}

// validate checks the values that the flag types do not.
func (o *options) validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"window", o.window}, {"idle-for", o.idleFor}, {"for", o.parallelFor}, {"tick", o.tick}} {
		if d.v <= 0 {
			return usagef("-%s must be a positive duration, got %v", d.name, d.v)
		}
	}
	if o.rounds < 1 || o.rounds > 100 {
		return usagef("-rounds must be between 1 and 100, got %d", o.rounds)
	}
	if o.goroutines < 1 || o.goroutines > 100_000 {
		return usagef("-g must be between 1 and 100000, got %d", o.goroutines)
	}
	if o.executor != executorGoroutine && o.executor != executorInline {
		return usagef("-executor must be %s or %s, got %q", executorGoroutine, executorInline, o.executor)
	}
	if err := o.validateStore(); err != nil {
		return err
	}
	if !isRedisURL(o.store) && slices.ContainsFunc(o.scenarios, func(s scenario) bool { return s.needsRedis }) {
		return usagef("%s", asynqNeedsRedis)
	}
	if i := slices.IndexFunc(o.scenarios, func(s scenario) bool { return s.needsPostgres }); i >= 0 && !isPostgresURL(o.store) {
		return usagef("%s", needsPostgresError(o.scenarios[i].name))
	}
	if _, err := timingwheel.New(o.wheelOptions()...); err != nil {
		return usagef("bad wheel configuration: %v", err)
	}
	if o.plotPath != "" {
		switch strings.ToLower(filepath.Ext(o.plotPath)) {
		case ".png", ".svg":
		default:
			return usagef("-plot file must end in .png or .svg, got %q", o.plotPath)
		}
		if !o.has("fire") && !o.has("startstop") {
			return usagef("-plot needs the fire or the startstop scenario")
		}
	}
	return nil
}

// has reports whether the scenario called name is selected.
func (o *options) has(name string) bool {
	return slices.ContainsFunc(o.scenarios, func(s scenario) bool { return s.name == name })
}

// wheelOptions returns the engine configuration set by -tick,
// -wheel-size and -executor.
func (o *options) wheelOptions() []timingwheel.Option {
	opts := []timingwheel.Option{timingwheel.WithTick(o.tick), timingwheel.WithWheelSize(o.wheelSize)}
	if o.executor == executorInline {
		opts = append(opts, timingwheel.WithExecutor(inline))
	}
	return opts
}

// inline is the executor that runs each task on the wheel's driver.
func inline(task func()) { task() }

// printUsage writes the usage message to w.
func printUsage(w io.Writer) {
	fmt.Fprintf(w, `Usage: twbench [flags] [scenario ...]

twbench measures the timing wheel (ours) and Go's runtime timers
(time.AfterFunc) side by side in one process, and prints a table with the
ratio ours/runtime beside every figure. Figures with nothing to compare
with (those of durable) show - for runtime and ratio; asynq's runtime
column is hibiken/asynq, and river's is riverqueue/river.

Scenarios, run in this order (default all; flags and names may be mixed):
`)
	for _, s := range registry {
		fmt.Fprintf(w, "  %-10s %s\n", s.name, s.help)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "all", "every scenario above, in this order (asynq only with -store redis://..., river only with -store postgres or postgres://...)")
	fmt.Fprintf(w, "\nFlags:\n")
	fs := newFlagSet(defaultOptions())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, `
Output: the table goes to stdout, each scenario's rows as soon as it
finishes; progress bars go to stderr only when it is a terminal. -plot
FILE draws one image with two panels side by side: the lateness CDF of
the fire scenario (left) and start+stop ns/op against N from startstop
(right), captioned with the machine, Go version and date; a panel whose
scenario did not run is left out.

Before it starts, a run estimates its memory at about %d bytes per pending
timer per engine and refuses (exit status 1) if /proc/meminfo's
MemAvailable is smaller. The durable scenario's messages are not counted:
they are kept on disk, about 400 bytes each, in a temp dir ($TMPDIR).
With -store redis://..., the server must answer a PING within %v
before anything runs, and with -store postgres://... or mysql://... the
server must answer a SELECT 1 within as long (exit status 1 otherwise);
with -store postgres, twbench starts a PostgreSQL of its own for the run
(fsync on, unless -pg-unsafe) and removes it afterwards. Under the table,
a run on PostgreSQL says the server's fsync and synchronous_commit. Bad
flags or arguments exit with status 2.

Examples:
  twbench -quick
  twbench startstop -n 1M,500k,2000
  twbench fire -fire-n 2M -window 4s -plot late.png -json results.json
  twbench durable -pending 100k
  twbench durable -store redis://localhost:6379/0
  twbench asynq -store redis://localhost:6379/0
  twbench durable -store 'postgres:///postgres?host=/tmp&user=postgres'
  twbench durable -store 'mysql://root@/?socket=/run/mysqld/mysqld.sock'
  twbench river -pending 100k -store 'postgres:///postgres?host=/tmp&user=postgres'
  twbench river -store postgres
`, memPerTimer, storeCheckTimeout)
}
