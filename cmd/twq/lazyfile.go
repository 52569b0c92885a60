package main

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/seed64e23a5c/timingwheel/durable"
	"github.com/seed64e23a5c/timingwheel/durable/boltstore"
	"github.com/seed64e23a5c/timingwheel/durable/store"
)

// A lazyFile is the store of a queue file that serve opens only while it
// uses it: bbolt lets one process hold a file, and a twq serve left open
// must not keep the service from starting. Each request holds the file
// while it runs (hold), and so does each call made outside a request
// (the queue's reaping of expired leases, the dashboard's sampler of
// Stats): the first user opens the file, waiting up to wait for its lock,
// and the last one closes it. While a service holds the file, serve's
// requests wait up to wait for it, then get 503 with the reason.
type lazyFile struct {
	path string
	wait time.Duration

	mu    sync.Mutex
	store *boltstore.Store // open while users > 0
	users int
}

var (
	_ durable.Store    = (*lazyFile)(nil)
	_ store.LocalClock = (*lazyFile)(nil)
)

// openFileLazy checks the queue file at path, opening it once, and
// returns its lazyFile handle, which holds it only while it is used.
func openFileLazy(path string, wait time.Duration) (*handle, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	l := &lazyFile{path: path, wait: wait}
	_, release, err := l.acquire()
	if err != nil {
		return nil, err
	}
	release()
	return &handle{store: l, close: func() { _ = l.Close() }}, nil
}

// errClosedFile is acquire's error after Close.
var errClosedFile = durable.ErrClosed

// acquire opens the file if no one holds it open, and returns its store
// and the func that lets go of it.
func (l *lazyFile) acquire() (*boltstore.Store, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users < 0 {
		return nil, nil, errClosedFile
	}
	if l.users == 0 {
		s, err := boltstore.Open(l.path, boltstore.WithLockTimeout(l.wait))
		if err != nil {
			return nil, nil, fileOpenError(l.path, l.wait, err)
		}
		l.store = s
	}
	l.users++
	s := l.store
	var once sync.Once
	return s, func() { once.Do(l.release) }, nil
}

func (l *lazyFile) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users--; l.users == 0 {
		_ = l.store.Close()
		l.store = nil
	}
}

// hold serves h with the file held open for the whole request, so that
// a page's calls share one opening; 503 Service Unavailable, with the
// reason, if it cannot be opened (a service holds it).
func (l *lazyFile) hold(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, release, err := l.acquire()
		if err != nil {
			w.Header().Set("Retry-After", "5")
			http.Error(w, "503 service unavailable: "+oneLine(err.Error())+
				" (to watch the queue of a running service, mount durableweb.Handler in it)", http.StatusServiceUnavailable)
			return
		}
		defer release()
		h.ServeHTTP(w, r)
	})
}

// Close makes further calls fail with durable.ErrClosed. The file is
// closed already unless a call is under way, which closes it as it ends.
func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.users == 0 {
		l.users = -1
	}
	return nil
}

// Clock is the machine's clock, as a BoltStore's without WithClock.
func (l *lazyFile) Clock() clock.Clock { return clock.New() }

// use runs f on the store, the file held open meanwhile.
func use[T any](l *lazyFile, f func(s *boltstore.Store) (T, error)) (T, error) {
	s, release, err := l.acquire()
	if err != nil {
		var zero T
		return zero, err
	}
	defer release()
	return f(s)
}

// use0 is use for the calls that return only an error.
func use0(l *lazyFile, f func(s *boltstore.Store) error) error {
	_, err := use(l, func(s *boltstore.Store) (struct{}, error) { return struct{}{}, f(s) })
	return err
}

func (l *lazyFile) Enqueue(ctx context.Context, msgs []store.Message) error {
	return use0(l, func(s *boltstore.Store) error { return s.Enqueue(ctx, msgs) })
}

func (l *lazyFile) Cancel(ctx context.Context, id string) (bool, error) {
	return use(l, func(s *boltstore.Store) (bool, error) { return s.Cancel(ctx, id) })
}

// Claim is refused: a lease claimed ahead lives in the BoltStore that
// claimed it, which closes when the call ends. serve receives nothing.
func (l *lazyFile) Claim(context.Context, store.ClaimParams) (store.Claimed, error) {
	return store.Claimed{}, errNoClaims
}

var errNoClaims = errors.New("twq: the queue file is opened per call: it serves no claims")

func (l *lazyFile) Confirm(ctx context.Context, p store.ConfirmParams) error {
	return use0(l, func(s *boltstore.Store) error { return s.Confirm(ctx, p) })
}

func (l *lazyFile) Ack(ctx context.Context, r store.LeaseRef) error {
	return use0(l, func(s *boltstore.Store) error { return s.Ack(ctx, r) })
}

func (l *lazyFile) Retry(ctx context.Context, p store.RetryParams) error {
	return use0(l, func(s *boltstore.Store) error { return s.Retry(ctx, p) })
}

func (l *lazyFile) Extend(ctx context.Context, p store.ExtendParams) error {
	return use0(l, func(s *boltstore.Store) error { return s.Extend(ctx, p) })
}

func (l *lazyFile) Expired(ctx context.Context, limit int) (store.ExpiredLeases, error) {
	return use(l, func(s *boltstore.Store) (store.ExpiredLeases, error) { return s.Expired(ctx, limit) })
}

func (l *lazyFile) Get(ctx context.Context, id string) (store.Info, error) {
	return use(l, func(s *boltstore.Store) (store.Info, error) { return s.Get(ctx, id) })
}

// listPage is List's results.
type listPage struct {
	infos []store.Info
	next  string
}

func (l *lazyFile) List(ctx context.Context, p store.ListParams) ([]store.Info, string, error) {
	page, err := use(l, func(s *boltstore.Store) (listPage, error) {
		infos, next, err := s.List(ctx, p)
		return listPage{infos, next}, err
	})
	return page.infos, page.next, err
}

func (l *lazyFile) Requeue(ctx context.Context, p store.RequeueParams) error {
	return use0(l, func(s *boltstore.Store) error { return s.Requeue(ctx, p) })
}

func (l *lazyFile) Stats(ctx context.Context) (store.Stats, error) {
	return use(l, func(s *boltstore.Store) (store.Stats, error) { return s.Stats(ctx) })
}

func (l *lazyFile) SetPaused(ctx context.Context, paused bool) error {
	return use0(l, func(s *boltstore.Store) error { return s.SetPaused(ctx, paused) })
}

// seriesStep is AdvanceSeries's results.
type seriesStep struct {
	series store.Series
	ok     bool
}

func (l *lazyFile) AdvanceSeries(ctx context.Context, p store.SeriesStep) (store.Series, bool, error) {
	r, err := use(l, func(s *boltstore.Store) (seriesStep, error) {
		series, ok, err := s.AdvanceSeries(ctx, p)
		return seriesStep{series, ok}, err
	})
	return r.series, r.ok, err
}

func (l *lazyFile) Series(ctx context.Context, name string) (store.Series, error) {
	return use(l, func(s *boltstore.Store) (store.Series, error) { return s.Series(ctx, name) })
}

func (l *lazyFile) ListSeries(ctx context.Context) ([]store.Series, error) {
	return use(l, func(s *boltstore.Store) ([]store.Series, error) { return s.ListSeries(ctx) })
}

func (l *lazyFile) DeleteSeries(ctx context.Context, name string) (bool, error) {
	return use(l, func(s *boltstore.Store) (bool, error) { return s.DeleteSeries(ctx, name) })
}
