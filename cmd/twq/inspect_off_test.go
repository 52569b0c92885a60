//go:build !twqinspect

package main

import "testing"

// TestInspectionNotBuilt: without durable's Queue.Get and Queue.List, get
// and list say so, and touch nothing.
func TestInspectionNotBuilt(t *testing.T) {
	b := newFileBackend(t)
	check := b.unchanged(t)
	twq(t, b.queue, "get", "p1").failed(t, exitError, "get and list need durable's Queue.Get and Queue.List", "-tags twqinspect")
	twq(t, b.queue, "list", "pending").failed(t, exitError, "get and list need durable's Queue.Get and Queue.List")
	check()
}
