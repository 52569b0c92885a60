package timingwheel

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The model-based test runs random sequences of AfterFunc, Stop, Reset and
// clock advances against the wheel and against a plain reference model: a
// list of timers with deadlines. After every step it checks that what fired
// is exactly what the model allows: nothing before its deadline, nothing
// left unfired once the clock has passed its deadline rounded up to the
// tick, every timer with d <= 0 at once, and Stop, Reset and Len agreeing.

const modelTick = time.Millisecond

type modelTimer struct {
	when   time.Duration // deadline since the wheel's start
	active bool          // armed and neither fired nor stopped
	fired  int           // runs seen so far
	dueNow bool          // armed with d <= 0: must fire on the next pass
}

func ceilTick(d time.Duration) time.Duration {
	if d%modelTick == 0 {
		return d
	}
	return (d/modelTick + 1) * modelTick
}

// runModel interprets ops two bytes at a time: an operation and its
// argument.
func runModel(t *testing.T, ops []byte) {
	w, mock := mockWheel(t, WithWheelSize(4), WithTick(modelTick))
	start := mock.Now()
	rec := newFirings()
	var timers []*Timer
	var model []modelTimer
	now := func() time.Duration { return mock.Now().Sub(start) }
	duration := func(arg byte) time.Duration {
		// -2ms .. +61.75ms in 250µs steps: spans levels 0-2 of a size-4
		// wheel and the due path.
		return time.Duration(int(arg)-8) * 250 * time.Microsecond
	}
	sync := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, w.Sync(ctx))
	}
	check := func(step int) {
		n := now()
		pending := 0
		for i := range model {
			m := &model[i]
			got := rec.count(i)
			if m.active && got > m.fired {
				require.Equal(t, m.fired+1, got, "step %d: timer %d fired twice", step, i)
				at := rec.times(i)[got-1].Sub(start)
				require.GreaterOrEqual(t, at, m.when, "step %d: timer %d fired early", step, i)
				m.fired, m.active = got, false
			}
			require.Equal(t, m.fired, got, "step %d: timer %d fired while not armed", step, i)
			if m.active {
				require.False(t, m.dueNow, "step %d: timer %d with d <= 0 not fired", step, i)
				require.Greater(t, ceilTick(m.when), n, "step %d: timer %d (due %v) late at %v", step, i, m.when, n)
				pending++
			}
		}
		require.Equal(t, pending, w.Len(), "step %d: Len", step)
	}
	for step := 0; step+1 < len(ops); step += 2 {
		op, arg := ops[step]%4, ops[step+1]
		switch {
		case op == 0 || len(timers) == 0:
			d := duration(arg)
			i := len(timers)
			timers = append(timers, w.AfterFunc(d, rec.task(mock, i)))
			model = append(model, modelTimer{when: max(now(), now()+d), active: true, dueNow: d <= 0})
		case op == 1:
			i := int(arg) % len(timers)
			require.Equal(t, model[i].active, timers[i].Stop(), "step %d: Stop of timer %d", step, i)
			model[i].active = false
		case op == 2:
			i := int(arg) % len(timers)
			d := duration(ops[step+1] ^ 0x5a)
			require.Equal(t, model[i].active, timers[i].Reset(d), "step %d: Reset of timer %d", step, i)
			model[i].when, model[i].active, model[i].dueNow = max(now(), now()+d), true, d <= 0
		default:
			mock.Add(time.Duration(arg) * 137 * time.Microsecond)
		}
		sync()
		check(step)
	}
}

func TestModel(t *testing.T) {
	for seed := range uint64(25) {
		r := rand.New(rand.NewPCG(seed, 99))
		ops := make([]byte, 300)
		for i := range ops {
			ops[i] = byte(r.Uint32())
		}
		runModel(t, ops)
	}
}

func FuzzModel(f *testing.F) {
	f.Add([]byte{0, 10, 0, 30, 3, 50, 1, 0, 3, 200, 2, 1, 3, 255})
	f.Add([]byte{0, 0, 0, 8, 0, 255, 3, 7, 2, 2, 3, 7, 3, 7, 1, 2})
	f.Add([]byte{0, 100, 2, 0, 2, 0, 3, 100, 1, 0, 0, 4, 3, 1, 3, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 256 {
			ops = ops[:256]
		}
		runModel(t, ops)
	})
}
