package durable

import "github.com/seed64e23a5c/timingwheel/durable/store"

// Store keeps the messages of a Queue: the contract of package
// durable/store, which every backend implements (durable/boltstore, the
// file of Open; durable/memstore; durable/redisstore; durable/pgstore;
// durable/mysqlstore).
type Store = store.Store

// The names below moved to package durable/store, which store writers
// program against. They stay here so that programs written before keep
// compiling.

// ClaimParams are the parameters of a store's Claim.
//
// Deprecated: use store.ClaimParams.
type ClaimParams = store.ClaimParams

// Claimed is what a store's Claim returns.
//
// Deprecated: use store.Claimed.
type Claimed = store.Claimed

// Lease is a message claimed by a store's Claim.
//
// Deprecated: use store.Lease.
type Lease = store.Lease

// RetryParams says how a store's Retry ends a lease.
//
// Deprecated: use store.RetryParams.
type RetryParams = store.RetryParams

// ExpiredLeases is what a store's Expired returns.
//
// Deprecated: use store.ExpiredLeases.
type ExpiredLeases = store.ExpiredLeases

// ExpiredLease is one lease of ExpiredLeases.
//
// Deprecated: use store.ExpiredLease.
type ExpiredLease = store.ExpiredLease

// Series is what a store keeps of a series of Queue.Schedule.
//
// Deprecated: use store.Series.
type Series = store.Series

// SeriesStep is one step of a series, for a store's AdvanceSeries.
//
// Deprecated: use store.SeriesStep.
type SeriesStep = store.SeriesStep

// ShardedOrder is the optional interface of a sharded store.
//
// Deprecated: use store.ShardedOrder.
type ShardedOrder = store.ShardedOrder

// Notifier is the optional interface of a store that other processes
// write to.
//
// Deprecated: use store.Notifier.
type Notifier = store.Notifier

// LocalClock is the optional interface of a store on a clock of this
// process.
//
// Deprecated: use store.LocalClock.
type LocalClock = store.LocalClock

// ErrSeriesUnsupported is wrapped by the error of Schedule on a store that
// cannot keep series.
//
// Deprecated: use store.ErrSeriesUnsupported.
var ErrSeriesUnsupported = store.ErrSeriesUnsupported

// ErrPauseUnsupported is wrapped by the error of Pause and Resume on a
// store that cannot pause.
//
// Deprecated: use store.ErrPauseUnsupported.
var ErrPauseUnsupported = store.ErrPauseUnsupported
