// Package durableweb serves a web dashboard of a durable.Queue, to watch
// the queue and act on its messages from a browser: its counts and how
// they moved, its messages by state and kind, and actions on them and on
// the queue.
//
// The dashboard shows the counts of pending, in-flight and dead messages
// and how they moved over the last hour, the pending and dead messages
// counted by kind (the 20 largest kinds of each; bounded, see
// WithKindCounts), the throughput and lateness an Observer saw, and each
// state's messages as a list paged with the queue's cursors and filtered
// by ID prefix, by kind (or those without one), or both, each message
// with its kind, payload, and its own max attempts and timeout when it
// has them; a badge in the header says when the queue is paused. Unless
// the dashboard is ReadOnly, it also acts on the messages (requeue,
// cancel, enqueue with a kind, max attempts and timeout, or replace, the
// form showing the message's; "requeue all dead" requeues those the dead
// list's filter shows) and on the queue (pause and resume, see
// durable.Queue.Pause).
//
// Mount it under any prefix of a service's mux:
//
//	mux.Handle("/queue/", http.StripPrefix("/queue", durableweb.Handler(q)))
//
// The page needs nothing from outside the process: its style sheet and
// script are embedded, and it is readable and usable without JavaScript
// (the script only refreshes the overview every few seconds and asks
// confirm() before an action).
//
// # Safety
//
// Every payload, ID, kind and error text is escaped by html/template (a
// kind's control and format characters, such as the bidi overrides, show
// as \u escapes), and every response carries a Content-Security-Policy
// that allows only the dashboard's own script and style sheet, with
// X-Content-Type-Options: nosniff, Referrer-Policy: same-origin
// (no-referrer would make browsers send "Origin: null" with the forms)
// and no framing. Actions are POSTs only (a GET never changes anything),
// each form carries a token the handler checks, and the handler refuses
// cross-origin requests (by Sec-Fetch-Site, and an Origin whose host is
// not the request's Host, and with net/http's CrossOriginProtection; see
// WithTrustedOrigins). The handler authenticates nobody: put it behind
// the service's own authentication, or use ReadOnly.
package durableweb
