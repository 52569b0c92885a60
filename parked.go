package timingwheel

// armOwned makes t, which the caller owns with state owned (a new timer,
// or one in status mutating), pending: in the lane of the bucket its
// deadline maps to, or, on a stopped wheel, which never fires, in no lane.
// A timer parked so still counts in Len, and a Stop of it returns true,
// as for every other timer the wheel's Stop kept from running. store is
// false for a new timer, not shared yet.
func (w *TimingWheel) armOwned(t *Timer, owned uint64, store, due bool) {
	st := withStatus(owned, statusPending)
	if !w.stopped.Load() {
		w.insertOwned(t, st, store, due)
		return
	}
	w.outside.Add(1)
	if store {
		t.store(st)
	} else {
		t.state = st
	}
}
