package durable

// Commits returns how many write transactions the file store under q has
// committed (each one fsync with SyncAlways), for the benchmarks of
// package durable_test.
func Commits(q *Queue) int64 { return q.store.(*BoltStore).Commits() }
